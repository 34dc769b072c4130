// The device code of the upsample ops' CUDA kernels (nearest, bilinear, bicubic, the last two
// antialiased in two passes, from windows' tables its host half builds at setup; nearest and
// trilinear of 5-D): a thread an output element, channels fastest for channels-last outputs,
// elements and weights from kernels/resample.h (shared with the CPU), in a header of its own so
// that tests/test_upsample_emulated.cpp runs the same code on the CPU against the CPU's kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>

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

// upsample_bilinear2d_aa / upsample_bicubic2d_aa in two passes, as the CPU's (its sums, in its
// order): each output row's and column's window and normalised weights (resample.h's, the CPU's
// tables'), tabled once at setup; aa_columns_kernel resamples every input row along W into
// `across` (the call's workspace: N, C, H, W_out, dense, in A), and aa_rows_kernel sums each
// output element along H from there. An output dim's windows: position i reads n[i] inputs from
// lo[i], weighted by w[i * stride ...].
template <typename A>
struct AaTable {
  int64_t *lo, *n;
  A* w;
  int64_t stride;  // the dim's widest window
};
template <typename A>
struct AaTables {
  AaTable<A> rows, cols;
  size_t bytes;  // both, in one allocation
};
// Both tables from base (nullptr: their size only) for windows of at most nh rows and nw columns.
template <typename A>
AaTables<A> aa_tables(const Geometry& g, int64_t nh, int64_t nw, void* base) {
  size_t at = 0;
  auto take = [&](int64_t count, size_t item) {
    void* p = base ? static_cast<char*>(base) + at : nullptr;
    at += (size_t(count) * item + 15) / 16 * 16;
    return p;
  };
  AaTables<A> l{};
  for (auto [t, out, widest] : {std::tuple{&l.rows, g.oh, nh}, std::tuple{&l.cols, g.ow, nw}}) {
    t->lo = static_cast<int64_t*>(take(out, sizeof(int64_t)));
    t->n = static_cast<int64_t*>(take(out, sizeof(int64_t)));
    t->w = static_cast<A*>(take(out * widest, sizeof(A)));
    t->stride = widest;
  }
  l.bytes = at;
  return l;
}
// The widest window of `out` positions along a dim of `in` (host code, for the setup).
template <bool Cubic, typename A>
int64_t aa_widest(int64_t out, int64_t in, A scale) {
  int64_t widest = 0;
  for (int64_t i = 0; i < out; ++i) widest = std::max(widest, resample::aa_window<Cubic, A>(i, in, scale).n);
  return widest;
}
// Fills t (host memory) with the windows of `out` positions along a dim of `in`.
template <bool Cubic, typename A>
void aa_fill(const AaTable<A>& t, int64_t out, int64_t in, A scale) {
  for (int64_t i = 0; i < out; ++i) {
    const resample::AaWindow<A> win = resample::aa_window<Cubic, A>(i, in, scale);
    t.lo[i] = win.lo;
    t.n[i] = win.n;
    for (int64_t v = 0; v < win.n; ++v) t.w[i * t.stride + v] = resample::aa_weight<Cubic, A>(win, v);
  }
}
template <typename T, typename A>
__global__ void aa_columns_kernel(const T* x, Geometry g, AaTable<A> cols, A* across) {
  const int64_t count = g.n * g.c * g.h * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % g.ow, r = i / g.ow, h = r % g.h, c = r / g.h % g.c, n = r / (g.h * g.c);
    const T* in = x + n * g.xs[0] + c * g.xs[1] + h * g.xs[3] + cols.lo[j] * g.xs[4];
    const A* w = cols.w + j * cols.stride;
    A t = 0;
    for (int64_t v = 0; v < cols.n[j]; ++v) t += A(in[v * g.xs[4]]) * w[v];
    across[i] = t;
  }
}
template <typename T, typename A>
__global__ void aa_rows_kernel(const A* across, T* y, Geometry g, AaTable<A> rows) {
  const int64_t count = total(g);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const Position p = position(g, i);
    const A* column = across + ((p.n * g.c + p.c) * g.h + rows.lo[p.oh]) * g.ow + p.ow;
    const A* w = rows.w + p.oh * rows.stride;
    A out = 0;
    for (int64_t u = 0; u < rows.n[p.oh]; ++u) out += column[u * g.ow] * w[u];
    y[y_offset(g, p)] = cast_value<T>(out);
  }
}

}  // namespace amber::cuda::upsample
