// The kernel behind staging_copy.h: one block, every thread's 16-byte loads issued before its
// stores (each load from host memory is a round trip over the bus: one wait a thread, not four),
// then the last partial group byte by byte.

#include "amber/kernels/cuda/staging_copy.h"

#include <cstdint>

namespace amber::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kGroupsPerThread = int(kKernelCopyMaxBytes / 16 / kThreads);

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

}  // namespace

bool can_copy_by_kernel(const void* dst, const void* src, size_t n) {
  return n > 0 && n <= kKernelCopyMaxBytes &&
         (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0;
}

cudaError_t copy_by_kernel(void* dst, const void* src, size_t n, cudaStream_t stream) {
  staging_copy_kernel<<<1, kThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), n);
  return cudaGetLastError();
}

}  // namespace amber::cuda
