// CUDA kernel for grid_sample: one thread per output pixel (kernels/grid_sample.h, ATen's
// rules, shared with the CPU kernel, each pixel's taps computed once for all its channels).
// 4-D input and grid of any strides; f16 and bf16 sampled in f32 (the header's OpMath) and
// rounded once.

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/grid_sample.h"

namespace amber::cuda {
namespace {

template <typename T>
__global__ void grid_sample_kernel(const T* x, const T* g, T* y, grid::Views v, grid::Params p, int64_t n, int64_t oh,
                                   int64_t ow) {
  const int64_t total = n * oh * ow;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < total; q += int64_t(gridDim.x) * blockDim.x)
    grid::sample_pixel(x, g, y, v, p, q / (ow * oh), (q / ow) % oh, q % ow);
}

template <typename T>
struct GridSampleKernel {  // grid_sample(input, grid, mode, padding_mode, align_corners)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    const int64_t n = y.sizes[0], c = y.sizes[1], oh = y.sizes[2], ow = y.sizes[3];
    if (n * oh * ow == 0 || c == 0) return 0;
    DeviceScope scope(a->device);
    grid_sample_kernel<T><<<grid_for(n * oh * ow), 256, 0, stream_of(a)>>>(
        static_cast<const T*>(a->inputs[0].data), static_cast<const T*>(a->inputs[1].data), static_cast<T*>(y.data),
        grid::views_of(a), grid::params_of(a), n, oh, ow);
    return launched(a, "grid_sample");
  }
};

AMBER_CUDA_KERNELS(grid_sample) {
  register_typed<GridSampleKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("grid_sample");
}

}  // namespace
}  // namespace amber::cuda
