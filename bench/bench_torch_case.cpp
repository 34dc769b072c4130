// One benchmark case on libtorch (Debian's libtorch-dev 1.13), the peer Amber is measured
// against: torch::jit::load a TorchScript file, optionally torch::jit::optimize_for_inference
// (timed apart), run it on the case's inputs in inference mode, and print the same JSON line
// as bench_amber_case. Usage: bench_torch_case CASE.pt CASE.inputs.pt [--optimize]
// [--threads N] [--seconds S] [--iters N]. Built only with -DAMBER_BENCH_TORCH=ON.
#include <ATen/Parallel.h>
#include <torch/script.h>

#include "bench_case.h"

int main(int argc, char** argv) {
  const bench::Args args = bench::parse(argc, argv);
  if (args.positional.size() != 2) {
    std::fprintf(stderr, "usage: bench_torch_case CASE.pt CASE.inputs.pt [--optimize] [--threads N]\n");
    return 2;
  }
  try {
    if (args.threads > 0) at::set_num_threads(args.threads);
    c10::InferenceMode guard;
    // The inputs are read before load, so that the first call follows load at once (as
    // bench_amber_case does).
    torch::jit::Module io = torch::jit::load(args.positional[1]);
    std::vector<torch::jit::IValue> inputs;
    for (int i = 0; io.hasattr("input" + std::to_string(i)); ++i)
      inputs.emplace_back(io.attr("input" + std::to_string(i)).toTensor());
    auto t0 = bench::Clock::now();
    torch::jit::Module module = torch::jit::load(args.positional[0]);
    module.eval();
    const double load_ms = bench::ms_since(t0);
    double optimize_ms = 0;
    if (args.optimize) {
      t0 = bench::Clock::now();
      module = torch::jit::optimize_for_inference(module);
      optimize_ms = bench::ms_since(t0);
    }
    torch::Tensor out;
    const bench::Timing t = bench::time_calls(args, [&] { out = module.forward(inputs).toTensor(); });
    const double diff = (out - io.attr("expected0").toTensor()).abs().max().item<double>();
    bench::report({{"load_ms", load_ms},
                   {"optimize_ms", optimize_ms},
                   {"first_ms", t.first_ms},
                   {"second_ms", t.second_ms},
                   {"idle_ms", t.idle_ms},
                   {"p50_ms", t.p50_ms},
                   {"p99_ms", t.p99_ms},
                   {"mean_ms", t.mean_ms},
                   {"calls", double(t.calls)},
                   {"rss_mib", bench::peak_rss_mib()},
                   {"max_abs_diff", diff},
                   {"threads", double(at::get_num_threads())}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_torch_case: %s\n", e.what());
    return 1;
  }
  return 0;
}
