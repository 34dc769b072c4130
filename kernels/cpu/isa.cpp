// Processor feature detection for the CPU kernels (see kernel_util.h).

#include <cstdlib>
#include <cstring>

#include "amber/core/dtype_cast.h"
#include "amber/kernels/cpu/kernel_util.h"

namespace amber::cpu {

Isa cpu_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    Isa best = Isa::base;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::avx2;
    if (best == Isa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      best = Isa::avx512;
    // A cap for testing the portable paths on a modern machine.
    if (const char* cap = std::getenv("AMBER_CPU_ISA")) {
      if (std::strcmp(cap, "base") == 0)
        best = Isa::base;
      else if (std::strcmp(cap, "avx2") == 0 && best == Isa::avx512)
        best = Isa::avx2;
    }
    return best;
  }();
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::base:
      break;
  }
  return "base";
}

template <typename T>
T attr_scalar(const amber_kernel_args* a, int i) {
  const amber_attr& at = a->attrs[i];
  if (at.kind == AMBER_ATTR_FLOAT) return cast_value<T>(at.f);
  if (at.kind == AMBER_ATTR_BOOL) return cast_value<T>(bool(at.i != 0));
  return cast_value<T>(at.i);
}
template float attr_scalar<float>(const amber_kernel_args*, int);
template double attr_scalar<double>(const amber_kernel_args*, int);
template Half attr_scalar<Half>(const amber_kernel_args*, int);
template BFloat16 attr_scalar<BFloat16>(const amber_kernel_args*, int);
template int64_t attr_scalar<int64_t>(const amber_kernel_args*, int);
template int32_t attr_scalar<int32_t>(const amber_kernel_args*, int);
template int16_t attr_scalar<int16_t>(const amber_kernel_args*, int);
template int8_t attr_scalar<int8_t>(const amber_kernel_args*, int);
template uint8_t attr_scalar<uint8_t>(const amber_kernel_args*, int);
template bool attr_scalar<bool>(const amber_kernel_args*, int);

}  // namespace amber::cpu
