// The CUDA backend's one rule between graph captures and kernel setups: a capture
// (backend.cpp) holds this lock shared from its begin to its end; a kernel's setup, whose
// host-side CUDA work (device-wide waits, cuDNN's timing runs) would spoil another thread's
// capture in flight, holds it exclusively. Private to libamber_cuda.so.
#pragma once

#include <mutex>
#include <shared_mutex>

namespace amber::cuda {

inline std::shared_mutex& capture_lock() {
  static std::shared_mutex lock;
  return lock;
}

}  // namespace amber::cuda
