// Per-element formulas of the float pointwise ops, shared by the op kernels and the
// fused-program kernel of every device (CPU: unary.cpp, fused.cpp; CUDA: pointwise.cu,
// fused.cu) so that a fused chain computes what the separate ops compute, and the CPU tests
// cover the CUDA formulas. Formulas are ATen's. Transcendentals go through exp_/log_/tanh_/
// erf_: libmvec's vectorisable calls on the CPU, CUDA's math library on the GPU.
#pragma once

#include <cmath>
#include <type_traits>

#include "amber/kernels/hd.h"

#if defined(__CUDACC__)
namespace amber::pw {
AMBER_HD inline float exp_(float x) { return ::expf(x); }
AMBER_HD inline double exp_(double x) { return ::exp(x); }
AMBER_HD inline float log_(float x) { return ::logf(x); }
AMBER_HD inline double log_(double x) { return ::log(x); }
AMBER_HD inline float tanh_(float x) { return ::tanhf(x); }
AMBER_HD inline double tanh_(double x) { return ::tanh(x); }
AMBER_HD inline float erf_(float x) { return ::erff(x); }
AMBER_HD inline double erf_(double x) { return ::erf(x); }
}  // namespace amber::pw
#else
#include "amber/kernels/cpu/vec_math.h"
namespace amber::pw {
AMBER_HD inline float exp_(float x) { return cpu::vexp(x); }
AMBER_HD inline double exp_(double x) { return cpu::vexp(x); }
AMBER_HD inline float log_(float x) { return cpu::vlog(x); }
AMBER_HD inline double log_(double x) { return cpu::vlog(x); }
AMBER_HD inline float tanh_(float x) { return cpu::vtanh(x); }
AMBER_HD inline double tanh_(double x) { return cpu::vtanh(x); }
AMBER_HD inline float erf_(float x) { return cpu::verf(x); }
AMBER_HD inline double erf_(double x) { return cpu::verf(x); }
}  // namespace amber::pw
#endif

namespace amber::pw {

template <typename T>
AMBER_HD inline T relu(T a) {  // NaN and -0.0 kept
  if constexpr (std::is_unsigned_v<T>)
    return a;
  else
    return a < T(0) ? T(0) : a;
}
template <typename T>
AMBER_HD inline T sigmoid(T a) {
  return T(1) / (T(1) + exp_(-a));
}
template <typename T>
AMBER_HD inline T silu(T a) {
  return a / (T(1) + exp_(-a));
}
template <typename T>
AMBER_HD inline T rsqrt(T a) {
  return T(1) / std::sqrt(a);
}
template <typename T>
AMBER_HD inline T reciprocal(T a) {
  return T(1) / a;
}
template <typename T>
AMBER_HD inline T gelu(T a) {
  return a * T(0.5) * (T(1) + erf_(a * T(M_SQRT1_2)));
}
template <typename T>
AMBER_HD inline T gelu_tanh(T a) {
  const T beta = T(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = T(0.044715);
  const T inner = beta * (a + kappa * a * a * a);
  return T(0.5) * a * (T(1) + tanh_(inner));
}
// std::min(std::max(a, lo), hi) as ATen: NaN propagates; lo > hi gives hi.
template <typename T>
AMBER_HD inline T clamp_min(T a, T lo) {
  return a < lo ? lo : a;
}
template <typename T>
AMBER_HD inline T clamp_max(T a, T hi) {
  return hi < a ? hi : a;
}
// pow with a scalar exponent: ATen's exact shortcuts for 2, 3, 0.5, -0.5, -1, -2.
template <typename T>
AMBER_HD inline T pow_scalar(T a, T e) {
  if (e == T(2)) return a * a;
  if (e == T(3)) return a * a * a;
  if (e == T(0.5)) return std::sqrt(a);
  if (e == T(-0.5)) return T(1) / std::sqrt(a);
  if (e == T(-1)) return T(1) / a;
  if (e == T(-2)) return T(1) / (a * a);
  return std::pow(a, e);
}

}  // namespace amber::pw
