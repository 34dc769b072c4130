// Runs CUDA device code (kernels/cuda/*_kernels.cuh) on the CPU: a block's threads as std::threads,
// __syncthreads, block votes and warp shuffles through barriers, __shared__ arrays as statics (one
// block at a time), dynamic shared memory NaN-filled, atomics as std::atomic_ref. It proves the
// indexing, tiling and synchronisation's logic, not speed nor the memory model. Include it before
// the kernel's header (it includes CUDA's own).
#pragma once

#define AMBER_CUDA_EMULATION 1

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <vector_functions.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#undef __host__
#define __host__
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static
#define __syncthreads() amber::emulation::block_barrier->arrive_and_wait()

using std::fmaf;
using std::fmaxf;
using std::isnan;
using std::max;
using std::min;

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 gridDim, blockDim;

namespace amber::emulation {

inline std::barrier<>* block_barrier = nullptr;
inline float* block_dynamic_shared = nullptr;
inline std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;
inline std::vector<uint64_t> warp_lanes;  // 32 a warp: what each lane offers a shuffle (its bits)
inline std::atomic<int> block_votes{0};   // how many of the block's threads voted true

// Threads kept from launch to launch: run(n, job) runs job(t) on worker t for every t < n at once
// and returns when all have returned, making workers as needed. (A thread for each thread of each
// block made the emulated tests' time mostly thread creation.)
class Workers {
 public:
  void run(unsigned n, const std::function<void(unsigned)>& job) {
    std::lock_guard one_at_a_time(launching_);
    std::unique_lock lock(mutex_);
    for (unsigned t = unsigned(threads_.size()); t < n; ++t) threads_.emplace_back([this, t] { serve(t); });
    job_ = &job;
    active_ = left_ = n;
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [&] { return left_ == 0; });
  }
  ~Workers() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void serve(unsigned t) {
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (t >= active_) continue;
      const std::function<void(unsigned)>& job = *job_;
      lock.unlock();
      job(t);
      lock.lock();
      if (--left_ == 0) done_.notify_one();
    }
  }
  std::mutex launching_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(unsigned)>* job_ = nullptr;
  unsigned active_ = 0, left_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};
inline Workers workers;

// kernel<<<grid, block, shared_bytes>>>(args...): the blocks in turn, each with its threads at
// once, on the kept workers: between blocks they wait at a gate whose completion sets up the next
// block's barriers and shared memory.
template <typename Kernel, typename... Args>
void launch_shared(Kernel kernel, dim3 grid, dim3 block, size_t shared_bytes, Args... args) {
  gridDim = grid, blockDim = block;
  const unsigned threads = block.x * block.y * block.z, warps = (threads + 31) / 32;
  const unsigned blocks = grid.x * grid.y * grid.z;
  if (blocks == 0 || threads == 0) return;
  std::vector<float> dynamic(shared_bytes / sizeof(float) + 1);
  warp_lanes.assign(size_t(warps) * 32, 0);
  std::unique_ptr<std::barrier<>> barrier;
  auto set_up = [&] {  // a block's barriers (a returned thread drops out of them) and shared memory
    barrier = std::make_unique<std::barrier<>>(threads);
    block_barrier = barrier.get();
    std::fill(dynamic.begin(), dynamic.end(), NAN);
    block_dynamic_shared = dynamic.data();
    warp_barriers.clear();
    for (unsigned w = 0; w < warps; ++w)
      warp_barriers.push_back(std::make_unique<std::barrier<>>(std::min(32u, threads - 32 * w)));
  };
  set_up();
  unsigned next = 0;  // the block running
  std::barrier gate(threads, [&]() noexcept {
    if (++next < blocks) set_up();
  });
  workers.run(threads, [&](unsigned t) {
    threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
    for (unsigned b = 0; b < blocks; ++b) {
      blockIdx = dim3(b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y));
      kernel(args...);
      // A thread that has returned no longer holds the others.
      warp_barriers[t / 32]->arrive_and_drop();
      block_barrier->arrive_and_drop();
      gate.arrive_and_wait();
    }
  });
}
template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, Args... args) {
  launch_shared(kernel, grid, block, 0, args...);
}

// What lane `from` of the calling thread's warp offered (x, on that lane): a float, a double, an
// integer.
template <typename T>
T shuffle(T x, unsigned from) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  const unsigned t = threadIdx.x, w = t / 32;
  std::memcpy(&warp_lanes[t], &x, sizeof x);
  warp_barriers[w]->arrive_and_wait();
  T got;
  std::memcpy(&got, &warp_lanes[w * 32 + from % 32], sizeof got);
  warp_barriers[w]->arrive_and_wait();
  return got;
}

// How many of the block's threads pass a true predicate (each thread gets the count). The blocks
// run one at a time: one counter serves them all, reset by thread 0 after every thread has read it
// (the next vote's first barrier orders that before any thread's next vote).
inline int block_count(bool predicate) {
  block_barrier->arrive_and_wait();
  if (predicate) block_votes.fetch_add(1);
  block_barrier->arrive_and_wait();
  const int count = block_votes.load();
  block_barrier->arrive_and_wait();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) block_votes.store(0);
  return count;
}

}  // namespace amber::emulation

// The device-side names the kernels' headers use.
inline float* dynamic_shared() { return amber::emulation::block_dynamic_shared; }
template <typename T>
T __shfl_sync(unsigned, T x, int lane) {
  return amber::emulation::shuffle(x, unsigned(lane));
}
template <typename T>
T __shfl_xor_sync(unsigned, T x, int mask) {
  return amber::emulation::shuffle(x, (threadIdx.x % 32) ^ unsigned(mask));
}
// The runtime's calls the emulated kernel files make (tests/test_kernels_emulated.cpp), on host
// memory and at once. The device: 4 multiprocessors of compute capability 9.0, which loads no
// machine code (fused.cu's compiled programs fall back to its interpreting kernel, as where a
// cubin fails to load).
extern "C" inline cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t) {
  std::memset(ptr, value, count);
  return cudaSuccess;
}
extern "C" inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = 4;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}
extern "C" inline cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void*, cudaJitOption*, void**, unsigned,
                                                  cudaLibraryOption*, void**, unsigned) {
  *library = nullptr;
  return cudaErrorNotSupported;
}
extern "C" inline cudaError_t cudaLibraryGetKernel(cudaKernel_t*, cudaLibrary_t, const char*) {
  return cudaErrorNotSupported;
}
extern "C" inline cudaError_t cudaLibraryUnload(cudaLibrary_t) { return cudaSuccess; }
extern "C" inline cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
extern "C" inline cudaError_t cudaGetLastError() { return cudaSuccess; }
extern "C" inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaErrorNotSupported ? "operation not supported (the emulation runs no machine code)"
                                    : "an error of the emulation";
}
inline float __uint_as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof f);
  return bits;
}
inline int __syncthreads_or(int predicate) { return amber::emulation::block_count(predicate != 0) > 0; }
inline int __syncthreads_and(int predicate) { return amber::emulation::block_count(predicate == 0) == 0; }
// atomicAdd's overloads the kernels use; each returns the old value, as CUDA's.
template <typename T>
T atomicAdd(T* address, T value) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int> ||
                std::is_same_v<T, unsigned long long>);
  return std::atomic_ref<T>(*address).fetch_add(value);
}
