// Out-of-line pieces of core/error.h and core/device.h: internal-error construction and
// device parsing/printing.

#include <charconv>

#include "amber/core/device.h"
#include "amber/core/error.h"

namespace amber {

std::string escaped(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace detail {
void throw_internal(const char* file, int line, const char* cond, const std::string& msg) {
  throw Error(str("internal error (this is a bug in Amber, please report it): ", msg, msg.empty() ? "" : " ", "[", cond,
                  " at ", file, ":", line, "]"));
}
}  // namespace detail

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.substr(0, 5) == "cuda:") {
    std::string_view num = text.substr(5);
    int32_t idx = -1;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
    if (ec == std::errc() && p == num.data() + num.size() && idx >= 0 && !num.empty()) return cuda(idx);
  }
  throw Error(amber::str("invalid device '", text, "': expected cpu, cuda or cuda:N"));
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace amber
