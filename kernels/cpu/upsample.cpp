// CPU kernels for upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d (and the last two
// antialiased, _aa), upsample_nearest3d and upsample_trilinear3d: each output position's source
// elements and weights come from kernels/resample.h (ATen's rules, shared with the CUDA kernels)
// as tables built once per call; channels-last outputs run with the channel loop innermost. 4-D
// and 5-D inputs of any strides.

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

// Sizes and element strides of the input and output as (N, C, D, H, W): a 4-D pair has D = 1
// (stride 0).
struct Geometry {
  int64_t n, c, d, h, w, od, oh, ow;
  int64_t xs[5], ys[5];
  explicit Geometry(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
    int64_t xsz[5], ysz[5];
    for (int i = 0, k = 0; i < 5; ++i) {
      const bool absent = x.ndim == 4 && i == 2;  // the D a 4-D pair lacks
      xsz[i] = absent ? 1 : x.sizes[k];
      ysz[i] = absent ? 1 : y.sizes[k];
      xs[i] = absent ? 0 : x.strides[k];
      ys[i] = absent ? 0 : y.strides[k];
      k += absent ? 0 : 1;
    }
    n = xsz[0], c = xsz[1], d = xsz[2], h = xsz[3], w = xsz[4];
    od = ysz[2], oh = ysz[3], ow = ysz[4];
  }
  int64_t volume() const { return n * c * od * oh * ow; }
};

double scale_attr(const amber_kernel_args* a, int i) { return attr_none(a, i) ? 0.0 : attr_float(a, i); }

// Runs px(x_volume, d, row, col) for every output element of every (n, c) volume (a plane where
// D = 1), an output row per task; channels innermost where the output is channels-last.
template <typename T, typename Pixel>
void for_each_pixel(const amber_kernel_args* a, const Geometry& g, Pixel px) {
  const T* x = static_cast<const T*>(a->inputs[0].data);
  T* y = static_cast<T*>(a->outputs[0].data);
  const bool channels_last = g.ys[1] == 1 && g.c > 1;
  ThreadLimit limit(std::max(1, a->num_threads));
  const int64_t rows = g.od * g.oh;
  parallel_for(g.n * rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow * g.c)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / rows, od = r % rows / g.oh, oh = r % g.oh;
      const T* xn = x + n * g.xs[0];
      T* yr = y + n * g.ys[0] + od * g.ys[2] + oh * g.ys[3];
      if (channels_last) {
        for (int64_t ow = 0; ow < g.ow; ++ow)
          for (int64_t c = 0; c < g.c; ++c) yr[ow * g.ys[4] + c * g.ys[1]] = px(xn + c * g.xs[1], od, oh, ow);
      } else {
        for (int64_t c = 0; c < g.c; ++c)
          for (int64_t ow = 0; ow < g.ow; ++ow) yr[ow * g.ys[4] + c * g.ys[1]] = px(xn + c * g.xs[1], od, oh, ow);
      }
    }
  });
}

// upsample_nearest2d(self, output_size, scales_h, scales_w) and upsample_nearest3d(self,
// output_size, scales_d, scales_h, scales_w): each dim's source offsets as a table.
template <typename T>
struct NearestKernel {
  static int run(const amber_kernel_args* a) {
    namespace n2 = op_attrs::upsample_nearest2d;
    namespace n3 = op_attrs::upsample_nearest3d;
    const Geometry g(a);
    if (g.volume() == 0) return 0;
    const bool volumetric = a->inputs[0].ndim == 5;
    const double sd = volumetric ? scale_attr(a, n3::scales_d) : 0.0,
                 sh = scale_attr(a, volumetric ? n3::scales_h : n2::scales_h),
                 sw = scale_attr(a, volumetric ? n3::scales_w : n2::scales_w);
    auto table = [](int64_t in, int64_t out, double scale, int64_t stride) {  // element offsets
      std::vector<int64_t> t(static_cast<size_t>(out));
      for (int64_t i = 0; i < out; ++i) t[size_t(i)] = resample::nearest_source(i, in, out, scale) * stride;
      return t;
    };
    const std::vector<int64_t> planes = table(g.d, g.od, sd, g.xs[2]), rows = table(g.h, g.oh, sh, g.xs[3]),
                               cols = table(g.w, g.ow, sw, g.xs[4]);
    for_each_pixel<T>(a, g, [&](const T* v, int64_t d, int64_t i, int64_t j) {
      return v[planes[size_t(d)] + rows[size_t(i)] + cols[size_t(j)]];
    });
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
    for_each_pixel<T>(a, g, [&](const T* p, int64_t, int64_t i, int64_t j) {
      return T(resample::blend<A>(p, rows[size_t(i)], cols[size_t(j)], g.xs[3], g.xs[4]));
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
    for_each_pixel<T>(a, g, [&](const T* p, int64_t, int64_t i, int64_t j) {
      const A* rw = &rows.weights[rows.first[size_t(i)]];
      const A* cw = &cols.weights[cols.first[size_t(j)]];
      return T(resample::aa_blend<A>(
          p, rows.windows[size_t(i)], cols.windows[size_t(j)], g.xs[3], g.xs[4], [rw](int64_t u) { return rw[u]; },
          [cw](int64_t v) { return cw[v]; }));
    });
    return 0;
  }
};
// upsample_trilinear3d(self, output_size, align_corners, scales_d, scales_h, scales_w)
template <typename T>
struct TrilinearKernel {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::upsample_trilinear3d;
    const Geometry g(a);
    if (g.volume() == 0) return 0;
    const bool corners = attr_bool(a, at::align_corners);
    auto taps = [&](int64_t in, int64_t out, int scale_at) {
      const A step = resample::linear_scale<A>(in, out, corners, scale_attr(a, scale_at));
      std::vector<resample::LinearTap<A>> t(static_cast<size_t>(out));
      for (int64_t i = 0; i < out; ++i) t[size_t(i)] = resample::linear_source<A>(i, in, out, step, corners);
      return t;
    };
    const auto planes = taps(g.d, g.od, at::scales_d), rows = taps(g.h, g.oh, at::scales_h),
               cols = taps(g.w, g.ow, at::scales_w);
    for_each_pixel<T>(a, g, [&](const T* v, int64_t d, int64_t i, int64_t j) {
      return T(resample::blend3<A>(v, planes[size_t(d)], rows[size_t(i)], cols[size_t(j)], g.xs[2], g.xs[3], g.xs[4]));
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
  register_typed<NearestKernel>(ctypes::numeric{}, "upsample_nearest3d");
  register_typed<TrilinearKernel>(ctypes::floating{}, "upsample_trilinear3d");
  register_typed<BilinearKernel>(ctypes::floating{}, "upsample_bilinear2d");
  register_typed<BicubicKernel>(ctypes::floating{}, "upsample_bicubic2d");
  register_typed<BilinearAaKernel>(ctypes::floating{}, "upsample_bilinear2d_aa");
  register_typed<BicubicAaKernel>(ctypes::floating{}, "upsample_bicubic2d_aa");
}

}  // namespace
}  // namespace amber::cpu
