// The source positions of 2-D resampling (upsample_nearest2d, upsample_bilinear2d,
// upsample_bicubic2d) as ATen computes them (UpSample.h: compute_scales_value,
// area_pixel_compute_scale and _source_index, nearest_idx, the cubic coefficients), shared by the CPU and CUDA kernels
// so both pick the same pixels and weights. A scale attribute <= 0 means none was given: the ratio of the sizes is
// used.
#pragma once

#include <cmath>
#include <cstdint>

#include "amber/kernels/hd.h"

namespace amber::resample {

// Output index -> input index for nearest: floor(dst * scale) in float, as ATen, with ATen's
// exact shortcuts for equal and doubled sizes.
AMBER_HD inline int64_t nearest_source(int64_t dst, int64_t in, int64_t out, double scale_attr) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = scale_attr > 0 ? float(1.0 / scale_attr) : float(in) / float(out);
  const auto src = int64_t(floorf(float(dst) * scale));
  return src < in - 1 ? src : in - 1;
}

// The two input positions an output position blends and their weights, for bilinear; A is
// ATen's opmath type (float for f32, double for f64).
template <typename A>
struct LinearTap {
  int64_t i0, i1;
  A l0, l1;
};

// ATen's area_pixel_compute_scale: the step between output and input positions.
template <typename A>
AMBER_HD inline A linear_scale(int64_t in, int64_t out, bool align_corners, double scale_attr) {
  if (align_corners) return out > 1 ? A(in - 1) / A(out - 1) : A(0);
  return scale_attr > 0 ? A(1.0 / scale_attr) : A(in) / A(out);
}

// ATen's compute_source_index_and_lambda: equal sizes copy.
template <typename A>
AMBER_HD inline LinearTap<A> linear_source(int64_t dst, int64_t in, int64_t out, A scale, bool align_corners) {
  if (in == out) return {dst, dst, A(1), A(0)};
  A real = align_corners ? scale * A(dst) : scale * (A(dst) + A(0.5)) - A(0.5);
  if (real < 0) real = 0;
  const auto i0 = int64_t(real);
  A l1 = real - A(i0);
  l1 = l1 < 0 ? A(0) : l1 > 1 ? A(1) : l1;
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), A(1) - l1, l1};
}

// The four input positions (clamped to the edges) an output position blends for bicubic and
// their weights: Keys' cubic convolution with A = -0.75, as ATen's upsample_bicubic2d.
template <typename A>
struct CubicTap {
  int64_t i[4];
  A w[4];
};

template <typename A>
AMBER_HD inline CubicTap<A> cubic_source(int64_t dst, int64_t in, A scale, bool align_corners) {
  const A real = align_corners ? scale * A(dst) : scale * (A(dst) + A(0.5)) - A(0.5);  // not clamped at 0
  auto i0 = int64_t(real);
  if (A(i0) > real) --i0;  // floor
  if (i0 > in - 1) i0 = in - 1;
  A t = real - A(i0);
  t = t < 0 ? A(0) : t > 1 ? A(1) : t;
  const A a = A(-0.75);
  auto near = [a](A x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [a](A x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  CubicTap<A> tap{{}, {far(t + 1), near(t), near(1 - t), far(2 - t)}};
  for (int j = 0; j < 4; ++j) {
    const int64_t k = i0 - 1 + j;
    tap.i[j] = k < 0 ? 0 : k > in - 1 ? in - 1 : k;
  }
  return tap;
}

// The tap of output position dst for bilinear (Cubic false) or bicubic (true).
template <bool Cubic, typename A>
AMBER_HD inline auto tap_of(int64_t dst, int64_t in, int64_t out, A scale, bool align_corners) {
  if constexpr (Cubic)
    return cubic_source<A>(dst, in, scale, align_corners);
  else
    return linear_source<A>(dst, in, out, scale, align_corners);
}

// An output pixel from its row tap r and column tap q in plane p (element strides sh, sw), in
// ATen's order: each row's columns blended, then the rows.
template <typename A, typename T>
AMBER_HD inline A blend(const T* p, const LinearTap<A>& r, const LinearTap<A>& q, int64_t sh, int64_t sw) {
  const A top = q.l0 * A(p[r.i0 * sh + q.i0 * sw]) + q.l1 * A(p[r.i0 * sh + q.i1 * sw]);
  const A bottom = q.l0 * A(p[r.i1 * sh + q.i0 * sw]) + q.l1 * A(p[r.i1 * sh + q.i1 * sw]);
  return r.l0 * top + r.l1 * bottom;
}
template <typename A, typename T>
AMBER_HD inline A blend(const T* p, const CubicTap<A>& r, const CubicTap<A>& q, int64_t sh, int64_t sw) {
  A out = 0;
  for (int u = 0; u < 4; ++u) {
    const T* line = p + r.i[u] * sh;
    A t = A(line[q.i[0] * sw]) * q.w[0];
    for (int v = 1; v < 4; ++v) t += A(line[q.i[v] * sw]) * q.w[v];
    out = u == 0 ? t * r.w[0] : out + t * r.w[u];
  }
  return out;
}

}  // namespace amber::resample
