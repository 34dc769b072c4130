// Runs a CUDA kernel's code on the CPU, for the kernels whose device code sits in a header of its
// own (kernels/cuda/*_kernels.cuh): each block's threads as std::threads, __syncthreads as a
// barrier, __shared__ arrays as function statics (the blocks run one at a time, so one block's
// threads share them), threadIdx and blockIdx thread-local. What it proves is the indexing, the
// tiling and the synchronisation's logic without a GPU; not speed, not the memory model.
// Include it before the kernel's header (it includes CUDA's own: vector types, 16-bit floats).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <vector_functions.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
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
using std::max;
using std::min;

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 gridDim, blockDim;

// Device-only intrinsics the kernels' headers name.
inline float __uint_as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace amber::emulation {

inline std::barrier<>* block_barrier = nullptr;

// kernel<<<grid, block>>>(args...) as launch(kernel, grid, block, args...): the blocks in turn,
// each with its threads at once.
template <typename Kernel, typename... Args>
void launch(Kernel kernel, dim3 grid, dim3 block, Args... args) {
  gridDim = grid, blockDim = block;
  const unsigned threads = block.x * block.y * block.z;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::barrier<> barrier(threads);
        block_barrier = &barrier;
        std::vector<std::thread> running;
        running.reserve(threads);
        for (unsigned t = 0; t < threads; ++t)
          running.emplace_back([&, t] {
            blockIdx = dim3(x, y, z);
            threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
            kernel(args...);
            barrier.arrive_and_drop();  // a thread that has returned no longer holds the others
          });
        for (std::thread& t : running) t.join();
      }
}

}  // namespace amber::emulation
