// BufferCache (buffer_cache.h): a mutex-guarded list of idle blocks, found by exact size.
#include "amber/loader/buffer_cache.h"

#include "amber/core/error.h"

namespace amber::loader {

BufferCache::~BufferCache() {
  for (Block& b : idle_) cpu_free(b.data);
}

Storage BufferCache::take(size_t bytes) {
  void* data = nullptr;
  {
    std::lock_guard lock(mutex_);
    for (size_t i = idle_.size(); i-- > 0;)
      if (idle_[i].bytes == bytes) {
        data = idle_[i].data;
        idle_[i] = idle_.back();
        idle_.pop_back();
        break;
      }
  }
  if (!data) data = cpu_allocate(bytes);
  AMBER_CHECK(data, "out of memory: failed to allocate ", bytes, " bytes on the CPU for an output of this call");
  std::weak_ptr<BufferCache> home = weak_from_this();
  return Storage::adopt(data, bytes, Device::cpu(), [home, bytes](void* p) {
    if (std::shared_ptr<BufferCache> cache = home.lock())
      cache->give({p, bytes});
    else
      cpu_free(p);
  });
}

void BufferCache::give(Block b) {
  {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) {
      idle_.push_back(b);
      return;
    }
  }
  cpu_free(b.data);
}

size_t BufferCache::idle_count() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

size_t BufferCache::idle_bytes() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const Block& b : idle_) n += b.bytes;
  return n;
}

}  // namespace amber::loader
