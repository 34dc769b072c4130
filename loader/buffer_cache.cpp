// BufferCache (buffer_cache.h): one lock-free slot, then a mutex-guarded list of idle blocks
// found by exact size.
#include "amber/loader/buffer_cache.h"

#include "amber/core/error.h"

namespace amber::loader {

BufferCache::~BufferCache() {
  if (void* p = slot_.load()) release(p);
  for (void* p : idle_) release(p);
}

Storage BufferCache::take(size_t bytes) {
  void* data = slot_.exchange(nullptr, std::memory_order_acquire);
  if (data && size_of(data) != bytes) {
    give(data);  // another size: back to the list
    data = nullptr;
  }
  if (!data) {
    std::lock_guard lock(mutex_);
    for (size_t i = idle_.size(); i-- > 0;)
      if (size_of(idle_[i]) == bytes) {
        data = idle_[i];
        idle_[i] = idle_.back();
        idle_.pop_back();
        break;
      }
  }
  if (!data) {
    char* base = bytes <= SIZE_MAX - kHeader ? static_cast<char*>(cpu_allocate(bytes + kHeader)) : nullptr;
    AMBER_CHECK(base, "out of memory: failed to allocate ", bytes, " bytes on the CPU for an output of this call");
    *reinterpret_cast<size_t*>(base) = bytes;
    data = base + kHeader;
  }
  // The storage keeps the cache alive: its memory always has somewhere to go back to.
  return Storage::adopt(data, bytes, Device::cpu(), [home = shared_from_this()](void* p) { home->give(p); });
}

void BufferCache::give(void* data) {
  void* expected = nullptr;
  if (slot_.compare_exchange_strong(expected, data, std::memory_order_release)) return;
  {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) {
      idle_.push_back(data);
      return;
    }
  }
  release(data);
}

size_t BufferCache::idle_count() const {
  std::lock_guard lock(mutex_);
  return idle_.size() + (slot_.load() ? 1 : 0);
}

size_t BufferCache::idle_bytes() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (void* p : idle_) n += size_of(p);
  if (void* p = slot_.load()) n += size_of(p);
  return n;
}

}  // namespace amber::loader
