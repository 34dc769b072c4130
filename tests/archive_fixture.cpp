// Writes the archives the command-line checks of tests/CMakeLists.txt read: a small traced
// model (convolution, pooling, linear, fused pointwise ops, every storage dtype among its
// constants, dynamic batch) saved normally and with zip64 records, and the expected weight
// values as safetensors. Usage: archive_fixture OUT_DIR

#include <amber/amber.h>

using namespace amber;

// The golden archive of the current format (committed under tests/golden/, never
// regenerated for a released format): a small dynamic-batch model and its inputs and
// outputs at batch 1 and 3.
int write_golden(const std::string& out) {
  manual_seed(2026);
  Tensor w = randn({4, 3, 3, 3}), b = randn({4}), fc = randn({5, 16}), fb = randn({5});
  auto model = [&](const Tensor& x) {
    Tensor y = gelu(conv2d(x, w, b, {2}, {1}) * 0.5);
    y = adaptive_avg_pool2d(y, {2}).flatten(1);
    return linear(y, fc, fb).log_softmax(-1);
  };
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  TracedModule t = trace(model, {randn({1, 3, 8, 8})}, o);
  t.save(out + "/format_1_0.amber");
  std::vector<std::pair<std::string, Tensor>> io;
  for (int64_t n : {1, 3}) {
    Tensor x = randn({n, 3, 8, 8});
    io.emplace_back(str("input.b", n), x);
    io.emplace_back(str("output.b", n), model(x));
  }
  save_safetensors(out + "/format_1_0_io.safetensors", io);
  std::printf("wrote the golden archive to %s\n", out.c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--golden") return write_golden(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: archive_fixture OUT_DIR | archive_fixture --golden OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  manual_seed(7);
  Tensor w = randn({4, 1, 3, 3}), b = randn({4}), fc = randn({3, 16});
  std::vector<Tensor> odd;  // constants of every dtype, returned as outputs (so none is folded away)
  for (int i = 0; i < kNumDTypes; ++i) odd.push_back((arange(0, 5, 1, {DType::f32}) - 2).to(DType(i)));
  auto model = [&](const Tensor& x) {
    Tensor y = relu(conv2d(x, w, b, {1}, {1}) * 0.5 + 1.0);
    y = max_pool2d(y, {2}).flatten(1);
    std::vector<Tensor> outs{linear(y, fc).sum({1}, true)};
    outs.insert(outs.end(), odd.begin(), odd.end());
    return outs;
  };
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  TracedModule t = trace(model, {randn({2, 1, 4, 4})}, o);
  t.save(out + "/model.amber");
  SaveOptions z64;
  z64.force_zip64 = true;
  t.save(out + "/model_zip64.amber", z64);
  std::vector<std::pair<std::string, Tensor>> expected;
  for (const graph::Value* c : t.graph().constants()) expected.emplace_back(c->name, c->data);
  save_safetensors(out + "/expected.safetensors", expected);
  std::printf("wrote %s/model.amber (%zu constants, %zu nodes)\n", out.c_str(), t.graph().constants().size(),
              t.graph().num_nodes());
  return 0;
}
