// The CPU backend: its implementation of the C backend table (core/backend.h) and the
// registry its kernels add themselves to, keyed by (op name, op version, compute dtype).
// Kernel files register at static-initialisation time with AMBER_CPU_KERNELS, next to the
// kernels they define.
#pragma once

#include <string_view>

#include "amber/core/backend.h"
#include "amber/core/dtype.h"

namespace amber::cpu {

void register_kernel(std::string_view op, DType dtype, amber_kernel_fn fn, int version = 1);
// A kernel with a one-time setup and per-step state (amber_kernel in core/backend.h).
void register_kernel(std::string_view op, DType dtype, const amber_kernel& kernel, int version = 1);
// The kernel entry, or nullptr.
const amber_kernel* find_kernel(std::string_view op, int version, DType dtype);
const amber_backend* cpu_backend();

// Registers K<T>::run for every T in Ts under op.
template <template <typename> class K, typename... Ts>
void register_typed(std::string_view op, int version = 1) {
  (register_kernel(op, dtype_v<Ts>, &K<Ts>::run, version), ...);
}
// The same for the types of a dtype set (core/dtype.h: ctypes::numeric{}, ...).
template <template <typename> class K, typename... Ts>
void register_typed(TypeList<Ts...>, std::string_view op) {
  register_typed<K, Ts...>(op);
}
// The same for kernels with a setup: K<T>::run, K<T>::setup and K<T>::destroy for every T.
template <template <typename> class K, typename... Ts>
void register_typed_setup(TypeList<Ts...>, std::string_view op) {
  (register_kernel(op, dtype_v<Ts>, amber_kernel{&K<Ts>::run, K<Ts>::setup, K<Ts>::destroy, nullptr}), ...);
}

}  // namespace amber::cpu

// Defines a function that runs once when the library loads, to register a family's kernels.
#define AMBER_CPU_KERNELS(family)                                                                   \
  static void amber_register_##family();                                                            \
  [[maybe_unused]] static const bool amber_registered_##family = (amber_register_##family(), true); \
  static void amber_register_##family()
