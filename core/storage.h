// Storage: a reference-counted block of device memory shared by tensors and their views.
// CPU memory Amber allocates is 64-byte aligned. Storage can also wrap memory it does not
// own (an mmapped archive, a caller's buffer) with a keep-alive handle and a read-only
// flag; writing through a read-only storage is an error, never a silent write.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "amber/core/device.h"
#include "amber/core/ref.h"

namespace amber {

inline constexpr size_t kCpuAlignment = 64;

class StorageImpl final : public RefCounted {
 public:
  using Deleter = std::function<void(void*)>;
  // How the memory is released when the last reference goes.
  // cpu_mapped: a short-lived CPU block of Storage::allocate's mapped sizes (cpu_free_long_lived).
  enum class Owner : uint8_t { cpu_heap, cpu_mapped, backend, deleter, borrowed };
  StorageImpl(void* data, size_t nbytes, Device device, Owner owner, bool read_only, uint32_t alloc_flags = 0);
  ~StorageImpl();
  Deleter deleter;                         // used when owner is Owner::deleter
  std::shared_ptr<const void> keep_alive;  // held while the storage lives

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool read_only() const { return read_only_; }
  // Unique for the life of the process (never reused), so kernels may cache data derived
  // from read-only storage (for example reordered convolution weights) under it.
  uint64_t id() const { return id_; }

 private:
  uint64_t id_;
  void* data_;
  size_t nbytes_;
  Device device_;
  bool read_only_;
  Owner owner_;
  uint32_t alloc_flags_;  // amber_backend::allocate's flags, for Owner::backend
};

class Storage {
 public:
  Storage() = default;
  // Allocates nbytes on device (64-byte aligned on the CPU) through its backend; throws
  // amber::Error naming the byte count when memory is exhausted. long_lived: memory kept for
  // the life of a model (arenas, uploaded weights; AMBER_ALLOC_LONG_LIVED).
  static Storage allocate(size_t nbytes, Device device, bool long_lived = false);
  // Wraps memory Amber does not own. keep_alive is held until the last tensor using the
  // storage goes away (for example the mmap of an archive); nothing is freed by Amber.
  static Storage wrap(void* data, size_t nbytes, Device device, std::shared_ptr<const void> keep_alive, bool read_only);
  // Wraps memory whose ownership passes to Amber: deleter(data) runs when the last user
  // goes away.
  static Storage adopt(void* data, size_t nbytes, Device device, StorageImpl::Deleter deleter);
  // The same memory as a read-only storage (writes through it are refused), keeping this one
  // alive: weights uploaded to a device.
  Storage as_read_only() const;

  bool defined() const { return bool(impl_); }
  void* data() const { return impl_->data(); }
  size_t nbytes() const { return impl_->nbytes(); }
  Device device() const { return impl_->device(); }
  bool read_only() const { return impl_->read_only(); }
  int64_t use_count() const { return impl_ ? impl_->use_count() : 0; }
  bool is_same(const Storage& o) const { return impl_.get() == o.impl_.get(); }
  uint64_t id() const { return impl_->id(); }

 private:
  Ref<StorageImpl> impl_;
};

// Caps each allocation Storage::allocate makes on the calling thread while alive (nested
// limits keep the smaller): running an untrusted model at import (onnx/) bounds what one
// tensor may take, and a larger request is an amber::Error naming both sizes.
class AllocationLimit {
 public:
  explicit AllocationLimit(size_t max_bytes);
  ~AllocationLimit();
  AllocationLimit(const AllocationLimit&) = delete;
  AllocationLimit& operator=(const AllocationLimit&) = delete;

 private:
  size_t previous_;
};

// Raw 64-byte aligned host memory (the CPU backend's allocator); nullptr on failure.
void* cpu_allocate(size_t nbytes);
// For buffers that live long (weights reordered once for a loaded model, call arenas) and
// short-lived ones of 32 MiB and more (Storage::allocate), returned faulted in: from 256 KiB
// up mapped and populated at once (MADV_POPULATE_WRITE), on transparent huge pages from 2 MiB
// up where the kernel allows. Page faults one by one dominated loading a ResNet-18 on this
// project's (virtualised) machines. Freed with cpu_free_long_lived, given the same size.
void* cpu_allocate_long_lived(size_t nbytes);
void cpu_free_long_lived(void* p, size_t nbytes);
void cpu_free(void* p);

}  // namespace amber
