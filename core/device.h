// Device: where a tensor's memory lives (the host, or CUDA device N). The type codes are
// shared with the C backend ABI in core/backend.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace amber {

enum class DeviceType : uint8_t { cpu = 0, cuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::cpu;
  int32_t index = 0;

  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  static constexpr Device cuda(int32_t i = 0) { return {DeviceType::cuda, i}; }
  // Parses "cpu", "cuda", "cuda:N"; throws amber::Error otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace amber
