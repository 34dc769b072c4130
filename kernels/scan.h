// Work along one dim's lines, shared by the CPU and CUDA kernels (AMBER_HD): the walk from a
// line index to its first element in self and the output, cumsum's running sum over a line
// (floats in double, as PyTorch's CPU kernel; integers wrap modulo 2^64), and topk's order and
// the ranks that sort in it.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/kernels/hd.h"

namespace amber::scan {

// The lines of y (and x, of the same shape) along dim: every other dim walked row-major.
struct Lines {
  int ndim, dim;
  int64_t sizes[AMBER_MAX_DIMS], xstrides[AMBER_MAX_DIMS], ystrides[AMBER_MAX_DIMS];
};
inline Lines lines_along(const amber_tensor_view& y, const amber_tensor_view& x, int dim) {
  Lines w{y.ndim, dim, {}, {}, {}};
  for (int d = 0; d < y.ndim; ++d) w.sizes[d] = y.sizes[d], w.xstrides[d] = x.strides[d], w.ystrides[d] = y.strides[d];
  return w;
}

// Line l's first element: its offsets (in elements) in x and y.
AMBER_HD inline void line_start(const Lines& w, int64_t l, int64_t* xo, int64_t* yo) {
  *xo = *yo = 0;
  for (int d = w.ndim - 1; d >= 0; --d) {
    if (d == w.dim) continue;
    const int64_t c = l % w.sizes[d];
    l /= w.sizes[d];
    *xo += c * w.xstrides[d];
    *yo += c * w.ystrides[d];
  }
}

// y[i] = x[0] + ... + x[i] for the n elements of one line (strides in elements).
template <typename T>
AMBER_HD inline void cumsum_line(const T* x, int64_t xstride, T* y, int64_t ystride, int64_t n) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  Acc acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc += Acc(x[i * xstride]);
    y[i * ystride] = T(acc);
  }
}

// topk's order: whether (a at index ia) comes before (b at ib). Largest: NaN first (PyTorch
// counts NaN above every number), then larger values; smallest: smaller values, NaN last.
// Equal values: the lower index first, so the order is total and results deterministic.
template <typename T>
AMBER_HD inline bool topk_before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  bool an = false, bn = false;
  if constexpr (std::is_floating_point_v<T>) an = a != a, bn = b != b;
  if (an != bn) return largest ? an : bn;
  if (!an && a != b) return largest ? a > b : a < b;
  return ia < ib;
}

// An element's key in that order: an unsigned rank whose larger values come first (NaN and -0
// folded as topk_before folds them), ties left to the index. 32 bits for 32-bit and narrower
// types (integers widened to int32), 64 for 64-bit ones.
template <typename C>
using topk_rank_t = std::conditional_t<sizeof(C) == 8, unsigned long long, uint32_t>;

template <typename C>
AMBER_HD inline topk_rank_t<C> topk_rank(C c, bool largest) {
  using U = topk_rank_t<C>;
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  U u;
  if constexpr (std::is_floating_point_v<C>) {
    if (c != c) {
      u = ~U(0);  // every NaN alike, above +inf: first when largest, last (~u = 0) when smallest
    } else {
      if (c == C(0)) c = C(0);  // -0 == +0: a tie, ordered by index
      memcpy(&u, &c, sizeof u);
      u ^= (U(0) - (u >> (sizeof(U) * 8 - 1))) | sign;  // negative: every bit flipped, else the sign set
    }
  } else if constexpr (sizeof(C) == 8) {
    u = U(c) ^ sign;
  } else {
    u = U(int32_t(c)) ^ sign;  // 8-, 16- and 32-bit integers (u8 too) widened to int32
  }
  return largest ? u : ~u;
}

}  // namespace amber::scan
