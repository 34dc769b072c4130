// DirectConv (conv_direct.h): an implicit-GEMM f32 convolution on channels-last tensors. Output
// pixels are the product's rows, output channels its columns, the sum runs over (r, s, c) in the
// weights' KRSC order; tiles of 64 x 64 outputs (16 terms a step, 4 x 4 a thread), 128 x 64 or
// 128 x 128 (8 terms, 8 x 4 or 8 x 8), the step's operands through shared memory, the next
// step's loads in flight while the current one multiplies. Split, each slice's blocks write
// partial sums that a second kernel adds in slice order, with the bias and activation. The
// kernels and the launch policy are conv_direct_kernels.cuh's; this file launches them.

#include "amber/kernels/cuda/conv_direct.h"

#include "amber/kernels/cuda/conv_direct_kernels.cuh"

namespace amber::cuda {

bool direct_conv_fits(const DirectConv& d) { return direct::fits(d); }
void direct_conv_split(DirectConv& d, int sms) { direct::split(d, sms); }
size_t direct_conv_workspace(const DirectConv& d) { return direct::workspace(d); }

cudaError_t direct_conv(const DirectConv& d, const float* x, const float* w, const float* bias, int64_t bias_stride,
                        Act act, float lo, float hi, float* y, void* workspace, cudaStream_t stream) {
  using direct::kThreads;
  const direct::Launch l = direct::launch_of(d);
  float* partials = static_cast<float*>(workspace);
  float* out = l.splits > 1 ? partials : y;
  const bool partial = l.splits > 1;
  if (direct::rows_of(d) == 64)
    direct::tile_kernel<64, 64>
        <<<l.grid, kThreads, 0, stream>>>(l.g, x, w, bias, bias_stride, act, lo, hi, out, partial);
  else if (direct::cols_of(d) == 64)
    direct::tile_kernel<128, 64>
        <<<l.grid, kThreads, 0, stream>>>(l.g, x, w, bias, bias_stride, act, lo, hi, out, partial);
  else
    direct::tile_kernel<128, 128>
        <<<l.grid, kThreads, 0, stream>>>(l.g, x, w, bias, bias_stride, act, lo, hi, out, partial);
  if (partial)
    direct::sum_kernel<<<l.sum_blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(partials), l.splits, l.groups,
                                                         uint32_t(d.k), bias, bias_stride, act, lo, hi,
                                                         reinterpret_cast<float4*>(y));
  return cudaGetLastError();
}

}  // namespace amber::cuda
