// What a service asks of a device as a whole, through its backend: the memory Amber holds
// there (now, at most, the cap and the driver's view) and waiting for the work eager calls
// queued on it. Per-model memory is Model::workspace_bytes; this is the whole process's.
#pragma once

#include <cstdint>

#include "amber/core/device.h"

namespace amber {

struct DeviceMemory {
  uint64_t held_bytes = 0;          // allocated by Amber and not freed: tensors, arenas, weights, kernels' states
  uint64_t peak_held_bytes = 0;     // the most held at once since the process began or the last reset
  uint64_t limit_bytes = 0;         // the cap on held bytes (AMBER_CUDA_MEMORY_LIMIT), 0 when none
  uint64_t device_free_bytes = 0;   // free on the device as its driver reports it, 0 when unknown
  uint64_t device_total_bytes = 0;  // the device's memory, 0 when unknown
};

// Amber's memory on device (a CUDA GPU: what its caching allocator handed out, not the
// libraries' own, such as cuDNN's). Throws amber::Error for the CPU, whose memory is not
// tracked, and for a device that is not present.
DeviceMemory device_memory(Device device);
// Starts device's peak again from what is held now (as torch.cuda.reset_peak_memory_stats).
void reset_peak_device_memory(Device device);
// Waits until everything eager calls queued on device is done (a model's forward waits for its
// own work already); nothing to wait for on the CPU. Throws amber::Error when queued work failed.
void synchronize(Device device);

}  // namespace amber
