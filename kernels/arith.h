// Scalar arithmetic with PyTorch's semantics and no undefined behaviour: signed integer
// add/sub/mul/neg wrap modulo 2^n (computed in unsigned), integer division truncates or
// floors like ATen (INT_MIN / -1 wraps), float floor division is ATen's div_floor_floating.
// One source for every device: host and device functions (AMBER_HD) used by the CPU kernels
// and the CUDA kernels alike, so the CPU tests cover the math of both.
#pragma once

#if defined(__CUDACC_RTC__)
#include "amber/kernels/rtc_std.h"  // NVRTC: no standard library
#else
#include <cmath>
#include <type_traits>
#endif

#include "amber/kernels/hd.h"

namespace amber::pw {

template <typename T>
AMBER_HD inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return a + b;
}
template <typename T>
AMBER_HD inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b));
  else
    return a - b;
}
template <typename T>
AMBER_HD inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return T(U(a) * U(b));
  } else {
    return a * b;
  }
}
template <typename T>
AMBER_HD inline T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
  else
    return -a;
}

// b != 0. The only overflowing case, min / -1, wraps to min as on PyTorch's x86 builds.
template <typename T>
AMBER_HD inline T div_trunc_int(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_neg(a);
  }
  return T(a / b);
}
template <typename T>
AMBER_HD inline T div_floor_int(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_neg(a);
    const T q = T(a / b);
    const T r = T(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? T(q - 1) : q;
  } else {
    return T(a / b);
  }
}

// Integer powers by squaring, with ATen's rules for negative exponents.
template <typename T>
AMBER_HD inline T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, base);
    exp = T(exp >> 1);
    base = wrap_mul(base, base);
  }
  return result;
}

template <typename T>
AMBER_HD inline T div_floor_float(T a, T b) {
  if (b == 0) return a / b;  // IEEE result for division by zero
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
  if (div != 0) {
    T floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1.0);
    return floordiv;
  }
  return std::copysign(T(0), a / b);
}

}  // namespace amber::pw
