// Per-element formulas of the pointwise ops, shared by the op kernels and the fused-program
// kernel of every device (CPU: unary.cpp, fused.cpp; CUDA: pointwise.cu, fused.cu) so that a
// fused chain computes what the separate ops compute, and the CPU tests cover the CUDA formulas.
// Formulas are ATen's; pw::op::NAME is instruction NAME of core/fused_ops.h. Transcendentals
// go through exp_/log_/tanh_/erf_: libmvec's vectorisable calls on the CPU, CUDA's on the GPU.
#pragma once

#if defined(__CUDACC_RTC__)
#include "amber/kernels/rtc_std.h"  // NVRTC: no standard library
#else
#include <cmath>
#include <type_traits>
#endif

#include "amber/kernels/arith.h"
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

// One function per instruction of core/fused_ops.h, named as the instruction: what the
// unary op kernels, the fused kernels and the fusion pass (through the list) agree on.
namespace amber::pw::op {

template <typename T>
AMBER_HD inline T add(T a, T b) {
  return a + b;
}
template <typename T>
AMBER_HD inline T sub(T a, T b) {
  return a - b;
}
template <typename T>
AMBER_HD inline T mul(T a, T b) {
  return a * b;
}
template <typename T>
AMBER_HD inline T div(T a, T b) {
  return a / b;
}
template <typename T>
AMBER_HD inline T pow(T a, T b) {
  return std::pow(a, b);
}
template <typename T>
AMBER_HD inline T neg(T a) {
  return wrap_neg(a);
}
template <typename T>
AMBER_HD inline T abs(T a) {
  if constexpr (std::is_floating_point_v<T>)
    return std::fabs(a);
  else if constexpr (std::is_signed_v<T>)
    return a < 0 ? wrap_neg(a) : a;
  else
    return a;
}
template <typename T>
AMBER_HD inline T exp(T a) {
  return exp_(a);
}
template <typename T>
AMBER_HD inline T log(T a) {
  return log_(a);
}
template <typename T>
AMBER_HD inline T sqrt(T a) {
  return std::sqrt(a);
}
template <typename T>
AMBER_HD inline T rsqrt(T a) {
  return pw::rsqrt(a);
}
template <typename T>
AMBER_HD inline T tanh(T a) {
  return tanh_(a);
}
template <typename T>
AMBER_HD inline T sigmoid(T a) {
  return pw::sigmoid(a);
}
template <typename T>
AMBER_HD inline T relu(T a) {
  return pw::relu(a);
}
template <typename T>
AMBER_HD inline T gelu(T a) {
  return pw::gelu(a);
}
template <typename T>
AMBER_HD inline T gelu_tanh(T a) {
  return pw::gelu_tanh(a);
}
template <typename T>
AMBER_HD inline T silu(T a) {
  return pw::silu(a);
}
template <typename T>
AMBER_HD inline T reciprocal(T a) {
  return pw::reciprocal(a);
}
template <typename T>
AMBER_HD inline T clamp_min(T a, T lo) {
  return pw::clamp_min(a, lo);
}
template <typename T>
AMBER_HD inline T clamp_max(T a, T hi) {
  return pw::clamp_max(a, hi);
}
template <typename T>
AMBER_HD inline T clamp(T a, T lo, T hi) {
  return pw::clamp_max(pw::clamp_min(a, lo), hi);
}
template <typename T>
AMBER_HD inline T erf(T a) {
  return erf_(a);
}
template <typename T>
AMBER_HD inline T log1p(T a) {
  return std::log1p(a);
}
template <typename T>
AMBER_HD inline T expm1(T a) {
  return std::expm1(a);
}
template <typename T>
AMBER_HD inline T sin(T a) {
  return std::sin(a);
}
template <typename T>
AMBER_HD inline T cos(T a) {
  return std::cos(a);
}
template <typename T>
AMBER_HD inline T tan(T a) {
  return std::tan(a);
}
template <typename T>
AMBER_HD inline T asin(T a) {
  return std::asin(a);
}
template <typename T>
AMBER_HD inline T acos(T a) {
  return std::acos(a);
}
template <typename T>
AMBER_HD inline T atan(T a) {
  return std::atan(a);
}
template <typename T>
AMBER_HD inline T sinh(T a) {
  return std::sinh(a);
}
template <typename T>
AMBER_HD inline T cosh(T a) {
  return std::cosh(a);
}
template <typename T>
AMBER_HD inline T asinh(T a) {
  return std::asinh(a);
}
template <typename T>
AMBER_HD inline T acosh(T a) {
  return std::acosh(a);
}
template <typename T>
AMBER_HD inline T atanh(T a) {
  return std::atanh(a);
}
template <typename T>
AMBER_HD inline T floor(T a) {  // integers: themselves
  if constexpr (std::is_integral_v<T>)
    return a;
  else
    return std::floor(a);
}
template <typename T>
AMBER_HD inline T ceil(T a) {
  if constexpr (std::is_integral_v<T>)
    return a;
  else
    return std::ceil(a);
}
template <typename T>
AMBER_HD inline T round(T a) {  // halves to even, as torch.round
  if constexpr (std::is_integral_v<T>)
    return a;
  else
    return std::nearbyint(a);
}
template <typename T>
AMBER_HD inline T sign(T a) {  // ATen's (0 < a) - (a < 0): NaN and -0.0 give 0
  if constexpr (std::is_unsigned_v<T>)
    return T(T(0) < a);
  else
    return T(T(T(0) < a) - T(a < T(0)));
}
template <typename T>
AMBER_HD inline T relu6(T a) {  // hardtanh(a, 0, 6)
  return pw::clamp_max(pw::clamp_min(a, T(0)), T(6));
}
template <typename T>
AMBER_HD inline T hardsigmoid(T a) {  // min(max(a + 3, 0), 6) / 6
  return pw::clamp_max(pw::clamp_min(a + T(3), T(0)), T(6)) / T(6);
}
template <typename T>
AMBER_HD inline T hardswish(T a) {  // a * min(max(a + 3, 0), 6) / 6
  return a * pw::clamp_max(pw::clamp_min(a + T(3), T(0)), T(6)) / T(6);
}
template <typename T>
AMBER_HD inline T mish(T a) {  // a * tanh(softplus(a)), softplus as log1p(exp(a))
  return a * tanh_(std::log1p(exp_(a)));
}

template <typename T>
AMBER_HD inline T softsign(T a) {  // ATen's self / (1 + |self|)
  return a / (T(1) + abs(a));
}

template <typename T>
AMBER_HD inline T selu(T a) {  // ATen's elu with SELU's alpha and scale, coefficients in T
  const T scale = T(1.0507009873554804934193349852946), negcoef = T(1.6732632423543772848170429916717) * scale;
  return a <= T(0) ? (exp_(a) - T(1)) * negcoef : a * scale;
}
template <typename T>
AMBER_HD inline T leaky_relu(T a, T negative_slope) {
  return a > T(0) ? a : a * negative_slope;
}
template <typename T>
AMBER_HD inline T elu(T a, T alpha) {  // ATen's elu with scale = input_scale = 1
  return a <= T(0) ? (exp_(a) - T(1)) * alpha : a;
}
template <typename T>
AMBER_HD inline T softplus(T a, T beta, T threshold) {
  return a * beta > threshold ? a : std::log1p(exp_(a * beta)) / beta;
}
template <typename T>
AMBER_HD inline T hardshrink(T a, T lambd) {
  return (a >= -lambd && a <= lambd) ? T(0) : a;
}
template <typename T>
AMBER_HD inline T softshrink(T a, T lambd) {
  return a > lambd ? a - lambd : (a < -lambd ? a + lambd : T(0));
}
template <typename T>
AMBER_HD inline T threshold(T a, T threshold, T value) {
  return a <= threshold ? value : a;
}

template <typename T>
AMBER_HD inline T maximum(T a, T b) {  // ATen's: NaN if either is NaN
  if constexpr (std::is_floating_point_v<T>)
    if (a != a || b != b) return a != a ? a : b;
  return a < b ? b : a;
}
template <typename T>
AMBER_HD inline T minimum(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (a != a || b != b) return a != a ? a : b;
  return b < a ? b : a;
}

}  // namespace amber::pw::op
