// Times work queued on one stream with a pair of CUDA events, for the kernels that choose by
// running the choices: cuBLASLt's candidates (gemm.cu), cuDNN's engine plans (conv_plan.cpp),
// the NCHW route and the bias pass (conv.cu). A first run warms up (lazy loading, caches); the
// best of the timed runs after it counts. Private to libamber_cuda.so.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cfloat>

namespace amber::cuda {

class Stopwatch {
 public:
  explicit Stopwatch(cudaStream_t stream) : stream_(stream) {
    if (cudaEventCreate(&start_) != cudaSuccess || cudaEventCreate(&stop_) != cudaSuccess) {
      (void)cudaGetLastError();
      ok_ = false;
    }
  }
  ~Stopwatch() {
    if (start_) (void)cudaEventDestroy(start_);
    if (stop_) (void)cudaEventDestroy(stop_);
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

  // Whether the events could be had (best_ms returns -1 without them).
  bool ok() const { return ok_; }

  // Milliseconds `run` (a callable queuing its work on the stream, returning whether it could)
  // takes: the least of `runs` timed runs after a first one, or that first run's own time when
  // it took over `enough_ms` (a candidate already slower than the best so far is not timed
  // further). -1 where a run failed or could not be timed; the failure's CUDA error is cleared.
  template <typename Run>
  float best_ms(Run&& run, int runs, float enough_ms = FLT_MAX) {
    float first = once(run);
    if (first < 0 || first > enough_ms) return first;
    float best = -1;
    for (int r = 0; r < runs; ++r) {
      const float ms = once(run);
      if (ms < 0) return -1;
      best = best < 0 ? ms : std::min(best, ms);
    }
    return runs > 0 ? best : first;
  }

 private:
  template <typename Run>
  float once(Run& run) {
    float ms = 0;
    if (ok_ && cudaEventRecord(start_, stream_) == cudaSuccess && run() &&
        cudaEventRecord(stop_, stream_) == cudaSuccess && cudaEventSynchronize(stop_) == cudaSuccess &&
        cudaEventElapsedTime(&ms, start_, stop_) == cudaSuccess)
      return ms;
    (void)cudaGetLastError();
    return -1;
  }

  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool ok_ = true;
};

}  // namespace amber::cuda
