// The simulated device's control functions, found in the copy of libamber_sim.so the runtime
// loaded (sim_control.h).
#include "sim_control.h"

#include <dlfcn.h>

#include <stdexcept>

#include "amber/core/backend_registry.h"

namespace amber::test::sim {
namespace {

void* symbol(const char* name) {
  (void)backend(Device::sim(0));  // loads the library through the registry
  void* lib = dlopen("libamber_sim.so", RTLD_NOW | RTLD_NOLOAD);
  void* f = lib ? dlsym(lib, name) : nullptr;
  if (!f) throw std::runtime_error(std::string("libamber_sim.so does not export ") + name);
  return f;
}

}  // namespace

amber_sim_counters counters() {
  static auto f = reinterpret_cast<void (*)(amber_sim_counters*)>(symbol("amber_sim_get_counters"));
  amber_sim_counters c{};
  f(&c);
  return c;
}

void fail(amber_sim_fault kind, uint64_t k) {
  static auto f = reinterpret_cast<void (*)(int, uint64_t)>(symbol("amber_sim_fail"));
  f(int(kind), k);
}

uint64_t count(amber_sim_fault kind) {
  const amber_sim_counters c = counters();
  switch (kind) {
    case AMBER_SIM_FAIL_ALLOCATION:
      return c.allocations;
    case AMBER_SIM_FAIL_COPY:
      return c.uploads + c.downloads + c.device_copies;
    case AMBER_SIM_FAIL_KERNEL:
      return c.kernels;
  }
  return 0;
}

}  // namespace amber::test::sim
