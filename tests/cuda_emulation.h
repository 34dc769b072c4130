// Runs CUDA device code (kernels/cuda/*_kernels.cuh) on the CPU: a block's threads as fibers,
// __syncthreads, votes and warp shuffles as barriers among them, __shared__ arrays as statics (a
// block at a time), dynamic shared memory NaN-filled with a guard past it, atomics as
// std::atomic_ref. It proves the indexing, tiling and synchronisation's logic, not speed nor the
// memory model. Include it before the kernel's header (it includes CUDA's own).
#pragma once

#define AMBER_CUDA_EMULATION 1

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector_functions.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AMBER_EMULATION_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define AMBER_EMULATION_ASAN 1
#endif
#if defined(AMBER_EMULATION_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
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

// AddressSanitizer's calls for a switch of stacks (no-ops elsewhere): a fiber's stack is not the
// thread's, and ASan must be told which one runs.
inline void start_switch(void** fake_stack, const void* bottom, size_t size) {
#if defined(AMBER_EMULATION_ASAN)
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
  (void)fake_stack, (void)bottom, (void)size;
#endif
}
inline void finish_switch(void* fake_stack, const void** bottom, size_t* size) {
#if defined(AMBER_EMULATION_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
#else
  (void)fake_stack, (void)bottom, (void)size;
#endif
}

// A block's threads as fibers on the launching thread, resumed in turn: each runs until it waits
// at a barrier or returns. A barrier then costs a switch a thread, where threads of the OS (one
// per CUDA thread, on two cores) cost the scheduler's wake-ups. A round in which no thread arrives
// anywhere nor returns means the threads wait at different barriers (a __syncthreads some thread
// never reaches, a hang on a GPU): run() throws.
//
// Each fiber is made once (makecontext) and kept: after its body returns it waits at its loop's
// end for the next block. Switches are _setjmp/_longjmp, which keep the signal mask where
// swapcontext makes a system call for it at every switch (most of the time the emulated tests
// took). A fiber left inside a body (a launch that threw) starts afresh at the next run, as do all
// where another thread launches. Built with _FORTIFY_SOURCE, whose longjmp refuses to jump to
// another stack, switches stay on swapcontext.
class Fibers {
 public:
  Fibers() { home_.started = true; }
  // Runs body() as threads 0..n-1 of a block of shape `block` (threadIdx set for each).
  void run(unsigned n, dim3 block, const std::function<void()>& body) {
    while (fibers_.size() < n) fibers_.push_back(Fiber::make());
    if (owner_ != std::this_thread::get_id()) {
      owner_ = std::this_thread::get_id();
      for (auto& f : fibers_) f->waiting = false;
    }
    body_ = &body;
    error_ = nullptr;
    for (unsigned t = 0; t < n; ++t) {
      Fiber& f = *fibers_[t];
      if (!f.waiting) f.reset();  // never run, or left inside a body
      f.done = false;
    }
    for (unsigned live = n; live > 0;) {
      const uint64_t before = progress_;
      for (unsigned t = 0; t < n; ++t) {
        Fiber& f = *fibers_[t];
        if (f.done) continue;
        current_ = t;
        threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
        f.waiting = false;
        start_switch(&home_fake_, f.stack + kGuardBytes, kStackBytes - kGuardBytes);
        switch_to(home_, f.context);
        finish_switch(home_fake_, nullptr, nullptr);
        if (f.done) --live, ++progress_;
      }
      if (error_) std::rethrow_exception(error_);
      if (live > 0 && progress_ == before)
        throw std::runtime_error(
            "emulated launch: the block's threads wait at different barriers (a "
            "__syncthreads or shuffle that some thread does not reach)");
    }
  }
  // From a fiber: back to the launching thread, which resumes the next.
  void yield() {
    Fiber& f = *fibers_[current_];
    start_switch(&f.fake_stack, home_bottom_, home_size_);
    switch_to(f.context, home_);
    finish_switch(f.fake_stack, &home_bottom_, &home_size_);
  }
  // An arrival at a barrier: what a round without any lacks.
  void note_progress() { ++progress_; }
  ~Fibers() {
    for (auto& f : fibers_) munmap(f->stack, kStackBytes);
  }

 private:
  // A thread's stack: the kernels' frames take a few KiB (ASan's too, with their redzones); ASan
  // clears the shadow of the whole stack at each swapcontext, so it is kept small.
  static constexpr size_t kStackBytes = size_t(64) << 10, kGuardBytes = 4096;
  struct Context {
    ucontext_t context;  // where a fiber starts (makecontext); every switch, with _FORTIFY_SOURCE
    jmp_buf jump;        // where it was left
    bool started = false;
  };
  struct Fiber {
    Context context;
    char* stack = nullptr;  // kStackBytes, its lowest page inaccessible (an overflow faults)
    void* fake_stack = nullptr;
    bool done = false;
    bool waiting = false;  // at its loop's end, between bodies
    static std::unique_ptr<Fiber> make() {
      auto f = std::make_unique<Fiber>();
      void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw std::runtime_error("emulated launch: no memory for a thread's stack");
      f->stack = static_cast<char*>(p);
      mprotect(f->stack, kGuardBytes, PROT_NONE);
      return f;
    }
    void reset() {
      getcontext(&context.context);
      context.context.uc_stack.ss_sp = stack + kGuardBytes;
      context.context.uc_stack.ss_size = kStackBytes - kGuardBytes;
      context.context.uc_link = nullptr;
      makecontext(&context.context, &Fibers::entry, 0);
      context.started = false;
    }
  };
  // Leaves `from` (resumed where it left) for `to` (started, or resumed where it left).
  static void switch_to(Context& from, Context& to) {
#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0
    to.started = true;
    swapcontext(&from.context, &to.context);
#else
    if (_setjmp(from.jump) != 0) return;
    if (to.started) _longjmp(to.jump, 1);
    to.started = true;
    setcontext(&to.context);
#endif
  }
  static void entry();
  std::vector<std::unique_ptr<Fiber>> fibers_;  // (addresses kept: a waiting fiber's frame holds its own)
  Context home_;                                // the launching thread's (started: it runs)
  std::thread::id owner_;                       // the thread the fibers' frames were left by
  unsigned current_ = 0;
  uint64_t progress_ = 0;  // arrivals at barriers and returns
  const std::function<void()>* body_ = nullptr;
  std::exception_ptr error_;
  void* home_fake_ = nullptr;
  const void* home_bottom_ = nullptr;
  size_t home_size_ = 0;
};
inline Fibers fibers;
inline void Fibers::entry() {
  Fibers& self = fibers;
  Fiber& f = *self.fibers_[self.current_];
  finish_switch(nullptr, &self.home_bottom_, &self.home_size_);
  for (;;) {
    try {
      (*self.body_)();
    } catch (...) {
      self.error_ = std::current_exception();
    }
    f.done = f.waiting = true;
    start_switch(&f.fake_stack, self.home_bottom_, self.home_size_);
    switch_to(f.context, self.home_);
    finish_switch(f.fake_stack, &self.home_bottom_, &self.home_size_);
  }
}

// A barrier of a block's fibers: a phase completes when every participant has arrived; a thread
// that has returned drops out.
struct Barrier {
  unsigned expected = 0, arrived = 0;
  uint64_t phase = 0;
  void arrive_and_wait() {
    fibers.note_progress();
    const uint64_t mine = phase;
    if (++arrived == expected) {
      arrived = 0, ++phase;
      return;
    }
    while (phase == mine) fibers.yield();
  }
  void arrive_and_drop() {
    --expected;
    if (arrived > 0 && arrived == expected) arrived = 0, ++phase;
  }
};

inline std::mutex launching;  // one launch at a time in the process
inline Barrier* block_barrier = nullptr;
inline float* block_dynamic_shared = nullptr;
inline std::vector<Barrier> warp_barriers;
inline std::vector<uint64_t> warp_lanes;  // 32 a warp: what each lane offers a shuffle (its bits)
inline int block_votes = 0;               // how many of the block's threads voted true

// kernel<<<grid, block, shared_bytes>>>(args...): the blocks in turn, each with its threads as
// fibers, one launch at a time in the process. Past the block's dynamic shared memory lies a guard
// (as large as the memory asked, at least 4 KiB), checked after each block: a block that wrote
// into it fails the launch with an exception, where on a GPU it would corrupt or fault.
template <typename Kernel, typename... Args>
void launch_shared(Kernel kernel, dim3 grid, dim3 block, size_t shared_bytes, Args... args) {
  std::lock_guard lock(launching);
  gridDim = grid, blockDim = block;
  const unsigned threads = block.x * block.y * block.z, warps = (threads + 31) / 32;
  const unsigned blocks = grid.x * grid.y * grid.z;
  if (blocks == 0 || threads == 0) return;
  constexpr uint32_t kGuard = 0x7fc0beefu;  // a NaN no kernel writes
  const size_t words = (shared_bytes + sizeof(float) - 1) / sizeof(float);
  std::vector<float> dynamic(words + std::max<size_t>(words, 1024));
  warp_lanes.assign(size_t(warps) * 32, 0);
  Barrier barrier;
  const std::function<void()> body = [&] {
    kernel(args...);
    // A thread that has returned no longer holds the others.
    warp_barriers[((threadIdx.z * block.y + threadIdx.y) * block.x + threadIdx.x) / 32].arrive_and_drop();
    block_barrier->arrive_and_drop();
  };
  for (unsigned b = 0; b < blocks; ++b) {
    barrier = Barrier{threads};
    block_barrier = &barrier;
    warp_barriers.assign(warps, Barrier{});
    for (unsigned w = 0; w < warps; ++w) warp_barriers[w].expected = std::min(32u, threads - 32 * w);
    std::fill(dynamic.begin(), dynamic.begin() + words, NAN);
    std::fill(dynamic.begin() + words, dynamic.end(), std::bit_cast<float>(kGuard));
    block_dynamic_shared = dynamic.data();
    blockIdx = dim3(b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y));
    fibers.run(threads, block, body);
    if (std::any_of(dynamic.begin() + words, dynamic.end(),
                    [](float w) { return std::bit_cast<uint32_t>(w) != kGuard; }))
      throw std::runtime_error("emulated launch: block " + std::to_string(b) + " wrote past its " +
                               std::to_string(shared_bytes) + " bytes of dynamic shared memory");
  }
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
  warp_barriers[w].arrive_and_wait();
  T got;
  std::memcpy(&got, &warp_lanes[w * 32 + from % 32], sizeof got);
  warp_barriers[w].arrive_and_wait();
  return got;
}

// The lanes of the calling thread's warp (a bit a lane) that offered the same bits of x, its
// own included, as __match_any_sync; ballot: those whose x is nonzero, as __ballot_sync. Every
// lane of the warp takes part (a partial last warp: its lanes).
template <typename T>
unsigned match_lanes(T x, bool ballot) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  const unsigned t = threadIdx.x, w = t / 32, lanes = std::min(32u, blockDim.x * blockDim.y * blockDim.z - 32 * w);
  uint64_t mine = 0;
  std::memcpy(&mine, &x, sizeof x);
  warp_lanes[t] = mine;
  warp_barriers[w].arrive_and_wait();
  unsigned mask = 0;
  for (unsigned l = 0; l < lanes; ++l)
    if (ballot ? warp_lanes[w * 32 + l] != 0 : warp_lanes[w * 32 + l] == mine) mask |= 1u << l;
  warp_barriers[w].arrive_and_wait();
  return mask;
}

// How many of the block's threads pass a true predicate (each thread gets the count). The blocks
// run one at a time: one counter serves them all, reset by thread 0 after every thread has read it
// (the next vote's first barrier orders that before any thread's next vote).
inline int block_count(bool predicate) {
  block_barrier->arrive_and_wait();
  block_votes += predicate;
  block_barrier->arrive_and_wait();
  const int count = block_votes;
  block_barrier->arrive_and_wait();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) block_votes = 0;
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
template <typename T>
unsigned __match_any_sync(unsigned, T x) {
  return amber::emulation::match_lanes(x, false);
}
inline unsigned __ballot_sync(unsigned, int predicate) { return amber::emulation::match_lanes(predicate != 0, true); }
inline int __popc(unsigned x) { return std::popcount(x); }
// The runtime's calls the emulated kernel files make (tests/test_kernels_emulated.cpp), on host
// memory and at once. The device: 4 multiprocessors of compute capability 9.0, which loads no
// machine code (fused.cu's compiled programs fall back to its interpreting kernel, as where a
// cubin fails to load).
extern "C" inline cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t) {
  std::memset(ptr, value, count);
  return cudaSuccess;
}
extern "C" inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind) {
  std::memcpy(dst, src, count);
  return cudaSuccess;
}
extern "C" inline cudaError_t cudaMalloc(void** ptr, size_t size) {
  *ptr = std::malloc(std::max<size_t>(size, 1));
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
extern "C" inline cudaError_t cudaFree(void* ptr) {
  std::free(ptr);
  return cudaSuccess;
}
// kernels/cuda/device_memory.cpp's stream-ordered allocator: host memory at once; the pool's
// calls succeed and do nothing. The "device" reports 4 GiB, all free.
extern "C" inline cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t) { return cudaMalloc(ptr, size); }
extern "C" inline cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return cudaFree(ptr); }
extern "C" inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
extern "C" inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  *pool = nullptr;
  return cudaSuccess;
}
extern "C" inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
extern "C" inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, size_t) { return cudaSuccess; }
extern "C" inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = *total = size_t(4) << 30;
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
inline int __syncthreads_count(int predicate) { return amber::emulation::block_count(predicate != 0); }
// atomicAdd's overloads the kernels use; each returns the old value, as CUDA's.
template <typename T>
T atomicAdd(T* address, T value) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int> ||
                std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long>);
  return std::atomic_ref<T>(*address).fetch_add(value);
}
// atomicCAS: *address = value where it holds compare; returns what it held, as CUDA's.
template <typename T>
T atomicCAS(T* address, T compare, T value) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long>);
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;
}
