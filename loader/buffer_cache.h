// The per-call output buffers of one model, recycled: an output tensor's memory comes back
// here when the caller drops its last reference, and the next call needing that many bytes
// takes it instead of allocating (on the CPU, malloc returns buffers of tens of KiB and more
// to the OS on free and so page-faults them in again, with TLB shootdowns, on every call;
// on a GPU, an allocation synchronises the device). At most max_idle blocks wait in a list,
// each reused only for exactly its size, and the last one returned in a lock-free slot, so a
// model serving one call at a time takes no lock here. Memory is the model's device's, from
// its backend. Outputs keep the cache alive: one dropped after its model still has a home.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "amber/core/backend.h"
#include "amber/core/storage.h"

namespace amber::loader {

class BufferCache : public std::enable_shared_from_this<BufferCache> {
 public:
  explicit BufferCache(Device device = Device::cpu(), size_t max_idle = 16);
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;
  ~BufferCache();

  // Device storage of `bytes` (64-byte aligned, contents unspecified) whose memory returns to
  // this cache when the storage is released. The cache must be owned by a shared_ptr.
  // Throws amber::Error when memory runs out.
  Storage take(size_t bytes);
  // Blocks waiting to be reused, and their bytes; only while no storage is taken or released
  // concurrently (tests).
  size_t idle_count() const;
  size_t idle_bytes() const;

 private:
  // One device allocation, described once for its whole life (no allocation per call). While
  // out, it holds the cache alive.
  struct Block {
    void* data = nullptr;
    size_t bytes = 0;
    std::shared_ptr<BufferCache> home;
  };
  void give(Block* b);
  void release(Block* b);

  Device device_;
  const amber_backend* backend_;
  size_t max_idle_;
  std::atomic<Block*> slot_{nullptr};
  mutable std::mutex mutex_;
  std::vector<Block*> idle_;
};

}  // namespace amber::loader
