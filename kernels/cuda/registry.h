// The CUDA backend's kernel registry, keyed by (op name, op version, compute dtype): kernel
// files register at static-initialisation time with AMBER_CUDA_KERNELS, next to the kernels
// they define. Private to libamber_cuda.so (hidden symbols), reached through the backend table.
#pragma once

#include <string_view>

#include "amber/core/backend.h"

namespace amber::cuda {

void register_kernel(std::string_view op, int dtype, const amber_kernel& kernel, int version = 1);
void register_kernel(std::string_view op, int dtype, amber_kernel_fn fn, int version = 1);
const amber_kernel* find_kernel(std::string_view op, int version, int dtype);

}  // namespace amber::cuda

// Defines a function that runs once when the library loads, to register a family's kernels.
#define AMBER_CUDA_KERNELS(family)                                                                            \
  static void amber_cuda_register_##family();                                                                 \
  [[maybe_unused]] static const bool amber_cuda_registered_##family = (amber_cuda_register_##family(), true); \
  static void amber_cuda_register_##family()
