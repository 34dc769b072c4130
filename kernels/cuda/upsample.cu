// The CUDA kernels for upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d (and the last
// two antialiased, _aa), upsample_nearest3d and upsample_trilinear3d, launched (device code in
// upsample_kernels.cuh; elements and weights from kernels/resample.h, ATen's rules and the CPU
// kernels' formulas): 4-D and 5-D tensors of any strides; f16 and bf16 blended in f32, rounded once.

#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/upsample_kernels.cuh"
#include "amber/kernels/resample.h"

namespace amber::cuda {
namespace {

using namespace upsample;  // the kernels and their geometry (upsample_kernels.cuh)

// upsample_nearest2d(self, output_size, scales_h, scales_w) and upsample_nearest3d(self,
// output_size, scales_d, scales_h, scales_w)
template <typename T>
struct NearestKernel {
  static int run(const amber_kernel_args* a) {
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const resample::ResizeAttrs& r = resample::resize_attrs::nearest(a->inputs[0].ndim);
    DeviceScope scope(a->device);
    enqueue(a, &nearest_kernel<T>, dim3(grid_for(total(g))), dim3(256), static_cast<const T*>(a->inputs[0].data),
            static_cast<T*>(a->outputs[0].data), g, resample::scale_of(a, r, 0), resample::scale_of(a, r, 1),
            resample::scale_of(a, r, 2));
    return launched(a, a->inputs[0].ndim == 5 ? "upsample_nearest3d" : "upsample_nearest2d");
  }
};

// upsample_bilinear2d / upsample_bicubic2d (Aa: their _aa forms)(self, output_size, align_corners,
// scales_h, scales_w) and upsample_trilinear3d(self, output_size, align_corners, scales_d,
// scales_h, scales_w), told apart by the input's dims.
template <typename T, bool Cubic, bool Aa>
struct Interpolating {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace ra = resample::resize_attrs;
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const bool volumetric = a->inputs[0].ndim == 5;
    const resample::ResizeAttrs& r = volumetric ? ra::trilinear3d : ra::interp2d;
    const bool corners = resample::align_corners_of(a, r);
    const A rd = resample::linear_scale<A>(g.d, g.od, corners, resample::scale_of(a, r, 0)),
            rh = resample::linear_scale<A>(g.h, g.oh, corners, resample::scale_of(a, r, 1)),
            rw = resample::linear_scale<A>(g.w, g.ow, corners, resample::scale_of(a, r, 2));
    const T* x = static_cast<const T*>(a->inputs[0].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    DeviceScope scope(a->device);
    if constexpr (Aa)
      enqueue(a, &antialiased_kernel<T, A, Cubic>, dim3(grid_for(total(g))), dim3(256), x, y, g, rh, rw);
    else
      enqueue(a, &interpolating_kernel<T, A, Cubic>, dim3(grid_for(total(g))), dim3(256), x, y, g, rd, rh, rw, corners,
              volumetric);
    return launched(a, Aa           ? (Cubic ? "upsample_bicubic2d_aa" : "upsample_bilinear2d_aa")
                       : Cubic      ? "upsample_bicubic2d"
                       : volumetric ? "upsample_trilinear3d"
                                    : "upsample_bilinear2d");
  }
};
template <typename T>
using LinearKernel = Interpolating<T, false, false>;
template <typename T>
using CubicKernel = Interpolating<T, true, false>;
template <typename T>
using BilinearAaKernel = Interpolating<T, false, true>;
template <typename T>
using BicubicAaKernel = Interpolating<T, true, true>;

AMBER_CUDA_KERNELS(upsample) {
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest2d");
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest3d");
  register_typed<LinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_trilinear3d");
  register_typed<LinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d");
  register_typed<CubicKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d");
  register_typed<BilinearAaKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d_aa");
  register_typed<BicubicAaKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d_aa");
}

}  // namespace
}  // namespace amber::cuda
