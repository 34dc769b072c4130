// Tracer benchmarks ([tracer]): per-call time of the ten-mul sample eagerly and as a traced
// graph (one fused node), and the cost of tracing ResNet-18 next to one eager forward:
// recording alone (the hook on every op) and recording plus the optimisation passes.
// Prints numbers; asserts nothing. Usage: bench_trace [threads] (default 2).

#include <amber/amber.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench_util.h"
#include "models/programs.h"
#include "models/resnet.h"

using namespace amber;

namespace {
double median_s(const std::function<void()>& f, int reps) { return bench::median_seconds(f, reps, 7); }
}  // namespace

int main(int argc, char** argv) {
  set_num_threads(argc > 1 ? std::atoi(argv[1]) : 2);
  TraceOptions quiet;
  quiet.print_warnings = false;

  auto& ten_mul = models::ten_mul;
  Tensor x = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f});
  TracedModule t = trace(ten_mul, {x}, quiet);
  const double eager = median_s([&] { (void)ten_mul(x); }, 20000);
  const double traced = median_s([&] { (void)t.forward({x}); }, 20000);
  std::printf("ten-mul sample (5 elements): eager %.2f us/call (10 ops), traced graph %.2f us/call (%zu node)\n",
              eager * 1e6, traced * 1e6, t.graph().num_nodes());

  models::ResNet18 net;
  net.eval();
  manual_seed(0);
  Tensor img = randn({1, 3, 224, 224});
  TraceOptions record_only = quiet;
  record_only.optimize = false;
  const double fwd = median_s([&] { (void)net(img); }, 5);
  const double rec = median_s([&] { (void)trace(net, {img}, record_only); }, 5);
  const double full = median_s([&] { (void)trace(net, {img}, quiet); }, 5);
  std::printf(
      "ResNet-18 batch 1: eager forward %.2f ms; trace (recording) %.2f ms = %+.1f%% over eager; "
      "trace with passes %.2f ms (passes %.2f ms: batch-norm folding, fusion, ...)\n",
      fwd * 1e3, rec * 1e3, 100 * (rec / fwd - 1), full * 1e3, (full - rec) * 1e3);
  return 0;
}
