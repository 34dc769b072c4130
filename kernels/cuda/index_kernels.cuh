// The device code of the CUDA kernels that gather or scatter (index.cu): embedding, index_select,
// gather, scatter (src, value, add, reduce), pad's walk (pad, roll, repeat) and tril/triu, with
// each one's arguments built from the views on the host, in a header of its own so that
// tests/test_index_emulated.cpp runs the same code on the CPU against the CPU's kernels; index.cu
// launches them. An index out of range gives zeros (or no write). Private to libamber_cuda.so.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/scatter_reduce.h"
#include "amber/kernels/views.h"

namespace amber::cuda::indexing {

struct Index {  // an i64 or i32 index view, up to 8 dims
  const void* data;
  bool i32;
  int ndim;
  int64_t sizes[AMBER_MAX_DIMS], strides[AMBER_MAX_DIMS];
  __device__ int64_t at(int64_t k) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (k % sizes[d]) * strides[d];
      k /= sizes[d];
    }
    return i32 ? static_cast<const int32_t*>(data)[off] : static_cast<const int64_t*>(data)[off];
  }
};
inline Index index_of(const amber_tensor_view& v) {
  Index ix{v.data, v.dtype == kI32, v.ndim, {}, {}};
  for (int d = 0; d < v.ndim; ++d) ix.sizes[d] = v.sizes[d], ix.strides[d] = v.strides[d];
  return ix;
}

// A dim attribute counted from the end made positive (a 0-D tensor counts as 1-D).
inline int positive_dim(int64_t dim, int ndim) { return int(dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim); }

// embedding(weight, indices): output [indices..., dim] (contiguous) = weight[index, :].
struct Embedding {
  int64_t rows, dim, ws0, ws1;  // weight's rows and row length; its element strides
  Index idx;
};
inline Embedding embedding_args(const amber_tensor_view& w, const amber_tensor_view& idx) {
  return Embedding{w.sizes[0], w.sizes[1], w.strides[0], w.strides[1], index_of(idx)};
}
template <typename T>
__global__ void embedding_kernel(const T* w, T* y, Embedding e, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i / e.dim, j = i % e.dim, row = e.idx.at(k);
    y[i] = row >= 0 && row < e.rows ? w[row * e.ws0 + j * e.ws1] : T(0);
  }
}

// index_select(self, index, dim): y[..., k, ...] = x[..., index[k], ...] along dim (self at
// least 1-D: a 0-D one is a copy).
struct Select {
  Operands<2> o;  // y's and x's byte strides in y's dims (x's along dim unused)
  int dim;
  int64_t size, xstride;  // x's size and byte stride along dim
  Index idx;
};
template <typename T>
Select select_args(const amber_tensor_view& x, const amber_tensor_view& idx, const amber_tensor_view& y,
                   int64_t dim_attr) {
  const int dim = positive_dim(dim_attr, x.ndim);
  amber_tensor_view xs = x;
  xs.sizes[dim] = y.sizes[dim];  // only the strides of the other dims are read
  const amber_tensor_view* v[2] = {&y, &xs};
  const int64_t items[2] = {sizeof(T), sizeof(T)};
  return Select{operands<2>(v, items), dim, x.sizes[dim], x.strides[dim] * int64_t(sizeof(T)), index_of(idx)};
}
template <typename T>
__global__ void index_select_kernel(const T* x, T* y, Select s, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, yo = 0, xo = 0;
    bool inside = true;
    for (int d = s.o.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % s.o.sizes[d];
      rest /= s.o.sizes[d];
      yo += c * s.o.bytes[0][d];
      if (d == s.dim) {
        const int64_t src = s.idx.at(c);
        inside = src >= 0 && src < s.size;
        xo += (inside ? src : 0) * s.xstride;
      } else {
        xo += c * s.o.bytes[1][d];
      }
    }
    *reinterpret_cast<T*>(reinterpret_cast<char*>(y) + yo) =
        inside ? *reinterpret_cast<const T*>(reinterpret_cast<const char*>(x) + xo) : T(0);
  }
}

// gather and scatter walk their index: element c of it, its value v, and c in two tensors of
// the index's shape with c[dim] replaced by v in the one indexed along dim (its stride along dim
// is applied to v instead: zero in the walk).
struct Along {
  Operands<3> o;            // the index, the one indexed along dim, the other
  int64_t dim_bytes, size;  // the indexed one's byte stride and size along dim
  bool i32;
  // Index element i's value (-1 where it is outside [0, size)) and the byte offsets of its
  // coordinate in operands 1 (v applied) and 2.
  __device__ int64_t at(int64_t i, int64_t& o1, int64_t& o2) const {
    int64_t rest = i, io = 0;
    o1 = o2 = 0;
    for (int d = o.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % o.sizes[d];
      rest /= o.sizes[d];
      io += c * o.bytes[0][d];
      o1 += c * o.bytes[1][d];
      o2 += c * o.bytes[2][d];
    }
    const char* ip = o.ptr[0] + io;
    const int64_t v = i32 ? *reinterpret_cast<const int32_t*>(ip) : *reinterpret_cast<const int64_t*>(ip);
    if (v < 0 || v >= size) return -1;
    o1 += v * dim_bytes;
    return v;
  }
};
// The walk of idx over `indexed` (along dim_attr) and `other` (both at least idx's size in every
// dim, and of its rank), T elements.
template <typename T>
Along along(const amber_tensor_view& idx, const amber_tensor_view& indexed, const amber_tensor_view& other,
            int64_t dim_attr) {
  const int dim = positive_dim(dim_attr, indexed.ndim);
  amber_tensor_view xs = indexed, os = other;
  for (int d = 0; d < idx.ndim; ++d) xs.sizes[d] = os.sizes[d] = idx.sizes[d];
  if (indexed.ndim) xs.sizes[dim] = 1;  // (operands gives a size-1 dim a zero stride)
  const amber_tensor_view* v[3] = {&idx, &xs, &os};
  const int64_t items[3] = {idx.dtype == kI32 ? 4 : 8, sizeof(T), sizeof(T)};
  return Along{operands<3>(v, items), indexed.ndim ? indexed.strides[dim] * int64_t(sizeof(T)) : 0,
               indexed.ndim ? indexed.sizes[dim] : 1, idx.dtype == kI32};
}

// gather(self, index, dim): y[c] = x[c with c[dim] replaced by index[c]], c over the output's
// (index's) shape; zero where the index is out of range.
template <typename T>
Along gather_args(const amber_tensor_view& x, const amber_tensor_view& idx, const amber_tensor_view& y,
                  int64_t dim_attr) {
  return along<T>(idx, x, y, dim_attr);
}
template <typename T>
__global__ void gather_kernel(Along g, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t xo, yo;
    const bool inside = g.at(i, xo, yo) >= 0;
    *reinterpret_cast<T*>(g.o.ptr[2] + yo) = inside ? *reinterpret_cast<const T*>(g.o.ptr[1] + xo) : T(0);
  }
}

// scatter: with y already a copy of self, one thread per index element c writes src[c] (or
// value, or adds it atomically) at c with c[dim] replaced by index[c]; nothing where the index is
// out of range. Repeated indices: some write wins and sums accumulate in no fixed order
// (PyTorch's CUDA scatter does the same).
enum class ScatterMode { src, value, add };
__device__ inline void add_to(float* p, float v) { atomicAdd(p, v); }
__device__ inline void add_to(double* p, double v) { atomicAdd(p, v); }
__device__ inline void add_to(int32_t* p, int32_t v) { atomicAdd(reinterpret_cast<int*>(p), int(v)); }
__device__ inline void add_to(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement
}
// src is unused (y stands in) for ScatterMode::value.
template <typename T>
Along scatter_args(const amber_tensor_view& idx, const amber_tensor_view& y, const amber_tensor_view* src,
                   int64_t dim_attr) {
  return along<T>(idx, y, src ? *src : y, dim_attr);
}
template <typename T, ScatterMode M>
__global__ void scatter_kernel(Along s, T value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t yo, so;
    if (s.at(i, yo, so) < 0) continue;
    T* dst = reinterpret_cast<T*>(s.o.ptr[1] + yo);
    if constexpr (M == ScatterMode::value) {
      *dst = value;
    } else if constexpr (M == ScatterMode::add) {
      add_to(dst, *reinterpret_cast<const T*>(s.o.ptr[2] + so));
    } else {
      *dst = *reinterpret_cast<const T*>(s.o.ptr[2] + so);
    }
  }
}

// scatter_reduce: with y already a copy of self, three kernels over the index, each a thread an
// index element (kernels/scatter_reduce.h's arithmetic, shared with the CPU): without
// include_self, the elements scattered to set to the reduction's identity; then src folded in
// with atomics (sum and mean an atomic add, prod, amax and amin a compare-and-swap loop), mean
// counting per element of y; then mean's division over y's span. Repeated indices fold in no fixed
// order (a float sum or product then differs from the CPU's in its last bits).
template <typename T>
__global__ void scatter_identity_kernel(Along s, scatter_fold::Reduce r, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t yo, so;
    if (s.at(i, yo, so) >= 0) *reinterpret_cast<T*>(s.o.ptr[1] + yo) = scatter_fold::identity<T>(r);
  }
}
// *p = combine(r, *p, v) atomically, through the unsigned integer of T's size.
template <typename T>
__device__ void combine_at(T* p, scatter_fold::Reduce r, T v) {
  using U = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
  static_assert(sizeof(T) == sizeof(U));
  U* up = reinterpret_cast<U*>(p);
  U seen = *reinterpret_cast<volatile U*>(up);
  for (;;) {
    T cur, next;
    memcpy(&cur, &seen, sizeof cur);
    next = scatter_fold::combine(r, cur, v);
    U want;
    memcpy(&want, &next, sizeof want);
    if (want == seen) return;  // already folded in (amax, amin, a product by one)
    const U was = atomicCAS(up, seen, want);
    if (was == seen) return;
    seen = was;
  }
}
// count (mean only) has a slot per element of y's span, indexed by y's element offset.
template <typename T>
__global__ void scatter_reduce_kernel(Along s, scatter_fold::Reduce r, unsigned* count, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t yo, so;
    if (s.at(i, yo, so) < 0) continue;
    T* dst = reinterpret_cast<T*>(s.o.ptr[1] + yo);
    const T v = *reinterpret_cast<const T*>(s.o.ptr[2] + so);
    if (r == scatter_fold::kSum || r == scatter_fold::kMean)
      add_to(dst, v);
    else
      combine_at(dst, r, v);
    if (count) atomicAdd(&count[yo / int64_t(sizeof(T))], 1u);
  }
}
// mean: each element of y's span with a count divided by it (plus one with include_self).
template <typename T>
__global__ void scatter_mean_kernel(T* y, const unsigned* count, bool with_self, int64_t span) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < span; i += int64_t(gridDim.x) * blockDim.x)
    if (count[i]) y[i] = scatter_fold::mean_of(y[i], int64_t(count[i]) + with_self);
}

// pad, roll and repeat: each output element from its source in x (views.h's pad_element, shared
// with the CPU), or value where constant padding has none.
template <typename T>
__global__ void pad_kernel(const T* x, T* y, views::PadDims p, views::PadMode mode, T value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t yo = 0, xo = 0;
    const bool inside = views::pad_element(p, mode, i, &yo, &xo);
    y[yo] = inside ? x[xo] : value;
  }
}

// tril/triu(self, diagonal): each matrix of the last two dims keeps element (i, j) where
// j - i <= diagonal (tril) or >= diagonal (triu); every other element is zero. Elements are
// moved as unsigned integers of their size (Bits), so one kernel serves every dtype.
struct Strided {
  int ndim;
  int64_t sizes[AMBER_MAX_DIMS], xs[AMBER_MAX_DIMS], ys[AMBER_MAX_DIMS];
};
inline Strided strided_of(const amber_tensor_view& x, const amber_tensor_view& y) {
  Strided s{x.ndim, {}, {}, {}};
  for (int d = 0; d < x.ndim; ++d) s.sizes[d] = x.sizes[d], s.xs[d] = x.strides[d], s.ys[d] = y.strides[d];
  return s;
}
template <size_t Bytes>
using Bits =
    std::conditional_t<Bytes == 1, uint8_t,
                       std::conditional_t<Bytes == 2, uint16_t, std::conditional_t<Bytes == 4, uint32_t, uint64_t>>>;
template <typename U, bool Lower>
__global__ void triangle_kernel(const U* x, U* y, Strided s, int64_t diag, int64_t n) {
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = k, xo = 0, yo = 0, i = 0, j = 0;
    for (int d = s.ndim - 1; d >= 0; --d) {
      const int64_t idx = rest % s.sizes[d];
      rest /= s.sizes[d];
      xo += idx * s.xs[d];
      yo += idx * s.ys[d];
      if (d == s.ndim - 1) j = idx;
      if (d == s.ndim - 2) i = idx;
    }
    y[yo] = (Lower ? j - i <= diag : j - i >= diag) ? x[xo] : U(0);
  }
}

}  // namespace amber::cuda::indexing
