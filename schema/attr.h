// Attr: the value of one non-tensor op argument (int, float, bool, int list, float list,
// string, dtype, or None for an optional argument left out). Graph nodes own their Attrs;
// the eager API builds them on the stack. Printing gives the graph-text spelling, with
// floats in shortest round-trip form so text parses back to the same bits.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "amber/core/dtype.h"
#include "amber/core/scalar.h"
#include "amber/core/shape.h"

namespace amber {

enum class AttrKind : uint8_t { none, i, f, b, ints, floats, s, dtype };
std::string_view attr_kind_name(AttrKind k);

class Attr {
 public:
  Attr() = default;  // None
  Attr(int v) : kind_(AttrKind::i), i_(v) {}
  Attr(int64_t v) : kind_(AttrKind::i), i_(v) {}
  Attr(double v) : kind_(AttrKind::f), f_(v) {}
  Attr(bool v) : kind_(AttrKind::b), i_(v) {}
  Attr(DType t) : kind_(AttrKind::dtype), i_(int64_t(t)) {}
  Attr(const Scalar& s);
  Attr(std::vector<int64_t> v) : kind_(AttrKind::ints), ints_(std::move(v)) {}
  Attr(const DimVec& v) : kind_(AttrKind::ints), ints_(v.vec()) {}
  Attr(std::vector<double> v) : kind_(AttrKind::floats), floats_(std::move(v)) {}
  Attr(std::string v) : kind_(AttrKind::s), s_(std::move(v)) {}
  Attr(const char* v) : kind_(AttrKind::s), s_(v) {}
  static Attr none() { return Attr(); }

  AttrKind kind() const { return kind_; }
  bool is_none() const { return kind_ == AttrKind::none; }
  int64_t i() const { return i_; }
  double f() const { return kind_ == AttrKind::f ? f_ : double(i_); }
  bool b() const { return i_ != 0; }
  DType dtype() const { return DType(i_); }
  const std::vector<int64_t>& ints() const { return ints_; }
  const std::vector<double>& floats() const { return floats_; }
  const std::string& s() const { return s_; }
  // The value of an Int/Float/Bool attribute as a Scalar.
  Scalar scalar() const;

  friend bool operator==(const Attr& a, const Attr& b);

 private:
  AttrKind kind_ = AttrKind::none;
  int64_t i_ = 0;
  double f_ = 0;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;
  std::string s_;
};

std::ostream& operator<<(std::ostream& os, const Attr& a);
// Shortest text that parses back to exactly d ("1.0", "0.1", "1e-05", "inf", "nan").
std::string format_double(double d);

}  // namespace amber
