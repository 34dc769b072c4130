// Sample 9 of DESIGN.md section 9: a transformer encoder, 4 layers of
// TransformerEncoderLayer(d_model 256, 4 heads, dim_feedforward 1024, batch_first, dropout 0)
// with distinct weights per layer, on input batch x length x 256: traced once at [1, 128] with
// the batch N and the sequence length T dynamic, saved, loaded by the runtime and run at
// several batches and lengths from that one archive.
// Usage: transformer [OUT.amber] [WEIGHTS.safetensors]   (default transformer.amber, seeded)
#include <chrono>
#include <map>

#include "models/programs.h"

int main(int argc, char** argv) {
  using namespace amber;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  const std::string path = argc > 1 ? argv[1] : "transformer.amber";
  manual_seed(0);
  nn::TransformerEncoder encoder(models::transformer_options(), models::kTransformerLayers);
  if (argc > 2) encoder.load_state(argv[2]);
  encoder.eval();
  TraceOptions opts;
  opts.dynamic_batch = true;          // dim 0: N
  opts.dynamic_dims = {{0, 1, 'T'}};  // dim 1 of input 0: T
  opts.input_names = {"tokens"};
  opts.output_names = {"encoded"};
  auto t = Clock::now();
  TracedModule traced = trace(encoder, {randn({1, 128, 256})}, opts);
  const double trace_ms = ms(t);
  std::map<std::string, int> ops;
  for (const graph::Node* n : traced.graph().nodes()) ++ops[n->op->name];
  std::printf("%zu ops recorded, %zu after the passes:", traced.recorded_graph().num_nodes(),
              traced.graph().num_nodes());
  for (const auto& [op, n] : ops) std::printf(" %s x%d", op.c_str(), n);
  std::printf("\n%zu weights (distinct per layer), e.g. %s\n", traced.graph().constants().size(),
              traced.graph().constants()[0]->name.c_str());
  traced.save(path);
  t = Clock::now();
  Model model = load(path);
  const double load_ms = ms(t);
  std::printf("trace %.1f ms, load %.1f ms; input %s %s\n", trace_ms, load_ms, model.inputs()[0].name.c_str(),
              model.inputs()[0].shape.c_str());
  for (auto [batch, length] : {std::pair<int64_t, int64_t>{1, 128}, {8, 128}, {1, 16}, {2, 77}, {1, 512}}) {
    const Tensor x = randn({batch, length, 256});
    t = Clock::now();
    const Tensor eager = encoder(x);
    const double eager_ms = ms(t);
    t = Clock::now();
    const Tensor loaded = model.forward({x})[0];
    const double loaded_ms = ms(t);
    const float diff = (eager - loaded).abs().amax().item<float>();
    std::printf("N=%lld T=%lld: output [%lld, %lld, %lld], max |eager - loaded| %.3g; eager %.1f ms, loaded %.1f ms\n",
                (long long)batch, (long long)length, (long long)loaded.size(0), (long long)loaded.size(1),
                (long long)loaded.size(2), diff, eager_ms, loaded_ms);
  }
}
