// staging_copy.h's launch of its kernel (staging_copy_kernels.cuh).

#include "amber/kernels/cuda/staging_copy.h"

#include "amber/kernels/cuda/staging_copy_kernels.cuh"

namespace amber::cuda {

cudaError_t copy_by_kernel(void* dst, const void* src, size_t n, cudaStream_t stream) {
  staging::staging_copy_kernel<<<1, staging::kThreads, 0, stream>>>(static_cast<uint4*>(dst),
                                                                    static_cast<const uint4*>(src), n);
  return cudaGetLastError();
}

}  // namespace amber::cuda
