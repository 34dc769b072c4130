// The device code of staging_copy.h's kernel: one block, every thread's 16-byte loads issued
// before its stores (each load from host memory is a round trip over the bus: one wait a
// thread, not four), then the last partial group byte by byte. In a header of its own so that
// tests/test_staging_copy_emulated.cpp runs it on the CPU. Private to libamber_cuda.so.
#pragma once

#include <cstddef>

#include "amber/kernels/cuda/staging_copy.h"

namespace amber::cuda::staging {

constexpr int kThreads = 256;
constexpr int kGroupsPerThread = int(kKernelCopyMaxBytes / 16 / kThreads);

// n bytes (at most kKernelCopyMaxBytes) from src to dst, both 16-byte aligned; one block of
// kThreads.
__global__ void __launch_bounds__(kThreads) staging_copy_kernel(uint4* dst, const uint4* src, size_t n) {
  const size_t groups = n / 16;
  uint4 v[kGroupsPerThread];
#pragma unroll
  for (int k = 0; k < kGroupsPerThread; ++k) {
    const size_t i = threadIdx.x + size_t(k) * kThreads;
    if (i < groups) v[k] = src[i];
  }
#pragma unroll
  for (int k = 0; k < kGroupsPerThread; ++k) {
    const size_t i = threadIdx.x + size_t(k) * kThreads;
    if (i < groups) dst[i] = v[k];
  }
  const size_t tail = groups * 16 + threadIdx.x;
  if (tail < n) reinterpret_cast<char*>(dst)[tail] = reinterpret_cast<const char*>(src)[tail];
}

}  // namespace amber::cuda::staging
