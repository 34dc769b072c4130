// CPU kernels for unary elementwise ops: neg, relu (every numeric dtype) and the float
// math ops exp, tanh, reciprocal (f32, f64).

#include <cmath>

#include "amber/kernels/cpu/arith.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"

namespace amber::cpu {
namespace {

struct NegOp {
  template <typename T>
  static T apply(T a) {
    return wrap_neg(a);
  }
};
struct ReluOp {  // NaN stays NaN and -0.0 stays -0.0, as ATen's clamp_min(0)
  template <typename T>
  static T apply(T a) {
    return a < T(0) ? T(0) : a;
  }
};
struct ExpOp {
  template <typename T>
  static T apply(T a) {
    return std::exp(a);
  }
};
struct TanhOp {
  template <typename T>
  static T apply(T a) {
    return std::tanh(a);
  }
};
struct ReciprocalOp {
  template <typename T>
  static T apply(T a) {
    return T(1) / a;
  }
};

template <typename T, typename Op>
struct UnaryInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void*) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = Op::apply(*reinterpret_cast<const T*>(p[1] + i * s[1]));
    }
  }
};

template <typename Op, int64_t Grain>
struct Unary {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      ElementwiseIter<2> it({&a->outputs[0], &a->inputs[0]}, {sizeof(T), sizeof(T)});
      static const InnerFn inner = IsaVariants<UnaryInner<T, Op>>::pick();
      it.run(inner, nullptr, a->num_threads, Grain);
      return 0;
    }
  };
};

#define AMBER_NUMERIC_TYPES float, double, int64_t, int32_t, int16_t, int8_t, uint8_t

AMBER_CPU_KERNELS(unary) {
  register_typed<Unary<NegOp, kGrainCheap>::Kernel, AMBER_NUMERIC_TYPES>("neg");
  register_typed<Unary<ReluOp, kGrainCheap>::Kernel, AMBER_NUMERIC_TYPES>("relu");
  register_typed<Unary<ExpOp, kGrainMath>::Kernel, float, double>("exp");
  register_typed<Unary<TanhOp, kGrainMath>::Kernel, float, double>("tanh");
  register_typed<Unary<ReciprocalOp, kGrainCheap>::Kernel, float, double>("reciprocal");
}

}  // namespace
}  // namespace amber::cpu
