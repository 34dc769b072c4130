// The device code of the int8 CUDA kernels (quantized.cu): quantized_conv2d's and
// quantized_linear's, a thread an output running kernels/quant_direct.h's element (the exact int32
// sum, quant_math.h's epilogue; the CPU runs the same where its int8 products could saturate), and
// the NaN flags of a convolution's images, in a header of its own so that
// tests/test_quantized_emulated.cpp runs the same code on the CPU. Private to libamber_cuda.so.
#pragma once

#include <cmath>
#include <cstdint>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/quant_direct.h"

namespace amber::cuda::quantized {

using quant::conv_geometry;
using quant::ConvGeometry;
using quant::linear_geometry;
using quant::linear_rows;
using quant::LinearGeometry;
using quant::make_quant;
using quant::Quant;
using quant::Rows;

// flags[n] = 1 for each image n of x holding a NaN (flags zeroed before).
template <int Unused = 0>  // (a header's kernel must not be defined once per file)
__global__ void flag_nan_images(const float* x, ConvGeometry g, int32_t* flags) {
  const int64_t total = g.n * g.c * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.w, ih = i / g.w % g.h, c = i / (g.w * g.h) % g.c, n = i / (g.w * g.h * g.c);
    if (isnan(x[n * g.xs[0] + c * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]])) flags[n] = 1;
  }
}

// One thread per output element, output channels fastest (adjacent in a channels-last output).
template <typename TX, typename TY>
__global__ void quantized_conv_kernel(const TX* x, const int8_t* w, const float* wscale, const float* bias, TY* y,
                                      ConvGeometry g, Quant q, const int32_t* nan_images) {
  const int64_t total = g.n * g.oc * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    quant::conv_output(i, x, w, wscale, bias, y, g, q, nan_images);
}

// One thread per output (row, column); y dense [rows, out].
template <typename TX, typename TY>
__global__ void quantized_linear_kernel(const TX* x, const int8_t* w, const float* wscale, const float* bias, TY* y,
                                        Rows rows, int64_t n_rows, LinearGeometry l, Quant q) {
  const int64_t total = n_rows * l.out_f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    quant::linear_output(i, x, w, wscale, bias, y, rows, l, q);
}

}  // namespace amber::cuda::quantized
