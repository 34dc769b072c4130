// CUDA kernels for elementwise ops: unary (every unary op of the instruction list,
// core/fused_ops.h, with its dtypes; clamp, hardtanh, pow.Scalar, gelu), binary (add, sub, mul, div, pow and their
// scalar forms, rsub.Scalar), comparisons, where, to (dtype conversion), clone, full, arange, and the generic kernel of
// `fused` nodes. f16 and bf16 elements are computed in f32 (compute_t) and rounded once, as the f32 kernel between
// conversions would (docs/OPS.md, "16-bit floats"). The formulas are the CPU kernels' own (kernels/arith.h,
// kernels/pointwise_math.h: host and device functions). Integer division by zero gives 0 here (the CPU reports an
// error; checking would need a device-to-host read per call).

#include <cstring>

#include "amber/core/fused_ops.h"
#include "amber/kernels/arith.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
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

// ---- Unary ----
template <typename T, typename Op>
struct UnaryF {
  Op op;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = cast_value<T>(op(load_as_compute(*reinterpret_cast<const T*>(p[1]))));
  }
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
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = cast_value<T>(
        op(load_as_compute(*reinterpret_cast<const T*>(p[1])), load_as_compute(*reinterpret_cast<const T*>(p[2]))));
  }
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
      for (int i = 0; i < Op::kAttrs; ++i) op.attr[i] = double(attr_scalar<compute_t<T>>(a, i));  // exactly
      return run_unary<T>(a, op, "unary kernel launch");
    }
  };
};
template <typename T>
struct GeluKernel {  // gelu(self, approximate)
  static int run(const amber_kernel_args* a) {
    return std::strcmp(a->attrs[op_attrs::gelu::approximate].str, "tanh") == 0
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
enum class DivMode : int { true_div, trunc, floor };

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

// Elements of T, the op on their compute type C.
template <typename T, typename C = compute_t<T>>
struct BinaryF {
  BinaryOp<C> op;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = cast_value<T>(
        op(load_as_compute(*reinterpret_cast<const T*>(p[1])), load_as_compute(*reinterpret_cast<const T*>(p[2]))));
  }
};
template <typename T, typename C = compute_t<T>>
struct ScalarF {  // the second operand is a number
  BinaryOp<C> op;
  C y;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<T*>(p[0]) = cast_value<T>(op(load_as_compute(*reinterpret_cast<const T*>(p[1])), y));
  }
};

DivMode div_mode(const amber_kernel_args* a, int i) {
  if (attr_none(a, i)) return DivMode::true_div;
  return std::strcmp(a->attrs[i].str, "floor") == 0 ? DivMode::floor : DivMode::trunc;
}

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
    return run_binary<T>(a, with_alpha(Bin::add, attr_scalar<compute_t<T>>(a, op_attrs::add::alpha)));
  }
};
template <typename T>
struct SubKernel {
  static int run(const amber_kernel_args* a) {
    return run_binary<T>(a, with_alpha(Bin::sub, attr_scalar<compute_t<T>>(a, op_attrs::sub::alpha)));
  }
};
template <typename T>
struct MulKernel {
  static int run(const amber_kernel_args* a) { return run_binary<T>(a, with_alpha(Bin::mul, compute_t<T>(1))); }
};
template <typename T>
struct DivKernel {
  static int run(const amber_kernel_args* a) {
    return run_binary<T>(a, BinaryOp<compute_t<T>>{Bin::div, 1, true, div_mode(a, op_attrs::div::rounding_mode)});
  }
};
template <typename T>
struct PowKernel {
  static int run(const amber_kernel_args* a) { return run_binary<T>(a, with_alpha(Bin::pow, compute_t<T>(1))); }
};
template <typename T>
struct AddScalarKernel {  // add.Scalar(self, other, alpha): self + alpha * other, the product made once
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, with_alpha(Bin::add, compute_t<T>(1)),
                         pw::wrap_mul(attr_scalar<compute_t<T>>(a, op_attrs::add_Scalar::alpha),
                                      attr_scalar<compute_t<T>>(a, op_attrs::add_Scalar::other)));
  }
};
template <typename T>
struct SubScalarKernel {
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, with_alpha(Bin::sub, compute_t<T>(1)),
                         pw::wrap_mul(attr_scalar<compute_t<T>>(a, op_attrs::sub_Scalar::alpha),
                                      attr_scalar<compute_t<T>>(a, op_attrs::sub_Scalar::other)));
  }
};
template <typename T>
struct RsubScalarKernel {  // rsub.Scalar(self, other, alpha): other - alpha * self
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, with_alpha(Bin::rsub, attr_scalar<compute_t<T>>(a, op_attrs::rsub_Scalar::alpha)),
                         attr_scalar<compute_t<T>>(a, op_attrs::rsub_Scalar::other));
  }
};
template <typename T>
struct MulScalarKernel {
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, with_alpha(Bin::mul, compute_t<T>(1)),
                         attr_scalar<compute_t<T>>(a, op_attrs::mul_Scalar::other));
  }
};
template <typename T>
struct DivScalarKernel {  // div.Scalar(self, other, rounding_mode)
  static int run(const amber_kernel_args* a) {
    return run_scalar<T>(a, BinaryOp<compute_t<T>>{Bin::div, 1, true, div_mode(a, op_attrs::div_Scalar::rounding_mode)},
                         attr_scalar<compute_t<T>>(a, op_attrs::div_Scalar::other));
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
    *reinterpret_cast<bool*>(p[0]) = compare(c, load_as_compute(*reinterpret_cast<const T*>(p[1])),
                                             load_as_compute(*reinterpret_cast<const T*>(p[2])));
  }
};
template <typename T>
struct CompareScalarF {
  Cmp c;
  compute_t<T> y;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<bool*>(p[0]) = compare(c, load_as_compute(*reinterpret_cast<const T*>(p[1])), y);
  }
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
      return map<2>(a, v, items, CompareScalarF<T>{C, attr_scalar<compute_t<T>>(a, op_attrs::eq_Scalar::other)},
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
    arange_kernel<T><<<grid_for(n), 256, 0, stream_of(a)>>>(static_cast<T*>(a->outputs[0].data), n, start.f, step.f,
                                                            start.i, step.i);
    return launched(a, "arange kernel launch");
  }
};

// ---- fused: the program travels by value in the kernel's parameters ----
// Each thread runs the program on kPerThread neighbouring elements (kWidePerThread for dense,
// aligned operands of one or two inputs), so an instruction is decoded (its operand kinds, the
// switch on its opcode; uniform across the warp: about 60 PTX instructions with the switch's
// compare tree) once per four or eight elements, with 16-byte loads and stores where every
// operand is dense and aligned. The previous result
// stays in registers; a result read again later is kept in one of kSlots slots (assigned on the
// host by liveness), which the compiler places in local memory; a program that needs more slots
// runs one element a thread with a slot per instruction.
constexpr int kMaxInstrs = 64;
constexpr int kMaxInputs = 8;
constexpr int kPerThread = 4;
// Dense, aligned operands of programs with at most kWideInputs inputs: eight elements a thread,
// two 16-byte loads an operand in flight, the program decoded once for all eight. The bandwidth
// line (relu(2x + 1), one input) ran at 63% of a copy on an H100 with four a thread and on an
// H200 with eight a thread decoded per four: twice the loads in flight changed nothing, so the
// decoding's instruction issue, not memory latency, is what held it (about 15 instructions an
// element an instruction at four); decoded once per eight: 77 registers, no spills, three blocks
// of 256 an SM (four at 64 registers spilled). Three or four inputs stay at four a thread (76-80
// registers at eight), their loads already three to four times one input's.
constexpr int kWidePerThread = 8;
constexpr int kWideInputs = 2;
constexpr int kSlots = 16;
constexpr uint8_t kOperandPrev = 3;  // beside AMBER_OPERAND_*: the previous instruction's result
constexpr uint8_t kNoSlot = 255;

struct Code {
  int32_t n_instrs = 0;
  struct Instr {
    uint8_t op, kind[3], index[3];  // index: an input, or a TEMP operand's slot
    uint8_t slot;                   // where the result is kept for a later read, or kNoSlot
    float imm[3];
  } instrs[kMaxInstrs];
};

// One instruction of the given arity on its operand values.
template <int Arity, typename F>
__device__ float apply(float x0, float x1, float x2, F f) {
  if constexpr (Arity == 1)
    return f(x0);
  else if constexpr (Arity == 2)
    return f(x0, x1);
  else
    return f(x0, x1, x2);
}

// The program on E elements: in[k][e] is input k of element e; the result is left in out.
template <int K, int E, int Slots>
__device__ void run_program(const Code& code, const float (&in)[K][E], float (&out)[E]) {
  float kept[Slots][E];
  float prev[E];
  for (int i = 0; i < code.n_instrs; ++i) {
    const Code::Instr& c = code.instrs[i];
    float x[3][E];
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const uint8_t kind = c.kind[j], index = c.index[j];
      if (kind == kOperandPrev) {
#pragma unroll
        for (int e = 0; e < E; ++e) x[j][e] = prev[e];
      } else if (kind == AMBER_OPERAND_INPUT) {
#pragma unroll
        for (int k = 0; k < K; ++k)  // a run-time index into in[] would put it in local memory
          if (index == k)
#pragma unroll
            for (int e = 0; e < E; ++e) x[j][e] = in[k][e];
      } else if (kind == AMBER_OPERAND_TEMP) {
#pragma unroll
        for (int e = 0; e < E; ++e) x[j][e] = kept[index][e];
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e) x[j][e] = c.imm[j];
      }
    }
    if (c.op == AMBER_FUSED_POW && c.kind[1] == AMBER_OPERAND_IMM) {
#pragma unroll
      for (int e = 0; e < E; ++e) prev[e] = pw::pow_scalar(x[0][e], x[1][e]);  // ATen's exact shortcuts
    } else {
      switch (c.op) {
#define AMBER_FUSED_CASE(OPCODE, name, arity, kind)                                            \
  case AMBER_FUSED_##OPCODE:                                                                   \
    _Pragma("unroll") for (int e = 0; e < E; ++e) prev[e] =                                    \
        apply<arity>(x[0][e], x[1][e], x[2][e], [](auto... v) { return pw::op::name(v...); }); \
    break;
        AMBER_FUSED_OPS(AMBER_FUSED_CASE)
#undef AMBER_FUSED_CASE
        default:
#pragma unroll
          for (int e = 0; e < E; ++e) prev[e] = 0;
          break;
      }
    }
    if (c.slot != kNoSlot)
#pragma unroll
      for (int e = 0; e < E; ++e) kept[c.slot][e] = prev[e];
  }
#pragma unroll
  for (int e = 0; e < E; ++e) out[e] = prev[e];
}

// Every operand's byte offset of element i (elements of `item` bytes), in one walk over the dims.
template <int N>
__device__ void offsets_of(const Operands<N>& o, int64_t i, int64_t (&off)[N], int64_t item) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = o.dense ? i * item : 0;
  if (o.dense) return;
  for (int d = o.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % o.sizes[d];
    i /= o.sizes[d];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += idx * o.bytes[k][d];
  }
}

// Elements as the program sees them: S is the operands' storage (float, or __nv_bfloat16 /
// __half for a model in 16 bits, docs/OPS.md "16-bit floats"), widened on load and rounded to
// nearest even on store; the program runs in f32 either way.
template <typename S>
__device__ inline float load_elem(const char* p) {
  return load_as_compute(*reinterpret_cast<const S*>(p));  // cuda_util.cuh: f32 for all three
}
template <typename S>
__device__ inline void store_elem(char* p, float v) {
  *reinterpret_cast<S*>(p) = cast_value<S>(v);
}
// A 16-bit element from its bits, and the bits of an f32 rounded to it.
template <typename S>
__device__ inline float from_bits(uint32_t b) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __uint_as_float(b << 16);
  else
    return __half2float(__ushort_as_half(uint16_t(b)));
}
template <typename S>
__device__ inline uint32_t to_bits(float v) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  else
    return __half_as_ushort(__float2half_rn(v));
}
// Four elements starting at p (16 bytes of f32 or 8 of 16-bit values, aligned so), widened; and
// four stored.
template <typename S>
__device__ inline void load4(const char* p, float* v) {
  if constexpr (std::is_same_v<S, float>) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    const uint2 x = *reinterpret_cast<const uint2*>(p);
    v[0] = from_bits<S>(x.x & 0xffffu), v[1] = from_bits<S>(x.x >> 16);
    v[2] = from_bits<S>(x.y & 0xffffu), v[3] = from_bits<S>(x.y >> 16);
  }
}
template <typename S>
__device__ inline void store4(char* p, const float* v) {
  if constexpr (std::is_same_v<S, float>)
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else
    *reinterpret_cast<uint2*>(p) =
        make_uint2(to_bits<S>(v[0]) | to_bits<S>(v[1]) << 16, to_bits<S>(v[2]) | to_bits<S>(v[3]) << 16);
}

// Vec: every operand dense and 16-byte aligned (E a multiple of 4): 16-byte loads and stores
// (8-byte ones of four 16-bit values), the last partial group element by element at dense
// offsets; else each element's offsets from the dims. The two are separate kernels so that
// neither carries the other's registers. Registers bounded so that four blocks of 256 fit on an
// SM (three from three inputs up, and at eight a thread, where four would spill), keeping enough
// loads in flight.
template <int K, int E, bool Vec>
constexpr int fused_blocks_per_sm() {
  return (Vec && E > 4) || K > 2 ? 3 : 4;
}
template <typename S, int K, int E, int Slots, bool Vec>
__global__ void __launch_bounds__(256, fused_blocks_per_sm<K, E, Vec>())
    fused_map_kernel(int64_t n, Operands<K + 1> o, Code code) {
  static_assert(!Vec || E % 4 == 0);
  constexpr int64_t kItem = sizeof(S);
  const int64_t step = int64_t(gridDim.x) * blockDim.x * E;
  for (int64_t base = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * E; base < n; base += step) {
    float in[K][E], out[E];
    if constexpr (Vec) {
      const bool whole = base + E <= n;
      if (whole) {  // every load of every operand issued before the program runs
#pragma unroll
        for (int k = 0; k < K; ++k)
#pragma unroll
          for (int q = 0; q < E; q += 4) load4<S>(o.ptr[k + 1] + (base + q) * kItem, &in[k][q]);
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const int64_t i = base + e < n ? base + e : base;  // past the end: an element in range, not stored
#pragma unroll
          for (int k = 0; k < K; ++k) in[k][e] = load_elem<S>(o.ptr[k + 1] + i * kItem);
        }
      }
      run_program<K, E, Slots>(code, in, out);  // each instruction decoded once for the E elements
      if (whole) {
#pragma unroll
        for (int q = 0; q < E; q += 4) store4<S>(o.ptr[0] + (base + q) * kItem, &out[q]);
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e)
          if (base + e < n) store_elem<S>(o.ptr[0] + (base + e) * kItem, out[e]);
      }
    } else {
      int64_t out_off[E];
#pragma unroll
      for (int e = 0; e < E; ++e) {
        int64_t off[K + 1];
        offsets_of(o, base + e < n ? base + e : 0, off, kItem);  // past the end: element 0, not stored
        out_off[e] = off[0];
#pragma unroll
        for (int k = 0; k < K; ++k) in[k][e] = load_elem<S>(o.ptr[k + 1] + off[k + 1]);
      }
      run_program<K, E, Slots>(code, in, out);
#pragma unroll
      for (int e = 0; e < E; ++e)
        if (base + e < n) store_elem<S>(o.ptr[0] + out_off[e], out[e]);
    }
  }
}

template <typename S, int K>
int run_fused(const amber_kernel_args* a, const Code& code, bool few_slots) {
  const amber_tensor_view* v[K + 1];
  int64_t items[K + 1];
  v[0] = &a->outputs[0];
  items[0] = sizeof(S);
  for (int k = 0; k < K; ++k) {
    v[k + 1] = &a->inputs[k];
    items[k + 1] = sizeof(S);
  }
  const int64_t n = numel(a->outputs[0]);
  if (n == 0) return 0;
  DeviceScope scope(a->device);
  Operands<K + 1> o = operands<K + 1>(v, items);
  simplify(o);
  bool vec = o.dense;
  for (int k = 0; k <= K; ++k) vec = vec && reinterpret_cast<uintptr_t>(o.ptr[k]) % 16 == 0;
  constexpr int kVecPerThread = K <= kWideInputs ? kWidePerThread : kPerThread;
  if (few_slots && vec)
    fused_map_kernel<S, K, kVecPerThread, kSlots, true>
        <<<grid_for((n + kVecPerThread - 1) / kVecPerThread), 256, 0, stream_of(a)>>>(n, o, code);
  else if (few_slots)
    fused_map_kernel<S, K, kPerThread, kSlots, false>
        <<<grid_for((n + kPerThread - 1) / kPerThread), 256, 0, stream_of(a)>>>(n, o, code);
  else
    fused_map_kernel<S, K, 1, kMaxInstrs, false><<<grid_for(n), 256, 0, stream_of(a)>>>(n, o, code);
  return launched(a, "fused kernel launch");
}

// Rewrites the program's TEMP operands: the previous instruction's result is read from registers
// (kOperandPrev); a result read later than that is kept in a slot, reused after its last read.
// Returns the number of slots needed; with slot_per_instr each result keeps its own.
int assign_slots(Code& code, bool slot_per_instr) {
  int last_read[kMaxInstrs];
  for (int i = 0; i < code.n_instrs; ++i) last_read[i] = -1;
  for (int i = 0; i < code.n_instrs; ++i)
    for (int j = 0; j < 3; ++j) {
      Code::Instr& c = code.instrs[i];
      if (c.kind[j] != AMBER_OPERAND_TEMP) continue;
      if (c.index[j] == i - 1)
        c.kind[j] = kOperandPrev;
      else if (last_read[c.index[j]] < i)
        last_read[c.index[j]] = i;
    }
  int slot_of[kMaxInstrs];
  bool busy[kMaxInstrs] = {};
  int needed = 0;
  for (int i = 0; i < code.n_instrs; ++i) {
    Code::Instr& c = code.instrs[i];
    for (int j = 0; j < 3; ++j)
      if (c.kind[j] == AMBER_OPERAND_TEMP) c.index[j] = uint8_t(slot_of[c.index[j]]);
    if (!slot_per_instr)  // free the slots whose last read is this instruction (read before the write)
      for (int r = 0; r < i; ++r)
        if (last_read[r] == i) busy[slot_of[r]] = false;
    c.slot = kNoSlot;
    slot_of[i] = -1;
    if (last_read[i] < 0) continue;
    int s = slot_per_instr ? i : 0;
    while (busy[s]) ++s;
    busy[s] = true;
    slot_of[i] = s;
    c.slot = uint8_t(s);
    if (s + 1 > needed) needed = s + 1;
  }
  return needed;
}

// S: the storage of every operand (the op table's inference gives a fused node one dtype).
template <typename S>
int fused_kernel(const amber_kernel_args* a) {
  const amber_fused_program* p = a->program;
  if (!p || p->n_instrs < 1 || p->n_instrs > kMaxInstrs || p->n_inputs != a->n_inputs || a->n_inputs > kMaxInputs)
    return fail(a, "fused: the call carries no valid program for its %d inputs", a->n_inputs);
  Code code;
  code.n_instrs = p->n_instrs;
  for (int i = 0; i < p->n_instrs; ++i) {
    const amber_fused_instr& in = p->instrs[i];
    Code::Instr& c = code.instrs[i];
    c.op = uint8_t(in.op);
    const amber_fused_operand* ops[3] = {&in.a, &in.b, &in.c};
    for (int j = 0; j < 3; ++j) {
      const bool used = j < in.arity;
      const int32_t kind = used ? ops[j]->kind : AMBER_OPERAND_IMM;
      const int32_t index = used ? ops[j]->index : 0;
      if (kind == AMBER_OPERAND_INPUT && (index < 0 || index >= a->n_inputs))
        return fail(a, "fused: instruction %d reads input %d of %d", i, index, a->n_inputs);
      if (kind == AMBER_OPERAND_TEMP && (index < 0 || index >= i))
        return fail(a, "fused: instruction %d reads result %d before it exists", i, index);
      if (kind != AMBER_OPERAND_INPUT && kind != AMBER_OPERAND_TEMP && kind != AMBER_OPERAND_IMM)
        return fail(a, "fused: instruction %d has an operand of kind %d", i, kind);
      c.kind[j] = uint8_t(kind);
      c.index[j] = uint8_t(index);
      c.imm[j] = used ? ops[j]->imm : 0.0f;
    }
  }
  Code per_instr = code;
  const bool few_slots = assign_slots(code, false) <= kSlots;
  if (!few_slots) {
    assign_slots(per_instr, true);
    code = per_instr;
  }
  switch (a->n_inputs) {
    case 1:
      return run_fused<S, 1>(a, code, few_slots);
    case 2:
      return run_fused<S, 2>(a, code, few_slots);
    case 3:
      return run_fused<S, 3>(a, code, few_slots);
    case 4:
      return run_fused<S, 4>(a, code, few_slots);
    case 5:
      return run_fused<S, 5>(a, code, few_slots);
    case 6:
      return run_fused<S, 6>(a, code, few_slots);
    case 7:
      return run_fused<S, 7>(a, code, few_slots);
    case 8:
      return run_fused<S, 8>(a, code, few_slots);
  }
  return fail(a, "fused: %d inputs (at most %d)", a->n_inputs, kMaxInputs);
}

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
  register_kernel("fused", kF32, &fused_kernel<float>);
  register_kernel("fused", kBF16, &fused_kernel<__nv_bfloat16>);
  register_kernel("fused", kF16, &fused_kernel<__half>);
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
