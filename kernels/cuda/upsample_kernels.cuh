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

// The geometry of a resize (kernels/resample.h, the CPU kernels' too).
using resample::Geometry;
using resample::geometry;
using resample::total;

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

// upsample_bilinear2d, upsample_bicubic2d and (volumetric) upsample_trilinear3d: the taps of the
// element's position along each dim (steps rd, rh, rw: linear_scale's), a 5-D input's planes
// blended after their pixels as the CPU's (resample::blend3).
template <typename T, typename A, bool Cubic>
__global__ void interpolating_kernel(const T* x, T* y, Geometry g, A rd, A rh, A rw, bool corners, bool volumetric) {
  const int64_t count = total(g);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position(g, i);
    const auto r = resample::tap_of<Cubic, A>(p.oh, g.h, g.oh, rh, corners),
               q = resample::tap_of<Cubic, A>(p.ow, g.w, g.ow, rw, corners);
    const T* v = x + p.n * g.xs[0] + p.c * g.xs[1];
    A out;
    if constexpr (!Cubic)
      out = volumetric ? resample::blend3<A>(v, resample::linear_source<A>(p.od, g.d, g.od, rd, corners), r, q, g.xs[2],
                                             g.xs[3], g.xs[4])
                       : resample::blend<A>(v, r, q, g.xs[3], g.xs[4]);
    else
      out = resample::blend<A>(v, r, q, g.xs[3], g.xs[4]);
    y[y_offset(g, p)] = cast_value<T>(out);
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
