// The few names of the C++ standard library the shared formulas (pointwise_math.h, arith.h)
// use, for NVRTC, which compiles CUDA's run-time generated kernels (kernels/cuda/fused_rtc.cpp)
// without a standard library: the type traits those headers test, and std:: names for CUDA's
// own math functions (declared by NVRTC for float and double). Included only under NVRTC.
#pragma once

// <cmath>'s constants the formulas use (glibc's values).
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#define M_2_SQRTPI 1.12837916709551257390

namespace std {

template <typename T, T v>
struct integral_constant {
  static constexpr T value = v;
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <typename T>
struct is_integral : false_type {};
template <>
struct is_integral<bool> : true_type {};
template <>
struct is_integral<char> : true_type {};
template <>
struct is_integral<signed char> : true_type {};
template <>
struct is_integral<unsigned char> : true_type {};
template <>
struct is_integral<short> : true_type {};
template <>
struct is_integral<unsigned short> : true_type {};
template <>
struct is_integral<int> : true_type {};
template <>
struct is_integral<unsigned> : true_type {};
template <>
struct is_integral<long> : true_type {};
template <>
struct is_integral<unsigned long> : true_type {};
template <>
struct is_integral<long long> : true_type {};
template <>
struct is_integral<unsigned long long> : true_type {};
template <typename T>
inline constexpr bool is_integral_v = is_integral<T>::value;

template <typename T>
struct is_floating_point : false_type {};
template <>
struct is_floating_point<float> : true_type {};
template <>
struct is_floating_point<double> : true_type {};
template <typename T>
inline constexpr bool is_floating_point_v = is_floating_point<T>::value;

template <typename T>
inline constexpr bool is_signed_v = (is_integral_v<T> || is_floating_point_v<T>)&&T(-1) < T(0);
template <typename T>
inline constexpr bool is_unsigned_v = is_integral_v<T>&& T(0) < T(-1);

template <bool B, typename T, typename F>
struct conditional {
  using type = T;
};
template <typename T, typename F>
struct conditional<false, T, F> {
  using type = F;
};
template <bool B, typename T, typename F>
using conditional_t = typename conditional<B, T, F>::type;

template <typename T>
struct make_unsigned {
  using type = T;
};
template <>
struct make_unsigned<char> {
  using type = unsigned char;
};
template <>
struct make_unsigned<signed char> {
  using type = unsigned char;
};
template <>
struct make_unsigned<short> {
  using type = unsigned short;
};
template <>
struct make_unsigned<int> {
  using type = unsigned;
};
template <>
struct make_unsigned<long> {
  using type = unsigned long;
};
template <>
struct make_unsigned<long long> {
  using type = unsigned long long;
};
template <typename T>
using make_unsigned_t = typename make_unsigned<T>::type;

template <typename T>
__host__ __device__ constexpr const T& max(const T& a, const T& b) {
  return a < b ? b : a;
}
template <typename T>
__host__ __device__ constexpr const T& min(const T& a, const T& b) {
  return b < a ? b : a;
}

using ::acos;
using ::acosh;
using ::asin;
using ::asinh;
using ::atan;
using ::atanh;
using ::ceil;
using ::copysign;
using ::cos;
using ::cosh;
using ::expm1;
using ::fabs;
using ::floor;
using ::fmod;
using ::log;
using ::log1p;
using ::nearbyint;
using ::pow;
using ::sin;
using ::sinh;
using ::sqrt;
using ::tan;

}  // namespace std
