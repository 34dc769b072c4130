// The per-call output buffers of one model, recycled: an output tensor's memory comes back
// here when the caller drops its last reference, and the next call needing that many bytes
// takes it instead of asking malloc, which returns buffers of tens of KiB and more to the
// OS on free and so page-faults them in again (with TLB shootdowns) on every call. At most
// max_idle blocks wait in a list, each reused only for exactly its size, and the last one
// returned in a lock-free slot, so a model serving one call at a time takes no lock here.
// Outputs keep the cache alive: one dropped after its model still has a home.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "amber/core/storage.h"

namespace amber::loader {

class BufferCache : public std::enable_shared_from_this<BufferCache> {
 public:
  explicit BufferCache(size_t max_idle = 16) : max_idle_(max_idle) {}
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;
  ~BufferCache();

  // CPU storage of `bytes` (64-byte aligned, contents unspecified) whose memory returns to
  // this cache when the storage is released. The cache must be owned by a shared_ptr.
  // Throws amber::Error when memory runs out.
  Storage take(size_t bytes);
  // Blocks waiting to be reused, and their bytes; only while no storage is taken or released
  // concurrently (tests).
  size_t idle_count() const;
  size_t idle_bytes() const;

 private:
  // A block is one allocation: a 64-byte header holding its size, then the data.
  static constexpr size_t kHeader = 64;
  static size_t size_of(void* data) { return *reinterpret_cast<size_t*>(static_cast<char*>(data) - kHeader); }
  static void release(void* data) { cpu_free(static_cast<char*>(data) - kHeader); }
  void give(void* data);

  size_t max_idle_;
  std::atomic<void*> slot_{nullptr};
  mutable std::mutex mutex_;
  std::vector<void*> idle_;
};

}  // namespace amber::loader
