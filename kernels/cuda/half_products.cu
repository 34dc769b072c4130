// The setup-time half of the CUDA backend's reduced-precision products (half_products.h): the
// precision each convolution and linear layer multiplies in, and its weights converted once.

#include <cuda_fp16.h>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/device_memory.h"
#include "amber/kernels/cuda/half_products.h"

namespace amber::cuda {
namespace {

// Sets *bad when an element of the n dense halves at p is Inf or NaN.
__global__ void find_non_finite(const __half* p, int64_t n, unsigned* bad) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (!isfinite(__half2float(p[i]))) *bad = 1;
}

}  // namespace

int32_t half_product_type(const amber_kernel_args* a, const amber_tensor_view& w) {
  if (w.cache_id == 0 || !w.data || w.dtype != kF32) return -1;
  return a->precision == AMBER_PRECISION_BF16 ? kBF16 : a->precision == AMBER_PRECISION_F16 ? kF16 : -1;
}

int convert_weights(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src) {
  const char* const what = dst.dtype == kF16    ? "converting weights to f16"
                           : dst.dtype == kBF16 ? "converting weights to bf16"
                                                : "widening 16-bit weights to f32";
  cudaStream_t stream = nullptr;  // its own: the setup waits for nothing else
  cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) return fail(a, "%s: a stream: %s", what, cudaGetErrorString(e));
  amber_kernel_args on_stream = *a;
  on_stream.stream = stream;
  int rc = copy_convert(&on_stream, dst, src);
  DeviceBuffer flag;
  unsigned found = 0;
  if (rc == 0 && dst.dtype == kF16) rc = flag.take(a, sizeof(unsigned), what, "the range check's flag");
  if (rc == 0 && dst.dtype == kF16) {
    const int64_t n = numel(dst);  // dst is dense in some order: its elements span n halves
    unsigned* const bad = flag.as<unsigned>();
    e = cudaMemsetAsync(bad, 0, sizeof(unsigned), stream);
    if (e == cudaSuccess) {
      find_non_finite<<<grid_for(n), 256, 0, stream>>>(static_cast<const __half*>(dst.data), n, bad);
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(&found, bad, sizeof found, cudaMemcpyDeviceToHost, stream);
    if (e != cudaSuccess) rc = fail(a, "%s: the range check: %s", what, cudaGetErrorString(e));
  }
  e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess && rc == 0) rc = fail(a, "%s: %s", what, cudaGetErrorString(e));
  (void)cudaGetLastError();
  flag.reset();
  (void)cudaStreamDestroy(stream);
  if (rc != 0) return rc;
  return found ? -1 : 0;
}

}  // namespace amber::cuda
