// What the CUDA kernels share: dtype codes, C++ types and the dtype sets' type lists with
// typed registration, error reporting through the kernel args (kernels never throw across the
// C ABI), scalar attributes converted as PyTorch converts a number, element conversion between
// dtypes (cast_value's rules), and the generic strided elementwise launcher (operands
// broadcast to the output's shape, walked in the output's memory order).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/kernels/cuda/device_scope.h"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/switches.h"
#include "amber/kernels/kernel_call.h"

namespace amber::cuda {

// amber::DType codes (core/dtype.h).
enum : int32_t { kF32 = 0, kF64 = 1, kF16 = 2, kBF16 = 3, kI64 = 4, kI32 = 5, kI16 = 6, kI8 = 7, kU8 = 8, kBool = 9 };

template <typename T>
constexpr int32_t dtype_code() {
  if constexpr (std::is_same_v<T, float>) return kF32;
  if constexpr (std::is_same_v<T, double>) return kF64;
  if constexpr (std::is_same_v<T, __half>) return kF16;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return kBF16;
  if constexpr (std::is_same_v<T, int64_t>) return kI64;
  if constexpr (std::is_same_v<T, int32_t>) return kI32;
  if constexpr (std::is_same_v<T, int16_t>) return kI16;
  if constexpr (std::is_same_v<T, int8_t>) return kI8;
  if constexpr (std::is_same_v<T, uint8_t>) return kU8;
  if constexpr (std::is_same_v<T, bool>) return kBool;
  return -1;
}

// The element types of core/dtype.h's dtype sets on the GPU (__half and __nv_bfloat16 for f16
// and bf16), for register_typed: dtypes::floating, numeric, comparable and all. (test_coverage
// checks every op's kernels against its table dtypes.)
#define AMBER_CUDA_FLOATING float, double
#define AMBER_CUDA_NUMERIC float, double, int64_t, int32_t, int16_t, int8_t, uint8_t
#define AMBER_CUDA_COMPARABLE AMBER_CUDA_NUMERIC, bool
#define AMBER_CUDA_ALL float, double, __half, __nv_bfloat16, int64_t, int32_t, int16_t, int8_t, uint8_t, bool
// The 16-bit floats, for kernels that load them widened to f32 and round each result once
// (compute_t, load_as_compute, cast_value below): what the f32 kernel between conversions gives.
#define AMBER_CUDA_HALF __half, __nv_bfloat16

// Registers K<T>::run for every T in Ts under op.
template <template <typename> class K, typename... Ts>
void register_typed(const char* op) {
  (register_kernel(op, dtype_code<Ts>(), &K<Ts>::run), ...);
}
// The same for kernels with a setup: K<T>::run, K<T>::setup and K<T>::destroy for every T.
template <template <typename> class K, typename... Ts>
void register_typed_setup(const char* op) {
  (register_kernel(op, dtype_code<Ts>(), amber_kernel{&K<Ts>::run, &K<Ts>::setup, &K<Ts>::destroy, nullptr}), ...);
}

inline size_t itemsize(int32_t code) {
  constexpr size_t sizes[] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  return code >= 0 && code < 10 ? sizes[code] : 0;
}

using kernel_call::fail;
using kernel_call::setup_state;

inline cudaStream_t stream_of(const amber_kernel_args* a) { return static_cast<cudaStream_t>(a->stream); }

// Whether p is 16-byte aligned (what cuDNN's plans and 16-byte vector accesses ask of a buffer).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// After a launch: 0, or the launch error reported as the kernel's failure.
inline int launched(const amber_kernel_args* a, const char* what) {
#if defined(AMBER_CUDA_EMULATION)  // (enqueue ran the kernel)
  (void)a, (void)what;
  return 0;
#else
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : fail(a, "%s: %s", what, cudaGetErrorString(e));
#endif
}

inline int64_t numel(const amber_tensor_view& v) {
  int64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= v.sizes[i];
  return n;
}
inline bool present(const amber_tensor_view& v) { return v.ndim >= 0; }

// ---- Element conversion with PyTorch's rules (core/dtype_cast.h's cast_value) ----
template <typename T>
__host__ __device__ inline auto widen(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}
__host__ __device__ inline int64_t float_to_int64(double v) {
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return int64_t(v);
  return INT64_MIN;  // NaN and out of range, as x86
}
template <typename To, typename From>
__host__ __device__ inline To cast_value(From from) {
  auto v = widen(from);
  using W = decltype(v);
  if constexpr (std::is_same_v<To, W>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != W(0);
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(float(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(float(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    return To(v);
  } else if constexpr (std::is_floating_point_v<W>) {
    return To(uint64_t(float_to_int64(double(v))));  // narrowing from uint64 is modular
  } else {
    return To(v);
  }
}

// What a kernel computes in for elements of type T: f32 for the 16-bit floats (a model in 16
// bits: each op computes in f32 and rounds its result once, docs/OPS.md), else T.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float, T>;
// An element of type T in its compute type.
template <typename T>
__device__ inline compute_t<T> load_as_compute(const T& v) {
  return compute_t<T>(widen(v));
}

// A Scalar attribute converted to T exactly as PyTorch converts a Python number.
template <typename T>
inline T attr_scalar(const amber_kernel_args* a, int i) {
  const amber_attr& at = a->attrs[i];
  if (at.kind == AMBER_ATTR_FLOAT) return cast_value<T>(at.f);
  if (at.kind == AMBER_ATTR_BOOL) return cast_value<T>(bool(at.i != 0));
  return cast_value<T>(at.i);
}
inline bool attr_none(const amber_kernel_args* a, int i) { return a->attrs[i].kind == AMBER_ATTR_NONE; }

// ---- The strided elementwise launcher ----
constexpr int kMaxOperands = 9;  // the output and up to eight inputs (a fused node's limit)

template <int N>
struct Operands {
  int ndim = 0;
  bool dense = true;  // every operand contiguous in the output's order: offset = i * itemsize
  int64_t sizes[AMBER_MAX_DIMS] = {};
  char* ptr[N] = {};
  int64_t item[N] = {};
  int64_t bytes[N][AMBER_MAX_DIMS] = {};  // byte strides in the output's dims (0: broadcast)
};

// Operand k of views (0: the output) broadcast to the output's shape, right-aligned.
template <int N>
Operands<N> operands(const amber_tensor_view* const* views, const int64_t* items) {
  Operands<N> o;
  const amber_tensor_view& out = *views[0];
  o.ndim = out.ndim;
  for (int d = 0; d < out.ndim; ++d) o.sizes[d] = out.sizes[d];
  for (int k = 0; k < N; ++k) {
    const amber_tensor_view& v = *views[k];
    o.ptr[k] = static_cast<char*>(v.data);
    o.item[k] = items[k];
    int64_t expect = items[k];
    for (int d = out.ndim - 1; d >= 0; --d) {
      const int vd = d - (out.ndim - v.ndim);
      const int64_t stride = vd < 0 || v.sizes[vd] == 1 ? 0 : v.strides[vd] * items[k];
      o.bytes[k][d] = stride;
      if (out.sizes[d] != 1 && stride != expect) o.dense = false;
      expect *= out.sizes[d];
    }
  }
  return o;
}

// Prepares operands for a walk in the output's memory order: size-1 dims dropped, dims sorted
// by the output's stride (outermost first) and merged where every operand steps through them
// as one; a single dim left with unit steps everywhere is dense. Elementwise work may visit
// elements in any order, so a channels-last output with channels-last operands is dense, and a
// broadcast operand costs one or two divisions per element rather than one per dim.
template <int N>
void simplify(Operands<N>& o) {
  int perm[AMBER_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < o.ndim; ++d)
    if (o.sizes[d] != 1) perm[nd++] = d;
  auto mag = [](int64_t v) { return v < 0 ? -v : v; };
  for (int i = 1; i < nd; ++i)
    for (int j = i; j > 0 && mag(o.bytes[0][perm[j]]) > mag(o.bytes[0][perm[j - 1]]); --j) {
      const int t = perm[j];
      perm[j] = perm[j - 1];
      perm[j - 1] = t;
    }
  Operands<N> r = o;
  r.ndim = 0;
  for (int i = 0; i < nd; ++i) {
    const int d = perm[i];
    if (r.ndim > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge = merge && r.bytes[k][r.ndim - 1] == o.bytes[k][d] * o.sizes[d];
      if (merge) {
        r.sizes[r.ndim - 1] *= o.sizes[d];
        for (int k = 0; k < N; ++k) r.bytes[k][r.ndim - 1] = o.bytes[k][d];
        continue;
      }
    }
    r.sizes[r.ndim] = o.sizes[d];
    for (int k = 0; k < N; ++k) r.bytes[k][r.ndim] = o.bytes[k][d];
    ++r.ndim;
  }
  r.dense = true;
  if (r.ndim > 1) r.dense = false;
  if (r.ndim == 1)
    for (int k = 0; k < N; ++k) r.dense = r.dense && r.bytes[k][0] == r.item[k];
  o = r;
}

template <int N, typename F>
__global__ void map_kernel(int64_t n, Operands<N> o, F f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    char* p[N];
    if (o.dense) {
      for (int k = 0; k < N; ++k) p[k] = o.ptr[k] + i * o.item[k];
    } else {
      for (int k = 0; k < N; ++k) p[k] = o.ptr[k];
      int64_t rest = i;
      for (int d = o.ndim - 1; d >= 0; --d) {
        const int64_t idx = rest % o.sizes[d];
        rest /= o.sizes[d];
        for (int k = 0; k < N; ++k) p[k] += idx * o.bytes[k][d];
      }
    }
    f(p);
  }
}

// The block's dynamic shared memory as floats (sized by the launch's third parameter).
// tests/cuda_emulation.h (which defines AMBER_CUDA_EMULATION) gives its own.
#if !defined(AMBER_CUDA_EMULATION)
__device__ inline float* dynamic_shared() {
  extern __shared__ float dynamic_smem[];
  return dynamic_smem;
}
#endif

// Copies src into dst (same shape, any strides), converting dtypes with cast_value's rules
// (pointwise.cu).
int copy_convert(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src);

// Bytes rounded up to 256: each piece of a kernel's workspace starts aligned for any access.
inline size_t padded(size_t bytes) { return (bytes + 255) / 256 * 256; }

inline unsigned grid_for(int64_t n, unsigned block = 256) {
  const int64_t blocks = (n + block - 1) / block;
  return unsigned(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

#if defined(__CUDACC__) || defined(AMBER_CUDA_EMULATION)  // (the rest compiles on the host too)
// kernel<<<grid, block, shared_bytes, a's stream>>>(args...) (launched() then reports a launch
// error); under tests/cuda_emulation.h the grid's blocks run on the CPU, so that the kernel files'
// host code is tested there too (tests/test_kernels_emulated.cpp).
template <typename... Params, typename... Args>
void enqueue_shared(const amber_kernel_args* a, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                    Args... args) {
#if defined(AMBER_CUDA_EMULATION)
  (void)a;
  amber::emulation::launch_shared(kernel, grid, block, shared_bytes, Params(args)...);
#else
  // clang-format off
  kernel<<<grid, block, shared_bytes, stream_of(a)>>>(Params(args)...);
  // clang-format on
#endif
}
// The same without dynamic shared memory.
template <typename... Params, typename... Args>
void enqueue(const amber_kernel_args* a, void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  enqueue_shared(a, kernel, grid, block, 0, args...);
}

// Runs f(char* p[N]) for every output element: p[0] the output element, p[k] operand k's.
template <int N, typename F>
int map(const amber_kernel_args* a, const amber_tensor_view* const* views, const int64_t* items, F f,
        const char* what) {
  const int64_t n = numel(*views[0]);
  if (n == 0) return 0;
  DeviceScope scope(a->device);
  Operands<N> o = operands<N>(views, items);
  simplify(o);
  enqueue(a, &map_kernel<N, F>, dim3(grid_for(n)), dim3(256), n, o, f);
  return launched(a, what);
}
#endif

}  // namespace amber::cuda
