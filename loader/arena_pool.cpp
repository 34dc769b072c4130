// ArenaPool (arena_pool.h): a mutex-guarded list of idle arenas.
#include "amber/loader/arena_pool.h"

#include "amber/core/error.h"
#include "amber/core/storage.h"

namespace amber::loader {

ArenaPool::~ArenaPool() {
  for (Arena& a : idle_) cpu_free_long_lived(a.data, a.bytes);
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
  cpu_free_long_lived(victim.data, victim.bytes);
  Arena a{cpu_allocate_long_lived(bytes), bytes};  // huge pages when large: far fewer page faults
  AMBER_CHECK(a.data, "forward: cannot allocate ", bytes, " bytes for the intermediate tensors of this call");
  return a;
}

void ArenaPool::give(Arena a) {
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
