// The device code of Amber's own convolution (conv_direct.h) and the host-side policy that sizes
// its launches (tiles, slices of the sum, grids), in a header of its own so that
// tests/test_conv_direct_emulated.cpp runs the same code on the CPU (tests/cuda_emulation.h)
// where no GPU is; conv_direct.cu launches it. Private to libamber_cuda.so.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

#include "amber/kernels/cuda/conv_direct.h"

namespace amber::cuda::direct {

constexpr int kThreads = 256;

// The tile: BM x BN outputs a block (64 x 64, 128 x 64 or 128 x 128), BK terms a step (16, or 8
// with 128 rows: a float4 of a row's operands a thread, for each pixel's and each channel's row),
// each thread's outputs in 4 x 4 blocks 64 apart (conflict-free shared reads of whole float4s).
template <int BM, int BN>
struct Tile {
  static constexpr int kBK = 1024 / BM, kSubM = BM / 64, kSubN = BN / 64;
  static constexpr int kMinBlocks = BM * BN <= 64 * 64 ? 4 : 2;  // a multiprocessor (64 or 128 registers)
};

// Where term e's row of a tile's operands (W pixels or channels) starts in shared memory: W + 4
// floats a row (16-byte aligned), and 8 more from row 8 on where a step has 16 terms. The rows a
// warp's stores write at once (its threads' first terms, 4 apart) then start in distinct
// quarters of the 32 banks (0, 16, 8, 24), as its 8 pixels' or channels' elements in each fill
// them once; with 8 terms, two rows 16 banks apart (and 16 elements) do so already.
template <int W, int BK>
__host__ __device__ constexpr int row_at(int e) {
  return e * (W + 4) + (BK == 16 ? e / 8 * 8 : 0);
}
template <int W, int BK>
constexpr int kRowsFloats = row_at<W, BK>(BK);  // a buffer's floats

struct Geometry {
  int h, w, c, k, s, p, q;
  int sh, sw, ph, pw, dh, dw;
  int m;                // output pixels (N * P * Q): the product's rows
  int terms;            // R * S * C: the sum's length
  int steps_per_split;  // BK-term steps each slice sums
};

// Block (x, y, z): output pixels [BM x, +BM), channels [BN y, +BN), slice z of the sum. Writes
// act(sum + bias) into y (one slice), or slice z's partial sums into y + z * m * k.
template <int BM, int BN>
__global__ void __launch_bounds__(kThreads, Tile<BM, BN>::kMinBlocks)
    tile_kernel(Geometry g, const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                int64_t bias_stride, Act act, float lo, float hi, float* __restrict__ y, bool partial) {
  constexpr int BK = Tile<BM, BN>::kBK, kSubM = Tile<BM, BN>::kSubM, kSubN = Tile<BM, BN>::kSubN;
  // Two buffers: a step multiplies from one while the next step's operands go into the other.
  __shared__ __align__(16) float as[2][kRowsFloats<BM, BK>];  // [buffer][term (row_at)][pixel]
  __shared__ __align__(16) float bs[2][kRowsFloats<BN, BK>];  // [buffer][term (row_at)][channel]
  const int t = threadIdx.x;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int steps = (g.terms + BK - 1) / BK;
  const int first = blockIdx.z * g.steps_per_split, last = min(steps, first + g.steps_per_split);

  // This thread's loads: four consecutive terms (from lt) of pixel m0 + lr and (lr < BN) of
  // channel n0 + lr.
  const int lr = t / (BK / 4), lt = (t % (BK / 4)) * 4;
  const bool loads_b = BN == BM || lr < BN;  // (every thread, in a square tile)
  const int m = m0 + lr, kn = n0 + lr;
  const bool m_ok = m < g.m, k_ok = loads_b && kn < g.k;
  int ih0 = 0, iw0 = 0;
  const float* xn = x;
  if (m_ok) {
    const int npq = m / g.q, qq = m - npq * g.q;
    const int n = npq / g.p, pp = npq - n * g.p;
    ih0 = pp * g.sh - g.ph;
    iw0 = qq * g.sw - g.pw;
    xn = x + int64_t(n) * g.h * g.w * g.c;
  }
  const float* wk = w + int64_t(k_ok ? kn : 0) * g.terms;
  // The next load's first term and its (r, s, c), divided out once here, then advanced a step
  // (BK terms) a load: the loads run through the steps in order.
  int term = first * BK + lt, c = term % g.c, r = term / g.c, s = r % g.s;
  r /= g.s;
  auto load = [&](float4& a, float4& b) {
    a = b = make_float4(0.f, 0.f, 0.f, 0.f);
    if (term < g.terms) {  // terms come in fours (C is a multiple of four)
      if (k_ok) b = *reinterpret_cast<const float4*>(wk + term);
      const int ih = ih0 + r * g.dh, iw = iw0 + s * g.dw;
      if (m_ok && unsigned(ih) < unsigned(g.h) && unsigned(iw) < unsigned(g.w))
        a = *reinterpret_cast<const float4*>(xn + (int64_t(ih) * g.w + iw) * g.c + c);
    }
    term += BK, c += BK;
    while (c >= g.c) {  // (more than once a step only where C < BK)
      c -= g.c;
      if (++s == g.s) s = 0, ++r;
    }
  };
  auto store = [&](int buffer, const float4& a, const float4& b) {
    float* at = as[buffer] + lr;
    at[row_at<BM, BK>(lt)] = a.x, at[row_at<BM, BK>(lt + 1)] = a.y;
    at[row_at<BM, BK>(lt + 2)] = a.z, at[row_at<BM, BK>(lt + 3)] = a.w;
    if (loads_b) {
      float* bt = bs[buffer] + lr;
      bt[row_at<BN, BK>(lt)] = b.x, bt[row_at<BN, BK>(lt + 1)] = b.y;
      bt[row_at<BN, BK>(lt + 2)] = b.z, bt[row_at<BN, BK>(lt + 3)] = b.w;
    }
  };

  // This thread's outputs: pixels m0 + 64 i + 4 ty + ii, channels n0 + 64 j + 4 tx + jj.
  const int tx = t % 16, ty = t / 16;
  float acc[kSubM * 4][kSubN * 4] = {};
  float4 a, b;
  if (first < last) {
    load(a, b);
    store(0, a, b);
  }
  __syncthreads();
  // One barrier a step: the buffer a step fills was last read a step before, by every thread
  // before that step's barrier.
  for (int step = first, buffer = 0; step < last; ++step, buffer ^= 1) {
    const bool next = step + 1 < last;
    if (next) load(a, b);  // in flight while this step multiplies
#pragma unroll
    for (int e = 0; e < BK; ++e) {
      float ar[kSubM * 4], br[kSubN * 4];
#pragma unroll
      for (int i = 0; i < kSubM; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(&as[buffer][row_at<BM, BK>(e) + 64 * i + ty * 4]);
        ar[4 * i] = v.x, ar[4 * i + 1] = v.y, ar[4 * i + 2] = v.z, ar[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < kSubN; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(&bs[buffer][row_at<BN, BK>(e) + 64 * j + tx * 4]);
        br[4 * j] = v.x, br[4 * j + 1] = v.y, br[4 * j + 2] = v.z, br[4 * j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < kSubM * 4; ++i)
#pragma unroll
        for (int j = 0; j < kSubN * 4; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
    if (next) store(buffer ^ 1, a, b);
    __syncthreads();
  }

  float* out = y + (partial ? int64_t(blockIdx.z) * g.m * g.k : 0);
#pragma unroll
  for (int j = 0; j < kSubN; ++j) {
    const int col = n0 + 64 * j + tx * 4;
    if (col >= g.k) break;  // K is a multiple of four: a thread's four channels are all in or all out
#pragma unroll
    for (int i = 0; i < kSubM * 4; ++i) {
      const int row = m0 + 64 * (i / 4) + ty * 4 + i % 4;
      if (row >= g.m) break;
      float v[4] = {acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]};
      if (!partial)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (bias) v[e] += bias[int64_t(col + e) * bias_stride];
          v[e] = apply_act(v[e], act, lo, hi);
        }
      *reinterpret_cast<float4*>(out + int64_t(row) * g.k + col) = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
}

// y = act(sum of the slices' partial sums, in slice order, + bias), four outputs a thread.
// (A template, as every kernel here: a header's kernel must not be defined once per file.)
template <int Threads>
__global__ void sum_kernel(const float4* __restrict__ partials, int splits, uint32_t groups, uint32_t k,
                           const float* __restrict__ bias, int64_t bias_stride, Act act, float lo, float hi,
                           float4* __restrict__ y) {
  for (uint32_t i = blockIdx.x * Threads + threadIdx.x; i < groups; i += gridDim.x * Threads) {
    float4 p = partials[i];
    float v[4] = {p.x, p.y, p.z, p.w};
    for (int z = 1; z < splits; ++z) {
      p = partials[size_t(z) * groups + i];
      v[0] += p.x, v[1] += p.y, v[2] += p.z, v[3] += p.w;
    }
    const uint32_t c = (i * 4) % k;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (bias) v[j] += bias[int64_t(c + j) * bias_stride];
      v[j] = apply_act(v[j], act, lo, hi);
    }
    y[i] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// ---- The host-side policy ----

inline int64_t pixels(const DirectConv& d) { return int64_t(d.n) * d.p * d.q; }
inline int64_t terms(const DirectConv& d) { return int64_t(d.r) * d.s * d.c; }
inline int rows_of(const DirectConv& d) { return d.tile_m == 128 ? 128 : 64; }
inline int cols_of(const DirectConv& d) { return d.tile_n == 128 && d.tile_m == 128 ? 128 : 64; }
inline int64_t steps(const DirectConv& d) { return (terms(d) + 1024 / rows_of(d) - 1) / (1024 / rows_of(d)); }
inline int64_t row_tiles(const DirectConv& d) { return (pixels(d) + rows_of(d) - 1) / rows_of(d); }
inline int64_t col_tiles(const DirectConv& d) { return (int64_t(d.k) + cols_of(d) - 1) / cols_of(d); }

inline bool fits(const DirectConv& d) {
  const int64_t in = int64_t(d.n) * d.h * d.w * d.c, out = pixels(d) * d.k;
  return d.n > 0 && d.c > 0 && d.k > 0 && d.r > 0 && d.s > 0 && d.p > 0 && d.q > 0 && d.c % 4 == 0 && d.k % 4 == 0 &&
         in <= INT_MAX && out <= INT_MAX && terms(d) * d.k <= INT_MAX && d.stride[0] > 0 && d.stride[1] > 0 &&
         d.dilation[0] > 0 && d.dilation[1] > 0 && row_tiles(d) <= INT_MAX && col_tiles(d) <= 65535;
}

inline void split(DirectConv& d, int sms) {
  const int64_t tiles = row_tiles(d) * col_tiles(d);
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>(steps(d) / 4, 65535));
  const int64_t want = std::clamp<int64_t>((2 * int64_t(std::max(sms, 1)) + tiles - 1) / tiles, 1, most);
  const int64_t per = (steps(d) + want - 1) / want;  // steps a slice; then no slice left empty
  d.splits = int((steps(d) + per - 1) / per);
}

inline size_t workspace(const DirectConv& d) {
  return d.splits > 1 ? size_t(d.splits) * size_t(pixels(d)) * size_t(d.k) * sizeof(float) : 0;
}

constexpr int kSumThreads = 256;

// A call's launches: the product's grid (row tiles, column tiles, slices) and geometry, and where
// split, the sum's grid over groups of four outputs.
struct Launch {
  Geometry g{};
  dim3 grid;
  int splits = 1;
  uint32_t groups = 0;
  unsigned sum_blocks = 0;
};
inline Launch launch_of(const DirectConv& d) {
  Launch l;
  l.splits = std::max(d.splits, 1);
  Geometry& g = l.g;
  g.h = d.h, g.w = d.w, g.c = d.c, g.k = d.k, g.s = d.s, g.p = d.p, g.q = d.q;
  g.sh = d.stride[0], g.sw = d.stride[1], g.ph = d.pad[0], g.pw = d.pad[1], g.dh = d.dilation[0], g.dw = d.dilation[1];
  g.m = int(pixels(d));
  g.terms = int(terms(d));
  g.steps_per_split = int((steps(d) + l.splits - 1) / l.splits);
  l.grid = dim3(unsigned(row_tiles(d)), unsigned(col_tiles(d)), unsigned(l.splits));
  const int64_t groups = pixels(d) * d.k / 4;
  l.groups = uint32_t(groups);
  l.sum_blocks = unsigned(std::min<int64_t>((groups + kSumThreads - 1) / kSumThreads, 65535 * 8));
  return l;
}

// Queues a call (conv_direct.h's direct_conv; l = launch_of(d)) through
// launch(kernel, grid, block, arguments...): the backend's <<<>>> on a stream, or the emulation's
// launch on the CPU. The tile's product into y, or where split into the partial sums' room, then
// their sum.
template <typename Launcher>
void enqueue(const DirectConv& d, const Launch& l, Launcher&& launch, const float* x, const float* w, const float* bias,
             int64_t bias_stride, Act act, float lo, float hi, float* y, float* partials) {
  const bool partial = l.splits > 1;
  float* out = partial ? partials : y;
  auto product = [&](auto kernel) {
    launch(kernel, l.grid, dim3(kThreads), l.g, x, w, bias, bias_stride, act, lo, hi, out, partial);
  };
  if (rows_of(d) == 64)
    product(&tile_kernel<64, 64>);
  else if (cols_of(d) == 64)
    product(&tile_kernel<128, 64>);
  else
    product(&tile_kernel<128, 128>);
  if (partial)
    launch(&sum_kernel<kSumThreads>, dim3(l.sum_blocks), dim3(kSumThreads), reinterpret_cast<const float4*>(partials),
           l.splits, l.groups, uint32_t(d.k), bias, bias_stride, act, lo, hi, reinterpret_cast<float4*>(y));
}

}  // namespace amber::cuda::direct
