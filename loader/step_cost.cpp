// estimate_step_ns (step_cost.h). Rates are this codebase's single-thread figures rounded
// down (bench_kernels: sgemm and convolutions near 200 GFLOP/s per core when large, far less
// when small; elementwise passes a few GB/s including page and cache misses): the estimate
// only has to separate "microseconds" from "tens of microseconds and more".
#include "amber/loader/step_cost.h"

namespace amber::loader {
namespace {

constexpr double kNsPerFlop = 1.0 / 40.0;  // 40 GFLOP/s: small products run far below peak
constexpr double kNsPerByte = 1.0 / 8.0;   // 8 GB/s

}  // namespace

double estimate_step_ns(OpCost cost, const amber_tensor_view* in, int n_in, const amber_tensor_view* out, int n_out,
                        double window) {
  const OpWork w = estimate_work(cost, in, n_in, out, n_out, window);
  return w.flops * kNsPerFlop + w.bytes * kNsPerByte;
}

}  // namespace amber::loader
