// estimate_step_ns (step_cost.h). Rates are this codebase's single-thread figures rounded
// down (bench_kernels: sgemm and convolutions near 200 GFLOP/s per core when large, far less
// when small; elementwise passes a few GB/s including page and cache misses): the estimate
// only has to separate "microseconds" from "tens of microseconds and more".
#include "amber/loader/step_cost.h"

#include <cstdint>

#include "amber/core/dtype.h"

namespace amber::loader {
namespace {

constexpr double kNsPerFlop = 1.0 / 40.0;  // 40 GFLOP/s: small products run far below peak
constexpr double kNsPerByte = 1.0 / 8.0;   // 8 GB/s

double numel(const amber_tensor_view& v) {
  double n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= double(v.sizes[d]);
  return n;
}

bool present(const amber_tensor_view* v, int n, int i) { return i < n && v[i].ndim >= 0; }

}  // namespace

double estimate_step_ns(OpCost cost, const amber_tensor_view* in, int n_in, const amber_tensor_view* out, int n_out) {
  if (n_out > 0) {
    const double outs = numel(out[0]);
    if (cost == OpCost::conv && present(in, n_in, 1) && in[1].ndim == 4)  // weight [out, in / groups, kh, kw]
      return 2 * outs * double(in[1].sizes[1]) * double(in[1].sizes[2]) * double(in[1].sizes[3]) * kNsPerFlop;
    if (cost == OpCost::conv_transpose && present(in, n_in, 1) && in[1].ndim == 4)  // weight [in, out / g, kh, kw]
      return 2 * numel(in[0]) * double(in[1].sizes[1]) * double(in[1].sizes[2]) * double(in[1].sizes[3]) * kNsPerFlop;
    if (cost == OpCost::matmul && present(in, n_in, 0) && in[0].ndim >= 1)
      return 2 * outs * double(in[0].sizes[in[0].ndim - 1]) * kNsPerFlop;
    if (cost == OpCost::attention && present(in, n_in, 1) && in[1].ndim >= 2)  // q [.., L, D], k [.., S, D]
      return 4 * numel(in[0]) * double(in[1].sizes[in[1].ndim - 2]) * kNsPerFlop;
  }
  double bytes = 0;
  for (int i = 0; i < n_in; ++i)
    if (in[i].ndim >= 0) bytes += numel(in[i]) * double(itemsize(DType(in[i].dtype)));
  for (int i = 0; i < n_out; ++i) bytes += numel(out[i]) * double(itemsize(DType(out[i].dtype)));
  return bytes * kNsPerByte;
}

}  // namespace amber::loader
