// DirectConv (conv_direct.h): an implicit-GEMM f32 convolution on channels-last tensors. Output
// pixels are the product's rows, output channels its columns, the sum runs over (r, s, c) in the
// weights' KRSC order; tiles of 64 x 64 outputs (16 terms a step, 4 x 4 a thread), 128 x 64 or
// 128 x 128 (8 terms, 8 x 4 or 8 x 8), the step's operands through shared memory (two buffers, one
// barrier a step), the next step's loads in flight while the current one multiplies. Split, each
// slice's blocks write partial sums that a second kernel adds in slice order, with the bias and
// activation. The kernels and the launch policy are conv_direct_kernels.cuh's; this file launches
// them.

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
