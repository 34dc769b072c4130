// The CUDA backend's C table (core/backend.h), exported as amber_backend_entry() from
// libamber_cuda.so: devices, memory (device_memory.h's allocator), copies, fills, streams and
// synchronisation through the CUDA runtime, and the kernel lookup (registry.h). A small copy
// from page-locked memory recorded into a graph (a call's staged host inputs) is a kernel of its
// own (staging_copy.h).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/device_memory.h"
#include "amber/kernels/cuda/device_scope.h"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/setup_scope.h"
#include "amber/kernels/cuda/staging_copy.h"

namespace amber::cuda {
namespace {

constexpr int32_t kHost = 0, kCuda = 1;  // amber::DeviceType codes

thread_local std::string t_error;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  t_error = std::string(what) + ": " + cudaGetErrorString(e);
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  return false;
}

// The device scope, its failure recorded as the backend's error.
struct DeviceGuard : DeviceScope {
  using DeviceScope::DeviceScope;
  bool ok() const { return cuda::ok(status(), "cudaSetDevice"); }
};

int32_t device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    t_error = std::string("the CUDA runtime found no usable GPU (is an NVIDIA GPU with its driver present?): ") +
              cudaGetErrorString(e);
    (void)cudaGetLastError();
    return 0;
  }
  if (n == 0) t_error = "the CUDA runtime reports no device";
  return n > kMaxDevices ? kMaxDevices : n;
}

void* allocate(int32_t device, size_t nbytes, uint32_t) { return device_allocate(device, nbytes, &t_error); }

void deallocate(int32_t device, void* ptr, size_t nbytes, uint32_t) { device_deallocate(device, ptr, nbytes); }

// The page-locked blocks host_alloc handed out and host_free has not taken back (start ->
// bytes): memory every device reads at the same address (unified addressing).
std::mutex g_page_locked_mutex;
std::map<uintptr_t, size_t> g_page_locked;

bool page_locked(const void* p, size_t n) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(g_page_locked_mutex);
  auto it = g_page_locked.upper_bound(a);
  if (it == g_page_locked.begin()) return false;
  --it;
  return a - it->first <= it->second && n <= it->second - (a - it->first);
}

// Whether a host-to-device copy on `stream` is being recorded into a graph from page-locked
// memory (the loader's staging of a call's small host inputs): then a kernel copies it
// (staging_copy.h). Decided at recording only: replays run what was recorded.
bool recorded_from_page_locked(const void* src, size_t n, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return stream && page_locked(src, n) && cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
         status == cudaStreamCaptureStatusActive;
}

int copy(void* dst, int32_t dst_type, int32_t dst_device, const void* src, int32_t src_type, int32_t src_device,
         size_t nbytes, void* stream) {
  if ((dst_type != kHost && dst_type != kCuda) || (src_type != kHost && src_type != kCuda)) {
    t_error = "the CUDA backend copies between host memory and CUDA devices only";
    return 1;
  }
  if (nbytes == 0) return 0;
  DeviceGuard guard(src_type == kCuda ? src_device : dst_device);
  if (!guard.ok()) return 1;
  cudaError_t e;
  auto* s = static_cast<cudaStream_t>(stream);
  if (dst_type == kCuda && src_type == kHost && can_copy_by_kernel(dst, src, nbytes) &&
      recorded_from_page_locked(src, nbytes, s))
    return ok(copy_by_kernel(dst, src, nbytes, s), "recording a staging copy kernel") ? 0 : 1;
  if (dst_type == kCuda && src_type == kCuda && dst_device != src_device)
    e = cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, s);
  else
    e = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, s);
  return ok(e, "cudaMemcpyAsync") ? 0 : 1;
}

int fill(int32_t device, void* ptr, int value, size_t nbytes, void* stream) {
  if (nbytes == 0) return 0;
  DeviceGuard guard(device);
  return guard.ok() && ok(cudaMemsetAsync(ptr, value, nbytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync")
             ? 0
             : 1;
}

int stream_create(int32_t device, void** stream) {
  DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  if (!guard.ok() || !ok(cudaStreamCreate(&s), "cudaStreamCreate")) return 1;
  *stream = s;
  return 0;
}

void stream_destroy(int32_t device, void* stream) {
  DeviceGuard guard(device);
  (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  (void)cudaGetLastError();
}

int synchronize(int32_t device, void* stream) {
  DeviceGuard guard(device);
  if (!guard.ok()) return 1;
  const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  return ok(e, "running the work queued on the stream") ? 0 : 1;
}

const amber_kernel* lookup_kernel(const char* op, int32_t version, int32_t dtype) {
  return op ? find_kernel(op, version, dtype) : nullptr;
}

const char* last_error() { return t_error.c_str(); }

// Recording streams are never destroyed: each goes back to its device's idle list at
// capture_end and records again later (at most as many as captures ever in flight at once). A
// cuDNN handle that ran on one still refers to it, and cudnnSetStream touches the stream it
// replaces (an event recorded on it, for a backend-API engine's internal streams), so another
// thread's next node-by-node call would touch a destroyed stream. With the plans' turns
// (capture_lock.h) this is the other half of the fix for their crash under 8 threads (SIGSEGV in
// cudnnSetStream -> cuEventRecord): an H200 run with every stream kept alive, without turns,
// still crashed 4 of 40; turns alone would leave this. With both: 0 of 40 (H200, 2026-11-30).
std::mutex g_capture_streams_mutex;
std::vector<cudaStream_t> g_idle_capture_streams[kMaxDevices];

// CUDA graphs. The recording stream is non-blocking: a blocking stream being captured would
// make any other thread's work on the legacy default stream (allocations, eager ops) fail and
// spoil the capture. Kernel setups wait while a capture is in flight, and with a cuDNN
// backend-API path asked for, a capture holds cuDNN's turn from its begin to its end
// (capture_lock.h); both are taken and released on the recording thread.
int capture_begin(int32_t device, void** stream) {
  if (device < 0 || device >= kMaxDevices) return t_error = "invalid CUDA device index", 1;
  DeviceGuard guard(device);
  if (!guard.ok()) return 1;
  cudaStream_t s = nullptr;
  {
    std::lock_guard lock(g_capture_streams_mutex);
    std::vector<cudaStream_t>& idle = g_idle_capture_streams[device];
    if (!idle.empty()) {
      s = idle.back();
      idle.pop_back();
    }
  }
  if (!s && !ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags")) return 1;
  capture_lock().lock_shared();
  const bool turn = cudnn_takes_turns();
  if (turn) cudnn_plan_turn().lock();
  if (!ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture")) {
    if (turn) cudnn_plan_turn().unlock();
    capture_lock().unlock_shared();
    std::lock_guard lock(g_capture_streams_mutex);
    g_idle_capture_streams[device].push_back(s);
    return 1;
  }
  *stream = s;
  return 0;
}

int capture_end(int32_t device, void* stream, void** graph) {
  DeviceGuard guard(device);
  auto* s = static_cast<cudaStream_t>(stream);
  cudaGraph_t g = nullptr;
  bool good = ok(cudaStreamEndCapture(s, &g), "recording a CUDA graph");
  if (cudnn_takes_turns()) cudnn_plan_turn().unlock();
  capture_lock().unlock_shared();
  cudaGraphExec_t exec = nullptr;
  if (good) good = ok(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
  if (g) (void)cudaGraphDestroy(g);
  (void)cudaGetLastError();
  {
    std::lock_guard lock(g_capture_streams_mutex);  // (out of capture mode, even when it failed)
    g_idle_capture_streams[device].push_back(s);
  }
  if (!good) return 1;
  *graph = exec;
  return 0;
}

int graph_launch(int32_t device, void* graph, void* stream) {
  DeviceGuard guard(device);
  return guard.ok() && ok(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), static_cast<cudaStream_t>(stream)),
                          "cudaGraphLaunch")
             ? 0
             : 1;
}

void graph_destroy(int32_t device, void* graph) {
  DeviceGuard guard(device);
  (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
  (void)cudaGetLastError();
}

int memory_stats(int32_t device, int reset_peak, amber_memory_stats* stats) {
  if (device < 0 || device >= kMaxDevices) return t_error = "invalid CUDA device index", 1;
  DeviceGuard guard(device);
  if (!guard.ok()) return 1;
  size_t free_bytes = 0, total = 0;
  if (!ok(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo")) return 1;
  const HeldBytes h = held_bytes(device, reset_peak != 0);
  *stats = amber_memory_stats{h.held, h.peak, h.limit, free_bytes, total};
  return 0;
}

// Page-locked host memory, portable to every device (the loader's staging of host inputs).
void* host_alloc(int32_t device, size_t nbytes) {
  DeviceGuard guard(device);
  void* p = nullptr;
  if (!guard.ok() || !ok(cudaHostAlloc(&p, nbytes ? nbytes : 1, cudaHostAllocPortable),
                         ("cudaHostAlloc of " + std::to_string(nbytes) + " bytes").c_str()))
    return nullptr;
  std::lock_guard lock(g_page_locked_mutex);
  g_page_locked[reinterpret_cast<uintptr_t>(p)] = nbytes;
  return p;
}

void host_free(int32_t device, void* ptr) {
  {
    std::lock_guard lock(g_page_locked_mutex);
    g_page_locked.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  DeviceGuard guard(device);
  (void)cudaFreeHost(ptr);
  (void)cudaGetLastError();
}

// Profiles' timing marks: CUDA events (with timing).
void* event_create(int32_t device) {
  DeviceGuard guard(device);
  cudaEvent_t e = nullptr;
  if (!guard.ok() || !ok(cudaEventCreate(&e), "cudaEventCreate")) return nullptr;
  return e;
}

int event_record(int32_t device, void* event, void* stream) {
  DeviceGuard guard(device);
  return guard.ok() && ok(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
                          "cudaEventRecord")
             ? 0
             : 1;
}

int event_elapsed(int32_t device, void* start, void* end, float* ms) {
  DeviceGuard guard(device);
  return guard.ok() && ok(cudaEventSynchronize(static_cast<cudaEvent_t>(end)), "cudaEventSynchronize") &&
                 ok(cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)),
                    "cudaEventElapsedTime")
             ? 0
             : 1;
}

void event_destroy(int32_t device, void* event) {
  DeviceGuard guard(device);
  (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
  (void)cudaGetLastError();
}

// The reduced precisions every visible GPU's tensor cores compute: f16 from compute
// capability 7.0 (Volta), bf16 from 8.0 (Ampere). None when no GPU is found (loading on
// CUDA then fails on the device count, naming why).
uint32_t precision_flags() {
  int n = 0, lowest = 1 << 30;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  for (int d = 0; d < n; ++d) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    lowest = std::min(lowest, major);
  }
  return (lowest >= 7 ? AMBER_BACKEND_F16 : 0u) | (lowest >= 8 ? AMBER_BACKEND_BF16 : 0u);
}

// A model's setup scope (setup_scope.h): what its steps' setups share.
void* scope_create(int32_t) { return new (std::nothrow) SetupScope(); }
void scope_destroy(int32_t, void* scope) { delete static_cast<SetupScope*>(scope); }

const amber_backend kBackend = {
    AMBER_BACKEND_ABI_VERSION,
    sizeof(amber_backend),
    "cuda",
    // (page-locked memory: cudaHostAlloc's, which unified addressing maps for every device's
    // kernels; staging_copy.h's kernel reads it so too) with precision_flags() added at the first
    // amber_backend_entry()
    AMBER_BACKEND_TF32 | AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED,
    device_count,
    allocate,
    deallocate,
    copy,
    fill,
    stream_create,
    stream_destroy,
    synchronize,
    lookup_kernel,
    last_error,
    capture_begin,
    capture_end,
    graph_launch,
    graph_destroy,
    memory_stats,
    host_alloc,
    host_free,
    event_create,
    event_record,
    event_elapsed,
    event_destroy,
    scope_create,
    scope_destroy,
};

}  // namespace
}  // namespace amber::cuda

extern "C" __attribute__((visibility("default"))) const amber_backend* amber_backend_entry() {
  // Built at the first call rather than at the library's load: the flags ask the driver.
  static const amber_backend table = [] {
    amber_backend t = amber::cuda::kBackend;
    t.flags |= amber::cuda::precision_flags();
    return t;
  }();
  return &table;
}
