// CUDA kernels for elementwise ops: unary (every unary op of the instruction list,
// core/fused_ops.h, with its dtypes; clamp, hardtanh, pow.Scalar, gelu), binary (add, sub, mul, div, pow and their
// scalar forms, rsub.Scalar), comparisons, where, to (dtype conversion), clone, full and arange (`fused` nodes:
// fused.cu). f16 and bf16 elements are computed in f32 (compute_t) and rounded once, as the f32 kernel between
// conversions would (docs/OPS.md, "16-bit floats"). The formulas are the CPU kernels' own (kernels/arith.h,
// kernels/pointwise_math.h: host and device functions). Integer division by zero gives 0 here (the CPU reports an
// error; checking would need a device-to-host read per call).

#include "amber/core/fused_ops.h"
#include "amber/kernels/arith.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/div_mode.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {

// The Scalar attributes of a list op (floating_attrs ops); outside the anonymous namespace,
// where nvcc would flag the unused count of the ops without any.
template <int Arity>
struct FormulaAttrs {
  static constexpr int kAttrs = Arity - 1;
  double attr[2] = {0, 0};
};

namespace {

// The element functors' operands: element i of T (p[i]) widened to its compute type, and the
// result stored into the output element (p[0]), rounded once.
template <typename T>
__device__ compute_t<T> operand(char* const* p, int i) {
  return load_as_compute(*reinterpret_cast<const T*>(p[i]));
}
template <typename T>
__device__ void store(char* const* p, compute_t<T> v) {
  *reinterpret_cast<T*>(p[0]) = cast_value<T>(v);
}
// A Scalar attribute in T's compute type.
template <typename T>
compute_t<T> scalar_attr(const amber_kernel_args* a, int i) {
  return attr_scalar<compute_t<T>>(a, i);
}

// ---- Unary ----
template <typename T, typename Op>
struct UnaryF {
  Op op;
  __device__ void operator()(char* const* p) const { store<T>(p, op(operand<T>(p, 1))); }
};

template <typename T, typename Op>
int run_unary(const amber_kernel_args* a, Op op, const char* what) {
  const amber_tensor_view* v[2] = {&a->outputs[0], &a->inputs[0]};
  const int64_t items[2] = {sizeof(T), sizeof(T)};
  return map<2>(a, v, items, UnaryF<T, Op>{op}, what);
}

// Instruction NAME of the list (core/fused_ops.h) as an op's formula: Formula_NAME.
#define AMBER_FORMULA(OPCODE, name, arity, kind)                    \
  struct Formula_##name : FormulaAttrs<arity> {                     \
    template <typename T>                                           \
    __device__ T operator()(T x) const {                            \
      if constexpr (arity == 1)                                     \
        return pw::op::name(x);                                     \
      else if constexpr (arity == 2)                                \
        return pw::op::name(x, T(this->attr[0]));                   \
      else                                                          \
        return pw::op::name(x, T(this->attr[0]), T(this->attr[1])); \
    }                                                               \
    template <typename T> /* two-tensor ops (kind binary) */        \
    __device__ T operator()(T x, T y) const {                       \
      if constexpr (arity == 2)                                     \
        return pw::op::name(x, y);                                  \
      else                                                          \
        return x;                                                   \
    }                                                               \
  };
AMBER_FUSED_OPS(AMBER_FORMULA)
#undef AMBER_FORMULA

template <typename T>
struct ClampOp {
  T lo, hi;
  bool has_lo, has_hi;
  __device__ T operator()(T x) const {
    T r = x;
    if (has_lo) r = r < lo ? lo : r;
    if (has_hi) r = hi < r ? hi : r;
    return r;
  }
};
template <typename T>
struct PowScalarOp {
  T e;
  __device__ T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return pw::pow_scalar(x, e);
    } else {
      if (e == T(2)) return pw::wrap_mul(x, x);
      if (e == T(3)) return pw::wrap_mul(pw::wrap_mul(x, x), x);
      return pw::int_pow(x, e);
    }
  }
};

template <typename Op>
struct Unary {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) { return run_unary<T>(a, Op{}, "unary kernel launch"); }
  };
};
// A two-tensor op of the list (kind binary), broadcasting.
template <typename T, typename Op>
struct ListBinaryF {
  Op op;
  __device__ void operator()(char* const* p) const { store<T>(p, op(operand<T>(p, 1), operand<T>(p, 2))); }
};
template <typename Op>
struct ListBinary {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view* v[3] = {&a->outputs[0], &a->inputs[0], &a->inputs[1]};
      const int64_t items[3] = {sizeof(T), sizeof(T), sizeof(T)};
      return map<3>(a, v, items, ListBinaryF<T, Op>{}, "binary kernel launch");
    }
  };
};
// A list op whose Scalar attributes are its instruction's further operands.
template <typename Op>
struct UnaryAttrs {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      Op op;
      for (int i = 0; i < Op::kAttrs; ++i) op.attr[i] = double(scalar_attr<T>(a, i));  // exactly
      return run_unary<T>(a, op, "unary kernel launch");
    }
  };
};
template <typename T>
struct GeluKernel {  // gelu(self, approximate)
  static int run(const amber_kernel_args* a) {
    return a->attrs[op_attrs::gelu::approximate].i == op_attrs::gelu::approximate_is::tanh
               ? run_unary<T>(a, Formula_gelu_tanh{}, "gelu")
               : run_unary<T>(a, Formula_gelu{}, "gelu");
  }
};
template <typename T>
struct ClampKernel {  // clamp(self, min, max)
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::clamp;
    using C = compute_t<T>;
    ClampOp<C> c{C(0), C(0), !attr_none(a, at::min), !attr_none(a, at::max)};
    if (c.has_lo) c.lo = attr_scalar<C>(a, at::min);
    if (c.has_hi) c.hi = attr_scalar<C>(a, at::max);
    return run_unary<T>(a, c, "clamp");
  }
};
template <typename T>
struct HardtanhKernel {  // hardtanh(self, min_val, max_val)
  static int run(const amber_kernel_args* a) {
    using C = compute_t<T>;
    return run_unary<T>(a,
                        ClampOp<C>{attr_scalar<C>(a, op_attrs::hardtanh::min_val),
                                   attr_scalar<C>(a, op_attrs::hardtanh::max_val), true, true},
                        "hardtanh");
  }
};
template <typename T>
struct PowScalarKernel {  // pow.Scalar(self, exponent)
  static int run(const amber_kernel_args* a) {
    using C = compute_t<T>;
    return run_unary<T>(a, PowScalarOp<C>{attr_scalar<C>(a, op_attrs::pow_Scalar::exponent)}, "pow.Scalar");
  }
};

// ---- Binary ----
template <typename T>
__device__ inline T div_value(T x, T y, DivMode mode) {
  if constexpr (std::is_floating_point_v<T>) {
    if (mode == DivMode::trunc) return std::trunc(x / y);
    if (mode == DivMode::floor) return pw::div_floor_float(x, y);
    return x / y;
  } else {
    if (y == 0) return 0;
    return mode == DivMode::floor ? pw::div_floor_int(x, y) : pw::div_trunc_int(x, y);
  }
}

enum class Bin : int { add, sub, mul, div, pow, rsub };

template <typename T>
struct BinaryOp {
  Bin op;
  T alpha;
  bool alpha_one;
  DivMode mode;
  __device__ T operator()(T x, T y) const {
    switch (op) {
      case Bin::add:
        return alpha_one ? pw::wrap_add(x, y) : pw::wrap_add(x, pw::wrap_mul(alpha, y));
      case Bin::sub:
        return alpha_one ? pw::wrap_sub(x, y) : pw::wrap_sub(x, pw::wrap_mul(alpha, y));
      case Bin::rsub:  // other - alpha * self, with `other` in y
        return pw::wrap_sub(y, pw::wrap_mul(alpha, x));
      case Bin::mul:
        return pw::wrap_mul(x, y);
      case Bin::div:
        return div_value(x, y, mode);
      case Bin::pow:
        if constexpr (std::is_floating_point_v<T>)
          return std::pow(x, y);
        else
          return pw::int_pow(x, y);
    }
    return x;
  }
};

// Elements of T, the op on their compute type.
template <typename T>
struct BinaryF {
  BinaryOp<compute_t<T>> op;
  __device__ void operator()(char* const* p) const { store<T>(p, op(operand<T>(p, 1), operand<T>(p, 2))); }
};
template <typename T>
struct ScalarF {  // the second operand is a number
  BinaryOp<compute_t<T>> op;
  compute_t<T> y;
  __device__ void operator()(char* const* p) const { store<T>(p, op(operand<T>(p, 1), y)); }
};

template <typename T>
int run_binary(const amber_kernel_args* a, BinaryOp<compute_t<T>> op) {
  const amber_tensor_view* v[3] = {&a->outputs[0], &a->inputs[0], &a->inputs[1]};
  const int64_t items[3] = {sizeof(T), sizeof(T), sizeof(T)};
  return map<3>(a, v, items, BinaryF<T>{op}, "binary kernel launch");
}
template <typename T>
int run_scalar(const amber_kernel_args* a, BinaryOp<compute_t<T>> op, compute_t<T> y) {
  const amber_tensor_view* v[2] = {&a->outputs[0], &a->inputs[0]};
  const int64_t items[2] = {sizeof(T), sizeof(T)};
  return map<2>(a, v, items, ScalarF<T>{op, y}, "scalar kernel launch");
}

template <typename T>
BinaryOp<T> with_alpha(Bin op, T alpha) {
  return BinaryOp<T>{op, alpha, alpha == T(1), DivMode::true_div};
}

template <typename T>
struct AddKernel {
  static int run(const amber_kernel_args* a) {
    return run_binary<T>(a, with_alpha(Bin::add, scalar_attr<T>(a, op_attrs::add::alpha)));
  }
};
template <typename T>
struct SubKernel {
  static int run(const amber_kernel_args* a) {
    return run_binary<T>(a, with_alpha(Bin::sub, scalar_attr<T>(a, op_attrs::sub::alpha)));
  }
};
template <typename T>
struct MulKernel {
  static int run(const amber_kernel_args* a) { return run_binary<T>(a, with_alpha(Bin::mul, compute_t<T>(1))); }
};
template <typename T>
struct DivKernel {
  static int run(const amber_kernel_args* a) {
    return run_binary<T>(
        a, BinaryOp<compute_t<T>>{Bin::div, 1, true, div_mode_of(a->attrs[op_attrs::div::rounding_mode])});
  }
};
template <typename T>
struct PowKernel {
  static int run(const amber_kernel_args* a) { return run_binary<T>(a, with_alpha(Bin::pow, compute_t<T>(1))); }
};
template <typename T>
struct AddScalarKernel {  // add.Scalar(self, other, alpha): self + alpha * other, the product made once
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(
        a, with_alpha(Bin::add, compute_t<T>(1)),
        pw::wrap_mul(scalar_attr<T>(a, op_attrs::add_Scalar::alpha), scalar_attr<T>(a, op_attrs::add_Scalar::other)));
  }
};
template <typename T>
struct SubScalarKernel {
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(
        a, with_alpha(Bin::sub, compute_t<T>(1)),
        pw::wrap_mul(scalar_attr<T>(a, op_attrs::sub_Scalar::alpha), scalar_attr<T>(a, op_attrs::sub_Scalar::other)));
  }
};
template <typename T>
struct RsubScalarKernel {  // rsub.Scalar(self, other, alpha): other - alpha * self
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, with_alpha(Bin::rsub, scalar_attr<T>(a, op_attrs::rsub_Scalar::alpha)),
                         scalar_attr<T>(a, op_attrs::rsub_Scalar::other));
  }
};
template <typename T>
struct MulScalarKernel {
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, with_alpha(Bin::mul, compute_t<T>(1)), scalar_attr<T>(a, op_attrs::mul_Scalar::other));
  }
};
template <typename T>
struct DivScalarKernel {  // div.Scalar(self, other, rounding_mode)
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(
        a, BinaryOp<compute_t<T>>{Bin::div, 1, true, div_mode_of(a->attrs[op_attrs::div_Scalar::rounding_mode])},
        scalar_attr<T>(a, op_attrs::div_Scalar::other));
  }
};

// ---- Comparisons and where ----
enum class Cmp : int { eq, ne, lt, le, gt, ge, land, lor, lxor };  // land..lxor: logical_and, _or, _xor
template <typename T>
__device__ inline bool compare(Cmp c, T x, T y) {
  switch (c) {
    case Cmp::eq:
      return x == y;
    case Cmp::ne:
      return x != y;
    case Cmp::lt:
      return x < y;
    case Cmp::le:
      return x <= y;
    case Cmp::gt:
      return x > y;
    case Cmp::ge:
      return x >= y;
    case Cmp::land:
      return x != T(0) && y != T(0);
    case Cmp::lor:
      return x != T(0) || y != T(0);
    case Cmp::lxor:
      return (x != T(0)) != (y != T(0));
  }
  return false;
}
template <typename T>
struct CompareF {
  Cmp c;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<bool*>(p[0]) = compare(c, operand<T>(p, 1), operand<T>(p, 2));
  }
};
template <typename T>
struct CompareScalarF {
  Cmp c;
  compute_t<T> y;
  __device__ void operator()(char* const* p) const { *reinterpret_cast<bool*>(p[0]) = compare(c, operand<T>(p, 1), y); }
};
template <Cmp C>
struct Compare {
  template <typename T>
  struct Tensor {
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view* v[3] = {&a->outputs[0], &a->inputs[0], &a->inputs[1]};
      const int64_t items[3] = {1, sizeof(T), sizeof(T)};
      return map<3>(a, v, items, CompareF<T>{C}, "comparison kernel launch");
    }
  };
  template <typename T>
  struct Scalar {
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view* v[2] = {&a->outputs[0], &a->inputs[0]};
      const int64_t items[2] = {1, sizeof(T)};
      return map<2>(a, v, items, CompareScalarF<T>{C, scalar_attr<T>(a, op_attrs::eq_Scalar::other)},
                    "comparison kernel launch");
    }
  };
};

template <typename T>
struct LogicalNotKernel {  // logical_not(self): self == 0
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view* v[2] = {&a->outputs[0], &a->inputs[0]};
    const int64_t items[2] = {1, sizeof(T)};
    return map<2>(a, v, items, CompareScalarF<T>{Cmp::eq, compute_t<T>(0)}, "logical_not kernel launch");
  }
};

template <typename T>
struct WhereF {
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) =
        *reinterpret_cast<const bool*>(p[1]) ? *reinterpret_cast<const T*>(p[2]) : *reinterpret_cast<const T*>(p[3]);
  }
};
template <typename T>
struct MaskedFillF {
  T value;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const bool*>(p[2]) ? value : *reinterpret_cast<const T*>(p[1]);
  }
};
template <typename T>
struct MaskedFillKernel {  // masked_fill.Scalar(self, mask, value)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view* v[3] = {&a->outputs[0], &a->inputs[0], &a->inputs[1]};
    const int64_t items[3] = {sizeof(T), sizeof(T), 1};
    return map<3>(a, v, items, MaskedFillF<T>{attr_scalar<T>(a, op_attrs::masked_fill_Scalar::value)},
                  "masked_fill kernel launch");
  }
};
template <typename T>
struct WhereKernel {  // where(condition, self, other), keyed by the result dtype
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view* v[4] = {&a->outputs[0], &a->inputs[0], &a->inputs[1], &a->inputs[2]};
    const int64_t items[4] = {sizeof(T), 1, sizeof(T), sizeof(T)};
    return map<4>(a, v, items, WhereF<T>{}, "where kernel launch");
  }
};

// ---- Moving and making values ----
template <typename S, typename D>
struct CastF {
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<D*>(p[0]) = cast_value<D>(*reinterpret_cast<const S*>(p[1]));
  }
};
template <typename S, typename D>
int cast(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src) {
  const amber_tensor_view* v[2] = {&dst, &src};
  const int64_t items[2] = {sizeof(D), sizeof(S)};
  return map<2>(a, v, items, CastF<S, D>{}, "conversion kernel launch");
}
template <typename S>
int convert_from(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src) {
  switch (dst.dtype) {
    case kF32:
      return cast<S, float>(a, dst, src);
    case kF64:
      return cast<S, double>(a, dst, src);
    case kF16:
      return cast<S, __half>(a, dst, src);
    case kBF16:
      return cast<S, __nv_bfloat16>(a, dst, src);
    case kI64:
      return cast<S, int64_t>(a, dst, src);
    case kI32:
      return cast<S, int32_t>(a, dst, src);
    case kI16:
      return cast<S, int16_t>(a, dst, src);
    case kI8:
      return cast<S, int8_t>(a, dst, src);
    case kU8:
      return cast<S, uint8_t>(a, dst, src);
    case kBool:
      return cast<S, bool>(a, dst, src);
  }
  return fail(a, "unknown target dtype %d", int(dst.dtype));
}
template <typename S>
struct ToKernel {  // to(self, dtype): keyed by the source dtype; the output's dtype is the target
  static int run(const amber_kernel_args* a) { return convert_from<S>(a, a->outputs[0], a->inputs[0]); }
};

template <typename W>
struct CopyF {
  __device__ void operator()(char* const* p) const { *reinterpret_cast<W*>(p[0]) = *reinterpret_cast<const W*>(p[1]); }
};
template <typename T>
struct CloneKernel {  // a copy moves bytes: one instantiation per element width
  static int run(const amber_kernel_args* a) {
    using W = std::conditional_t<
        sizeof(T) == 8, uint64_t,
        std::conditional_t<sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>;
    const amber_tensor_view* v[2] = {&a->outputs[0], &a->inputs[0]};
    const int64_t items[2] = {sizeof(W), sizeof(W)};
    return map<2>(a, v, items, CopyF<W>{}, "clone kernel launch");
  }
};

template <typename T>
struct FillF {
  T value;
  __device__ void operator()(char* const* p) const { *reinterpret_cast<T*>(p[0]) = value; }
};
template <typename T>
struct FullKernel {  // full(size, fill_value, dtype)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view* v[1] = {&a->outputs[0]};
    const int64_t items[1] = {sizeof(T)};
    return map<1>(a, v, items, FillF<T>{attr_scalar<T>(a, op_attrs::full::fill_value)}, "full kernel launch");
  }
};

template <typename T>
__global__ void arange_kernel(T* out, int64_t n, double fstart, double fstep, int64_t istart, int64_t istep) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_floating_point_v<compute_t<T>>)
      out[i] = cast_value<T>(compute_t<T>(fstart + fstep * double(i)));
    else
      out[i] = T(uint64_t(istart) + uint64_t(istep) * uint64_t(i));
  }
}
template <typename T>
struct ArangeKernel {  // arange(start, end, step, dtype): in double for floats, int64 for integers
  static int run(const amber_kernel_args* a) {
    const int64_t n = numel(a->outputs[0]);
    if (n == 0) return 0;
    const amber_attr &start = a->attrs[op_attrs::arange::start], &step = a->attrs[op_attrs::arange::step];
    DeviceScope scope(a->device);
    enqueue(a, &arange_kernel<T>, dim3(grid_for(n)), dim3(256), static_cast<T*>(a->outputs[0].data), n, start.f, step.f,
            start.i, step.i);
    return launched(a, "arange kernel launch");
  }
};

// The unary ops of the instruction list (core/fused_ops.h), by kind.
#define AMBER_UNARY_none(name)
#define AMBER_UNARY_numeric(name) \
  register_typed<Unary<Formula_##name>::Kernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>(#name);
#define AMBER_UNARY_floating(name) \
  register_typed<Unary<Formula_##name>::Kernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>(#name);
#define AMBER_UNARY_floating_cheap(name) AMBER_UNARY_floating(name)
#define AMBER_UNARY_floating_attrs(name) \
  register_typed<UnaryAttrs<Formula_##name>::Kernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>(#name);
#define AMBER_UNARY_binary(name) \
  register_typed<ListBinary<Formula_##name>::Kernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>(#name);
#define AMBER_UNARY(OPCODE, name, arity, kind) AMBER_UNARY_##kind(name)

AMBER_CUDA_KERNELS(pointwise) {
  AMBER_FUSED_OPS(AMBER_UNARY)
  register_typed<ClampKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("clamp");
  register_typed<HardtanhKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("hardtanh");
  register_typed<PowScalarKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("pow.Scalar");
  register_typed<GeluKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("gelu");

  register_typed<AddKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("add");
  register_typed<SubKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("sub");
  register_typed<MulKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("mul");
  register_typed<DivKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("div");
  register_typed<PowKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("pow");
  register_typed<AddScalarKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("add.Scalar");
  register_typed<SubScalarKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("sub.Scalar");
  register_typed<RsubScalarKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("rsub.Scalar");
  register_typed<MulScalarKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("mul.Scalar");
  register_typed<DivScalarKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("div.Scalar");

#define AMBER_CUDA_COMPARE(name, C)                                                  \
  register_typed<Compare<C>::Tensor, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>(#name); \
  register_typed<Compare<C>::Scalar, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>(#name ".Scalar")
  AMBER_CUDA_COMPARE(eq, Cmp::eq);
  AMBER_CUDA_COMPARE(ne, Cmp::ne);
  AMBER_CUDA_COMPARE(lt, Cmp::lt);
  AMBER_CUDA_COMPARE(le, Cmp::le);
  AMBER_CUDA_COMPARE(gt, Cmp::gt);
  AMBER_CUDA_COMPARE(ge, Cmp::ge);
#undef AMBER_CUDA_COMPARE
  register_typed<Compare<Cmp::land>::Tensor, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>("logical_and");
  register_typed<Compare<Cmp::lor>::Tensor, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>("logical_or");
  register_typed<Compare<Cmp::lxor>::Tensor, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>("logical_xor");
  register_typed<LogicalNotKernel, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>("logical_not");
  register_typed<WhereKernel, AMBER_CUDA_ALL>("where");
  register_typed<MaskedFillKernel, AMBER_CUDA_ALL>("masked_fill.Scalar");

  register_typed<ToKernel, AMBER_CUDA_ALL>("to");
  register_typed<CloneKernel, AMBER_CUDA_ALL>("clone");
  register_typed<FullKernel, AMBER_CUDA_ALL>("full");
  register_typed<ArangeKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("arange");
}

}  // namespace

int copy_convert(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src) {
  switch (src.dtype) {
    case kF32:
      return convert_from<float>(a, dst, src);
    case kF64:
      return convert_from<double>(a, dst, src);
    case kF16:
      return convert_from<__half>(a, dst, src);
    case kBF16:
      return convert_from<__nv_bfloat16>(a, dst, src);
    case kI64:
      return convert_from<int64_t>(a, dst, src);
    case kI32:
      return convert_from<int32_t>(a, dst, src);
    case kI16:
      return convert_from<int16_t>(a, dst, src);
    case kI8:
      return convert_from<int8_t>(a, dst, src);
    case kU8:
      return convert_from<uint8_t>(a, dst, src);
    case kBool:
      return convert_from<bool>(a, dst, src);
  }
  return fail(a, "unknown source dtype %d", int(src.dtype));
}

}  // namespace amber::cuda
