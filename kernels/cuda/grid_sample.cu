// CUDA kernel for grid_sample: one thread per output pixel (sampling_kernels.cuh; ATen's rules
// from kernels/grid_sample.h, shared with the CPU kernel, each pixel's taps computed once for all
// its channels). 4-D input and grid of any strides; f16 and bf16 sampled in f32 (the header's
// OpMath) and rounded once.

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/sampling_kernels.cuh"

namespace amber::cuda {
namespace {

using sampling::grid_sample_kernel;

template <typename T>
struct GridSampleKernel {  // grid_sample(input, grid, mode, padding_mode, align_corners)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    const int64_t n = y.sizes[0], c = y.sizes[1], oh = y.sizes[2], ow = y.sizes[3];
    if (n * oh * ow == 0 || c == 0) return 0;
    DeviceScope scope(a->device);
    enqueue(a, &grid_sample_kernel<T>, dim3(grid_for(n * oh * ow)), dim3(256), static_cast<const T*>(a->inputs[0].data),
            static_cast<const T*>(a->inputs[1].data), static_cast<T*>(y.data), grid::views_of(a), grid::params_of(a), n,
            oh, ow);
    return launched(a, "grid_sample");
  }
};

AMBER_CUDA_KERNELS(grid_sample) {
  register_typed<GridSampleKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("grid_sample");
}

}  // namespace
}  // namespace amber::cuda
