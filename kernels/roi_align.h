// roi_align's sampling rule, as torchvision's ROIAlign kernels compute it (each box scaled and
// shifted, its bins' sample grid fixed or adaptive, bilinear taps with torchvision's edge
// rules, the average over the grid): shared by the CPU and CUDA kernels, which differ only in
// how output values are spread. Samples outside the image add nothing, so only those inside
// are visited: a box far larger than the image costs what the image holds (op_cost.cpp).
// Computed in Acc<T>: double for double, else float (16-bit elements widened as they are read).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/kernels/hd.h"
#include "amber/op_attrs.h"

namespace amber::roi {

// A sample grid side up to this is walked whole; a longer (adaptive) one only where its
// samples fall on the image.
inline constexpr double kWalkWhole = 64;

// The type an element of T is computed in.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The op's attributes and views: input x [N, C, H, W], boxes [K, 5] (batch index, x1, y1, x2,
// y2) and output y [K, C, oh, ow], sizes and element strides.
struct Args {
  int64_t n, c, h, w, k, oh, ow;
  int64_t xs[4], bs[2], ys[4];
  double spatial_scale;
  int64_t sampling_ratio;
  bool aligned;
};
inline Args args_of(const amber_kernel_args* a) {
  namespace at = op_attrs::roi_align;
  const amber_tensor_view &x = a->inputs[0], &b = a->inputs[1], &y = a->outputs[0];
  Args r{};
  r.n = x.sizes[0], r.c = x.sizes[1], r.h = x.sizes[2], r.w = x.sizes[3];
  r.k = y.sizes[0], r.oh = y.sizes[2], r.ow = y.sizes[3];
  for (int d = 0; d < 4; ++d) r.xs[d] = x.strides[d], r.ys[d] = y.strides[d];
  r.bs[0] = b.strides[0], r.bs[1] = b.strides[1];
  r.spatial_scale = a->attrs[at::spatial_scale].f;
  r.sampling_ratio = a->attrs[at::sampling_ratio].i;
  r.aligned = a->attrs[at::aligned].i != 0;
  return r;
}

// Box k's batch index, or -1 when its first value is no index into the batch (NaN included).
template <typename T>
AMBER_HD inline int64_t batch_of(const T* boxes, const Args& g, int64_t k) {
  using A = Acc<T>;
  const A v = A(boxes[k * g.bs[0]]);
  return v >= A(0) && v < A(g.n) ? int64_t(v) : -1;
}

// One box in input coordinates: where its bins start, their size, the sample grid per bin
// (as doubles: an adaptive grid can be larger than an int) and the divisor. A grid side past
// 2^31 - 1 (torchvision's int overflows there) makes the box invalid: the CPU refuses it, CUDA
// gives zeros. A is the compute type (Acc of the elements').
template <typename A>
struct Box {
  A start_h, start_w, bin_h, bin_w;
  double grid_h, grid_w;
  A count;
  bool valid;
};
template <typename T>
AMBER_HD inline Box<Acc<T>> box_of(const T* boxes, const Args& g, int64_t k) {
  using A = Acc<T>;
  const T* r = boxes + k * g.bs[0];
  const A scale = A(g.spatial_scale), offset = g.aligned ? A(0.5) : A(0);
  Box<A> b;
  b.start_w = A(r[g.bs[1]]) * scale - offset;
  b.start_h = A(r[2 * g.bs[1]]) * scale - offset;
  A roi_w = A(r[3 * g.bs[1]]) * scale - offset - b.start_w, roi_h = A(r[4 * g.bs[1]]) * scale - offset - b.start_h;
  if (!g.aligned) {  // boxes of old (misaligned) ROIAlign are at least one pixel
    roi_w = roi_w > A(1) ? roi_w : A(1);
    roi_h = roi_h > A(1) ? roi_h : A(1);
  }
  b.bin_h = roi_h / A(g.oh);
  b.bin_w = roi_w / A(g.ow);
  b.grid_h = g.sampling_ratio > 0 ? double(g.sampling_ratio) : ceil(double(roi_h / A(g.oh)));
  b.grid_w = g.sampling_ratio > 0 ? double(g.sampling_ratio) : ceil(double(roi_w / A(g.ow)));
  if (!(b.grid_h > 0)) b.grid_h = 0;  // empty or NaN boxes sample nothing: their bins are 0
  if (!(b.grid_w > 0)) b.grid_w = 0;
  b.valid = b.grid_h <= 2147483647.0 && b.grid_w <= 2147483647.0;
  const double count = b.grid_h * b.grid_w;
  b.count = A(count > 1 ? count : 1);
  return b;
}

// The first and one-past-last sample index along one side of a bin whose samples are at
// base + (i + 0.5) * bin / grid, limited to those that can fall in [-1, size] when the grid
// is longer than kWalkWhole (an adaptive grid, its samples at least half a pixel apart); each
// sample is still checked on its own.
AMBER_HD inline void sample_range(double base, double bin, double grid, int64_t size, int64_t* first, int64_t* last) {
  *first = 0;
  *last = int64_t(grid);
  if (grid <= kWalkWhole) return;
  const double step = bin / grid;
  if (!(step > 0)) {  // not reached by an adaptive grid (bin > 64 there); no samples rather than all
    *last = 0;
    return;
  }
  const double lo = floor((-1 - base) / step - 0.5) - 1, hi = ceil((double(size) - base) / step - 0.5) + 2;
  if (lo > 0) *first = lo < grid ? int64_t(lo) : int64_t(grid);
  if (hi < grid) *last = hi > 0 ? int64_t(hi) : 0;
}

// torchvision's bilinear_interpolate over one plane (element strides sh, sw); 0 outside
// [-1, size] (and at NaN, which torchvision leaves undefined).
template <typename T, typename A = Acc<T>>
AMBER_HD inline A bilinear(const T* plane, int64_t sh, int64_t sw, int64_t h, int64_t w, A y, A x) {
  if (!(y >= A(-1) && y <= A(h) && x >= A(-1) && x <= A(w))) return A(0);
  if (y <= A(0)) y = A(0);
  if (x <= A(0)) x = A(0);
  int64_t y_low = int64_t(y), x_low = int64_t(x), y_high, x_high;
  if (y_low >= h - 1) {
    y_high = y_low = h - 1;
    y = A(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= w - 1) {
    x_high = x_low = w - 1;
    x = A(x_low);
  } else {
    x_high = x_low + 1;
  }
  const A ly = y - A(y_low), lx = x - A(x_low), hy = A(1) - ly, hx = A(1) - lx;
  const A w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
  return w1 * A(plane[y_low * sh + x_low * sw]) + w2 * A(plane[y_low * sh + x_high * sw]) +
         w3 * A(plane[y_high * sh + x_low * sw]) + w4 * A(plane[y_high * sh + x_high * sw]);
}

// Output bin (ph, pw) of box b over one input plane: the mean of its samples, summed in
// torchvision's order (rows, then columns).
template <typename T, typename A = Acc<T>>
AMBER_HD inline A bin_value(const T* plane, const Args& g, const Box<A>& b, int64_t ph, int64_t pw) {
  if (!b.valid) return A(0);
  const A base_h = b.start_h + A(ph) * b.bin_h, base_w = b.start_w + A(pw) * b.bin_w;
  int64_t y0, y1, x0, x1;
  sample_range(double(base_h), double(b.bin_h), b.grid_h, g.h, &y0, &y1);
  sample_range(double(base_w), double(b.bin_w), b.grid_w, g.w, &x0, &x1);
  const A gh = A(b.grid_h), gw = A(b.grid_w);
  A sum = A(0);
  for (int64_t iy = y0; iy < y1; ++iy) {
    const A y = base_h + A(float(iy) + 0.5f) * b.bin_h / gh;
    for (int64_t ix = x0; ix < x1; ++ix) {
      const A x = base_w + A(float(ix) + 0.5f) * b.bin_w / gw;
      sum += bilinear(plane, g.xs[2], g.xs[3], g.h, g.w, y, x);
    }
  }
  return sum / b.count;
}

}  // namespace amber::roi
