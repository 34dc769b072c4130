// CUDA kernel for roi_align: one thread per output bin (kernels/roi_align.h, torchvision's
// rules, shared with the CPU kernel; f16 and bf16 computed in f32, each bin rounded once). A box
// whose batch index is outside the input's batch, or
// whose sample grid passes 2^31 - 1 a side, gives zeros (the CPU refuses both; reporting them
// here would cost a read back per call).

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/roi_align.h"

namespace amber::cuda {
namespace {

template <typename T>
__global__ void roi_align_kernel(const T* x, const T* boxes, T* y, roi::Args g) {
  const int64_t total = g.k * g.c * g.oh * g.ow;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < total; q += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pw = q % g.ow, ph = q / g.ow % g.oh, c = q / (g.ow * g.oh) % g.c, k = q / (g.ow * g.oh * g.c);
    const int64_t batch = roi::batch_of(boxes, g, k);
    roi::Acc<T> v = 0;
    if (batch >= 0) v = roi::bin_value(x + batch * g.xs[0] + c * g.xs[1], g, roi::box_of(boxes, g, k), ph, pw);
    y[k * g.ys[0] + c * g.ys[1] + ph * g.ys[2] + pw * g.ys[3]] = cast_value<T>(v);
  }
}

template <typename T>
struct RoiAlignKernel {  // roi_align(input, boxes, output_size, spatial_scale, sampling_ratio, aligned)
  static int run(const amber_kernel_args* a) {
    const roi::Args g = roi::args_of(a);
    const int64_t total = g.k * g.c * g.oh * g.ow;
    if (total == 0) return 0;
    DeviceScope scope(a->device);
    roi_align_kernel<T><<<grid_for(total), 256, 0, stream_of(a)>>>(static_cast<const T*>(a->inputs[0].data),
                                                                   static_cast<const T*>(a->inputs[1].data),
                                                                   static_cast<T*>(a->outputs[0].data), g);
    return launched(a, "roi_align");
  }
};

AMBER_CUDA_KERNELS(roi_align) { register_typed<RoiAlignKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("roi_align"); }

}  // namespace
}  // namespace amber::cuda
