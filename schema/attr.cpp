// Attr construction, comparison and graph-text printing (see attr.h).

#include "amber/schema/attr.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace amber {

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::none:
      return "None";
    case AttrKind::i:
      return "int";
    case AttrKind::f:
      return "float";
    case AttrKind::b:
      return "bool";
    case AttrKind::ints:
      return "int[]";
    case AttrKind::floats:
      return "float[]";
    case AttrKind::s:
      return "str";
    case AttrKind::dtype:
      return "ScalarType";
  }
  return "?";
}

Attr::Attr(const Scalar& s) {
  if (s.is_floating()) {
    kind_ = AttrKind::f;
    f_ = s.to_double();
  } else {
    kind_ = s.is_bool() ? AttrKind::b : AttrKind::i;
    i_ = s.to_int();
  }
}

Scalar Attr::scalar() const {
  switch (kind_) {
    case AttrKind::f:
      return Scalar(f_);
    case AttrKind::b:
      return Scalar(i_ != 0);
    default:
      return Scalar(i_);
  }
}

bool operator==(const Attr& a, const Attr& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case AttrKind::none:
      return true;
    case AttrKind::f:
      return std::memcmp(&a.f_, &b.f_, sizeof(double)) == 0;  // bitwise: NaN == NaN
    case AttrKind::ints:
      return a.ints_ == b.ints_;
    case AttrKind::floats:
      return a.floats_.size() == b.floats_.size() &&
             std::memcmp(a.floats_.data(), b.floats_.data(), a.floats_.size() * sizeof(double)) == 0;
    case AttrKind::s:
      return a.s_ == b.s_;
    default:
      return a.i_ == b.i_;
  }
}

std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, p);
  // Keep a float recognisable as a float: "1" -> "1.0".
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

static void print_string(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (c == '\n')
      os << "\\n";
    else if (c < 0x20 || c >= 0x7f) {
      const char* hex = "0123456789abcdef";
      os << "\\x" << hex[c >> 4] << hex[c & 15];
    } else
      os << c;
  }
  os << '"';
}

std::ostream& operator<<(std::ostream& os, const Attr& a) {
  switch (a.kind()) {
    case AttrKind::none:
      return os << "None";
    case AttrKind::i:
      return os << a.i();
    case AttrKind::f:
      return os << format_double(a.f());
    case AttrKind::b:
      return os << (a.b() ? "true" : "false");
    case AttrKind::ints: {
      os << '[';
      for (size_t k = 0; k < a.ints().size(); ++k) os << (k ? ", " : "") << a.ints()[k];
      return os << ']';
    }
    case AttrKind::floats: {
      os << '[';
      for (size_t k = 0; k < a.floats().size(); ++k) os << (k ? ", " : "") << format_double(a.floats()[k]);
      return os << ']';
    }
    case AttrKind::s:
      print_string(os, a.s());
      return os;
    case AttrKind::dtype:
      return os << dtype_name(a.dtype());
  }
  return os;
}

}  // namespace amber
