// Elementwise iteration for CPU kernels: operand 0 is the output, the others broadcast to
// its shape. Dims are visited in the output's memory order and coalesced (merged where every operand is contiguous
// across them) and the index space is split over the intra-op threads; an inner function then runs over 1-D runs given
// base pointers and byte strides. Inner functions come in AVX-512, AVX2 and portable builds of one generic loop
// (IsaVariants), chosen once per process.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"

namespace amber::cpu {

// Runs over n elements: ptrs[k] is operand k's first element, strides[k] its byte stride.
using InnerFn = void (*)(char* const* ptrs, const int64_t* strides, int64_t n, const void* ctx);
// Copies one tile of a transpose whole (ElementwiseIter::run_tiled): element (c, r) of the
// input, at in + c * in_ld + r * itemsize, to out + r * out_ld + c * itemsize; ld in bytes.
using TileFn = void (*)(char* out, int64_t out_ld, const char* in, int64_t in_ld, int64_t cols, int64_t rows);

// Compiles Inner::template run<...> for each ISA; pick() returns the best for this CPU.
// Inner must provide `static void run(char* const*, const int64_t*, int64_t, const void*)`,
// written as a plain loop (always inlined into the variants by `flatten`).
template <typename Inner>
struct IsaVariants {
  AMBER_TARGET_AVX512 static void avx512(char* const* p, const int64_t* s, int64_t n, const void* c) {
    Inner::run(p, s, n, c);
  }
  AMBER_TARGET_AVX2 static void avx2(char* const* p, const int64_t* s, int64_t n, const void* c) {
    Inner::run(p, s, n, c);
  }
  AMBER_TARGET_BASE static void base(char* const* p, const int64_t* s, int64_t n, const void* c) {
    Inner::run(p, s, n, c);
  }
  static InnerFn pick() {
    switch (cpu_isa()) {
      case Isa::avx512:
        return &avx512;
      case Isa::avx2:
        return &avx2;
      case Isa::base:
        break;
    }
    return &base;
  }
};

template <int N>
struct ElementwiseIter {
  int ndim = 0;  // after coalescing; dim 0 is the innermost
  int64_t sizes[AMBER_MAX_DIMS];
  int64_t strides[N][AMBER_MAX_DIMS];  // bytes
  char* base[N];
  int64_t item[N];  // element sizes
  int64_t numel = 1;

  // ops[0] is the output; itemsize[k] the element size of operand k. Inputs of lower rank
  // align to the output's trailing dims; size-1 dims broadcast with stride 0.
  ElementwiseIter(const std::array<const amber_tensor_view*, N>& ops, const std::array<int64_t, N>& itemsize) {
    const amber_tensor_view& out = *ops[0];
    const int nd = out.ndim;
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->data), item[k] = itemsize[k];
    // Gather innermost-first, dropping size-1 dims.
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t size = out.sizes[d];
      numel *= size;
      if (size == 1) continue;
      sizes[ndim] = size;
      for (int k = 0; k < N; ++k) {
        const amber_tensor_view& v = *ops[k];
        const int vd = d - (nd - v.ndim);
        const bool broadcast = vd < 0 || v.sizes[vd] == 1;
        strides[k][ndim] = broadcast ? 0 : v.strides[vd] * itemsize[k];
      }
      ++ndim;
    }
    // Walk in the output's memory order (smallest stride innermost), so a channels-last
    // output runs along channels and then coalesces like a contiguous one.
    for (int i = 1; i < ndim; ++i)
      for (int j = i; j > 0 && strides[0][j] < strides[0][j - 1]; --j) {
        std::swap(sizes[j], sizes[j - 1]);
        for (int k = 0; k < N; ++k) std::swap(strides[k][j], strides[k][j - 1]);
      }
    // Merge dim i+1 into dim i when every operand steps across them uniformly.
    int w = 0;
    for (int r = 1; r < ndim; ++r) {
      bool can = true;
      for (int k = 0; k < N && can; ++k) can = strides[k][r] == strides[k][w] * sizes[w];
      if (can) {
        sizes[w] *= sizes[r];
      } else {
        ++w;
        sizes[w] = sizes[r];
        for (int k = 0; k < N; ++k) strides[k][w] = strides[k][r];
      }
    }
    if (ndim > 0) ndim = w + 1;
    // A short innermost dim (broadcasting kept it from merging) makes short runs, each
    // paying the inner function's setup: run along the longer next dim instead.
    if (ndim >= 2 && sizes[0] < 8 && sizes[1] >= 4 * sizes[0]) {
      std::swap(sizes[0], sizes[1]);
      for (int k = 0; k < N; ++k) std::swap(strides[k][0], strides[k][1]);
    }
  }

  // Calls inner over the elements [begin, end) of the (coalesced) index space.
  void run_range(int64_t begin, int64_t end, InnerFn inner, const void* ctx) const {
    if (ndim == 0) {  // a single element
      if (begin < end) {
        int64_t zero[N] = {};
        inner(base, zero, 1, ctx);
      }
      return;
    }
    int64_t idx[AMBER_MAX_DIMS];
    int64_t rem = begin;
    for (int d = 0; d < ndim; ++d) {
      idx[d] = rem % sizes[d];
      rem /= sizes[d];
    }
    int64_t inner_strides[N];
    for (int k = 0; k < N; ++k) inner_strides[k] = strides[k][0];
    char* ptrs[N];
    int64_t pos = begin;
    while (pos < end) {
      for (int k = 0; k < N; ++k) {
        char* p = base[k];
        for (int d = 0; d < ndim; ++d) p += idx[d] * strides[k][d];
        ptrs[k] = p;
      }
      const int64_t n = std::min(sizes[0] - idx[0], end - pos);
      inner(ptrs, inner_strides, n, ctx);
      pos += n;
      idx[0] += n;
      for (int d = 0; d + 1 < ndim && idx[d] == sizes[d]; ++d) {
        idx[d] = 0;
        ++idx[d + 1];
      }
    }
  }

  // A unary walk whose input is unit-stride along a dim t other than the walk's innermost (a
  // permuted tensor made contiguous) would read one element a cache line along dim 0: it goes in
  // tiles of kTile x kTile over dims 0 and t instead, each tile's runs along dim 0 in turn, so the
  // input lines a tile reads serve all its runs. False (nothing run) where that does not apply.
  // `tile`, where given, copies a tile whole when the output is unit-stride along dim 0 too.
  static constexpr int64_t kTile = 32;
  bool run_tiled(InnerFn inner, const void* ctx, int num_threads, int64_t grain, TileFn tile) const {
    if (N != 2 || ndim < 2 || strides[1][0] == item[1] || sizes[0] < kTile) return false;
    int t = 1;
    while (t < ndim && strides[1][t] != item[1]) ++t;
    if (t == ndim || sizes[t] < kTile) return false;
    const int64_t across = (sizes[0] + kTile - 1) / kTile, down = (sizes[t] + kTile - 1) / kTile;
    const int64_t tiles = numel / (sizes[0] * sizes[t]) * across * down;
    auto run_tiles = [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        int64_t rest = w / (across * down);
        const int64_t i0 = w % across * kTile, t0 = w / across % down * kTile;
        char* p[N];
        for (int k = 0; k < N; ++k) p[k] = base[k] + i0 * strides[k][0] + t0 * strides[k][t];
        for (int d = 1; d < ndim; ++d) {
          if (d == t) continue;
          for (int k = 0; k < N; ++k) p[k] += rest % sizes[d] * strides[k][d];
          rest /= sizes[d];
        }
        const int64_t n = std::min(kTile, sizes[0] - i0), rows = std::min(kTile, sizes[t] - t0);
        if (tile && strides[0][0] == item[0]) {
          tile(p[0], strides[0][t], p[1], strides[1][0], n, rows);
          continue;
        }
        const int64_t inner_strides[N] = {strides[0][0], strides[1][0]};
        for (int64_t r = 0; r < rows; ++r) {
          char* q[N] = {p[0] + r * strides[0][t], p[1] + r * strides[1][t]};
          inner(q, inner_strides, n, ctx);
        }
      }
    };
    if (num_threads <= 1 || numel <= grain) {
      run_tiles(0, tiles);
    } else {
      ThreadLimit limit(num_threads);
      parallel_for(tiles, std::max<int64_t>(1, grain / (kTile * kTile)), run_tiles);
    }
    return true;
  }

  void run(InnerFn inner, const void* ctx, int num_threads, int64_t grain, TileFn tile = nullptr) const {
    if (numel == 0) return;
    if constexpr (N == 2) {
      if (run_tiled(inner, ctx, num_threads, grain, tile)) return;
    }
    if (num_threads <= 1 || numel <= grain) {
      run_range(0, numel, inner, ctx);
      return;
    }
    ThreadLimit limit(num_threads);
    parallel_for(numel, grain, [&](int64_t b, int64_t e) { run_range(b, e, inner, ctx); });
  }
};

// Grain sizes: elements per thread below which splitting costs more than it gains.
inline constexpr int64_t kGrainCheap = 32768;  // add, mul, copies
inline constexpr int64_t kGrainMath = 4096;    // exp, tanh and other libm-heavy ops

}  // namespace amber::cpu
