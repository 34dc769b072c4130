// DType names, sizes, half/bfloat16 conversion and PyTorch's promotion table
// (c10/core/ScalarType.h promoteTypes and ATen's result_type categories).

#include "amber/core/dtype.h"

#include <cstring>

namespace amber {

size_t itemsize(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i64:
      return 8;
    case DType::i32:
      return 4;
    case DType::i16:
      return 2;
    case DType::i8:
      return 1;
    case DType::u8:
      return 1;
    case DType::b8:
      return 1;
  }
  return 1;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::i16:
      return "i16";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::b8:
      return "bool";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (dtype_name(DType(i)) == name) return DType(i);
  return std::nullopt;
}

bool is_valid_dtype_code(int code) { return code >= 0 && code < kNumDTypes; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::b8) return b;
  if (b == DType::b8) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if (a == DType::f64 || b == DType::f64) return DType::f64;
    return DType::f32;  // f16 with bf16, or either with f32
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral (u8, i8, i16, i32, i64).
  if (a == DType::u8 || b == DType::u8) {
    DType other = a == DType::u8 ? b : a;
    return other == DType::i8 ? DType::i16 : other;
  }
  // Signed integers: the wider wins. Codes run i64 (4) .. i8 (7), wider first.
  return a < b ? a : b;
}

void ResultType::add(DType t, Priority p) {
  if (p == Priority::wrapped && is_floating(t)) t = DType::f32;  // default dtype
  auto& s = state_[int(p)];
  s = s ? promote_types(*s, t) : t;
}

// ATen's combine_categories: a lower-priority operand only matters when it belongs to a
// higher category (bool < integral < floating) than the higher-priority result.
static std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::b8 || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}

DType ResultType::result() const {
  auto r = combine(combine(state_[0], state_[1]), state_[2]);
  return r ? *r : DType::f32;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                 // below the smallest normal half
    // Scale into the subnormal range with float arithmetic, which rounds to nearest even.
    float a;
    std::memcpy(&a, &ax, 4);
    float scaled = a * 16777216.0f;  // 2^24: one unit is the smallest half subnormal
    uint32_t m = uint32_t(__builtin_nearbyintf(scaled));
    return uint16_t(sign | m);
  }
  uint32_t mant = ax & 0x7fffff;
  uint32_t exp = (ax >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // carries into exponent correctly
  return uint16_t(sign | h);
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

std::ostream& operator<<(std::ostream& os, DTypeSet s) {
  bool first = true;
  s.for_each([&](DType t) {
    os << (first ? "" : ", ") << dtype_name(t);
    first = false;
  });
  return os;
}

}  // namespace amber
