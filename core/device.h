// Device: where a tensor's memory lives (the host, CUDA device N, or simulated device N, the
// test backend that proves the device seam without a GPU). The type codes are shared with the
// C backend ABI in core/backend.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace amber {

enum class DeviceType : uint8_t { cpu = 0, cuda = 1, sim = 2 };
inline constexpr int kNumDeviceTypes = 3;
// "cpu", "cuda", "sim".
const char* device_type_name(DeviceType t);

struct Device {
  DeviceType type = DeviceType::cpu;
  int32_t index = 0;

  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  static constexpr Device cuda(int32_t i = 0) { return {DeviceType::cuda, i}; }
  static constexpr Device sim(int32_t i = 0) { return {DeviceType::sim, i}; }
  // Parses "cpu", "cuda", "cuda:N", "sim", "sim:N"; throws amber::Error otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool is_sim() const { return type == DeviceType::sim; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace amber
