// The device code of the upsample ops' CUDA kernels (nearest, bilinear, bicubic, the last two
// antialiased; nearest and trilinear of 5-D): a thread an output element, channels fastest for
// channels-last outputs, elements and weights from kernels/resample.h (shared with the CPU), in a
// header of its own so that tests/test_upsample_emulated.cpp runs the same code on the CPU against
// the CPU's kernels; upsample.cu launches them. Private to libamber_cuda.so.
#pragma once

#include <cstdint>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/resample.h"

namespace amber::cuda::upsample {

// Sizes and element strides of the input and output as (N, C, D, H, W): a 4-D pair has D = 1
// (stride 0).
struct Geometry {
  int64_t n, c, d, h, w, od, oh, ow;
  int64_t xs[5], ys[5];
  bool channels_last;  // the output's channels are adjacent: threads walk c fastest (coalesced)
};
inline Geometry geometry(const amber_tensor_view& x, const amber_tensor_view& y) {
  Geometry g{};
  int64_t xsz[5], ysz[5];
  for (int i = 0, k = 0; i < 5; ++i) {
    const bool absent = x.ndim == 4 && i == 2;  // the D a 4-D pair lacks
    xsz[i] = absent ? 1 : x.sizes[k];
    ysz[i] = absent ? 1 : y.sizes[k];
    g.xs[i] = absent ? 0 : x.strides[k];
    g.ys[i] = absent ? 0 : y.strides[k];
    k += absent ? 0 : 1;
  }
  g.n = xsz[0], g.c = xsz[1], g.d = xsz[2], g.h = xsz[3], g.w = xsz[4];
  g.od = ysz[2], g.oh = ysz[3], g.ow = ysz[4];
  g.channels_last = g.c > 1 && g.ys[1] == 1;
  return g;
}
AMBER_HD inline int64_t total(const Geometry& g) { return g.n * g.c * g.od * g.oh * g.ow; }

// Output element i's (n, c, od, oh, ow), in the order threads walk them, and its offset in y.
struct Position {
  int64_t n, c, od, oh, ow;
};
__device__ inline Position position(const Geometry& g, int64_t i) {
  Position p{};
  if (g.channels_last) p.c = i % g.c, i /= g.c;
  p.ow = i % g.ow, i /= g.ow;
  p.oh = i % g.oh, i /= g.oh;
  p.od = i % g.od, i /= g.od;
  if (!g.channels_last) p.c = i % g.c, i /= g.c;
  p.n = i;
  return p;
}
__device__ inline int64_t y_offset(const Geometry& g, const Position& p) {
  return p.n * g.ys[0] + p.c * g.ys[1] + p.od * g.ys[2] + p.oh * g.ys[3] + p.ow * g.ys[4];
}

// upsample_nearest2d and upsample_nearest3d (scale sd unused where D = 1).
template <typename T>
__global__ void nearest_kernel(const T* x, T* y, Geometry g, double sd, double sh, double sw) {
  const int64_t count = total(g);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position(g, i);
    const int64_t id = resample::nearest_source(p.od, g.d, g.od, sd),
                  ih = resample::nearest_source(p.oh, g.h, g.oh, sh),
                  iw = resample::nearest_source(p.ow, g.w, g.ow, sw);
    y[y_offset(g, p)] = x[p.n * g.xs[0] + p.c * g.xs[1] + id * g.xs[2] + ih * g.xs[3] + iw * g.xs[4]];
  }
}

template <typename T, typename A, bool Cubic>
__global__ void interpolating_kernel(const T* x, T* y, Geometry g, A rh, A rw, bool corners) {
  const int64_t count = total(g);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position(g, i);
    const auto r = resample::tap_of<Cubic, A>(p.oh, g.h, g.oh, rh, corners),
               q = resample::tap_of<Cubic, A>(p.ow, g.w, g.ow, rw, corners);
    y[y_offset(g, p)] = cast_value<T>(resample::blend<A>(x + p.n * g.xs[0] + p.c * g.xs[1], r, q, g.xs[3], g.xs[4]));
  }
}

// upsample_trilinear3d: the plane, row and column taps, blended as the CPU's (resample::blend3).
template <typename T, typename A>
__global__ void trilinear_kernel(const T* x, T* y, Geometry g, A rd, A rh, A rw, bool corners) {
  const int64_t count = total(g);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position(g, i);
    const auto e = resample::linear_source<A>(p.od, g.d, g.od, rd, corners),
               r = resample::linear_source<A>(p.oh, g.h, g.oh, rh, corners),
               q = resample::linear_source<A>(p.ow, g.w, g.ow, rw, corners);
    y[y_offset(g, p)] =
        cast_value<T>(resample::blend3<A>(x + p.n * g.xs[0] + p.c * g.xs[1], e, r, q, g.xs[2], g.xs[3], g.xs[4]));
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
  const int64_t count = total(g);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position(g, i);
    const resample::AaWindow<A> r = resample::aa_window<Cubic, A>(p.oh, g.h, rh),
                                q = resample::aa_window<Cubic, A>(p.ow, g.w, rw);
    y[y_offset(g, p)] = cast_value<T>(resample::aa_blend<A>(x + p.n * g.xs[0] + p.c * g.xs[1], r, q, g.xs[3], g.xs[4],
                                                            AaWeightOf<A, Cubic>{&r}, AaWeightOf<A, Cubic>{&q}));
  }
}

}  // namespace amber::cuda::upsample
