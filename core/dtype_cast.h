// cast_value<To>(from): converts one element between any two dtypes with PyTorch's rules
// (float to integer truncates toward zero, nonzero to bool is true, f16/bf16 round to
// nearest even). Float to integer conversion is defined for every input: NaN and values out
// of the int64 range give INT64_MIN before narrowing, as x86 does, never undefined behaviour.
#pragma once

#include <cstdint>
#include <type_traits>

#include "amber/core/dtype.h"

namespace amber {

template <typename T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename From>
inline auto widen(From v) {
  if constexpr (std::is_same_v<From, Half>)
    return half_to_float(v.bits);
  else if constexpr (std::is_same_v<From, BFloat16>)
    return bf16_to_float(v.bits);
  else
    return v;
}

inline int64_t float_to_int64(double v) {
  // 2^63 is exactly representable; the range test is false for NaN.
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return int64_t(v);
  return INT64_MIN;
}

template <typename To, typename From>
inline To cast_value(From from) {
  auto v = widen(from);
  using W = decltype(v);
  if constexpr (std::is_same_v<To, W>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != W(0);
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{float_to_half(float(v))};
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16{float_to_bf16(float(v))};
  } else if constexpr (std::is_floating_point_v<To>) {
    return To(v);
  } else if constexpr (std::is_floating_point_v<W>) {
    return To(uint64_t(float_to_int64(double(v))));  // narrowing from uint64 is modular
  } else {
    return To(v);  // integer to integer: modular, as PyTorch
  }
}

}  // namespace amber
