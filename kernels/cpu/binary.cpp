// CPU kernels for binary arithmetic: add, sub, mul, div, pow and the two-tensor ops of the
// instruction list (maximum, minimum) on two tensors, and the tensor-with-scalar forms
// (add.Scalar, sub.Scalar, rsub.Scalar, mul.Scalar, div.Scalar).
// Integer overflow wraps (as PyTorch) without undefined behaviour; integer division by
// zero is an error; float division follows ATen's trunc/floor rounding exactly.

#include <atomic>
#include <cmath>
#include <type_traits>

#include "amber/core/fused_ops.h"
#include "amber/kernels/arith.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/vec_math.h"
#include "amber/kernels/div_mode.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

using namespace pw;  // the shared formulas (kernels/arith.h, kernels/pointwise_math.h)

template <typename T>
struct ArithCtx {
  T alpha{};   // add/sub: multiplier of the second operand
  T scalar{};  // scalar forms: the number operand (already multiplied by alpha where used)
  DivMode mode = DivMode::true_div;
  std::atomic<bool>* div_by_zero = nullptr;
};

// ---- Elementwise operations on values ----
template <typename T>
inline T div_value(T a, T b, const ArithCtx<T>& c) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (c.mode) {
      case DivMode::true_div:
        return a / b;
      case DivMode::trunc:
        return std::trunc(a / b);
      case DivMode::floor:
        return div_floor_float(a, b);
    }
    return a / b;
  } else {
    if (b == 0) {
      c.div_by_zero->store(true, std::memory_order_relaxed);
      return 0;
    }
    return c.mode == DivMode::floor ? div_floor_int(a, b) : div_trunc_int(a, b);
  }
}

struct AddOp {
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>& c) {
    return wrap_add(a, wrap_mul(c.alpha, b));
  }
};
struct AddOneOp {  // alpha == 1: no multiply (keeps float results identical to a + b)
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>&) {
    return wrap_add(a, b);
  }
};
struct SubOp {
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>& c) {
    return wrap_sub(a, wrap_mul(c.alpha, b));
  }
};
struct SubOneOp {
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>&) {
    return wrap_sub(a, b);
  }
};
struct MulOp {
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>&) {
    return wrap_mul(a, b);
  }
};
struct DivOp {
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>& c) {
    return div_value(a, b, c);
  }
};

struct PowOp {
  template <typename T>
  static T apply(T a, T b, const ArithCtx<T>&) {
    if constexpr (std::is_floating_point_v<T>)
      return std::pow(a, b);
    else
      return int_pow(a, b);
  }
};

// Scalar forms: b is the context's scalar.
struct AddScalarOp {
  template <typename T>
  static T apply(T a, const ArithCtx<T>& c) {
    return wrap_add(a, c.scalar);
  }
};
struct SubScalarOp {
  template <typename T>
  static T apply(T a, const ArithCtx<T>& c) {
    return wrap_sub(a, c.scalar);
  }
};
struct RsubScalarOp {  // other - alpha * self
  template <typename T>
  static T apply(T a, const ArithCtx<T>& c) {
    return wrap_sub(c.scalar, wrap_mul(c.alpha, a));
  }
};
struct MulScalarOp {
  template <typename T>
  static T apply(T a, const ArithCtx<T>& c) {
    return wrap_mul(a, c.scalar);
  }
};
struct DivScalarOp {
  template <typename T>
  static T apply(T a, const ArithCtx<T>& c) {
    return div_value(a, c.scalar, c);
  }
};

// The two-tensor ops of the instruction list (core/fused_ops.h): BinaryList_NAME.
#define AMBER_BINARY_OP(OPCODE, name, arity, kind) \
  struct BinaryList_##name {                       \
    template <typename T>                          \
    static T apply(T a, T b, const ArithCtx<T>&) { \
      if constexpr (arity == 2)                    \
        return pw::op::name(a, b);                 \
      else                                         \
        return a;                                  \
    }                                              \
  };
AMBER_FUSED_OPS(AMBER_BINARY_OP)
#undef AMBER_BINARY_OP

// ---- Inner loops ----
template <typename T, typename Op>
struct BinaryInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* vc) {
    const auto& c = *static_cast<const ArithCtx<T>*>(vc);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    constexpr int64_t e = sizeof(T);
    if (s[0] == e && s[1] == e && s[2] == e) {
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], b[i], c);
    } else if (s[0] == e && s[1] == 0 && s[2] == e) {
      const T av = *a;
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(av, b[i], c);
    } else if (s[0] == e && s[1] == e && s[2] == 0) {
      const T bv = *b;
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], bv, c);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            Op::apply(*reinterpret_cast<const T*>(p[1] + i * s[1]), *reinterpret_cast<const T*>(p[2] + i * s[2]), c);
    }
  }
};

template <typename T, typename Op>
struct ScalarInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* vc) {
    const auto& c = *static_cast<const ArithCtx<T>*>(vc);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    constexpr int64_t e = sizeof(T);
    if (s[0] == e && s[1] == e) {
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], c);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = Op::apply(*reinterpret_cast<const T*>(p[1] + i * s[1]), c);
    }
  }
};

template <typename T, typename Op>
int run_binary(const amber_kernel_args* a, const ArithCtx<T>& c) {
  ElementwiseIter<3> it({&a->outputs[0], &a->inputs[0], &a->inputs[1]}, {sizeof(T), sizeof(T), sizeof(T)});
  static const InnerFn inner = IsaVariants<BinaryInner<T, Op>>::pick();
  it.run(inner, &c, a->num_threads, kGrainCheap);
  return 0;
}

template <typename T, typename Op>
int run_scalar(const amber_kernel_args* a, const ArithCtx<T>& c) {
  ElementwiseIter<2> it({&a->outputs[0], &a->inputs[0]}, {sizeof(T), sizeof(T)});
  static const InnerFn inner = IsaVariants<ScalarInner<T, Op>>::pick();
  it.run(inner, &c, a->num_threads, kGrainCheap);
  return 0;
}

// ---- Kernel entry points (attributes in op-table order) ----
template <typename T>
struct AddKernel {  // add(self, other, alpha)
  static int run(const amber_kernel_args* a) {
    ArithCtx<T> c;
    c.alpha = attr_scalar<T>(a, op_attrs::add::alpha);
    return c.alpha == T(1) ? run_binary<T, AddOneOp>(a, c) : run_binary<T, AddOp>(a, c);
  }
};
template <typename T>
struct SubKernel {  // sub(self, other, alpha)
  static int run(const amber_kernel_args* a) {
    ArithCtx<T> c;
    c.alpha = attr_scalar<T>(a, op_attrs::sub::alpha);
    return c.alpha == T(1) ? run_binary<T, SubOneOp>(a, c) : run_binary<T, SubOp>(a, c);
  }
};
template <typename T>
struct MulKernel {
  static int run(const amber_kernel_args* a) { return run_binary<T, MulOp>(a, ArithCtx<T>{}); }
};
template <typename T>
struct DivKernel {  // div(self, other, rounding_mode)
  static int run(const amber_kernel_args* a) {
    std::atomic<bool> zero{false};
    ArithCtx<T> c;
    c.mode = div_mode_of(a->attrs[op_attrs::div::rounding_mode]);
    c.div_by_zero = &zero;
    run_binary<T, DivOp>(a, c);
    return zero ? fail(a, "integer division by zero") : 0;
  }
};
template <typename Op>
struct ListBinary {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) { return run_binary<T, Op>(a, ArithCtx<T>{}); }
  };
};
template <typename T>
struct PowKernel {
  static int run(const amber_kernel_args* a) { return run_binary<T, PowOp>(a, ArithCtx<T>{}); }
};
template <typename T>
struct AddScalarKernel {  // add.Scalar(self, other, alpha)
  static int run(const amber_kernel_args* a) {
    ArithCtx<T> c;
    c.scalar = wrap_mul(attr_scalar<T>(a, op_attrs::add_Scalar::alpha), attr_scalar<T>(a, op_attrs::add_Scalar::other));
    return run_scalar<T, AddScalarOp>(a, c);
  }
};
template <typename T>
struct SubScalarKernel {  // sub.Scalar(self, other, alpha)
  static int run(const amber_kernel_args* a) {
    ArithCtx<T> c;
    c.scalar = wrap_mul(attr_scalar<T>(a, op_attrs::sub_Scalar::alpha), attr_scalar<T>(a, op_attrs::sub_Scalar::other));
    return run_scalar<T, SubScalarOp>(a, c);
  }
};
template <typename T>
struct RsubScalarKernel {  // rsub.Scalar(self, other, alpha)
  static int run(const amber_kernel_args* a) {
    ArithCtx<T> c;
    c.scalar = attr_scalar<T>(a, op_attrs::rsub_Scalar::other);
    c.alpha = attr_scalar<T>(a, op_attrs::rsub_Scalar::alpha);
    return run_scalar<T, RsubScalarOp>(a, c);
  }
};
template <typename T>
struct MulScalarKernel {  // mul.Scalar(self, other)
  static int run(const amber_kernel_args* a) {
    ArithCtx<T> c;
    c.scalar = attr_scalar<T>(a, op_attrs::mul_Scalar::other);
    return run_scalar<T, MulScalarOp>(a, c);
  }
};
template <typename T>
struct DivScalarKernel {  // div.Scalar(self, other, rounding_mode)
  static int run(const amber_kernel_args* a) {
    std::atomic<bool> zero{false};
    ArithCtx<T> c;
    c.scalar = attr_scalar<T>(a, op_attrs::div_Scalar::other);
    c.mode = div_mode_of(a->attrs[op_attrs::div_Scalar::rounding_mode]);
    c.div_by_zero = &zero;
    run_scalar<T, DivScalarOp>(a, c);
    return zero ? fail(a, "integer division by zero") : 0;
  }
};

#define AMBER_BINARY_none(name)
#define AMBER_BINARY_numeric(name)
#define AMBER_BINARY_floating(name)
#define AMBER_BINARY_floating_cheap(name)
#define AMBER_BINARY_floating_attrs(name)
#define AMBER_BINARY_binary(name) register_typed<ListBinary<BinaryList_##name>::Kernel>(ctypes::numeric{}, #name);
#define AMBER_BINARY(OPCODE, name, arity, kind) AMBER_BINARY_##kind(name)

AMBER_CPU_KERNELS(binary) {
  AMBER_FUSED_OPS(AMBER_BINARY)
  register_typed<AddKernel>(ctypes::numeric{}, "add");
  register_typed<SubKernel>(ctypes::numeric{}, "sub");
  register_typed<MulKernel>(ctypes::numeric{}, "mul");
  register_typed<DivKernel>(ctypes::numeric{}, "div");
  register_typed<PowKernel>(ctypes::numeric{}, "pow");
  register_typed<AddScalarKernel>(ctypes::numeric{}, "add.Scalar");
  register_typed<SubScalarKernel>(ctypes::numeric{}, "sub.Scalar");
  register_typed<RsubScalarKernel>(ctypes::numeric{}, "rsub.Scalar");
  register_typed<MulScalarKernel>(ctypes::numeric{}, "mul.Scalar");
  register_typed<DivScalarKernel>(ctypes::numeric{}, "div.Scalar");
}

}  // namespace
}  // namespace amber::cpu
