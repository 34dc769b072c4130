// The CUDA backend's rules between graph captures and other threads' work. A capture
// (backend.cpp) holds capture_lock shared from its begin to its end; a kernel's setup, whose
// host-side CUDA work (device-wide waits, cuDNN's timing runs) would spoil another thread's
// capture in flight, holds it exclusively. With a cuDNN backend-API path asked for, cuDNN's work
// also takes turns (CudnnPlanTurn). Private to libamber_cuda.so.
#pragma once

#include <mutex>
#include <shared_mutex>

#include "amber/kernels/cuda/switches.h"

namespace amber::cuda {

inline std::shared_mutex& capture_lock() {
  static std::shared_mutex lock;
  return lock;
}

// cuDNN's backend-API execution plans (the opt-in convolution plans and fused attention) are not
// guaranteed thread-safe across threads (cuDNN's release notes; PyTorch keeps its plans per
// thread, pytorch/pytorch#103939), and a handle's engine may fork work onto internal streams,
// which join the capture of the stream it ran on until that capture ends. With either path asked
// for, every host-side call into cuDNN by the convolution and attention kernels (setups, calls,
// teardown) holds this turn, and so does each capture from its begin to its end (taken after
// capture_lock, released before it): cuDNN's state is touched by one thread at a time, and never
// by another thread while a capture that may have drawn it in is being recorded (and the
// recording stream outlives the capture: backend.cpp keeps it). The crash this is meant to end
// (test_cuda's 8 threads on one model, SIGSEGV in cudnnSetStream -> cuEventRecord, with the
// plans only) did not happen in 40 runs on an H200 (2026-11-30). Recursive: a capture's own
// kernels take it again, and a failed setup's state goes while the setup holds it. Replays of a
// recorded graph make no cuDNN call and never wait for it. Two threads' recordings never overlap
// while turns are taken: the second waits for the first to end.
inline bool cudnn_takes_turns() { return conv_plans_asked() || cudnn_attention_asked(); }
inline std::recursive_mutex& cudnn_plan_turn() {
  static std::recursive_mutex turn;
  return turn;
}

class CudnnPlanTurn {
 public:
  CudnnPlanTurn() {
    if (cudnn_takes_turns()) lock_ = std::unique_lock(cudnn_plan_turn());
  }

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

}  // namespace amber::cuda
