// CPU kernels for unary elementwise ops: neg, abs, relu, clamp, hardtanh, pow.Scalar (every
// numeric dtype) and exp, log, sqrt, rsqrt, tanh, sigmoid, reciprocal, gelu, silu (f32,
// f64). Formulas are ATen's, so results agree with PyTorch to the last bits where the
// math library agrees.

#include <cmath>
#include <cstring>
#include <type_traits>

#include "amber/kernels/arith.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/vec_math.h"
#include "amber/kernels/pointwise_math.h"

namespace amber::cpu {
namespace {

using namespace pw;  // the shared formulas (kernels/arith.h, kernels/pointwise_math.h)

template <typename T>
struct UnaryCtx {
  T lo{}, hi{};
  bool has_lo = false, has_hi = false;
  T exponent{};
};

struct NegOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return wrap_neg(a);
  }
};
struct AbsOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    if constexpr (std::is_floating_point_v<T>)
      return std::fabs(a);
    else if constexpr (std::is_signed_v<T>)
      return a < 0 ? wrap_neg(a) : a;
    else
      return a;
  }
};
struct ReluOp {  // NaN stays NaN and -0.0 stays -0.0, as ATen's clamp_min(0)
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return pw::relu(a);
  }
};
struct ClampOp {  // std::min(std::max(a, lo), hi) as ATen: NaN propagates; lo > hi gives hi
  template <typename T>
  static T apply(T a, const UnaryCtx<T>& c) {
    T r = a;
    if (c.has_lo) r = r < c.lo ? c.lo : r;
    if (c.has_hi) r = c.hi < r ? c.hi : r;
    return r;
  }
};
struct ExpOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return vexp(a);
  }
};
struct LogOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return vlog(a);
  }
};
struct SqrtOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return std::sqrt(a);
  }
};
struct RsqrtOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return pw::rsqrt(a);
  }
};
struct TanhOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return vtanh(a);
  }
};
struct SigmoidOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return pw::sigmoid(a);
  }
};
struct SiluOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return pw::silu(a);
  }
};
struct ReciprocalOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return T(1) / a;
  }
};
struct GeluOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return pw::gelu(a);
  }
};
struct GeluTanhOp {
  template <typename T>
  static T apply(T a, const UnaryCtx<T>&) {
    return pw::gelu_tanh(a);
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

template <typename T>
struct GeluKernel {  // gelu(self, approximate)
  static int run(const amber_kernel_args* a) {
    const bool tanh_approx = std::strcmp(a->attrs[0].str, "tanh") == 0;
    return tanh_approx ? run_unary<T, GeluTanhOp>(a, {}, kGrainMath) : run_unary<T, GeluOp>(a, {}, kGrainMath);
  }
};

template <typename T>
struct ClampKernel {  // clamp(self, min, max)
  static int run(const amber_kernel_args* a) {
    UnaryCtx<T> c;
    c.has_lo = !attr_none(a, 0);
    c.has_hi = !attr_none(a, 1);
    if (c.has_lo) c.lo = attr_scalar<T>(a, 0);
    if (c.has_hi) c.hi = attr_scalar<T>(a, 1);
    return run_unary<T, ClampOp>(a, c, kGrainCheap);
  }
};
template <typename T>
struct HardtanhKernel {  // hardtanh(self, min_val, max_val)
  static int run(const amber_kernel_args* a) {
    UnaryCtx<T> c;
    c.has_lo = c.has_hi = true;
    c.lo = attr_scalar<T>(a, 0);
    c.hi = attr_scalar<T>(a, 1);
    return run_unary<T, ClampOp>(a, c, kGrainCheap);
  }
};

// pow.Scalar(self, exponent): ATen's shortcuts for common exponents, exactly.
template <typename T>
struct PowScalarKernel {
  static int run(const amber_kernel_args* a) {
    UnaryCtx<T> c;
    c.exponent = attr_scalar<T>(a, 0);
    const double e = attr_float(a, 0);
    if constexpr (std::is_floating_point_v<T>) {
      if (e == 0.5) return run_unary<T, SqrtOp>(a, c, kGrainMath);
      if (e == -0.5) return run_unary<T, RsqrtOp>(a, c, kGrainMath);
      if (e == -1.0) return run_unary<T, ReciprocalOp>(a, c, kGrainCheap);
      if (e == -2.0) return run_unary<T, InvSquareOp>(a, c, kGrainCheap);
    }
    if (e == 2.0) return run_unary<T, SquareOp>(a, c, kGrainCheap);
    if (e == 3.0) return run_unary<T, CubeOp>(a, c, kGrainCheap);
    return run_unary<T, PowOp>(a, c, kGrainMath);
  }
};

#define AMBER_NUMERIC_TYPES float, double, int64_t, int32_t, int16_t, int8_t, uint8_t

AMBER_CPU_KERNELS(unary) {
  register_typed<Unary<NegOp, kGrainCheap>::Kernel, AMBER_NUMERIC_TYPES>("neg");
  register_typed<Unary<AbsOp, kGrainCheap>::Kernel, AMBER_NUMERIC_TYPES>("abs");
  register_typed<Unary<ReluOp, kGrainCheap>::Kernel, AMBER_NUMERIC_TYPES>("relu");
  register_typed<ClampKernel, AMBER_NUMERIC_TYPES>("clamp");
  register_typed<HardtanhKernel, AMBER_NUMERIC_TYPES>("hardtanh");
  register_typed<PowScalarKernel, AMBER_NUMERIC_TYPES>("pow.Scalar");
  register_typed<Unary<ExpOp, kGrainMath>::Kernel, float, double>("exp");
  register_typed<Unary<LogOp, kGrainMath>::Kernel, float, double>("log");
  register_typed<Unary<SqrtOp, kGrainMath>::Kernel, float, double>("sqrt");
  register_typed<Unary<RsqrtOp, kGrainMath>::Kernel, float, double>("rsqrt");
  register_typed<Unary<TanhOp, kGrainMath>::Kernel, float, double>("tanh");
  register_typed<Unary<SigmoidOp, kGrainMath>::Kernel, float, double>("sigmoid");
  register_typed<Unary<SiluOp, kGrainMath>::Kernel, float, double>("silu");
  register_typed<Unary<ReciprocalOp, kGrainCheap>::Kernel, float, double>("reciprocal");
  register_typed<GeluKernel, float, double>("gelu");
}

}  // namespace
}  // namespace amber::cpu
