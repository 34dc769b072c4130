// Small host-to-device copies recorded into a CUDA graph as a kernel rather than a copy-engine
// transfer (backend.cpp's copy, while a graph is being recorded, from page-locked memory): a call
// from the host then replays kernels only, with no hand-over between the copy engine and the
// SMs. Private to libamber_cuda.so.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace amber::cuda {

// The most bytes copied this way: a few warps' loads over the bus; larger inputs go by the copy
// engine, which streams them faster.
constexpr size_t kKernelCopyMaxBytes = 16 << 10;

// Whether the kernel takes the copy: 1 to kKernelCopyMaxBytes bytes, both ends 16-byte aligned
// (the loader's staging areas are).
inline bool can_copy_by_kernel(const void* dst, const void* src, size_t n) {
  return n > 0 && n <= kKernelCopyMaxBytes &&
         (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0;
}
// Enqueues that copy of n bytes from src, page-locked host memory the device reads directly
// (unified addressing), to dst on the stream's device.
cudaError_t copy_by_kernel(void* dst, const void* src, size_t n, cudaStream_t stream);

}  // namespace amber::cuda
