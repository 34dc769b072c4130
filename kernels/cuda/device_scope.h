// Makes a CUDA device current for the calling thread while alive (a thread may serve models
// on several GPUs), and the caller's device current again after, only where it switched: a
// one-GPU service makes no runtime call for it. The one guard of the backend's table
// (backend.cpp) and of the kernels (cuda_util.cuh). Private to libamber_cuda.so.
#pragma once

#include <cuda_runtime_api.h>

namespace amber::cuda {

#if defined(AMBER_CUDA_EMULATION)
// tests/cuda_emulation.h: the kernels run on the CPU, with no device to make current.
class DeviceScope {
 public:
  explicit DeviceScope(int) {}
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t status() const { return cudaSuccess; }
};
#else
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    switched_ = previous_ != device;
    if (switched_) status_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (switched_ && previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  // cudaSuccess, or why the device could not be made current.
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};
#endif

}  // namespace amber::cuda
