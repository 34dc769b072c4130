// Control flow in a loaded archive (schema/control_flow.h): a GRU cell over n steps kept as
// one `loop` node (one archive for every n) against the same cell unrolled by a C++ loop and
// traced per n (one archive per length), both loaded, per-call time (best of 5 rounds of 50
// calls). Usage: bench_control_flow [threads]

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "models/control.h"

using namespace amber;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  manual_seed(1);
  const int64_t in = 64, hidden = 256, batch = 8, max_steps = 64;
  const models::LoopGRU gru{randn({3 * hidden, in}) * 0.05, randn({3 * hidden, hidden}) * 0.05,
                            randn({3 * hidden}) * 0.05, randn({3 * hidden}) * 0.05};
  const Tensor x = randn({max_steps, batch, in});
  auto count = [](int64_t n) { return full({}, n, {DType::i64}); };
  auto unrolled = [&](const Tensor& xs, int64_t n) {
    Tensor h = zeros({batch, hidden});
    for (int64_t t = 0; t < n; ++t) h = gru.step(xs.select(0, t), h);  // the same cell, unrolled
    return h;
  };
  TraceOptions o;
  o.print_warnings = false;
  const LoadOptions lo{.num_threads = threads};
  const std::vector<uint8_t> loop_bytes =
      trace([&](const Tensor& xs, const Tensor& n) { return gru.forward(xs, n); }, {x, count(4)}, o).save_to_bytes();
  const Model looped = load(loop_bytes, lo);
  auto per_call_us = [](auto&& f) {
    for (int i = 0; i < 20; ++i) f();
    double best = 1e300;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 50; ++i) f();
      best =
          std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 50);
    }
    return best;
  };
  std::printf("GRU cell (in %ld, hidden %ld, batch %ld), %d threads; loop archive %zu bytes for every length\n",
              long(in), long(hidden), long(batch), threads, loop_bytes.size());
  std::printf("%6s %12s %14s %10s %16s %14s\n", "steps", "loop us", "unrolled us", "loop/unr", "unrolled bytes",
              "loop us/step");
  for (int64_t n : {1, 16, 64}) {
    const std::vector<uint8_t> unrolled_bytes =
        trace([&](const Tensor& xs) { return unrolled(xs, n); }, {x}, o).save_to_bytes();
    const Model flat = load(unrolled_bytes, lo);
    const Tensor c = count(n);
    const double t_loop = per_call_us([&] { (void)looped.forward({x, c}); });
    const double t_flat = per_call_us([&] { (void)flat.forward({x}); });
    std::printf("%6ld %12.1f %14.1f %10.2f %16zu %14.2f\n", long(n), t_loop, t_flat, t_loop / t_flat,
                unrolled_bytes.size(), t_loop / double(n));
  }
}
