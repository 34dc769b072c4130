// CPU kernels for upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d and the last two
// antialiased (_aa): each output row's and column's source pixels and weights come from
// kernels/resample.h (ATen's rules, shared with the CUDA kernels) as tables built once per call;
// channels-last outputs run with the channel loop innermost. 4-D inputs of any strides.

#include <algorithm>
#include <type_traits>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/resample.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// Sizes and strides of the 4-D input and output.
struct Geometry {
  int64_t n, c, h, w, oh, ow;
  const int64_t *xs, *ys;
  explicit Geometry(const amber_kernel_args* a)
      : n(a->inputs[0].sizes[0]),
        c(a->inputs[0].sizes[1]),
        h(a->inputs[0].sizes[2]),
        w(a->inputs[0].sizes[3]),
        oh(a->outputs[0].sizes[2]),
        ow(a->outputs[0].sizes[3]),
        xs(a->inputs[0].strides),
        ys(a->outputs[0].strides) {}
  int64_t volume() const { return n * c * oh * ow; }
};

double scale_attr(const amber_kernel_args* a, int i) { return attr_none(a, i) ? 0.0 : attr_float(a, i); }

// Runs px(x_plane, y_plane, row, col) for every output pixel of every (n, c) plane, a row of
// output per task; channels innermost where the output is channels-last.
template <typename T, typename Pixel>
void for_each_pixel(const amber_kernel_args* a, const Geometry& g, Pixel px) {
  const T* x = static_cast<const T*>(a->inputs[0].data);
  T* y = static_cast<T*>(a->outputs[0].data);
  const bool channels_last = g.ys[1] == 1 && g.c > 1;
  ThreadLimit limit(std::max(1, a->num_threads));
  parallel_for(g.n * g.oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow * g.c)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / g.oh, oh = r % g.oh;
      const T* xn = x + n * g.xs[0];
      T* yr = y + n * g.ys[0] + oh * g.ys[2];
      if (channels_last) {
        for (int64_t ow = 0; ow < g.ow; ++ow)
          for (int64_t c = 0; c < g.c; ++c) yr[ow * g.ys[3] + c * g.ys[1]] = px(xn + c * g.xs[1], oh, ow);
      } else {
        for (int64_t c = 0; c < g.c; ++c)
          for (int64_t ow = 0; ow < g.ow; ++ow) yr[ow * g.ys[3] + c * g.ys[1]] = px(xn + c * g.xs[1], oh, ow);
      }
    }
  });
}

template <typename T>
struct NearestKernel {  // upsample_nearest2d(self, output_size, scales_h, scales_w)
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::upsample_nearest2d;
    const Geometry g(a);
    if (g.volume() == 0) return 0;
    std::vector<int64_t> rows(size_t(g.oh)), cols(size_t(g.ow));  // element offsets in a plane
    const double sh = scale_attr(a, at::scales_h), sw = scale_attr(a, at::scales_w);
    for (int64_t i = 0; i < g.oh; ++i) rows[size_t(i)] = resample::nearest_source(i, g.h, g.oh, sh) * g.xs[2];
    for (int64_t j = 0; j < g.ow; ++j) cols[size_t(j)] = resample::nearest_source(j, g.w, g.ow, sw) * g.xs[3];
    for_each_pixel<T>(a, g,
                      [&](const T* plane, int64_t i, int64_t j) { return plane[rows[size_t(i)] + cols[size_t(j)]]; });
    return 0;
  }
};

// upsample_bilinear2d / upsample_bicubic2d(self, output_size, align_corners, scales_h, scales_w)
template <typename T, bool Cubic>
struct Interpolating {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace at = resample::interp_attr;
    const Geometry g(a);
    if (g.volume() == 0) return 0;
    const bool corners = attr_bool(a, at::align_corners);
    const A rh = resample::linear_scale<A>(g.h, g.oh, corners, scale_attr(a, at::scales_h)),
            rw = resample::linear_scale<A>(g.w, g.ow, corners, scale_attr(a, at::scales_w));
    using Tap = decltype(resample::tap_of<Cubic, A>(0, 1, 1, A(1), false));
    std::vector<Tap> rows(size_t(g.oh)), cols(size_t(g.ow));
    for (int64_t i = 0; i < g.oh; ++i) rows[size_t(i)] = resample::tap_of<Cubic, A>(i, g.h, g.oh, rh, corners);
    for (int64_t j = 0; j < g.ow; ++j) cols[size_t(j)] = resample::tap_of<Cubic, A>(j, g.w, g.ow, rw, corners);
    for_each_pixel<T>(a, g, [&](const T* p, int64_t i, int64_t j) {
      return T(resample::blend<A>(p, rows[size_t(i)], cols[size_t(j)], g.xs[2], g.xs[3]));
    });
    return 0;
  }
};
template <typename T>
using BilinearKernel = Interpolating<T, false>;
template <typename T>
using BicubicKernel = Interpolating<T, true>;

// upsample_bilinear2d_aa / upsample_bicubic2d_aa(self, output_size, align_corners, scales_h,
// scales_w): each output row's and column's window and normalised weights as a table.
template <typename T, bool Cubic>
struct Antialiased {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's scalar_t
  // The windows of `out` positions along a dim of `in`, their weights from weights[first[i]].
  struct Table {
    std::vector<resample::AaWindow<A>> windows;
    std::vector<size_t> first;
    std::vector<A> weights;
    Table(int64_t in, int64_t out, A scale) {
      for (int64_t i = 0; i < out; ++i) {
        windows.push_back(resample::aa_window<Cubic, A>(i, in, scale));
        first.push_back(weights.size());
        for (int64_t j = 0; j < windows.back().n; ++j)
          weights.push_back(resample::aa_weight<Cubic, A>(windows.back(), j));
      }
    }
  };
  static int run(const amber_kernel_args* a) {
    namespace at = resample::interp_attr;
    const Geometry g(a);
    if (g.volume() == 0) return 0;
    const bool corners = attr_bool(a, at::align_corners);
    const Table rows(g.h, g.oh, resample::linear_scale<A>(g.h, g.oh, corners, scale_attr(a, at::scales_h))),
        cols(g.w, g.ow, resample::linear_scale<A>(g.w, g.ow, corners, scale_attr(a, at::scales_w)));
    for_each_pixel<T>(a, g, [&](const T* p, int64_t i, int64_t j) {
      const A* rw = &rows.weights[rows.first[size_t(i)]];
      const A* cw = &cols.weights[cols.first[size_t(j)]];
      return T(resample::aa_blend<A>(
          p, rows.windows[size_t(i)], cols.windows[size_t(j)], g.xs[2], g.xs[3], [rw](int64_t u) { return rw[u]; },
          [cw](int64_t v) { return cw[v]; }));
    });
    return 0;
  }
};
template <typename T>
using BilinearAaKernel = Antialiased<T, false>;
template <typename T>
using BicubicAaKernel = Antialiased<T, true>;

AMBER_CPU_KERNELS(upsample) {
  register_typed<NearestKernel>(ctypes::numeric{}, "upsample_nearest2d");
  register_typed<BilinearKernel>(ctypes::floating{}, "upsample_bilinear2d");
  register_typed<BicubicKernel>(ctypes::floating{}, "upsample_bicubic2d");
  register_typed<BilinearAaKernel>(ctypes::floating{}, "upsample_bilinear2d_aa");
  register_typed<BicubicAaKernel>(ctypes::floating{}, "upsample_bicubic2d_aa");
}

}  // namespace
}  // namespace amber::cpu
