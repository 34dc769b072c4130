// Scalar: a C++ number passed to an op (`x * 2`, `x + 0.5`). It remembers whether it was
// integral, floating or bool, because PyTorch's type promotion treats them differently.
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "amber/core/dtype.h"

namespace amber {

class Scalar {
 public:
  enum class Kind : uint8_t { boolean, integral, floating };
  Scalar() : kind_(Kind::integral), i_(0) {}
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::boolean;
      i_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::integral;
      i_ = int64_t(v);
    } else {
      kind_ = Kind::floating;
      d_ = double(v);
    }
  }
  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::floating; }
  bool is_integral() const { return kind_ == Kind::integral; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  double to_double() const { return is_floating() ? d_ : double(i_); }
  int64_t to_int() const { return is_floating() ? int64_t(d_) : i_; }
  // The dtype this number has as a "wrapped number" in result-type computation.
  DType wrapped_dtype() const { return is_floating() ? DType::f64 : is_bool() ? DType::b8 : DType::i64; }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace amber
