// One benchmark case on Amber's runtime, as a service would run it: load an archive, run it
// on the case's inputs (first call, then steady state), and print one JSON line (load,
// first call, p50, p99, throughput, peak RSS, |amber - torch|). Links only amber_runtime.
// Usage: bench_amber_case CASE.amber CASE.io.safetensors [--seconds S] [--iters N] [--threads N]
//        [--no-verify] [--no-open] [--device cuda:0] [--precision f32|bf16|dynamic-int8|tf32|f16|bf16-model|f16-model]
// On a device the inputs come from the host and the outputs stay on the device, as a service
// would run; every call ends synchronised, so each timing is the call's whole latency. There
// it also reports the most device memory Amber held at once (device_mib: weights, arenas,
// outputs; what amber::device_memory counts).
#include <amber/runtime.h>

#include "bench_case.h"

int main(int argc, char** argv) {
  const bench::Args args = bench::parse(argc, argv);
  if (args.positional.size() != 2) {
    std::fprintf(stderr,
                 "usage: bench_amber_case CASE.amber CASE.io.safetensors [--seconds S] [--iters N] [--threads N] "
                 "[--no-verify] [--no-open] [--device D] [--precision P]\n");
    return 2;
  }
  try {
    amber::LoadOptions options;
    options.num_threads = args.threads;
    options.verify_checksums = !args.no_verify;
    options.device = amber::Device::parse(args.device);
    const std::optional<amber::Precision> precision = amber::precision_from_name(args.precision);
    if (!precision) {
      std::fprintf(stderr, "bench_amber_case: unknown --precision '%s'\n", args.precision.c_str());
      return 2;
    }
    options.precision = *precision;
    // The inputs are read before load, so that the first call follows load at once, as a
    // service's first request waiting for it would (bench_torch_case does the same).
    amber::SafetensorsFile io = amber::SafetensorsFile::open(args.positional[1]);
    std::vector<amber::Tensor> inputs;  // in written memory, as libtorch's side gets them from torch::jit::load
    for (size_t i = 0; io.contains("input" + std::to_string(i)); ++i)
      inputs.push_back(io.tensor("input" + std::to_string(i)).clone());
    auto t0 = bench::Clock::now();
    const amber::Model model = amber::load(args.positional[0], options);
    const double load_ms = bench::ms_since(t0);
    std::vector<amber::Tensor> out;
    const bench::Timing t = bench::time_calls(args, [&] { out = model.forward(inputs); });
    const float diff = (out[0].to(amber::Device::cpu()) - io.tensor("expected0")).abs().amax().item<float>();
    const double rss_mib = bench::peak_rss_mib();  // serving only: the opens below map the file again
    const double device_mib =
        options.device.is_cpu() ? 0.0 : double(amber::device_memory(options.device).peak_held_bytes) / (1 << 20);
    // Opening alone (parse, validate, map; no kernel setup), with and without checksums:
    // the best of 5 each, alternating.
    double open_ms = 1e30, open_verify_ms = 1e30;
    for (int i = 0; i < (args.no_open ? 0 : 5); ++i)
      for (bool verify : {false, true}) {
        t0 = bench::Clock::now();
        (void)amber::read_archive(args.positional[0], {verify});
        double& best = verify ? open_verify_ms : open_ms;
        best = std::min(best, bench::ms_since(t0));
      }
    bench::report({{"load_ms", load_ms},
                   {"open_ms", open_ms},
                   {"open_verify_ms", open_verify_ms},
                   {"first_ms", t.first_ms},
                   {"second_ms", t.second_ms},
                   {"idle_ms", t.idle_ms},
                   {"p50_ms", t.p50_ms},
                   {"p99_ms", t.p99_ms},
                   {"mean_ms", t.mean_ms},
                   {"calls", double(t.calls)},
                   {"rss_mib", rss_mib},
                   {"device_mib", device_mib},
                   {"max_abs_diff", double(diff)}});
  } catch (const amber::Error& e) {
    std::fprintf(stderr, "bench_amber_case: %s\n", e.what());
    return 1;
  }
  return 0;
}
