// Amber's own f32 convolution (conv_direct.cu) for what cuDNN's FP32 FMA algorithms serve worst:
// small batches of channels-last tensors, where their implicit GEMMs leave most of the GPU idle
// (on an H200, 170-220 us for each of ResNet-18's layer3/layer4 3x3 convolutions at batch 1). An
// implicit GEMM of its own whose sum over R * S * C is split across blocks when the output alone
// gives too few, the slices' partial sums added in order with the bias and activation after.
// conv.cu times it against cuDNN's choice at setup and takes it where faster.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "amber/kernels/cuda/activation.cuh"

namespace amber::cuda {

struct DirectConv {
  int n = 0, h = 0, w = 0, c = 0;  // the input, dense channels-last
  int k = 0, r = 0, s = 0;         // the weights, dense [K, R, S, C]
  int p = 0, q = 0;                // the output's height and width (dense channels-last, [N, P, Q, K])
  int stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1};
  int tile_m = 64, tile_n = 64;  // the output tile: 64 x 64, 128 x 64 or 128 x 128 (pixels x channels)
  int splits = 1;                // slices of the sum over R * S * C, each on blocks of its own (direct_conv_split)
};

// Whether the kernel takes the convolution (groups of one): C and K multiples of four (16-byte
// loads and stores), every index within 32 bits.
bool direct_conv_fits(const DirectConv& d);

// Sets d.splits for d's tile and a GPU of `sms` multiprocessors: enough blocks for two of them each,
// each slice at least four steps of the sum.
void direct_conv_split(DirectConv& d, int sms);

// Workspace bytes a call takes: the slices' partial sums when split, else none.
size_t direct_conv_workspace(const DirectConv& d);

// y = act(conv(x, w) + bias) on the stream (bias: f32 with a stride, or NULL); x, w, y and the
// workspace 16-byte aligned. Returns the launch's error.
cudaError_t direct_conv(const DirectConv& d, const float* x, const float* w, const float* bias, int64_t bias_stride,
                        Act act, float lo, float hi, float* y, void* workspace, cudaStream_t stream);

}  // namespace amber::cuda
