// The intermediate-memory arenas of one model, shared by all its plans (one per batch size):
// a call borrows an arena at least as large as its plan needs and returns it. Idle arenas
// are kept, so memory stays flat under any mix of batch sizes: at most one arena per call
// that ever ran at the same time, each no larger than the largest plan's arena. Arenas are
// the model's device memory, from its backend (long-lived: on the CPU, large ones sit on
// transparent huge pages; first touch of ResNet-18's 6.1 MiB: 18 ms in 4 KiB faults on this
// VM, 0.7 ms in 2 MiB ones).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "amber/core/backend.h"
#include "amber/core/device.h"

namespace amber::loader {

class ArenaPool {
 public:
  struct Arena {
    void* data = nullptr;
    size_t bytes = 0;
  };
  // Arenas on device; larger than max_bytes are refused (0: no limit).
  explicit ArenaPool(Device device = Device::cpu(), size_t max_bytes = 0);
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;
  ~ArenaPool();

  // An arena of at least `bytes` (64-byte aligned): the smallest idle one that fits, else the
  // largest idle one replaced by a bigger one, else a new one. Throws amber::Error when
  // memory runs out or bytes exceeds the pool's limit. bytes == 0 gives an empty arena
  // without locking.
  Arena take(size_t bytes);
  void give(Arena a);
  // Bytes held by idle arenas.
  size_t idle_bytes() const;

 private:
  void free(Arena a);

  Device device_;
  const amber_backend* backend_;
  size_t max_bytes_ = 0;
  mutable std::mutex mutex_;
  std::vector<Arena> idle_;
};

}  // namespace amber::loader
