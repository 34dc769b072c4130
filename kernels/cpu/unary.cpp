// CPU kernels for unary elementwise ops: every unary op of the instruction list
// (core/fused_ops.h: neg, abs, relu, sign over every numeric dtype; exp, log, sigmoid, ...
// over f32 and f64), clamp, hardtanh, pow.Scalar and gelu. Formulas are ATen's
// (kernels/pointwise_math.h), so results agree with PyTorch where the math library agrees.

#include <cmath>
#include <type_traits>

#include "amber/core/fused_ops.h"
#include "amber/kernels/arith.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/vec_math.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cpu {

// The Scalar attribute count of a list op (floating_attrs ops); outside the anonymous
// namespace, where clang would flag the unused count of the ops without any.
template <int Arity>
struct FormulaAttrs {
  static constexpr int kAttrs = Arity - 1;
};

namespace {

using namespace pw;  // the shared formulas (kernels/arith.h, kernels/pointwise_math.h)

template <typename T>
struct UnaryCtx {
  T lo{}, hi{};
  bool has_lo = false, has_hi = false;
  T exponent{};
  T attr[2]{};  // an instruction's Scalar attributes (floating_attrs ops)
};

// Instruction NAME of the list (core/fused_ops.h) as a unary op: Formula_NAME.
#define AMBER_FORMULA(OPCODE, name, arity, kind)      \
  struct Formula_##name : FormulaAttrs<arity> {       \
    template <typename T>                             \
    static T apply(T a, const UnaryCtx<T>& c) {       \
      if constexpr (arity == 1)                       \
        return pw::op::name(a);                       \
      else if constexpr (arity == 2)                  \
        return pw::op::name(a, c.attr[0]);            \
      else                                            \
        return pw::op::name(a, c.attr[0], c.attr[1]); \
    }                                                 \
  };
AMBER_FUSED_OPS(AMBER_FORMULA)
#undef AMBER_FORMULA

struct ClampOp {  // std::min(std::max(a, lo), hi) as ATen: NaN propagates; lo > hi gives hi
  template <typename T>
  static T apply(T a, const UnaryCtx<T>& c) {
    T r = a;
    if (c.has_lo) r = r < c.lo ? c.lo : r;
    if (c.has_hi) r = c.hi < r ? c.hi : r;
    return r;
  }
};

struct PowOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>& c) {
    if constexpr (std::is_floating_point_v<T>)
      return std::pow(a, c.exponent);
    else
      return int_pow(a, c.exponent);
  }
};
struct SquareOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return wrap_mul(a, a);
  }
};
struct CubeOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return wrap_mul(wrap_mul(a, a), a);
  }
};
struct InvSquareOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return T(1) / (a * a);
  }
};

template <typename T, typename Op>
struct UnaryInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* vc) {
    const auto& c = *static_cast<const UnaryCtx<T>*>(vc);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], c);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = Op::apply(*reinterpret_cast<const T*>(p[1] + i * s[1]), c);
    }
  }
};

template <typename T, typename Op>
int run_unary(const amber_kernel_args* a, const UnaryCtx<T>& c, int64_t grain) {
  ElementwiseIter<2> it({&a->outputs[0], &a->inputs[0]}, {sizeof(T), sizeof(T)});
  static const InnerFn inner = IsaVariants<UnaryInner<T, Op>>::pick();
  it.run(inner, &c, a->num_threads, grain);
  return 0;
}

template <typename Op, int64_t Grain>
struct Unary {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) { return run_unary<T, Op>(a, UnaryCtx<T>{}, Grain); }
  };
};
// A list op whose Scalar attributes are its instruction's further operands.
template <typename Op, int64_t Grain>
struct UnaryAttrs {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      UnaryCtx<T> c;
      for (int i = 0; i < Op::kAttrs; ++i) c.attr[i] = attr_scalar<T>(a, i);
      return run_unary<T, Op>(a, c, Grain);
    }
  };
};

template <typename T>
struct GeluKernel {  // gelu(self, approximate)
  static int run(const amber_kernel_args* a) {
    const bool tanh_approx = a->attrs[op_attrs::gelu::approximate].i == op_attrs::gelu::approximate_is::tanh;
    return tanh_approx ? run_unary<T, Formula_gelu_tanh>(a, {}, kGrainMath)
                       : run_unary<T, Formula_gelu>(a, {}, kGrainMath);
  }
};

template <typename T>
struct ClampKernel {  // clamp(self, min, max)
  static int run(const amber_kernel_args* a) {
    UnaryCtx<T> c;
    c.has_lo = !attr_none(a, op_attrs::clamp::min);
    c.has_hi = !attr_none(a, op_attrs::clamp::max);
    if (c.has_lo) c.lo = attr_scalar<T>(a, op_attrs::clamp::min);
    if (c.has_hi) c.hi = attr_scalar<T>(a, op_attrs::clamp::max);
    return run_unary<T, ClampOp>(a, c, kGrainCheap);
  }
};
template <typename T>
struct HardtanhKernel {  // hardtanh(self, min_val, max_val)
  static int run(const amber_kernel_args* a) {
    UnaryCtx<T> c;
    c.has_lo = c.has_hi = true;
    c.lo = attr_scalar<T>(a, op_attrs::hardtanh::min_val);
    c.hi = attr_scalar<T>(a, op_attrs::hardtanh::max_val);
    return run_unary<T, ClampOp>(a, c, kGrainCheap);
  }
};

// pow.Scalar(self, exponent): ATen's shortcuts for common exponents, exactly.
template <typename T>
struct PowScalarKernel {
  static int run(const amber_kernel_args* a) {
    UnaryCtx<T> c;
    c.exponent = attr_scalar<T>(a, op_attrs::pow_Scalar::exponent);
    const double e = attr_float(a, op_attrs::pow_Scalar::exponent);
    if constexpr (std::is_floating_point_v<T>) {
      if (e == 0.5) return run_unary<T, Formula_sqrt>(a, c, kGrainMath);
      if (e == -0.5) return run_unary<T, Formula_rsqrt>(a, c, kGrainMath);
      if (e == -1.0) return run_unary<T, Formula_reciprocal>(a, c, kGrainCheap);
      if (e == -2.0) return run_unary<T, InvSquareOp>(a, c, kGrainCheap);
    }
    if (e == 2.0) return run_unary<T, SquareOp>(a, c, kGrainCheap);
    if (e == 3.0) return run_unary<T, CubeOp>(a, c, kGrainCheap);
    return run_unary<T, PowOp>(a, c, kGrainMath);
  }
};

// The unary ops of the instruction list (core/fused_ops.h), by kind.
#define AMBER_UNARY_none(name)
#define AMBER_UNARY_numeric(name) register_typed<Unary<Formula_##name, kGrainCheap>::Kernel>(ctypes::numeric{}, #name);
#define AMBER_UNARY_floating(name) register_typed<Unary<Formula_##name, kGrainMath>::Kernel>(ctypes::floating{}, #name);
#define AMBER_UNARY_floating_cheap(name) \
  register_typed<Unary<Formula_##name, kGrainCheap>::Kernel>(ctypes::floating{}, #name);
#define AMBER_UNARY_floating_attrs(name) \
  register_typed<UnaryAttrs<Formula_##name, kGrainMath>::Kernel>(ctypes::floating{}, #name);
#define AMBER_UNARY_binary(name)  // kernels/cpu/binary.cpp
#define AMBER_UNARY(OPCODE, name, arity, kind) AMBER_UNARY_##kind(name)

AMBER_CPU_KERNELS(unary) {
  AMBER_FUSED_OPS(AMBER_UNARY)
  register_typed<ClampKernel>(ctypes::numeric{}, "clamp");
  register_typed<HardtanhKernel>(ctypes::numeric{}, "hardtanh");
  register_typed<PowScalarKernel>(ctypes::numeric{}, "pow.Scalar");
  register_typed<GeluKernel>(ctypes::floating{}, "gelu");
}

}  // namespace
}  // namespace amber::cpu
