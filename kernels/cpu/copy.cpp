// CPU kernels that move or create values: to (dtype conversion), clone (strided copy to
// contiguous), full (fill) and arange.

#include "amber/kernels/cpu/copy.h"

#include <immintrin.h>

#include <bit>
#include <cstring>
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

// A tile of a transposing copy of 4-byte words (a permuted tensor made contiguous) eight by
// eight in AVX registers (unpack, shuffle, permute: bits moved as they are), the edges one by
// one. Run by run, each run read a word from each of 32 lines (of [2048, 2048]: all in one
// cache set); [2048, 2048] transposed 4.7-6.4 -> 1.7-2.2 ms, PyTorch 3.3-4.5 (2 threads).
AMBER_TARGET_AVX2 void transpose_words(char* out, int64_t out_ld, const char* in, int64_t in_ld, int64_t cols,
                                       int64_t rows) {
  auto src = [&](int64_t c, int64_t r) { return reinterpret_cast<const float*>(in + c * in_ld) + r; };
  auto dst = [&](int64_t r, int64_t c) { return reinterpret_cast<float*>(out + r * out_ld) + c; };
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) {
      __m256 x[8], y[8];
      for (int k = 0; k < 8; ++k) x[k] = _mm256_loadu_ps(src(c + k, r));
      for (int k = 0; k < 8; k += 2) {  // y[k]: words 0, 1 (4, 5) of x[k], x[k + 1]; y[k + 1]: 2, 3 (6, 7)
        y[k] = _mm256_unpacklo_ps(x[k], x[k + 1]);
        y[k + 1] = _mm256_unpackhi_ps(x[k], x[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {  // x[k + j]: word j (j + 4) of rows k .. k + 3
        x[k] = _mm256_shuffle_ps(y[k], y[k + 2], 0x44);
        x[k + 1] = _mm256_shuffle_ps(y[k], y[k + 2], 0xee);
        x[k + 2] = _mm256_shuffle_ps(y[k + 1], y[k + 3], 0x44);
        x[k + 3] = _mm256_shuffle_ps(y[k + 1], y[k + 3], 0xee);
      }
      for (int k = 0; k < 4; ++k) {  // output row k from the low halves of x[k], x[k + 4], k + 4 the high
        _mm256_storeu_ps(dst(r + k, c), _mm256_permute2f128_ps(x[k], x[k + 4], 0x20));
        _mm256_storeu_ps(dst(r + k + 4, c), _mm256_permute2f128_ps(x[k], x[k + 4], 0x31));
      }
    }
    for (; r < rows; ++r)
      for (int k = 0; k < 8; ++k) std::memcpy(dst(r, c + k), src(c + k, r), 4);
  }
  for (; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst(r, c), src(c, r), 4);
}

// The tile copier for a same-type copy of `bytes`-wide elements: transpose_words for 4 bytes
// (AVX; none on the base ISA), else none (the runs go one by one).
TileFn word_tiles(size_t bytes) { return bytes == 4 && cpu_isa() != Isa::base ? &transpose_words : nullptr; }

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
  // A same-type copy of 4-byte words moves bits as clone does: its transposes go tile by tile too
  // (cat, stack and index_select of permuted tensors).
  static const TileFn tile = std::is_same_v<S, D> ? word_tiles(sizeof(S)) : nullptr;
  it.run(inner, nullptr, threads, kGrainCheap, tile);
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
  static const TileFn tile = word_tiles(sizeof(W));
  it.run(inner, nullptr, a->num_threads, kGrainCheap, tile);
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
