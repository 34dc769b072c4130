// Storage allocation and release for every device: the CPU path allocates aligned host
// memory directly; other devices go through their backend's C table (core/backend.h).

#include "amber/core/storage.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>

#include "amber/core/backend_registry.h"
#include "amber/core/error.h"

namespace amber {

void* cpu_allocate_long_lived(size_t nbytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (nbytes < 2 * kHuge) return cpu_allocate(nbytes);
  void* p = nullptr;
  const size_t rounded = (nbytes + kHuge - 1) / kHuge * kHuge;
  if (rounded < nbytes || posix_memalign(&p, kHuge, rounded) != 0) return nullptr;
  (void)madvise(p, rounded, MADV_HUGEPAGE);  // advice only: fine if unsupported
  return p;
}

void* cpu_allocate(size_t nbytes) {
  void* p = nullptr;
  // Round up so the aligned block size is a multiple of the alignment (required by C11
  // aligned_alloc, harmless for posix_memalign) and never zero.
  size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  if (rounded < nbytes) return nullptr;
  if (posix_memalign(&p, kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded) != 0) return nullptr;
  return p;
}

void cpu_free(void* p) { std::free(p); }

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, Owner owner, bool read_only)
    : data_(data), nbytes_(nbytes), device_(device), read_only_(read_only), owner_(owner) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
}

StorageImpl::~StorageImpl() {
  switch (owner_) {
    case Owner::cpu_heap:
      cpu_free(data_);
      break;
    case Owner::backend: {
      if (const amber_backend* b = backend_if_loaded(device_.type)) b->deallocate(device_.index, data_);
      break;
    }
    case Owner::deleter:
      if (deleter) deleter(data_);
      break;
    case Owner::borrowed:
      break;
  }
}

Storage Storage::allocate(size_t nbytes, Device device) {
  Storage s;
  if (device.is_cpu()) {
    void* p = cpu_allocate(nbytes);
    AMBER_CHECK(p, "out of memory: failed to allocate ", nbytes, " bytes on the CPU");
    s.impl_ = Ref<StorageImpl>::make(p, nbytes, device, StorageImpl::Owner::cpu_heap, false);
    return s;
  }
  const amber_backend& b = backend(device);
  void* p = nbytes == 0 ? nullptr : b.allocate(device.index, nbytes);
  AMBER_CHECK(p || nbytes == 0, "out of memory: failed to allocate ", nbytes, " bytes on ", device, ": ",
              b.last_error());
  s.impl_ = Ref<StorageImpl>::make(p, nbytes, device, StorageImpl::Owner::backend, false);
  return s;
}

Storage Storage::wrap(void* data, size_t nbytes, Device device, std::shared_ptr<const void> keep_alive,
                      bool read_only) {
  Storage s;
  s.impl_ = Ref<StorageImpl>::make(data, nbytes, device, StorageImpl::Owner::borrowed, read_only);
  s.impl_->keep_alive = std::move(keep_alive);
  return s;
}

Storage Storage::adopt(void* data, size_t nbytes, Device device, StorageImpl::Deleter deleter) {
  Storage s;
  s.impl_ = Ref<StorageImpl>::make(data, nbytes, device, StorageImpl::Owner::deleter, false);
  s.impl_->deleter = std::move(deleter);
  return s;
}

}  // namespace amber
