// Device-wide memory statistics and synchronisation through the backend table (devices.h).

#include "amber/core/devices.h"

#include "amber/core/backend_registry.h"
#include "amber/core/error.h"

namespace amber {
namespace {

DeviceMemory stats(Device device, bool reset_peak) {
  const amber_backend& b = backend(device);
  AMBER_CHECK(b.memory_stats, "device_memory: ", device, "'s memory is not tracked (only devices with their own ",
              "memory are, such as cuda:N)");
  amber_memory_stats s{};
  AMBER_CHECK(b.memory_stats(device.index, reset_peak ? 1 : 0, &s) == 0, "device_memory: asking ", device,
              " failed: ", b.last_error());
  return {s.held_bytes, s.peak_held_bytes, s.limit_bytes, s.device_free_bytes, s.device_total_bytes};
}

}  // namespace

DeviceMemory device_memory(Device device) { return stats(device, false); }

void reset_peak_device_memory(Device device) { (void)stats(device, true); }

void synchronize(Device device) {
  if (device.is_cpu()) return;
  const amber_backend& b = backend(device);
  AMBER_CHECK(b.synchronize(device.index, nullptr) == 0, "synchronize: work queued on ", device,
              " failed: ", b.last_error());
}

}  // namespace amber
