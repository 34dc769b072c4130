// Per-element formulas of the float pointwise ops, shared by the op kernels (unary.cpp)
// and the fused-program kernel (fused.cpp) so that a fused chain computes what the separate
// ops compute. Formulas are ATen's.
#pragma once

#include <cmath>

#include "amber/kernels/cpu/vec_math.h"

namespace amber::cpu::pw {

template <typename T>
inline T relu(T a) {
  return a < T(0) ? T(0) : a;
}  // NaN and -0.0 kept
template <typename T>
inline T sigmoid(T a) {
  return T(1) / (T(1) + vexp(-a));
}
template <typename T>
inline T silu(T a) {
  return a / (T(1) + vexp(-a));
}
template <typename T>
inline T rsqrt(T a) {
  return T(1) / std::sqrt(a);
}
template <typename T>
inline T reciprocal(T a) {
  return T(1) / a;
}
template <typename T>
inline T gelu(T a) {
  return a * T(0.5) * (T(1) + verf(a * T(M_SQRT1_2)));
}
template <typename T>
inline T gelu_tanh(T a) {
  const T beta = T(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = T(0.044715);
  const T inner = beta * (a + kappa * a * a * a);
  return T(0.5) * a * (T(1) + vtanh(inner));
}
// std::min(std::max(a, lo), hi) as ATen: NaN propagates; lo > hi gives hi.
template <typename T>
inline T clamp_min(T a, T lo) {
  return a < lo ? lo : a;
}
template <typename T>
inline T clamp_max(T a, T hi) {
  return hi < a ? hi : a;
}
// pow with a scalar exponent: ATen's exact shortcuts for 2, 3, 0.5, -0.5, -1, -2.
template <typename T>
inline T pow_scalar(T a, T e) {
  if (e == T(2)) return a * a;
  if (e == T(3)) return a * a * a;
  if (e == T(0.5)) return std::sqrt(a);
  if (e == T(-0.5)) return T(1) / std::sqrt(a);
  if (e == T(-1)) return T(1) / a;
  if (e == T(-2)) return T(1) / (a * a);
  return std::pow(a, e);
}

}  // namespace amber::cpu::pw
