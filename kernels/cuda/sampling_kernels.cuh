// The device code of grid_sample's and roi_align's CUDA kernels (grid_sample.cu, roi_align.cu): a
// thread an output pixel (grid_sample: its taps once for all channels) or bin (roi_align), the
// arithmetic kernels/grid_sample.h's and kernels/roi_align.h's (shared with the CPU), in a header
// of its own so that tests/test_sampling_emulated.cpp runs the same code on the CPU against the
// CPU's kernels. Private to libamber_cuda.so.
#pragma once

#include <cstdint>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/grid_sample.h"
#include "amber/kernels/roi_align.h"

namespace amber::cuda::sampling {

// Output pixels (n, oh, ow) of grid_sample, n * oh * ow of them, grid-stride.
template <typename T>
__global__ void grid_sample_kernel(const T* x, const T* g, T* y, grid::Views v, grid::Params p, int64_t n, int64_t oh,
                                   int64_t ow) {
  const int64_t total = n * oh * ow;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < total; q += int64_t(gridDim.x) * blockDim.x)
    grid::sample_pixel(x, g, y, v, p, q / (ow * oh), (q / ow) % oh, q % ow);
}

// Output bins (k, c, ph, pw) of roi_align, grid-stride; a box whose batch index is outside the
// input's batch gives zeros (the CPU refuses it).
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

}  // namespace amber::cuda::sampling
