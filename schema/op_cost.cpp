// estimate_work and window_elements (op_cost.h): the formulas behind each OpCost kind.

#include "amber/schema/op_cost.h"

#include "amber/core/dtype.h"

namespace amber {
namespace {

double numel(const amber_tensor_view& v) {
  double n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= double(v.sizes[d]);
  return n;
}

bool present(const amber_tensor_view* v, int n, int i) { return i < n && v[i].ndim >= 0; }

}  // namespace

OpWork estimate_work(OpCost cost, const amber_tensor_view* in, int n_in, const amber_tensor_view* out, int n_out,
                     double window) {
  OpWork w;
  if (n_out > 0) {
    const double outs = numel(out[0]);
    if (cost == OpCost::conv && present(in, n_in, 1) && in[1].ndim == 4) {  // weight [out, in / groups, kh, kw]
      w.flops = 2 * outs * double(in[1].sizes[1]) * double(in[1].sizes[2]) * double(in[1].sizes[3]);
      return w;
    }
    if (cost == OpCost::conv_transpose && present(in, n_in, 1) && in[1].ndim == 4) {  // weight [in, out / g, kh, kw]
      w.flops = 2 * numel(in[0]) * double(in[1].sizes[1]) * double(in[1].sizes[2]) * double(in[1].sizes[3]);
      return w;
    }
    if (cost == OpCost::matmul && present(in, n_in, 0) && in[0].ndim >= 1) {
      w.flops = 2 * outs * double(in[0].sizes[in[0].ndim - 1]);
      return w;
    }
    if (cost == OpCost::attention && present(in, n_in, 1) && in[1].ndim >= 2) {  // q [.., L, D], k [.., S, D]
      w.flops = 4 * numel(in[0]) * double(in[1].sizes[in[1].ndim - 2]);
      return w;
    }
    // roi_align: four taps a sample; an adaptive grid (window 0) walks whole sides of up to 64
    // samples and longer ones only over the image, at most 2 (size + 3) samples a box side.
    if (cost == OpCost::roi_align && present(in, n_in, 0) && in[0].ndim == 4 && out[0].ndim == 4) {
      const double oh = double(out[0].sizes[2]), ow = double(out[0].sizes[3]);
      const double side_h = 64 * oh + 2 * (double(in[0].sizes[2]) + 3),
                   side_w = 64 * ow + 2 * (double(in[0].sizes[3]) + 3);
      w.flops = 4 * (window > 0 ? outs * window : double(out[0].sizes[0]) * double(out[0].sizes[1]) * side_h * side_w);
      return w;
    }
    // Window ops also read and write memory (below): a small window over a large input
    // (LeNet's 2x2 max pool of [64, 6, 30, 30]) is bound by that, not by its comparisons.
    if (cost == OpCost::window) w.flops = outs * window;
  }
  for (int i = 0; i < n_in; ++i)
    if (in[i].ndim >= 0) w.bytes += numel(in[i]) * double(itemsize(DType(in[i].dtype)));
  for (int i = 0; i < n_out; ++i) w.bytes += numel(out[i]) * double(itemsize(DType(out[i].dtype)));
  return w;
}

double window_elements(const OpSchema& op, const amber_attr* attrs, int n_attrs) {
  if (op.cost == OpCost::roi_align) {  // samples per bin when fixed, 0 when adaptive
    const int s = op.attr_index("sampling_ratio");
    return s >= 0 && s < n_attrs && attrs[s].i > 0 ? double(attrs[s].i) * double(attrs[s].i) : 0;
  }
  if (op.cost != OpCost::window) return 1;
  const int k = op.attr_index("kernel_size");
  if (k < 0 || k >= n_attrs) return 1;
  double n = 1;
  for (int i = 0; i < attrs[k].count; ++i) n *= double(attrs[k].ints[i]);
  return n;
}

}  // namespace amber
