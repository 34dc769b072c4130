// Element types of Amber tensors, their sizes and names, and PyTorch's type promotion rules.
// The numeric codes are part of the archive format and of the C backend ABI (core/backend.h):
// never renumber an existing dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace amber {

enum class DType : uint8_t {
  f32 = 0,
  f64 = 1,
  f16 = 2,
  bf16 = 3,
  i64 = 4,
  i32 = 5,
  i16 = 6,
  i8 = 7,
  u8 = 8,
  b8 = 9,  // bool, one byte per element holding 0 or 1
};
inline constexpr int kNumDTypes = 10;

size_t itemsize(DType t);
// Short names used in graph text and errors: "f32", ..., "bool".
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_valid_dtype_code(int code);

inline bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16; }
inline bool is_integral(DType t, bool include_bool) {
  return (t >= DType::i64 && t <= DType::u8) || (include_bool && t == DType::b8);
}

// torch.promote_types for two dtypes.
DType promote_types(DType a, DType b);

// How an operand takes part in result-type computation (torch.result_type): tensors with
// dims outrank zero-dim tensors, which outrank plain C++ numbers ("wrapped numbers").
enum class Priority : uint8_t { dimensioned = 0, zero_dim = 1, wrapped = 2 };

// Accumulates operands and yields PyTorch's result dtype. A wrapped floating number counts
// as the default dtype f32, a wrapped integer as i64, a wrapped bool as bool.
class ResultType {
 public:
  void add(DType t, Priority p);
  DType result() const;

 private:
  std::optional<DType> state_[3];
};

// A set of dtypes, used by the op table to list what an op's kernels implement.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> ts) {
    for (DType t : ts) bits_ |= uint16_t(1u << unsigned(t));
  }
  constexpr bool contains(DType t) const { return bits_ & (1u << unsigned(t)); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr DTypeSet operator|(DTypeSet o) const { return from_bits(uint16_t(bits_ | o.bits_)); }
  constexpr bool operator==(const DTypeSet& o) const { return bits_ == o.bits_; }
  template <typename F>
  void for_each(F&& f) const {
    for (int i = 0; i < kNumDTypes; ++i)
      if (bits_ & (1u << i)) f(DType(i));
  }

 private:
  static constexpr DTypeSet from_bits(uint16_t b) {
    DTypeSet s;
    s.bits_ = b;
    return s;
  }
  uint16_t bits_ = 0;
};

std::ostream& operator<<(std::ostream& os, DType t);
std::ostream& operator<<(std::ostream& os, DTypeSet s);

namespace dtypes {
inline constexpr DTypeSet floating{DType::f32, DType::f64};
// The 16-bit floats, which every op computing in f32 also computes in (schema/via_f32.h).
inline constexpr DTypeSet half{DType::f16, DType::bf16};
inline constexpr DTypeSet integral{DType::i64, DType::i32, DType::i16, DType::i8, DType::u8};
inline constexpr DTypeSet numeric = floating | integral;
inline constexpr DTypeSet comparable = numeric | DTypeSet{DType::b8};  // comparisons' inputs
inline constexpr DTypeSet all{DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64,
                              DType::i32, DType::i16, DType::i8,  DType::u8,   DType::b8};
}  // namespace dtypes

// C++ element type for each dtype, and the reverse.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even, as PyTorch
inline float bf16_to_float(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
// Round to nearest even, NaN kept quiet. Inline: loops converting arrays vectorise it.
inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  __builtin_memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = DType::i16;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::i8;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::b8;
};
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

// The C++ element types of each dtype set of namespace dtypes, for registering kernels
// (register_typed<K>(ctypes::numeric{}, op)): checked here against the sets, so each set is
// defined once.
template <typename... Ts>
struct TypeList {};
template <typename... Ts>
constexpr DTypeSet dtype_set(TypeList<Ts...>) {
  return DTypeSet{dtype_v<Ts>...};
}
namespace ctypes {
using floating = TypeList<float, double>;
using numeric = TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t>;
using comparable = TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, bool>;
using all = TypeList<float, double, Half, BFloat16, int64_t, int32_t, int16_t, int8_t, uint8_t, bool>;
}  // namespace ctypes
static_assert(dtype_set(ctypes::floating{}) == dtypes::floating);
static_assert(dtype_set(ctypes::numeric{}) == dtypes::numeric);
static_assert(dtype_set(ctypes::comparable{}) == dtypes::comparable);
static_assert(dtype_set(ctypes::all{}) == dtypes::all);

// Calls f.template operator()<T>() with the C++ type of dtype t (all ten dtypes).
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f.template operator()<float>();
    case DType::f64:
      return f.template operator()<double>();
    case DType::f16:
      return f.template operator()<Half>();
    case DType::bf16:
      return f.template operator()<BFloat16>();
    case DType::i64:
      return f.template operator()<int64_t>();
    case DType::i32:
      return f.template operator()<int32_t>();
    case DType::i16:
      return f.template operator()<int16_t>();
    case DType::i8:
      return f.template operator()<int8_t>();
    case DType::u8:
      return f.template operator()<uint8_t>();
    case DType::b8:
      break;
  }
  return f.template operator()<bool>();
}

}  // namespace amber
