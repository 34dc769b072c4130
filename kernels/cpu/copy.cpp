// CPU kernels that move or create values: to (dtype conversion), clone (strided copy to
// contiguous), full (fill) and arange.

#include "amber/kernels/cpu/copy.h"

#include <immintrin.h>

#include <bit>
#include <type_traits>

#include "amber/core/dtype_cast.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// f16 <-> f32 through the compiler's _Float16 where it has one (GCC 12; not the sanitizer
// builds' clang 14), which the AVX2 and AVX-512 builds (F16C) turn into vcvtph2ps / vcvtps2ph:
// the values of half_to_float and float_to_half (exact widening; rounding to nearest even,
// overflow to inf, subnormals kept), about four times faster than their bit manipulation on
// the transformer loaded in f16 (amber bench --precision f16-model: 21.9 -> 5.7 ms). NaNs stay
// NaN (their payload bits may differ).
template <typename D, typename S>
inline D cast_fast(S v) {
#ifdef __FLT16_MANT_DIG__
  if constexpr (std::is_same_v<S, Half> && std::is_same_v<D, float>)
    return float(std::bit_cast<_Float16>(v.bits));
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, Half>)
    return Half{std::bit_cast<uint16_t>(_Float16(v))};
  else
#endif
    return cast_value<D>(v);
}

template <typename S, typename D>
struct CastInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void*) {
    D* o = reinterpret_cast<D*>(p[0]);
    const S* a = reinterpret_cast<const S*>(p[1]);
    if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
      for (int64_t i = 0; i < n; ++i) o[i] = cast_fast<D>(a[i]);
    } else if (s[0] == sizeof(D) && s[1] == -int64_t(sizeof(S))) {
      // A flipped run (flip, negative strides): the loop with a runtime stride of -1 loaded
      // one element at a time, six times slower than a forward copy here; this one vectorises.
      for (int64_t i = 0; i < n; ++i) o[i] = cast_fast<D>(a[-i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<D*>(p[0] + i * s[0]) = cast_value<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
    }
  }
};

// f32 <-> f16 over contiguous runs eight elements at a time with F16C's vcvtps2ph / vcvtph2ps
// (GCC 12 converts _Float16 an element at a time: a [64, 256, 256] cast to f16 took 1.5 ms
// against PyTorch's 0.5). Rounding to nearest even, as cast_fast; strided runs as CastInner.
template <typename S, typename D>
struct HalfCastInner {
  AMBER_TARGET_AVX2 static void run(char* const* p, const int64_t* s, int64_t n, const void* c) {
    if (s[0] != sizeof(D) || s[1] != sizeof(S)) return CastInner<S, D>::run(p, s, n, c);
    D* o = reinterpret_cast<D*>(p[0]);
    const S* a = reinterpret_cast<const S*>(p[1]);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      if constexpr (std::is_same_v<D, Half>)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(a + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      else
        _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))));
    }
    for (; i < n; ++i) o[i] = cast_fast<D>(a[i]);
  }
};

template <typename S, typename D>
void run_cast(const amber_tensor_view& dst, const amber_tensor_view& src, int threads) {
  ElementwiseIter<2> it({&dst, &src}, {int64_t(sizeof(D)), int64_t(sizeof(S))});
  static const InnerFn inner = [] {
    constexpr bool half_pair =
        (std::is_same_v<S, float> && std::is_same_v<D, Half>) || (std::is_same_v<S, Half> && std::is_same_v<D, float>);
    if constexpr (half_pair)
      if (cpu_isa() != Isa::base) return InnerFn(&HalfCastInner<S, D>::run);
    return IsaVariants<CastInner<S, D>>::pick();
  }();
  it.run(inner, nullptr, threads, kGrainCheap);
}

// to(self, dtype): keyed by the source dtype S; the destination comes from the output.
template <typename S>
struct ToKernel {
  static int run(const amber_kernel_args* a) {
    copy_convert(a->outputs[0], a->inputs[0], a->num_threads);
    return 0;
  }
};

// A copy moves bytes: one instantiation per element width.
template <typename W>
struct CopyInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void*) {
    W* o = reinterpret_cast<W*>(p[0]);
    const W* a = reinterpret_cast<const W*>(p[1]);
    if (s[0] == sizeof(W) && s[1] == sizeof(W)) {
      for (int64_t i = 0; i < n; ++i) o[i] = a[i];
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<W*>(p[0] + i * s[0]) = *reinterpret_cast<const W*>(p[1] + i * s[1]);
    }
  }
};
template <typename W>
int copy_words(const amber_kernel_args* a) {
  ElementwiseIter<2> it({&a->outputs[0], &a->inputs[0]}, {sizeof(W), sizeof(W)});
  static const InnerFn inner = IsaVariants<CopyInner<W>>::pick();
  it.run(inner, nullptr, a->num_threads, kGrainCheap);
  return 0;
}
template <typename T>
struct CloneKernel {
  static int run(const amber_kernel_args* a) {
    if constexpr (sizeof(T) == 8)
      return copy_words<uint64_t>(a);
    else if constexpr (sizeof(T) == 4)
      return copy_words<uint32_t>(a);
    else if constexpr (sizeof(T) == 2)
      return copy_words<uint16_t>(a);
    else
      return copy_words<uint8_t>(a);
  }
};

template <typename T>
struct FillInner {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* c) {
    const T v = *static_cast<const T*>(c);
    T* o = reinterpret_cast<T*>(p[0]);
    if (s[0] == sizeof(T)) {
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    }
  }
};
// full(size, fill_value, dtype)
template <typename T>
struct FullKernel {
  static int run(const amber_kernel_args* a) {
    const T v = attr_scalar<T>(a, op_attrs::full::fill_value);
    ElementwiseIter<1> it({&a->outputs[0]}, {sizeof(T)});
    static const InnerFn inner = IsaVariants<FillInner<T>>::pick();
    it.run(inner, &v, a->num_threads, kGrainCheap);
    return 0;
  }
};

// arange(start, end, step, dtype): start + i * step, in double for floating outputs as
// ATen's accumulate type, in int64 for integers.
template <typename T>
struct ArangeKernel {
  static int run(const amber_kernel_args* a) {
    T* o = static_cast<T*>(a->outputs[0].data);
    const int64_t n = numel(a->outputs[0]);
    ThreadLimit limit(a->num_threads);
    if constexpr (std::is_floating_point_v<T>) {
      const double start = attr_float(a, op_attrs::arange::start), step = attr_float(a, op_attrs::arange::step);
      parallel_for(n, kGrainCheap, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = T(start + step * double(i));
      });
    } else {
      const int64_t start = attr_int(a, op_attrs::arange::start), step = attr_int(a, op_attrs::arange::step);
      parallel_for(n, kGrainCheap, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = T(uint64_t(start) + uint64_t(step) * uint64_t(i));
      });
    }
    return 0;
  }
};

AMBER_CPU_KERNELS(copy) {
  register_typed<ToKernel>(ctypes::all{}, "to");
  register_typed<CloneKernel>(ctypes::all{}, "clone");
  register_typed<FullKernel>(ctypes::all{}, "full");
  register_typed<ArangeKernel>(ctypes::numeric{}, "arange");
}

}  // namespace

void copy_convert(const amber_tensor_view& dst, const amber_tensor_view& src, int num_threads) {
  visit_dtype(DType(src.dtype), [&]<typename S>() {
    visit_dtype(DType(dst.dtype), [&]<typename D>() { run_cast<S, D>(dst, src, num_threads); });
  });
}

amber_tensor_view select_view(const amber_tensor_view& v, int dim, int64_t index) {
  amber_tensor_view out = v;
  out.data = static_cast<char*>(v.data) + index * v.strides[dim] * int64_t(itemsize(DType(v.dtype)));
  for (int d = dim; d + 1 < v.ndim; ++d) {
    out.sizes[d] = v.sizes[d + 1];
    out.strides[d] = v.strides[d + 1];
  }
  out.ndim = v.ndim - 1;
  return out;
}

amber_tensor_view narrow_view(const amber_tensor_view& v, int dim, int64_t start, int64_t length) {
  amber_tensor_view out = v;
  out.data = static_cast<char*>(v.data) + start * v.strides[dim] * int64_t(itemsize(DType(v.dtype)));
  out.sizes[dim] = length;
  return out;
}

}  // namespace amber::cpu
