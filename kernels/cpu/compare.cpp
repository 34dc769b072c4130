// CPU kernels for comparisons (eq, ne, lt, le, gt, ge against a tensor or a number; bool
// output), the logical ops (and, or, xor, not; bool output), where (bool condition, two
// operands of the result dtype) and masked_fill (where with a number).

#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

struct Eq {
  template <typename T>
  static bool apply(T a, T b) {
    return a == b;
  }
};
struct Ne {
  template <typename T>
  static bool apply(T a, T b) {
    return a != b;
  }
};
struct Lt {
  template <typename T>
  static bool apply(T a, T b) {
    return a < b;
  }
};
struct Le {
  template <typename T>
  static bool apply(T a, T b) {
    return a <= b;
  }
};
struct Gt {
  template <typename T>
  static bool apply(T a, T b) {
    return a > b;
  }
};
struct Ge {
  template <typename T>
  static bool apply(T a, T b) {
    return a >= b;
  }
};

struct LogicalAnd {
  template <typename T>
  static bool apply(T a, T b) {
    return a != T(0) && b != T(0);
  }
};
struct LogicalOr {
  template <typename T>
  static bool apply(T a, T b) {
    return a != T(0) || b != T(0);
  }
};
struct LogicalXor {
  template <typename T>
  static bool apply(T a, T b) {
    return (a != T(0)) != (b != T(0));
  }
};

template <typename T, typename Op>
struct CompareInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void*) {
    bool* o = reinterpret_cast<bool*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    if (s[0] == 1 && s[1] == sizeof(T) && s[2] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], b[i]);
    } else if (s[0] == 1 && s[1] == sizeof(T) && s[2] == 0) {
      const T bv = *b;
      for (int64_t i = 0; i < n; ++i) o[i] = Op::apply(a[i], bv);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<bool*>(p[0] + i * s[0]) =
            Op::apply(*reinterpret_cast<const T*>(p[1] + i * s[1]), *reinterpret_cast<const T*>(p[2] + i * s[2]));
    }
  }
};

template <typename T, typename Op>
int run_compare(const amber_kernel_args* a, const amber_tensor_view& rhs) {
  ElementwiseIter<3> it({&a->outputs[0], &a->inputs[0], &rhs}, {1, sizeof(T), sizeof(T)});
  static const InnerFn inner = IsaVariants<CompareInner<T, Op>>::pick();
  it.run(inner, nullptr, a->num_threads, kGrainCheap);
  return 0;
}

template <typename Op>
struct Compare {
  template <typename T>
  struct Tensor {
    static int run(const amber_kernel_args* a) { return run_compare<T, Op>(a, a->inputs[1]); }
  };
  // The number becomes a zero-dim operand (stride 0 after broadcasting).
  template <typename T>
  struct Scalar {
    static int run(const amber_kernel_args* a) {
      T value = attr_scalar<T>(a, op_attrs::eq_Scalar::other);  // every comparison's .Scalar form
      amber_tensor_view v{};
      v.data = &value;
      v.dtype = a->inputs[0].dtype;
      v.ndim = 0;
      return run_compare<T, Op>(a, v);
    }
  };
};

// logical_not(self): self == 0, against a zero-dim zero.
template <typename T>
struct LogicalNotKernel {
  static int run(const amber_kernel_args* a) {
    T zero{};
    amber_tensor_view v{};
    v.data = &zero;
    v.dtype = a->inputs[0].dtype;
    v.ndim = 0;
    return run_compare<T, Eq>(a, v);
  }
};

// where(condition, self, other): keyed by the result dtype T.
template <typename T>
struct WhereInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void*) {
    if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {
      T* o = reinterpret_cast<T*>(p[0]);
      const bool* c = reinterpret_cast<const bool*>(p[1]);
      const T* x = reinterpret_cast<const T*>(p[2]);
      const T* y = reinterpret_cast<const T*>(p[3]);
      for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    }
  }
};
template <typename T>
struct WhereKernel {
  static int run(const amber_kernel_args* a) {
    ElementwiseIter<4> it({&a->outputs[0], &a->inputs[0], &a->inputs[1], &a->inputs[2]},
                          {sizeof(T), 1, sizeof(T), sizeof(T)});
    static const InnerFn inner = IsaVariants<WhereInner<T>>::pick();
    it.run(inner, nullptr, a->num_threads, kGrainCheap);
    return 0;
  }
};

// masked_fill.Scalar(self, mask, value): where(mask, value, self), value a zero-dim operand.
template <typename T>
struct MaskedFillKernel {
  static int run(const amber_kernel_args* a) {
    const T value = attr_scalar<T>(a, op_attrs::masked_fill_Scalar::value);
    amber_tensor_view v{};
    v.data = const_cast<T*>(&value);
    v.dtype = a->inputs[0].dtype;
    v.ndim = 0;
    ElementwiseIter<4> it({&a->outputs[0], &a->inputs[1], &v, &a->inputs[0]}, {sizeof(T), 1, sizeof(T), sizeof(T)});
    static const InnerFn inner = IsaVariants<WhereInner<T>>::pick();
    it.run(inner, nullptr, a->num_threads, kGrainCheap);
    return 0;
  }
};

#define AMBER_REGISTER_COMPARE(name, Op)                            \
  register_typed<Compare<Op>::Tensor>(ctypes::comparable{}, #name); \
  register_typed<Compare<Op>::Scalar>(ctypes::comparable{}, #name ".Scalar")

AMBER_CPU_KERNELS(compare) {
  AMBER_REGISTER_COMPARE(eq, Eq);
  AMBER_REGISTER_COMPARE(ne, Ne);
  AMBER_REGISTER_COMPARE(lt, Lt);
  AMBER_REGISTER_COMPARE(le, Le);
  AMBER_REGISTER_COMPARE(gt, Gt);
  AMBER_REGISTER_COMPARE(ge, Ge);
  register_typed<Compare<LogicalAnd>::Tensor>(ctypes::comparable{}, "logical_and");
  register_typed<Compare<LogicalOr>::Tensor>(ctypes::comparable{}, "logical_or");
  register_typed<Compare<LogicalXor>::Tensor>(ctypes::comparable{}, "logical_xor");
  register_typed<LogicalNotKernel>(ctypes::comparable{}, "logical_not");
  register_typed<WhereKernel>(ctypes::all{}, "where");
  register_typed<MaskedFillKernel>(ctypes::all{}, "masked_fill.Scalar");
}

}  // namespace
}  // namespace amber::cpu
