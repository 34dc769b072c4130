// CPU kernel registry and the CPU backend's C function table (see registry.h).

#include "amber/kernels/cpu/registry.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "amber/core/backend_registry.h"
#include "amber/core/error.h"
#include "amber/core/storage.h"
#include "amber/kernels/cpu/kernel_util.h"

namespace amber::cpu {
namespace {

struct Key {
  std::string op;
  int version;
  int dtype;
  bool operator<(const Key& o) const { return std::tie(op, version, dtype) < std::tie(o.op, o.version, o.dtype); }
};

struct Registry {
  std::mutex mutex;
  std::map<Key, amber_kernel> kernels;  // entries never move: lookups hand out pointers
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: used during static destruction
  return *r;
}

thread_local std::string t_last_error;

int32_t cpu_device_count() { return 1; }
void* cpu_alloc(int32_t, size_t n, uint32_t flags) {
  void* p = flags & AMBER_ALLOC_LONG_LIVED ? cpu_allocate_long_lived(n) : cpu_allocate(n);
  if (!p) t_last_error = "out of memory allocating " + std::to_string(n) + " bytes";
  return p;
}
void cpu_dealloc(int32_t, void* p, size_t n, uint32_t flags) {
  if (flags & AMBER_ALLOC_LONG_LIVED)
    cpu_free_long_lived(p, n);
  else
    cpu_free(p);
}
int cpu_copy(void* dst, int32_t dst_type, int32_t, const void* src, int32_t src_type, int32_t, size_t n, void*) {
  if (dst_type != int32_t(DeviceType::cpu) || src_type != int32_t(DeviceType::cpu)) {
    t_last_error = "the CPU backend copies only between host buffers";
    return 1;
  }
  if (n) std::memmove(dst, src, n);
  return 0;
}
int cpu_fill(int32_t, void* p, int value, size_t n, void*) {
  if (n) std::memset(p, value, n);
  return 0;
}
int cpu_stream_create(int32_t, void** stream) {
  *stream = nullptr;  // work runs when it is launched
  return 0;
}
void cpu_stream_destroy(int32_t, void*) {}
int cpu_sync(int32_t, void*) { return 0; }
const amber_kernel* cpu_lookup(const char* op, int32_t version, int32_t dtype) {
  if (!op || !is_valid_dtype_code(dtype)) return nullptr;
  return find_kernel(op, version, DType(dtype));
}
const char* cpu_last_error() { return t_last_error.c_str(); }

const amber_backend kCpuBackend = {
    AMBER_BACKEND_ABI_VERSION,
    sizeof(amber_backend),
    "cpu",
    AMBER_BACKEND_HOST_MEMORY | (bf16_supported() ? AMBER_BACKEND_BF16 : 0u) |
        (int8_supported() ? AMBER_BACKEND_INT8 : 0u),
    cpu_device_count,
    cpu_alloc,
    cpu_dealloc,
    cpu_copy,
    cpu_fill,
    cpu_stream_create,
    cpu_stream_destroy,
    cpu_sync,
    cpu_lookup,
    cpu_last_error,
    nullptr,  // no device graphs: kernels run as they are called
    nullptr,
    nullptr,
    nullptr,
    nullptr,  // host memory is not tracked
    nullptr,  // no page-locked staging: the device's memory is host memory
    nullptr,
    nullptr,  // no device timing: a profile's host times are the kernels' times
    nullptr,
    nullptr,
    nullptr,
    nullptr,  // no setup scope: oneDNN's primitives are per step
    nullptr,
};

[[maybe_unused]] const bool registered = (register_backend(DeviceType::cpu, &kCpuBackend), true);

}  // namespace

void register_kernel(std::string_view op, DType dtype, const amber_kernel& kernel, int version) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto [it, inserted] = r.kernels.emplace(Key{std::string(op), version, int(dtype)}, kernel);
  AMBER_ASSERT(inserted, "CPU kernel for ", op, " v", version, " ", dtype, " registered twice");
}
void register_kernel(std::string_view op, DType dtype, amber_kernel_fn fn, int version) {
  register_kernel(op, dtype, amber_kernel{fn, nullptr, nullptr, nullptr}, version);
}
const amber_kernel* find_kernel(std::string_view op, int version, DType dtype) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.kernels.find(Key{std::string(op), version, int(dtype)});
  return it == r.kernels.end() ? nullptr : &it->second;
}

const amber_backend* cpu_backend() { return &kCpuBackend; }

}  // namespace amber::cpu
