// The CUDA backend's device memory, one allocator for all of it: CUDA's stream-ordered pool as
// the cache, the bytes Amber holds per device counted against AMBER_CUDA_MEMORY_LIMIT, running
// out named with the bytes asked, held and free. The backend table's allocate (backend.cpp) and
// the memory kernels hold (DeviceBuffer: packed weights, tables, setups' scratch) both take from
// it. Private to libamber_cuda.so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "amber/core/backend.h"

namespace amber::cuda {

constexpr int kMaxDevices = 64;  // the device indices the backend serves

// nbytes on `device`, usable by work queued after it on the legacy default stream (and so on
// every blocking stream); NULL with *error saying why (the device, the bytes asked, held, and the
// cap or the driver's free bytes).
void* device_allocate(int32_t device, size_t nbytes, std::string* error);
// Gives back what device_allocate gave, after the work already queued on the legacy stream.
void device_deallocate(int32_t device, void* ptr, size_t nbytes);

struct HeldBytes {
  size_t held = 0;   // what Amber holds on the device now
  size_t peak = 0;   // the most it held since the start or the last reset
  size_t limit = 0;  // AMBER_CUDA_MEMORY_LIMIT in bytes, 0 for none
};
// The device's counts; reset_peak starts the peak again from what is held now.
HeldBytes held_bytes(int32_t device, bool reset_peak);

// Device memory a kernel holds: what its setup keeps in the state (weights converted or packed,
// tables) or a setup's scratch (timing runs, probes), taken from device_allocate so that it counts
// in what Amber holds and under the cap, and given back when the buffer goes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_), device_(other.device_) {
    other.ptr_ = nullptr, other.bytes_ = 0;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  // `bytes` (at least one) on a's device, ready for any stream: 0, or the kernel's failure (1)
  // naming the op, what the memory is for and the allocator's reason. Gives back what it held.
  int take(const amber_kernel_args* a, size_t bytes, const char* op, const char* purpose);
  // The same on `device` without reporting: false where the memory could not be had (a scratch
  // the setup can do without).
  bool try_take(int32_t device, size_t bytes);
  // Gives the memory back (none held after).
  void reset();
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  bool take_or_say(int32_t device, size_t bytes, std::string* error);
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int32_t device_ = 0;
};

}  // namespace amber::cuda
