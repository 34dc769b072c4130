// CUDA kernel for roi_align: one thread per output bin (sampling_kernels.cuh; torchvision's rules
// from kernels/roi_align.h, shared with the CPU kernel; f16 and bf16 computed in f32, each bin
// rounded once). A box whose batch index is outside the input's batch, or whose sample grid
// passes 2^31 - 1 a side, gives zeros (the CPU refuses both; reporting them here would cost a
// read back per call).

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/sampling_kernels.cuh"

namespace amber::cuda {
namespace {

using sampling::roi_align_kernel;

template <typename T>
struct RoiAlignKernel {  // roi_align(input, boxes, output_size, spatial_scale, sampling_ratio, aligned)
  static int run(const amber_kernel_args* a) {
    const roi::Args g = roi::args_of(a);
    const int64_t total = g.k * g.c * g.oh * g.ow;
    if (total == 0) return 0;
    DeviceScope scope(a->device);
    enqueue(a, &roi_align_kernel<T>, dim3(grid_for(total)), dim3(256), static_cast<const T*>(a->inputs[0].data),
            static_cast<const T*>(a->inputs[1].data), static_cast<T*>(a->outputs[0].data), g);
    return launched(a, "roi_align");
  }
};

AMBER_CUDA_KERNELS(roi_align) { register_typed<RoiAlignKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("roi_align"); }

}  // namespace
}  // namespace amber::cuda
