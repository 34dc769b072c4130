// DirectConv (conv_direct.h), launched: an implicit-GEMM f32 convolution on channels-last tensors
// (output pixels the product's rows, output channels its columns, the sum over the weights' KRSC
// order). Its tiles, double-buffered steps, split sums and launch policy are
// conv_direct_kernels.cuh's; this file queues them on a stream.

#include "amber/kernels/cuda/conv_direct.h"

#include "amber/kernels/cuda/conv_direct_kernels.cuh"

namespace amber::cuda {

bool direct_conv_fits(const DirectConv& d) { return direct::fits(d); }
void direct_conv_split(DirectConv& d, int sms) { direct::split(d, sms); }
size_t direct_conv_workspace(const DirectConv& d) { return direct::workspace(d); }

cudaError_t direct_conv(const DirectConv& d, const float* x, const float* w, const float* bias, int64_t bias_stride,
                        Act act, float lo, float hi, float* y, void* workspace, cudaStream_t stream) {
  direct::enqueue(
      d, direct::launch_of(d),
      [stream](auto kernel, dim3 grid, dim3 block, auto... args) { kernel<<<grid, block, 0, stream>>>(args...); }, x, w,
      bias, bias_stride, act, lo, hi, y, static_cast<float*>(workspace));
  return cudaGetLastError();
}

}  // namespace amber::cuda
