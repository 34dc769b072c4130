// CUDA kernels for upsample_nearest2d, upsample_bilinear2d and upsample_bicubic2d: one thread per output element,
// channels fastest for channels-last outputs, source pixels and weights from
// kernels/resample.h (ATen's rules, the CPU kernels' formulas). 4-D tensors of any strides; f16 and bf16
// blended in f32 and rounded once.

#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/resample.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

struct Geometry {  // sizes and element strides of the 4-D input and output
  int64_t n, c, h, w, oh, ow;
  int64_t xs[4], ys[4];
  bool channels_last;  // the output's channels are adjacent: threads walk c fastest (coalesced)
};
Geometry geometry(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
  Geometry g{x.sizes[0], x.sizes[1], x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3], {}, {}, false};
  for (int i = 0; i < 4; ++i) g.xs[i] = x.strides[i], g.ys[i] = y.strides[i];
  g.channels_last = g.c > 1 && g.ys[1] == 1;
  return g;
}

double scale_attr(const amber_kernel_args* a, int i) {
  return a->attrs[i].kind == AMBER_ATTR_NONE ? 0.0 : a->attrs[i].f;
}

// Output element i's (n, c, oh, ow), in the order threads walk them.
__device__ void position(const Geometry& g, int64_t i, int64_t& n, int64_t& c, int64_t& oh, int64_t& ow) {
  c = 0;
  if (g.channels_last) c = i % g.c, i /= g.c;
  ow = i % g.ow, i /= g.ow;
  oh = i % g.oh, i /= g.oh;
  if (!g.channels_last) c = i % g.c, i /= g.c;
  n = i;
}

template <typename T>
__global__ void nearest_kernel(const T* x, T* y, Geometry g, double sh, double sw) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    position(g, i, n, c, oh, ow);
    const int64_t ih = resample::nearest_source(oh, g.h, g.oh, sh), iw = resample::nearest_source(ow, g.w, g.ow, sw);
    y[n * g.ys[0] + c * g.ys[1] + oh * g.ys[2] + ow * g.ys[3]] =
        x[n * g.xs[0] + c * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]];
  }
}

template <typename T, typename A, bool Cubic>
__global__ void interpolating_kernel(const T* x, T* y, Geometry g, A rh, A rw, bool corners) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    position(g, i, n, c, oh, ow);
    const auto r = resample::tap_of<Cubic, A>(oh, g.h, g.oh, rh, corners),
               q = resample::tap_of<Cubic, A>(ow, g.w, g.ow, rw, corners);
    y[n * g.ys[0] + c * g.ys[1] + oh * g.ys[2] + ow * g.ys[3]] =
        cast_value<T>(resample::blend<A>(x + n * g.xs[0] + c * g.xs[1], r, q, g.xs[2], g.xs[3]));
  }
}

template <typename T>
struct NearestKernel {  // upsample_nearest2d(self, output_size, scales_h, scales_w)
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::upsample_nearest2d;
    const Geometry g = geometry(a);
    const int64_t total = g.n * g.c * g.oh * g.ow;
    if (total == 0) return 0;
    DeviceScope scope(a->device);
    nearest_kernel<T><<<grid_for(total), 256, 0, stream_of(a)>>>(
        static_cast<const T*>(a->inputs[0].data), static_cast<T*>(a->outputs[0].data), g, scale_attr(a, at::scales_h),
        scale_attr(a, at::scales_w));
    return launched(a, "upsample_nearest2d");
  }
};

// upsample_bilinear2d / upsample_bicubic2d(self, output_size, align_corners, scales_h, scales_w)
template <typename T, bool Cubic>
struct Interpolating {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static constexpr int kCorners = Cubic ? op_attrs::upsample_bicubic2d::align_corners
                                        : op_attrs::upsample_bilinear2d::align_corners,
                       kScalesH =
                           Cubic ? op_attrs::upsample_bicubic2d::scales_h : op_attrs::upsample_bilinear2d::scales_h,
                       kScalesW =
                           Cubic ? op_attrs::upsample_bicubic2d::scales_w : op_attrs::upsample_bilinear2d::scales_w;
  static int run(const amber_kernel_args* a) {
    const Geometry g = geometry(a);
    const int64_t total = g.n * g.c * g.oh * g.ow;
    if (total == 0) return 0;
    const bool corners = a->attrs[kCorners].i != 0;
    const A rh = resample::linear_scale<A>(g.h, g.oh, corners, scale_attr(a, kScalesH)),
            rw = resample::linear_scale<A>(g.w, g.ow, corners, scale_attr(a, kScalesW));
    const T* x = static_cast<const T*>(a->inputs[0].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    DeviceScope scope(a->device);
    interpolating_kernel<T, A, Cubic><<<grid_for(total), 256, 0, stream_of(a)>>>(x, y, g, rh, rw, corners);
    return launched(a, Cubic ? "upsample_bicubic2d" : "upsample_bilinear2d");
  }
};
template <typename T>
using BilinearKernel = Interpolating<T, false>;
template <typename T>
using BicubicKernel = Interpolating<T, true>;

AMBER_CUDA_KERNELS(upsample) {
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest2d");
  register_typed<BilinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d");
  register_typed<BicubicKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d");
}

}  // namespace
}  // namespace amber::cuda
