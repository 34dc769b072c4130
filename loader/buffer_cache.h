// The per-call output buffers of one model, recycled: an output tensor's memory comes back
// here when the caller drops its last reference, and the next call needing that many bytes
// takes it instead of asking malloc, which returns buffers of tens of KiB and more to the
// OS on free and so page-faults them in again (with TLB shootdowns) on every call. At most
// max_idle blocks wait, each reused only for exactly its size.
#pragma once

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
  // this cache, while it lives, when the storage is released. Must be owned by a shared_ptr.
  // Throws amber::Error when memory runs out.
  Storage take(size_t bytes);
  // Blocks waiting to be reused, and their bytes.
  size_t idle_count() const;
  size_t idle_bytes() const;

 private:
  struct Block {
    void* data;
    size_t bytes;
  };
  void give(Block b);

  size_t max_idle_;
  mutable std::mutex mutex_;
  std::vector<Block> idle_;
};

}  // namespace amber::loader
