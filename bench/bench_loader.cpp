// Loader benchmarks ([loader]): per-call time of the ten-mul sample (5 elements) through
// Model::forward next to eager execution and the traced module's interpreter, and a
// ResNet-18 archive's load time, first call and steady calls at batch 1.
// Prints numbers; asserts nothing. Usage: bench_loader [threads] (default: all cores).

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
using Clock = std::chrono::steady_clock;
double median_s(const std::function<void()>& f, int reps) { return bench::median_seconds(f, reps, 9); }
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  if (threads > 0) set_num_threads(threads);
  TraceOptions quiet;
  quiet.print_warnings = false;
  LoadOptions lo;
  lo.num_threads = threads;

  auto& ten_mul = models::ten_mul;
  Tensor x = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f});
  TracedModule t = trace(ten_mul, {x}, quiet);
  Model m = load(t.save_to_bytes(), lo);
  const std::vector<Tensor> in{x};
  const double eager = median_s([&] { (void)ten_mul(x); }, 20000);
  const double interp = median_s([&] { (void)t.forward(in); }, 20000);
  const double loaded = median_s([&] { (void)m.forward(in); }, 20000);
  std::printf(
      "ten-mul sample (5 elements), per call: eager %.3f us, traced interpreter %.3f us, "
      "Model::forward %.3f us (target < 1 us)\n",
      eager * 1e6, interp * 1e6, loaded * 1e6);

  models::ResNet18 net;
  net.eval();
  manual_seed(0);
  Tensor img = randn({1, 3, 224, 224});
  const std::string path = "/tmp/amber_bench_loader_resnet18.amber";
  trace(net, {img}, quiet).save(path);
  const auto l0 = Clock::now();
  Model r = load(path, lo);
  const double load_ms = ms_since(l0);
  const auto f0 = Clock::now();
  (void)r.forward({img});
  const double first_ms = ms_since(f0);
  const double steady = median_s([&] { (void)r.forward({img}); }, 5);
  const double eager_r = median_s([&] { (void)net(img); }, 5);
  std::printf(
      "ResNet-18 batch 1 (%d threads): load %.1f ms, first call %.2f ms, steady %.2f ms per call "
      "(eager %.2f ms)\n",
      threads > 0 ? threads : available_cores(), load_ms, first_ms, steady * 1e3, eager_r * 1e3);
  return 0;
}
