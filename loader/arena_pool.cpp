// ArenaPool (arena_pool.h): a mutex-guarded list of idle arenas, allocated through the backend.
#include "amber/loader/arena_pool.h"

#include "amber/core/backend_registry.h"
#include "amber/core/error.h"
#include "amber/core/hot.h"

namespace amber::loader {

ArenaPool::ArenaPool(Device device, size_t max_bytes)
    : device_(device), backend_(&backend(device)), max_bytes_(max_bytes) {}

ArenaPool::~ArenaPool() {
  for (Arena& a : idle_) free(a);
}

void ArenaPool::free(Arena a) {
  if (a.data) backend_->deallocate(device_.index, a.data, a.bytes, AMBER_ALLOC_LONG_LIVED);
}

ArenaPool::Arena ArenaPool::take(size_t bytes) {
  if (bytes == 0) return {};
  AMBER_CHECK(max_bytes_ == 0 || bytes <= max_bytes_, "forward: this call needs ", bytes,
              " bytes of intermediate memory, over the limit of ", max_bytes_, " (LoadOptions::max_workspace_bytes)");
  Arena victim;
  {
    std::lock_guard lock(mutex_);
    size_t best = idle_.size(), largest = idle_.size();
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].bytes >= bytes && (best == idle_.size() || idle_[i].bytes < idle_[best].bytes)) best = i;
      if (largest == idle_.size() || idle_[i].bytes > idle_[largest].bytes) largest = i;
    }
    const size_t pick = best != idle_.size() ? best : largest;
    if (pick != idle_.size()) {
      Arena a = idle_[pick];
      idle_[pick] = idle_.back();
      idle_.pop_back();
      if (a.bytes >= bytes) return a;
      victim = a;  // too small: replaced below, outside the lock
    }
  }
  free(victim);
  Arena a{backend_->allocate(device_.index, bytes, AMBER_ALLOC_LONG_LIVED), bytes};
  AMBER_CHECK(a.data, "forward: cannot allocate ", bytes, " bytes on ", device_,
              " for the intermediate tensors of this call: ", backend_->last_error());
  return a;
}

AMBER_HOT void ArenaPool::give(Arena a) {
  if (!a.data) return;
  std::lock_guard lock(mutex_);
  idle_.push_back(a);
}

size_t ArenaPool::idle_bytes() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const Arena& a : idle_) n += a.bytes;
  return n;
}

}  // namespace amber::loader
