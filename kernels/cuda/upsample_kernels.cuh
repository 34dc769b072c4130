// The device code of the upsample ops' CUDA kernels (nearest, bilinear, bicubic, the last two
// antialiased): a thread an output element, channels fastest for channels-last outputs, pixels and
// weights from kernels/resample.h (shared with the CPU), in a header of its own so that
// tests/test_upsample_emulated.cpp runs the same code on the CPU against the CPU's kernels;
// upsample.cu launches them. Private to libamber_cuda.so.
#pragma once

#include <cstdint>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/resample.h"

namespace amber::cuda::upsample {

struct Geometry {  // sizes and element strides of the 4-D input and output
  int64_t n, c, h, w, oh, ow;
  int64_t xs[4], ys[4];
  bool channels_last;  // the output's channels are adjacent: threads walk c fastest (coalesced)
};
inline Geometry geometry(const amber_tensor_view& x, const amber_tensor_view& y) {
  Geometry g{x.sizes[0], x.sizes[1], x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3], {}, {}, false};
  for (int i = 0; i < 4; ++i) g.xs[i] = x.strides[i], g.ys[i] = y.strides[i];
  g.channels_last = g.c > 1 && g.ys[1] == 1;
  return g;
}

// Output element i's (n, c, oh, ow), in the order threads walk them.
__device__ inline void position(const Geometry& g, int64_t i, int64_t& n, int64_t& c, int64_t& oh, int64_t& ow) {
  c = 0;
  if (g.channels_last) c = i % g.c, i /= g.c;
  ow = i % g.ow, i /= g.ow;
  oh = i % g.oh, i /= g.oh;
  if (!g.channels_last) c = i % g.c, i /= g.c;
  n = i;
}

template <typename T>
__global__ void nearest_kernel(const T* x, T* y, Geometry g, double sh, double sw) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    position(g, i, n, c, oh, ow);
    const int64_t ih = resample::nearest_source(oh, g.h, g.oh, sh), iw = resample::nearest_source(ow, g.w, g.ow, sw);
    y[n * g.ys[0] + c * g.ys[1] + oh * g.ys[2] + ow * g.ys[3]] =
        x[n * g.xs[0] + c * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]];
  }
}

template <typename T, typename A, bool Cubic>
__global__ void interpolating_kernel(const T* x, T* y, Geometry g, A rh, A rw, bool corners) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    position(g, i, n, c, oh, ow);
    const auto r = resample::tap_of<Cubic, A>(oh, g.h, g.oh, rh, corners),
               q = resample::tap_of<Cubic, A>(ow, g.w, g.ow, rw, corners);
    y[n * g.ys[0] + c * g.ys[1] + oh * g.ys[2] + ow * g.ys[3]] =
        cast_value<T>(resample::blend<A>(x + n * g.xs[0] + c * g.xs[1], r, q, g.xs[2], g.xs[3]));
  }
}

// upsample_bilinear2d_aa / upsample_bicubic2d_aa: each thread finds its row's and column's
// windows and computes their weights where it sums (resample.h's, the CPU kernels' tables').
template <typename A, bool Cubic>
struct AaWeightOf {
  const resample::AaWindow<A>* w;
  AMBER_HD A operator()(int64_t j) const { return resample::aa_weight<Cubic, A>(*w, j); }
};
template <typename T, typename A, bool Cubic>
__global__ void antialiased_kernel(const T* x, T* y, Geometry g, A rh, A rw) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, oh, ow;
    position(g, i, n, c, oh, ow);
    const resample::AaWindow<A> r = resample::aa_window<Cubic, A>(oh, g.h, rh),
                                q = resample::aa_window<Cubic, A>(ow, g.w, rw);
    y[n * g.ys[0] + c * g.ys[1] + oh * g.ys[2] + ow * g.ys[3]] = cast_value<T>(resample::aa_blend<A>(
        x + n * g.xs[0] + c * g.xs[1], r, q, g.xs[2], g.xs[3], AaWeightOf<A, Cubic>{&r}, AaWeightOf<A, Cubic>{&q}));
  }
}

}  // namespace amber::cuda::upsample
