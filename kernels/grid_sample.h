// grid_sample's sampling rule, as ATen's GridSampler.h computes it (unnormalize, clip and
// reflect coordinates, the bilinear, nearest and bicubic taps, one output pixel over all its
// channels), and the op's attributes read once: shared by the CPU and CUDA kernels so both
// read the same pixels with the same weights; they differ only in how pixels are spread.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/kernels/hd.h"
#include "amber/op_attrs.h"

namespace amber::grid {

// The attributes' choices (amber_attr::i, the index in the op table's list).
enum class Mode {
  bilinear = op_attrs::grid_sample::mode_is::bilinear,
  nearest = op_attrs::grid_sample::mode_is::nearest,
  bicubic = op_attrs::grid_sample::mode_is::bicubic
};
enum class Padding {
  zeros = op_attrs::grid_sample::padding_mode_is::zeros,
  border = op_attrs::grid_sample::padding_mode_is::border,
  reflection = op_attrs::grid_sample::padding_mode_is::reflection
};

// The arithmetic type: float for f32, double for f64, as ATen's opmath type.
template <typename T>
using OpMath = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The op's attributes.
struct Params {
  Mode mode;
  Padding padding;
  bool align_corners;
};
inline Params params_of(const amber_kernel_args* a) {
  namespace at = op_attrs::grid_sample;
  return {Mode(a->attrs[at::mode].i), Padding(a->attrs[at::padding_mode].i), a->attrs[at::align_corners].i != 0};
}

// Sizes and element strides of input x [n, c, h, w], grid g [n, oh, ow, 2] and output y.
struct Views {
  int64_t c, h, w;
  int64_t xs[4], gs[4], ys[4];
};
inline Views views_of(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &g = a->inputs[1], &y = a->outputs[0];
  Views v{y.sizes[1], x.sizes[2], x.sizes[3], {}, {}, {}};
  for (int d = 0; d < 4; ++d) v.xs[d] = x.strides[d], v.gs[d] = g.strides[d], v.ys[d] = y.strides[d];
  return v;
}

// A grid value in [-1, 1] as a position in pixels along a dim of `size`.
template <typename A>
AMBER_HD inline A unnormalize(A coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) / 2 * A(size - 1) : ((coord + 1) * A(size) - 1) / 2;
}

template <typename A>
AMBER_HD inline A clip(A x, int64_t size) {
  const A hi = A(size - 1);
  return x < 0 ? A(0) : x > hi ? hi : x;
}

// x mirrored into [twice_low / 2, twice_high / 2].
template <typename A>
AMBER_HD inline A reflect(A x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return A(0);
  const A lo = A(twice_low) / 2, span = A(twice_high - twice_low) / 2;
  x = A(fabs(double(x - lo)));
  const A extra = A(fmod(double(x), double(span)));
  const bool even = fmod(floor(double(x / span)), 2.0) == 0;  // NaN and infinity: not even, then clipped
  return even ? extra + lo : span - extra + lo;
}

// A position as a pixel index; NaN and positions far outside any input give an index far
// outside too (no pixel, nor its neighbours).
template <typename A>
AMBER_HD inline int64_t to_index(A v) {
  return v >= A(-1e15) && v <= A(1e15) ? int64_t(v) : -(int64_t(1) << 60);
}

// The padding mode applied to a position (ATen's compute_coordinates).
template <typename A>
AMBER_HD inline A pad_coordinate(A x, int64_t size, Padding padding, bool align_corners) {
  if (padding == Padding::border) return clip(x, size);
  if (padding == Padding::reflection) {
    x = align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1);
    return clip(x, size);
  }
  return x;
}

// The input pixels one output pixel reads and their weights; taps outside the input (zeros
// padding) are left out.
template <typename A>
struct Taps {
  int count = 0;
  int64_t y[16], x[16];
  A w[16];
  AMBER_HD void add(int64_t iy, int64_t ix, A weight, int64_t h, int64_t wd) {
    if (iy < 0 || iy >= h || ix < 0 || ix >= wd) return;
    y[count] = iy;
    x[count] = ix;
    w[count] = weight;
    ++count;
  }
};

// Keys' cubic convolution with A = -0.75, ATen's bicubic weights for offset t in [0, 1].
template <typename A>
AMBER_HD inline void cubic_weights(A t, A* w) {
  const A a = A(-0.75);
  auto near = [a](A x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [a](A x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// The taps of grid point (gx, gy) over an h x wd input.
template <typename A>
AMBER_HD inline Taps<A> taps(A gx, A gy, int64_t h, int64_t wd, Mode mode, Padding padding, bool align_corners) {
  Taps<A> t;
  if (mode == Mode::bicubic) {  // padding applied to each tap's position
    const A ix = unnormalize(gx, wd, align_corners), iy = unnormalize(gy, h, align_corners);
    const A fx = A(floor(double(ix))), fy = A(floor(double(iy)));
    A wx[4], wy[4];
    cubic_weights(ix - fx, wx);
    cubic_weights(iy - fy, wy);
    for (int i = 0; i < 4; ++i) {
      const int64_t py = to_index(pad_coordinate(fy - 1 + A(i), h, padding, align_corners));
      for (int j = 0; j < 4; ++j) {
        const int64_t px = to_index(pad_coordinate(fx - 1 + A(j), wd, padding, align_corners));
        t.add(py, px, wy[i] * wx[j], h, wd);
      }
    }
    return t;
  }
  const A ix = pad_coordinate(unnormalize(gx, wd, align_corners), wd, padding, align_corners);
  const A iy = pad_coordinate(unnormalize(gy, h, align_corners), h, padding, align_corners);
  if (mode == Mode::nearest) {
    t.add(to_index(A(nearbyint(double(iy)))), to_index(A(nearbyint(double(ix)))), A(1), h, wd);
    return t;
  }
  const A fx = A(floor(double(ix))), fy = A(floor(double(iy)));
  const int64_t x0 = to_index(fx), y0 = to_index(fy);
  const A rx = ix - fx, ry = iy - fy;
  t.add(y0, x0, (1 - rx) * (1 - ry), h, wd);
  t.add(y0, x0 + 1, rx * (1 - ry), h, wd);
  t.add(y0 + 1, x0, (1 - rx) * ry, h, wd);
  t.add(y0 + 1, x0 + 1, rx * ry, h, wd);
  return t;
}

// One output value: plane is one (n, c) input plane with element strides sh, sw.
template <typename A, typename T>
AMBER_HD inline A sample(const T* plane, const Taps<A>& t, int64_t sh, int64_t sw) {
  A out = 0;
  for (int k = 0; k < t.count; ++k) out += t.w[k] * A(plane[t.y[k] * sh + t.x[k] * sw]);
  return out;
}

// Output pixel (n, i, j) over every channel: its taps computed once from its grid point.
template <typename T>
AMBER_HD inline void sample_pixel(const T* x, const T* g, T* y, const Views& v, const Params& p, int64_t n, int64_t i,
                                  int64_t j) {
  using A = OpMath<T>;
  const T* gp = g + n * v.gs[0] + i * v.gs[1] + j * v.gs[2];
  const Taps<A> t = taps<A>(A(gp[0]), A(gp[v.gs[3]]), v.h, v.w, p.mode, p.padding, p.align_corners);
  for (int64_t c = 0; c < v.c; ++c)
    y[n * v.ys[0] + c * v.ys[1] + i * v.ys[2] + j * v.ys[3]] =
        T(sample<A>(x + n * v.xs[0] + c * v.xs[1], t, v.xs[2], v.xs[3]));
}

}  // namespace amber::grid
