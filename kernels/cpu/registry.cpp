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
  std::map<Key, amber_kernel_fn> kernels, prepares;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: used during static destruction
  return *r;
}

thread_local std::string t_last_error;

int32_t cpu_device_count() { return 1; }
void* cpu_alloc(int32_t, size_t n) {
  void* p = cpu_allocate(n);
  if (!p) t_last_error = "out of memory allocating " + std::to_string(n) + " bytes";
  return p;
}
void cpu_dealloc(int32_t, void* p) { cpu_free(p); }
int cpu_copy(void* dst, int32_t dst_type, int32_t, const void* src, int32_t src_type, int32_t, size_t n, void*) {
  if (dst_type != int32_t(DeviceType::cpu) || src_type != int32_t(DeviceType::cpu)) {
    t_last_error = "the CPU backend copies only between host buffers";
    return 1;
  }
  if (n) std::memcpy(dst, src, n);
  return 0;
}
int cpu_sync(int32_t, void*) { return 0; }
amber_kernel_fn cpu_lookup(const char* op, int32_t version, int32_t dtype) {
  if (!op || !is_valid_dtype_code(dtype)) return nullptr;
  return find_kernel(op, version, DType(dtype));
}
const char* cpu_last_error() { return t_last_error.c_str(); }
amber_kernel_fn cpu_lookup_prepare(const char* op, int32_t version, int32_t dtype) {
  if (!op || !is_valid_dtype_code(dtype)) return nullptr;
  return find_prepare(op, version, DType(dtype));
}

const amber_backend kCpuBackend = {
    AMBER_BACKEND_ABI_VERSION,
    sizeof(amber_backend),
    "cpu",
    cpu_device_count,
    cpu_alloc,
    cpu_dealloc,
    cpu_copy,
    cpu_sync,
    cpu_lookup,
    cpu_last_error,
    cpu_lookup_prepare,
};

[[maybe_unused]] const bool registered = (register_backend(DeviceType::cpu, &kCpuBackend), true);

}  // namespace

namespace {
void add(std::map<Key, amber_kernel_fn> Registry::*table, const char* what, std::string_view op, DType dtype,
         amber_kernel_fn fn, int version) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto [it, inserted] = (r.*table).emplace(Key{std::string(op), version, int(dtype)}, fn);
  AMBER_ASSERT(inserted, "CPU ", what, " for ", op, " v", version, " ", dtype, " registered twice");
}
amber_kernel_fn find(std::map<Key, amber_kernel_fn> Registry::*table, std::string_view op, int version, DType dtype) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = (r.*table).find(Key{std::string(op), version, int(dtype)});
  return it == (r.*table).end() ? nullptr : it->second;
}
}  // namespace

void register_kernel(std::string_view op, DType dtype, amber_kernel_fn fn, int version) {
  add(&Registry::kernels, "kernel", op, dtype, fn, version);
}
amber_kernel_fn find_kernel(std::string_view op, int version, DType dtype) {
  return find(&Registry::kernels, op, version, dtype);
}
void register_prepare(std::string_view op, DType dtype, amber_kernel_fn fn, int version) {
  add(&Registry::prepares, "kernel setup", op, dtype, fn, version);
}
amber_kernel_fn find_prepare(std::string_view op, int version, DType dtype) {
  return find(&Registry::prepares, op, version, dtype);
}

const amber_backend* cpu_backend() { return &kCpuBackend; }

}  // namespace amber::cpu
