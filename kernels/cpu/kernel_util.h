// Helpers shared by CPU kernels: typed access to the C kernel arguments, error reporting
// through the args' error buffer (kernels never throw across the C ABI), and the ISA
// selection used to run AVX-512 / AVX2 code only where the processor has it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "amber/core/backend.h"
#include "amber/core/dtype.h"
#include "amber/kernels/kernel_call.h"

namespace amber::cpu {

inline int64_t numel(const amber_tensor_view& v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= v.sizes[i];
  return n;
}
inline bool is_contiguous(const amber_tensor_view& v) {
  int64_t expected = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    if (v.sizes[i] == 0) return true;
    if (v.sizes[i] != 1 && v.strides[i] != expected) return false;
    expected *= v.sizes[i];
  }
  return true;
}
inline bool present(const amber_tensor_view& v) { return v.ndim >= 0; }

using kernel_call::fail;
using kernel_call::setup_state;

// Runs f, turning any C++ exception into a kernel error.
template <typename F>
int guarded(const amber_kernel_args* a, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return fail(a, "%s", e.what());
  } catch (...) {
    return fail(a, "unknown error");
  }
}

// A call's scratch: blocks taken in turn from the step's workspace (setup asked for their bytes),
// or, where the workspace is absent or too small for a block (an eager call), allocated for this
// call, 64-byte aligned, and freed with it. rest() / rest_bytes() is what the takes left of the
// workspace: a oneDNN primitive's scratchpad.
class CallScratch {
 public:
  explicit CallScratch(const amber_kernel_args* a)
      : at_(static_cast<char*>(a->workspace)), left_(a->workspace ? a->workspace_bytes : 0) {}
  char* take(size_t bytes) {
    if (at_ && left_ >= bytes) {
      char* block = at_;
      at_ += bytes;
      left_ -= bytes;
      return block;
    }
    own_.emplace_back(new char[bytes + 64]);
    char* block = own_.back().get();
    return block + (64 - reinterpret_cast<uintptr_t>(block) % 64) % 64;
  }
  template <typename T>
  T* take_array(size_t count) {
    return reinterpret_cast<T*>(take(count * sizeof(T)));
  }
  char* rest() const { return at_; }
  size_t rest_bytes() const { return left_; }

 private:
  char* at_;
  size_t left_;
  std::vector<std::unique_ptr<char[]>> own_;
};

// Attribute accessors (attributes are in op-table order).
inline int64_t attr_int(const amber_kernel_args* a, int i) { return a->attrs[i].i; }
inline double attr_float(const amber_kernel_args* a, int i) { return a->attrs[i].f; }
inline bool attr_bool(const amber_kernel_args* a, int i) { return a->attrs[i].i != 0; }
inline bool attr_none(const amber_kernel_args* a, int i) { return a->attrs[i].kind == AMBER_ATTR_NONE; }
inline bool attr_is_float(const amber_kernel_args* a, int i) { return a->attrs[i].kind == AMBER_ATTR_FLOAT; }
inline std::span<const int64_t> attr_ints(const amber_kernel_args* a, int i) {
  return {a->attrs[i].ints, size_t(a->attrs[i].count)};
}
// A Scalar attribute converted to T exactly as PyTorch converts a Python number.
template <typename T>
T attr_scalar(const amber_kernel_args* a, int i);

// ---- Instruction-set selection ----
enum class Isa { base, avx2, avx512 };
Isa cpu_isa();  // best level this processor supports (AMBER_CPU_ISA=base|avx2|avx512 caps it)
const char* isa_name(Isa isa);
// True when oneDNN multiplies bf16 natively here (AVX512-BF16, and cpu_isa() not capped below
// avx512): the CPU backend then offers AMBER_PRECISION_BF16 (AMBER_BACKEND_BF16).
bool bf16_supported();
// True when oneDNN multiplies int8 natively here (AVX512-VNNI, and cpu_isa() not capped below
// avx512): the CPU backend then offers AMBER_PRECISION_DYNAMIC_INT8 (AMBER_BACKEND_INT8).
bool int8_supported();

}  // namespace amber::cpu

// Function attributes compiling one function for a given ISA; `flatten` inlines the
// generic loop it calls so that the loop itself is vectorised for that ISA.
#define AMBER_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"), flatten))
#define AMBER_TARGET_AVX2 __attribute__((target("avx2,fma,f16c"), flatten))
#define AMBER_TARGET_BASE __attribute__((flatten))
