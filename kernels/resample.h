// The source positions of 2-D and 3-D resampling (upsample_nearest2d, upsample_bilinear2d,
// upsample_bicubic2d, the last two antialiased, upsample_nearest3d, upsample_trilinear3d) as ATen
// computes them (UpSample.h, the aa helpers of UpSampleKernel.cpp), shared by the CPU and CUDA
// kernels (with the ops' attribute positions and the (N, C, D, H, W) geometry) so both pick the
// same elements and weights. A scale <= 0 means none was given: the ratio of the sizes is used.
#pragma once

#include <cmath>
#include <cstdint>

#include "amber/core/backend.h"
#include "amber/kernels/hd.h"
#include "amber/op_attrs.h"

namespace amber::resample {

// Where a resize op keeps its attributes, as op_attrs numbers them: align_corners (-1 for
// nearest) and the scales of D, H and W (-1 for D where the op has none). One table for the CPU
// and CUDA kernels and the ONNX export.
struct ResizeAttrs {
  int align_corners;
  int scales[3];
};
namespace resize_attrs {
namespace n2 = op_attrs::upsample_nearest2d;
namespace n3 = op_attrs::upsample_nearest3d;
namespace l2 = op_attrs::upsample_bilinear2d;
namespace l3 = op_attrs::upsample_trilinear3d;
inline constexpr ResizeAttrs nearest2d{-1, {-1, n2::scales_h, n2::scales_w}};
inline constexpr ResizeAttrs nearest3d{-1, {n3::scales_d, n3::scales_h, n3::scales_w}};
// upsample_bilinear2d, upsample_bicubic2d and their _aa forms (the same positions, checked below)
inline constexpr ResizeAttrs interp2d{l2::align_corners, {-1, l2::scales_h, l2::scales_w}};
inline constexpr ResizeAttrs trilinear3d{l3::align_corners, {l3::scales_d, l3::scales_h, l3::scales_w}};
#define AMBER_SAME_INTERP_ATTRS(op)                                      \
  static_assert(op_attrs::op::align_corners == interp2d.align_corners && \
                op_attrs::op::scales_h == interp2d.scales[1] && op_attrs::op::scales_w == interp2d.scales[2])
AMBER_SAME_INTERP_ATTRS(upsample_bicubic2d);
AMBER_SAME_INTERP_ATTRS(upsample_bilinear2d_aa);
AMBER_SAME_INTERP_ATTRS(upsample_bicubic2d_aa);
#undef AMBER_SAME_INTERP_ATTRS
// The nearest op's for an input of `ndim` dims (upsample_nearest2d's 4, upsample_nearest3d's 5).
constexpr const ResizeAttrs& nearest(int ndim) { return ndim == 5 ? nearest3d : nearest2d; }
}  // namespace resize_attrs

// A call's scale along spatial dim k (0 D, 1 H, 2 W) under `r`: 0 where none was given or the op
// has none; and its align_corners (false for nearest).
inline double scale_of(const amber_kernel_args* a, const ResizeAttrs& r, int k) {
  const int at = r.scales[k];
  return at < 0 || a->attrs[at].kind == AMBER_ATTR_NONE ? 0.0 : a->attrs[at].f;
}
inline bool align_corners_of(const amber_kernel_args* a, const ResizeAttrs& r) {
  return r.align_corners >= 0 && a->attrs[r.align_corners].i != 0;
}

// Sizes and element strides of a resize's input and output as (N, C, D, H, W): a 4-D pair has
// D = 1 (stride 0). channels_last: the output's channels are adjacent (walked innermost).
struct Geometry {
  int64_t n, c, d, h, w, od, oh, ow;
  int64_t xs[5], ys[5];
  bool channels_last;
};
inline Geometry geometry(const amber_tensor_view& x, const amber_tensor_view& y) {
  Geometry g{};
  int64_t xsz[5], ysz[5];
  for (int i = 0, k = 0; i < 5; ++i) {
    const bool absent = x.ndim == 4 && i == 2;  // the D a 4-D pair lacks
    xsz[i] = absent ? 1 : x.sizes[k];
    ysz[i] = absent ? 1 : y.sizes[k];
    g.xs[i] = absent ? 0 : x.strides[k];
    g.ys[i] = absent ? 0 : y.strides[k];
    k += absent ? 0 : 1;
  }
  g.n = xsz[0], g.c = xsz[1], g.d = xsz[2], g.h = xsz[3], g.w = xsz[4];
  g.od = ysz[2], g.oh = ysz[3], g.ow = ysz[4];
  g.channels_last = g.c > 1 && g.ys[1] == 1;
  return g;
}
AMBER_HD inline int64_t total(const Geometry& g) { return g.n * g.c * g.od * g.oh * g.ow; }

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

// An output pixel in ATen's order, in two steps: blend_row blends one input row (element stride
// sw) at column tap q; blend_rows blends the rows' results (t[u], row r.i0/r.i1 or r.i[u]) at row
// tap r. blend does both for plane p (element strides sh, sw).
template <typename A, typename T>
AMBER_HD inline A blend_row(const T* line, const LinearTap<A>& q, int64_t sw) {
  return q.l0 * A(line[q.i0 * sw]) + q.l1 * A(line[q.i1 * sw]);
}
template <typename A, typename T>
AMBER_HD inline A blend_row(const T* line, const CubicTap<A>& q, int64_t sw) {
  A t = A(line[q.i[0] * sw]) * q.w[0];
  for (int v = 1; v < 4; ++v) t += A(line[q.i[v] * sw]) * q.w[v];
  return t;
}
template <typename A>
AMBER_HD inline A blend_rows(const LinearTap<A>& r, const A* t) {
  return r.l0 * t[0] + r.l1 * t[1];
}
template <typename A>
AMBER_HD inline A blend_rows(const CubicTap<A>& r, const A* t) {
  A out = t[0] * r.w[0];
  for (int u = 1; u < 4; ++u) out = out + t[u] * r.w[u];
  return out;
}
template <typename A, typename T>
AMBER_HD inline A blend(const T* p, const LinearTap<A>& r, const LinearTap<A>& q, int64_t sh, int64_t sw) {
  const A t[2] = {blend_row<A>(p + r.i0 * sh, q, sw), blend_row<A>(p + r.i1 * sh, q, sw)};
  return blend_rows(r, t);
}
// An output element of volume p (element strides sd, sh, sw) from its plane tap e and row and
// column taps r and q: each of the two planes' pixels blended, then the planes (ATen's trilinear).
template <typename A, typename T>
AMBER_HD inline A blend3(const T* p, const LinearTap<A>& e, const LinearTap<A>& r, const LinearTap<A>& q, int64_t sd,
                         int64_t sh, int64_t sw) {
  return e.l0 * blend<A>(p + e.i0 * sd, r, q, sh, sw) + e.l1 * blend<A>(p + e.i1 * sd, r, q, sh, sw);
}
template <typename A, typename T>
AMBER_HD inline A blend(const T* p, const CubicTap<A>& r, const CubicTap<A>& q, int64_t sh, int64_t sw) {
  A t[4];
  for (int u = 0; u < 4; ++u) t[u] = blend_row<A>(p + r.i[u] * sh, q, sw);
  return blend_rows(r, t);
}

// ---- Antialiased resampling: upsample_bilinear2d_aa and upsample_bicubic2d_aa ----
// ATen's _upsample_bilinear2d_aa and _upsample_bicubic2d_aa (Pillow's resampling): output
// position dst averages the input positions of a window around its centre scale * (dst + 0.5),
// each weighted by the filter (bilinear's triangle, or Keys' cubic with a = -0.5) stretched by
// the scale where it is >= 1 (downsampling), the weights normalised to sum to 1; W is resampled
// first, then H. Computed as ATen computes them: in A, with its double intermediates.

// The filter at distance x: support 1 (bilinear) or 2 (bicubic).
template <bool Cubic, typename A>
AMBER_HD inline A aa_filter(A x) {
  const double v = x < A(0) ? -double(x) : double(x);
  if constexpr (Cubic) {
    constexpr double a = -0.5;
    if (v < 1.0) return A(((a + 2.0) * v - (a + 3.0)) * v * v + 1.0);
    if (v < 2.0) return A((((v - 5.0) * v + 8.0) * v - 4.0) * a);
    return A(0);
  } else {
    return v < 1.0 ? A(1.0 - v) : A(0);
  }
}

// Output position dst's window: input positions [lo, lo + n) and the sum of their raw weights.
template <typename A>
struct AaWindow {
  int64_t lo, n;
  A center, invscale, total;
};

// The raw (unnormalised) weight of input position w.lo + j.
template <bool Cubic, typename A>
AMBER_HD inline A aa_raw_weight(const AaWindow<A>& w, int64_t j) {
  return aa_filter<Cubic, A>(A((double(A(j + w.lo) - w.center) + 0.5) * double(w.invscale)));
}

// The window of output position dst along a dim of `in` positions; scale: linear_scale's.
template <bool Cubic, typename A>
AMBER_HD inline AaWindow<A> aa_window(int64_t dst, int64_t in, A scale) {
  const double half = Cubic ? 2.0 : 1.0;  // the filter's support
  const A support = scale >= A(1) ? A(half * double(scale)) : A(half);
  AaWindow<A> w{};
  w.center = A(double(scale) * (double(dst) + 0.5));
  w.invscale = scale >= A(1) ? A(1.0 / double(scale)) : A(1);
  const auto lo = int64_t(double(w.center - support) + 0.5), hi = int64_t(double(w.center + support) + 0.5);
  w.lo = lo > 0 ? lo : 0;
  w.n = (hi < in ? hi : in) - w.lo;
  if (w.n < 0) w.n = 0;
  for (int64_t j = 0; j < w.n; ++j) w.total += aa_raw_weight<Cubic, A>(w, j);
  return w;
}

// The normalised weight of input position w.lo + j.
template <bool Cubic, typename A>
AMBER_HD inline A aa_weight(const AaWindow<A>& w, int64_t j) {
  const A raw = aa_raw_weight<Cubic, A>(w, j);
  return w.total != A(0) ? raw / w.total : raw;
}

}  // namespace amber::resample
