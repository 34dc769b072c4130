// The CUDA kernel registry (registry.h).
#include "amber/kernels/cuda/registry.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace amber::cuda {
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

}  // namespace

void register_kernel(std::string_view op, int dtype, const amber_kernel& kernel, int version) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.kernels.emplace(Key{std::string(op), version, dtype}, kernel).second) {
    std::fprintf(stderr, "libamber_cuda: kernel for %.*s v%d dtype %d registered twice (a bug)\n", int(op.size()),
                 op.data(), version, dtype);
    std::abort();
  }
}

void register_kernel(std::string_view op, int dtype, amber_kernel_fn fn, int version) {
  register_kernel(op, dtype, amber_kernel{fn, nullptr, nullptr, nullptr}, version);
}

const amber_kernel* find_kernel(std::string_view op, int version, int dtype) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.kernels.find(Key{std::string(op), version, dtype});
  return it == r.kernels.end() ? nullptr : &it->second;
}

}  // namespace amber::cuda
