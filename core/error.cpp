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

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::cpu:
      return "cpu";
    case DeviceType::cuda:
      return "cuda";
    case DeviceType::sim:
      return "sim";
  }
  return "?";
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  for (DeviceType t : {DeviceType::cuda, DeviceType::sim}) {
    const std::string_view name = device_type_name(t);
    if (text == name) return {t, 0};
    if (text.size() > name.size() + 1 && text.substr(0, name.size()) == name && text[name.size()] == ':') {
      std::string_view num = text.substr(name.size() + 1);
      int32_t idx = -1;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
      if (ec == std::errc() && p == num.data() + num.size() && idx >= 0) return {t, idx};
    }
  }
  throw Error(amber::str("invalid device '", text, "': expected cpu, cuda, cuda:N, sim or sim:N"));
}

std::string Device::str() const {
  return is_cpu() ? "cpu" : std::string(device_type_name(type)) + ":" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace amber
