// Backend lookup and the lazy loading of backend libraries (see backend_registry.h).

#include "amber/core/backend_registry.h"

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "amber/core/error.h"

namespace amber {
namespace {

std::atomic<const amber_backend*> g_backends[kNumDeviceTypes];
std::mutex g_load_mutex;
std::string g_load_error[kNumDeviceTypes];  // why a backend could not be loaded, guarded by g_load_mutex

// Directory holding the library this code is linked into, so a backend installed beside
// the runtime is found without LD_LIBRARY_PATH.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname) return {};
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

const amber_backend* load_backend_library(DeviceType type) {
  std::lock_guard lock(g_load_mutex);
  if (auto* b = g_backends[int(type)].load()) return b;
  std::string& error = g_load_error[int(type)];
  if (!error.empty()) return nullptr;
  const std::string name = device_type_name(type);
  const std::string file = "libamber_" + name + ".so";
  std::string env_name = "AMBER_" + name + "_BACKEND";
  for (char& c : env_name) c = char(std::toupper(static_cast<unsigned char>(c)));
  std::string candidates[3] = {"", own_directory() + file, file};
  if (const char* env = std::getenv(env_name.c_str())) candidates[0] = env;
  std::string tried;
  void* handle = nullptr;
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* err = dlerror();
    tried += str("\n  ", c, ": ", err ? err : "not found");
  }
  if (!handle) {
    error = str("the ", name, " backend library ", file, " could not be loaded",
                type == DeviceType::cuda ? " (was Amber built with CUDA?)" : "", "; tried:", tried);
    return nullptr;
  }
  auto entry = reinterpret_cast<amber_backend_entry_fn>(dlsym(handle, "amber_backend_entry"));
  const amber_backend* b = entry ? entry() : nullptr;
  if (!b || b->abi_version != AMBER_BACKEND_ABI_VERSION || b->struct_size < sizeof(amber_backend)) {
    error = str(file, " does not provide a compatible backend (ABI version ", b ? int(b->abi_version) : -1,
                ", this runtime needs ", AMBER_BACKEND_ABI_VERSION, ")");
    dlclose(handle);
    return nullptr;
  }
  g_backends[int(type)].store(b, std::memory_order_release);
  return b;  // the library stays loaded for the life of the process
}

}  // namespace

void register_backend(DeviceType type, const amber_backend* b) { g_backends[int(type)].store(b); }

const amber_backend* backend_if_loaded(DeviceType type) { return g_backends[int(type)].load(); }

const amber_backend& backend(Device device) {
  const amber_backend* b = g_backends[int(device.type)].load(std::memory_order_acquire);
  if (!b && !device.is_cpu()) {
    b = load_backend_library(device.type);
    if (!b) {
      std::lock_guard lock(g_load_mutex);
      throw Error(str("device ", device, " requested but ", g_load_error[int(device.type)]));
    }
  }
  AMBER_CHECK(b, "no backend is registered for device ", device);
  if (!device.is_cpu()) {
    AMBER_CHECK(device.index >= 0, "invalid device ", device);
    const int32_t n = b->device_count();
    AMBER_CHECK(n > 0, "device ", device, " requested but no ", device_type_name(device.type),
                " device is available: ", b->last_error());
    AMBER_CHECK(device.index < n, "device ", device, " requested but only ", n, " ", device_type_name(device.type),
                " device", n == 1 ? " is" : "s are", " present");
  }
  return *b;
}

void copy_between_devices(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                          const char* what) {
  if (nbytes == 0) return;
  auto fail = [&](const amber_backend& b) {
    throw Error(
        str(what, ": copying ", nbytes, " bytes from ", src_device, " to ", dst_device, " failed: ", b.last_error()));
  };
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  if (!dst_device.is_cpu() && !src_device.is_cpu() && dst_device.type != src_device.type) {
    std::unique_ptr<char[]> host(new char[nbytes]);  // between two backends: through the host
    copy_between_devices(host.get(), Device::cpu(), src, src_device, nbytes, what);
    copy_between_devices(dst, dst_device, host.get(), Device::cpu(), nbytes, what);
    return;
  }
  const Device d = src_device.is_cpu() ? dst_device : src_device;
  const amber_backend& b = backend(d);
  if (b.copy(dst, int32_t(dst_device.type), dst_device.index, src, int32_t(src_device.type), src_device.index, nbytes,
             nullptr) != 0)
    fail(b);
  if (b.synchronize(d.index, nullptr) != 0) fail(b);
  if (!dst_device.is_cpu() && !src_device.is_cpu() && dst_device.index != src_device.index &&
      b.synchronize(dst_device.index, nullptr) != 0)
    fail(b);
}

}  // namespace amber
