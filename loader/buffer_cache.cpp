// BufferCache (buffer_cache.h): one lock-free slot, then a mutex-guarded list of idle blocks
// found by exact size; blocks come from the device's backend.
#include "amber/loader/buffer_cache.h"

#include "amber/core/backend_registry.h"
#include "amber/core/error.h"
#include "amber/core/hot.h"

namespace amber::loader {

BufferCache::BufferCache(Device device, size_t max_idle)
    : device_(device), backend_(&backend(device)), max_idle_(max_idle) {}

BufferCache::~BufferCache() {
  if (Block* b = slot_.load()) release(b);
  for (Block* b : idle_) release(b);
}

void BufferCache::release(Block* b) {
  if (b->data) backend_->deallocate(device_.index, b->data, b->bytes, 0);
  delete b;
}

AMBER_HOT Storage BufferCache::take(size_t bytes) {
  Block* found = slot_.exchange(nullptr, std::memory_order_acquire);
  if (found && found->bytes != bytes) {
    give(found);  // another size: back to the list
    found = nullptr;
  }
  if (!found) {
    std::lock_guard lock(mutex_);
    for (size_t i = idle_.size(); i-- > 0;)
      if (idle_[i]->bytes == bytes) {
        found = idle_[i];
        idle_[i] = idle_.back();
        idle_.pop_back();
        break;
      }
  }
  if (!found) {
    void* p = backend_->allocate(device_.index, bytes ? bytes : 1, 0);
    AMBER_CHECK(p, "out of memory: failed to allocate ", bytes, " bytes on ", device_,
                " for an output of this call: ", backend_->last_error());
    found = new Block{p, bytes, nullptr};
  }
  // The block keeps the cache alive while out: its memory always has somewhere to go back to.
  found->home = shared_from_this();
  return Storage::adopt(found->data, bytes, device_, [found](void*) {
    std::shared_ptr<BufferCache> home = std::move(found->home);
    home->give(found);
  });
}

void BufferCache::give(Block* b) {
  Block* expected = nullptr;
  if (slot_.compare_exchange_strong(expected, b, std::memory_order_release)) return;
  {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) {
      idle_.push_back(b);
      return;
    }
  }
  release(b);
}

size_t BufferCache::idle_count() const {
  std::lock_guard lock(mutex_);
  return idle_.size() + (slot_.load() ? 1 : 0);
}

size_t BufferCache::idle_bytes() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const Block* b : idle_) n += b->bytes;
  if (const Block* b = slot_.load()) n += b->bytes;
  return n;
}

}  // namespace amber::loader
