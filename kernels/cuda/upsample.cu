// The CUDA kernels for upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d (and the last
// two antialiased, _aa), upsample_nearest3d and upsample_trilinear3d, launched (device code in
// upsample_kernels.cuh; elements and weights from kernels/resample.h, ATen's rules and the CPU
// kernels' formulas): 4-D and 5-D tensors of any strides; f16 and bf16 blended in f32, rounded once.

#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/upsample_kernels.cuh"
#include "amber/kernels/resample.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace upsample;  // the kernels and their geometry (upsample_kernels.cuh)

double scale_attr(const amber_kernel_args* a, int i) {
  return a->attrs[i].kind == AMBER_ATTR_NONE ? 0.0 : a->attrs[i].f;
}

// upsample_nearest2d(self, output_size, scales_h, scales_w) and upsample_nearest3d(self,
// output_size, scales_d, scales_h, scales_w)
template <typename T>
struct NearestKernel {
  static int run(const amber_kernel_args* a) {
    namespace n2 = op_attrs::upsample_nearest2d;
    namespace n3 = op_attrs::upsample_nearest3d;
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const bool volumetric = a->inputs[0].ndim == 5;
    const double sd = volumetric ? scale_attr(a, n3::scales_d) : 0.0,
                 sh = scale_attr(a, volumetric ? n3::scales_h : n2::scales_h),
                 sw = scale_attr(a, volumetric ? n3::scales_w : n2::scales_w);
    DeviceScope scope(a->device);
    enqueue(a, &nearest_kernel<T>, dim3(grid_for(total(g))), dim3(256), static_cast<const T*>(a->inputs[0].data),
            static_cast<T*>(a->outputs[0].data), g, sd, sh, sw);
    return launched(a, volumetric ? "upsample_nearest3d" : "upsample_nearest2d");
  }
};

// upsample_trilinear3d(self, output_size, align_corners, scales_d, scales_h, scales_w)
template <typename T>
struct TrilinearKernel {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::upsample_trilinear3d;
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const bool corners = a->attrs[at::align_corners].i != 0;
    const A rd = resample::linear_scale<A>(g.d, g.od, corners, scale_attr(a, at::scales_d)),
            rh = resample::linear_scale<A>(g.h, g.oh, corners, scale_attr(a, at::scales_h)),
            rw = resample::linear_scale<A>(g.w, g.ow, corners, scale_attr(a, at::scales_w));
    DeviceScope scope(a->device);
    enqueue(a, &trilinear_kernel<T, A>, dim3(grid_for(total(g))), dim3(256), static_cast<const T*>(a->inputs[0].data),
            static_cast<T*>(a->outputs[0].data), g, rd, rh, rw, corners);
    return launched(a, "upsample_trilinear3d");
  }
};

// upsample_bilinear2d / upsample_bicubic2d (Aa: their _aa forms)(self, output_size, align_corners,
// scales_h, scales_w)
template <typename T, bool Cubic, bool Aa>
struct Interpolating {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace at = resample::interp_attr;
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const bool corners = a->attrs[at::align_corners].i != 0;
    const A rh = resample::linear_scale<A>(g.h, g.oh, corners, scale_attr(a, at::scales_h)),
            rw = resample::linear_scale<A>(g.w, g.ow, corners, scale_attr(a, at::scales_w));
    const T* x = static_cast<const T*>(a->inputs[0].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    DeviceScope scope(a->device);
    if constexpr (Aa)
      enqueue(a, &antialiased_kernel<T, A, Cubic>, dim3(grid_for(total(g))), dim3(256), x, y, g, rh, rw);
    else
      enqueue(a, &interpolating_kernel<T, A, Cubic>, dim3(grid_for(total(g))), dim3(256), x, y, g, rh, rw, corners);
    return launched(a, Aa ? (Cubic ? "upsample_bicubic2d_aa" : "upsample_bilinear2d_aa")
                          : (Cubic ? "upsample_bicubic2d" : "upsample_bilinear2d"));
  }
};
template <typename T>
using BilinearKernel = Interpolating<T, false, false>;
template <typename T>
using BicubicKernel = Interpolating<T, true, false>;
template <typename T>
using BilinearAaKernel = Interpolating<T, false, true>;
template <typename T>
using BicubicAaKernel = Interpolating<T, true, true>;

AMBER_CUDA_KERNELS(upsample) {
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest2d");
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest3d");
  register_typed<TrilinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_trilinear3d");
  register_typed<BilinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d");
  register_typed<BicubicKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d");
  register_typed<BilinearAaKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d_aa");
  register_typed<BicubicAaKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d_aa");
}

}  // namespace
}  // namespace amber::cuda
