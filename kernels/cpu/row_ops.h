// Reductions over contiguous rows written with 16 independent accumulators, so they
// vectorise without -ffast-math (which would allow reassociation everywhere) and give the
// same result on every ISA: the summation order is fixed by the code, not the compiler.
#pragma once

#include <cstdint>
#include <cstring>

#include "amber/kernels/arith.h"

namespace amber::cpu {

// P partials (P a power of two) folded by op in a fixed tree: partial j takes j + P/2, then
// j + P/4, ... (row_sum's order, and layer_norm's over its 32); returns part[0].
template <int P, typename Acc, typename Op>
inline Acc halve(Acc* part, Op op) {
  for (int w = P / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) part[j] = op(part[j], part[j + w]);
  return part[0];
}
template <int P, typename Acc>
inline Acc halve_sum(Acc* part) {
  return halve<P>(part, [](Acc a, Acc b) { return pw::wrap_add(a, b); });
}
// halve_sum for each of columns [0, w) of P rows of partials (part[j][c]), into part[0].
template <int P, int64_t W, typename Acc>
inline void halve_sum_columns(Acc (&part)[P][W], int64_t w) {
  for (int h = P / 2; h >= 1; h /= 2)
    for (int j = 0; j < h; ++j)
      for (int64_t c = 0; c < w; ++c) part[j][c] = pw::wrap_add(part[j][c], part[j + h][c]);
}

template <typename T, typename Acc = T>
inline Acc row_sum(const T* p, int64_t n) {
  Acc part[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) part[j] = pw::wrap_add(part[j], Acc(p[i + j]));
  for (int j = 0; i < n; ++i, ++j) part[j] = pw::wrap_add(part[j], Acc(p[i]));
  return halve_sum<16>(part);
}

// Maximum of n >= 1 values (NaN handling is the caller's concern: NaN compares false). The
// sixteen partial maxima are one GCC vector-extension value: written as sixteen scalars,
// `a > b ? a : b` stayed scalar (vmaxss) in every ISA variant, since without -ffast-math
// GCC neither turns it into a max nor vectorises the select; as a vector select it is one
// vmaxps per sixteen values (same lanes, same results). Attention's softmax rows (ViT's and
// the zoo encoder's) spent more time here than in their exponentials.
template <typename T>
inline T row_max(const T* p, int64_t n) {
  typedef T Vec __attribute__((vector_size(16 * sizeof(T))));
  Vec acc;
  for (int j = 0; j < 16; ++j) acc[j] = p[0];
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Vec x;
    std::memcpy(&x, p + i, sizeof x);
    acc = x > acc ? x : acc;
  }
  T part[16];
  std::memcpy(part, &acc, sizeof part);
  for (int j = 0; i < n; ++i, ++j) part[j] = p[i] > part[j] ? p[i] : part[j];
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) part[j] = part[j + w] > part[j] ? part[j + w] : part[j];
  return part[0];
}

}  // namespace amber::cpu
