// The CUDA backend's device memory (device_memory.h): CUDA's stream-ordered allocator
// (cudaMallocAsync on each device's default pool, its release threshold raised so that freed
// blocks stay cached for reuse) as the caching allocator, a well-kept library doing what a
// hand-written one would; per-device counts of what Amber holds, checked against the cap.

#include "amber/kernels/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "amber/kernels/cuda/device_scope.h"
#include "amber/kernels/kernel_call.h"

namespace amber::cuda {
namespace {

// Decimal text of n (std::to_string would export libstdc++'s unique symbols from the library).
std::string num(uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

size_t memory_limit() {
  static const size_t limit = [] {
    const char* env = std::getenv("AMBER_CUDA_MEMORY_LIMIT");
    if (!env || !*env) return size_t(0);
    char* end = nullptr;
    double v = std::strtod(env, &end);
    if (end && (*end == 'k' || *end == 'K')) v *= 1024.0;
    if (end && (*end == 'm' || *end == 'M')) v *= 1024.0 * 1024.0;
    if (end && (*end == 'g' || *end == 'G')) v *= 1024.0 * 1024.0 * 1024.0;
    return v > 0 ? size_t(v) : size_t(0);
  }();
  return limit;
}

std::atomic<size_t> g_held[kMaxDevices];
std::atomic<size_t> g_peak[kMaxDevices];  // the most g_held has been since the start or the last reset
std::atomic<bool> g_pool_ready[kMaxDevices];

void keep_freed_blocks(int device) {
  if (g_pool_ready[device].load(std::memory_order_acquire)) return;
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    uint64_t threshold = UINT64_MAX;
    (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
  (void)cudaGetLastError();
  g_pool_ready[device].store(true, std::memory_order_release);
}

}  // namespace

// Allocations and frees are ordered on the legacy default stream, which every stream Amber creates
// for calls (blocking streams) synchronises with, so a free waits for the work that may still use
// the block.
void* device_allocate(int32_t device, size_t nbytes, std::string* error) {
  if (device < 0 || device >= kMaxDevices) return *error = "invalid CUDA device index", nullptr;
  DeviceScope scope(device);
  if (const cudaError_t e = scope.status(); e != cudaSuccess) {
    *error = std::string("cudaSetDevice: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
    return nullptr;
  }
  keep_freed_blocks(device);
  const size_t limit = memory_limit();
  const size_t held = g_held[device].load(std::memory_order_relaxed);
  if (limit && held + nbytes > limit) {
    *error = "out of memory on cuda:" + num(device) + ": asked for " + num(nbytes) + " bytes; " +
             num(limit > held ? limit - held : 0) + " of AMBER_CUDA_MEMORY_LIMIT's " + num(limit) + " bytes free, " +
             num(held) + " held by Amber";
    return nullptr;
  }
  void* p = nullptr;
  cudaError_t e = cudaMallocAsync(&p, nbytes, cudaStreamLegacy);
  if (e == cudaErrorMemoryAllocation) {  // give cached blocks back to the device and try once more
    (void)cudaGetLastError();
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      (void)cudaStreamSynchronize(cudaStreamLegacy);
      (void)cudaMemPoolTrimTo(pool, 0);
    }
    e = cudaMallocAsync(&p, nbytes, cudaStreamLegacy);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    (void)cudaMemGetInfo(&free_bytes, &total);
    (void)cudaGetLastError();
    *error = "out of memory on cuda:" + num(device) + ": asked for " + num(nbytes) + " bytes; " + num(free_bytes) +
             " of " + num(total) + " bytes free, " + num(held) + " held by Amber (" + cudaGetErrorString(e) + ")";
    return nullptr;
  }
  const size_t now = g_held[device].fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  size_t peak = g_peak[device].load(std::memory_order_relaxed);
  while (now > peak && !g_peak[device].compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void device_deallocate(int32_t device, void* ptr, size_t nbytes) {
  if (!ptr || device < 0 || device >= kMaxDevices) return;
  DeviceScope scope(device);
  (void)cudaFreeAsync(ptr, cudaStreamLegacy);
  (void)cudaGetLastError();
  g_held[device].fetch_sub(nbytes, std::memory_order_relaxed);
}

HeldBytes held_bytes(int32_t device, bool reset_peak) {
  if (device < 0 || device >= kMaxDevices) return {};
  const size_t held = g_held[device].load(std::memory_order_relaxed);
  if (reset_peak) g_peak[device].store(held, std::memory_order_relaxed);
  return {held, std::max(held, g_peak[device].load(std::memory_order_relaxed)), memory_limit()};
}

bool DeviceBuffer::try_take(int32_t device, size_t bytes) {
  std::string ignored;
  return take_or_say(device, bytes, &ignored);
}

int DeviceBuffer::take(const amber_kernel_args* a, size_t bytes, const char* op, const char* purpose) {
  std::string error;
  return take_or_say(a->device, bytes, &error) ? 0 : kernel_call::fail(a, "%s: %s: %s", op, purpose, error.c_str());
}

bool DeviceBuffer::take_or_say(int32_t device, size_t bytes, std::string* error) {
  reset();
  bytes = bytes ? bytes : 1;
  void* p = device_allocate(device, bytes, error);
  if (!p) return false;
  // The block is ordered on the legacy stream (a block freed there may still be in use until
  // then); a setup may fill it from a stream of its own.
  DeviceScope scope(device);
  if (const cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy); e != cudaSuccess) {
    (void)cudaGetLastError();
    device_deallocate(device, p, bytes);
    *error = "waiting for " + num(bytes) + " new bytes: " + cudaGetErrorString(e);
    return false;
  }
  ptr_ = p, bytes_ = bytes, device_ = device;
  return true;
}

void DeviceBuffer::reset() {
  device_deallocate(device_, ptr_, bytes_);
  ptr_ = nullptr, bytes_ = 0;
}

}  // namespace amber::cuda
