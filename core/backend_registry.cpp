// Backend lookup and the lazy loading of the CUDA backend library (see backend_registry.h).

#include "amber/core/backend_registry.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "amber/core/error.h"

namespace amber {
namespace {

std::atomic<const amber_backend*> g_backends[kNumDeviceTypes];
std::mutex g_load_mutex;
std::string g_load_error;  // why the CUDA backend could not be loaded, guarded by g_load_mutex

// Directory holding the library this code is linked into, so a backend installed beside
// the runtime is found without LD_LIBRARY_PATH.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname) return {};
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

const amber_backend* load_cuda_backend() {
  std::lock_guard lock(g_load_mutex);
  if (auto* b = g_backends[int(DeviceType::cuda)].load()) return b;
  if (!g_load_error.empty()) return nullptr;
  std::string tried;
  void* handle = nullptr;
  std::string candidates[2] = {own_directory() + "libamber_cuda.so", "libamber_cuda.so"};
  if (const char* env = std::getenv("AMBER_CUDA_BACKEND")) candidates[0] = env;
  for (const std::string& c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* err = dlerror();
    tried += str("\n  ", c, ": ", err ? err : "not found");
  }
  if (!handle) {
    g_load_error =
        str("the CUDA backend library libamber_cuda.so could not be loaded (was Amber built "
            "with CUDA?); tried:",
            tried);
    return nullptr;
  }
  auto entry = reinterpret_cast<amber_backend_entry_fn>(dlsym(handle, "amber_backend_entry"));
  const amber_backend* b = entry ? entry() : nullptr;
  if (!b || b->abi_version != AMBER_BACKEND_ABI_VERSION) {
    g_load_error = str("libamber_cuda.so does not provide a compatible backend (ABI version ",
                       b ? int(b->abi_version) : -1, ", expected ", AMBER_BACKEND_ABI_VERSION, ")");
    return nullptr;
  }
  g_backends[int(DeviceType::cuda)].store(b);
  return b;
}

}  // namespace

void register_backend(DeviceType type, const amber_backend* b) { g_backends[int(type)].store(b); }

const amber_backend* backend_if_loaded(DeviceType type) { return g_backends[int(type)].load(); }

const amber_backend& backend(Device device) {
  const amber_backend* b = g_backends[int(device.type)].load(std::memory_order_acquire);
  if (!b && device.is_cuda()) {
    b = load_cuda_backend();
    if (!b) {
      std::lock_guard lock(g_load_mutex);
      throw Error(str("device ", device, " requested but ", g_load_error));
    }
  }
  AMBER_CHECK(b, "no backend is registered for device ", device);
  if (device.is_cuda()) {
    AMBER_CHECK(device.index >= 0, "invalid device ", device);
    const int32_t n = b->device_count();
    AMBER_CHECK(n > 0, "device ", device, " requested but no CUDA device is available: ", b->last_error());
    AMBER_CHECK(device.index < n, "device ", device, " requested but only ", n, " CUDA device",
                n == 1 ? " is" : "s are", " present");
  }
  return *b;
}

}  // namespace amber
