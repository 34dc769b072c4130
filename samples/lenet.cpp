// Sample 6 of DESIGN.md section 9: the LeNet-style Net of section 1 (input 1x32x32, relu and
// 2x2 max-pool after each conv) traced once at batch 1 with a dynamic batch, saved, loaded by
// the runtime and run at batch 1 and 64; eager and loaded outputs and per-call times printed.
// Usage: lenet [OUT.amber] [WEIGHTS.safetensors]   (default lenet.amber, seeded weights)
#include <chrono>

#include "models/small.h"

int main(int argc, char** argv) {
  using namespace amber;
  const std::string path = argc > 1 ? argv[1] : "lenet.amber";
  manual_seed(0);
  models::LeNet net;
  if (argc > 2) net.load_state(argv[2]);
  net.eval();
  TraceOptions opts;
  opts.dynamic_batch = true;
  opts.input_names = {"image"};
  opts.output_names = {"scores"};
  TracedModule traced = trace(net, {randn({1, 1, 32, 32})}, opts);
  std::cout << traced.graph();
  traced.save(path);
  Model model = load(path);
  std::cout << "loaded " << path << ": " << model.inputs()[0].name << " " << model.inputs()[0].shape << " -> "
            << model.outputs()[0].name << " " << model.outputs()[0].shape << "\n";
  auto per_call_us = [](auto&& f, int n) {
    f();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  for (int64_t batch : {1, 64}) {
    const Tensor x = randn({batch, 1, 32, 32});
    const Tensor eager = net(x), loaded = model.forward({x})[0];
    const float diff = (eager - loaded).abs().amax().item<float>();
    const double t_eager = per_call_us([&] { (void)net(x); }, batch == 1 ? 2000 : 100);
    const double t_loaded = per_call_us([&] { (void)model.forward({x}); }, batch == 1 ? 2000 : 100);
    std::cout << "batch " << batch << ": scores " << loaded.sizes() << ", first row " << loaded[0] << "\n";
    std::printf("batch %lld: max |eager - loaded| %.3g; per call: eager %.1f us, loaded %.1f us\n", (long long)batch,
                diff, t_eager, t_loaded);
  }
}
