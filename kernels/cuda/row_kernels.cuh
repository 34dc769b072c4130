// The rows a reduction or a row-wise op walks (Rows: which dims index rows, which run along one,
// with the input's and output's strides), the kernels that walk them a block a row (sum, prod,
// mean, amax, amin, argmax, argmin, any, all, softmax, log_softmax, layer_norm) or a warp a row,
// topk a thread or a block a line (or a long line's parts), and cumsum a thread a line, in a header
// of their own so that test_rows_emulated.cpp runs the same code on the CPU
// (tests/cuda_emulation.h); reduce.cu launches them.
#pragma once

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/pointwise_math.h"
#include "amber/kernels/scan.h"

namespace amber::cuda::rows {

constexpr int kThreads = 256;  // a block's threads, for the kernels a block a row

// The rows of a view: `kept` dims index rows, `red` dims the elements of a row; strides in
// elements for the input and the output (the output of a reduction has zero `red` strides).
struct Rows {
  int nk = 0, nr = 0;
  int64_t ksize[AMBER_MAX_DIMS], kin[AMBER_MAX_DIMS], kout[AMBER_MAX_DIMS];
  int64_t rsize[AMBER_MAX_DIMS], rin[AMBER_MAX_DIMS], rout[AMBER_MAX_DIMS];
  int64_t rows = 1, len = 1;
};

__device__ inline void row_base(const Rows& r, int64_t row, int64_t& in, int64_t& out) {
  in = out = 0;
  for (int d = r.nk - 1; d >= 0; --d) {
    const int64_t i = row % r.ksize[d];
    row /= r.ksize[d];
    in += i * r.kin[d];
    out += i * r.kout[d];
  }
}
__device__ inline void elem_offset(const Rows& r, int64_t j, int64_t& in, int64_t& out) {
  in = out = 0;
  for (int d = r.nr - 1; d >= 0; --d) {
    const int64_t i = j % r.rsize[d];
    j /= r.rsize[d];
    in += i * r.rin[d];
    out += i * r.rout[d];
  }
}

// Rows of `in` reducing the dims in mask; out is the reduction's output (keepdim or not) or,
// with same_shape, a tensor of in's shape (softmax, layer_norm).
inline Rows rows_of(const amber_tensor_view& in, const amber_tensor_view& out, uint32_t mask, bool same_shape) {
  Rows r;
  int od = 0;
  const bool keepdim = !same_shape && out.ndim == in.ndim;
  for (int d = 0; d < in.ndim; ++d) {
    const bool reduced = mask & (1u << d);
    int64_t ostride = 0;
    if (same_shape) {
      ostride = out.strides[d];
    } else if (!reduced || keepdim) {
      ostride = reduced ? 0 : out.strides[od];
      ++od;
    }
    if (reduced) {
      r.rsize[r.nr] = in.sizes[d];
      r.rin[r.nr] = in.strides[d];
      r.rout[r.nr] = same_shape ? ostride : 0;
      r.len *= in.sizes[d];
      ++r.nr;
    } else {
      r.ksize[r.nk] = in.sizes[d];
      r.kin[r.nk] = in.strides[d];
      r.kout[r.nk] = ostride;
      r.rows *= in.sizes[d];
      ++r.nk;
    }
  }
  return r;
}

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;
// A sum, product or mean of T elements as T: a 16-bit one through f32, as the f32 kernel's result
// rounded.
template <typename T, typename A>
__device__ inline T from_acc(A v) {
  return cast_value<T>(compute_t<T>(v));
}

// ---- sum, prod and mean ----
enum class Fold { sum, prod, mean };

// a + b, or a * b (integers wrapping on overflow, as on the CPU).
template <typename A, Fold F>
__device__ A combine(A a, A b) {
  if constexpr (F != Fold::prod)
    return pw::wrap_add(a, b);
  else if constexpr (std::is_floating_point_v<A>)
    return a * b;
  else
    return A(uint64_t(a) * uint64_t(b));
}

template <typename T, Fold F>
__global__ void fold_kernel(const T* x, T* y, Rows r) {
  __shared__ Acc<T> part[kThreads];
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    int64_t ib, ob;
    row_base(r, row, ib, ob);
    Acc<T> acc = F == Fold::prod ? 1 : 0;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t io, oo;
      elem_offset(r, j, io, oo);
      acc = combine<Acc<T>, F>(acc, Acc<T>(load_as_compute(x[ib + io])));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (int(threadIdx.x) < s) part[threadIdx.x] = combine<Acc<T>, F>(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if constexpr (F == Fold::mean)
        y[ob] = from_acc<T>(part[0] / Acc<T>(r.len));
      else
        y[ob] = from_acc<T>(part[0]);
    }
    __syncthreads();
  }
}

// ---- amax, amin, argmax ----
template <typename T>
__device__ inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}
// Whether (v, i) wins over (w, j): NaN first (earliest), then the extremum, then the earliest
// index.
template <typename T, bool Max>
__device__ inline bool better(T v, int64_t i, T w, int64_t j) {
  if (j < 0) return i >= 0;
  if (i < 0) return false;
  const bool vn = is_nan(v), wn = is_nan(w);
  if (vn || wn) return vn && (!wn || i < j);
  if (v == w) return i < j;
  return Max ? v > w : v < w;
}

template <typename T, bool Max, bool Index>
__global__ void extremum_kernel(const T* x, void* y, Rows r) {
  using C = compute_t<T>;  // a 16-bit value widened (exactly: the winner stores back unchanged)
  __shared__ C val[kThreads];
  __shared__ int64_t idx[kThreads];
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    int64_t ib, ob;
    row_base(r, row, ib, ob);
    C best = C(0);
    int64_t bi = -1;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t io, oo;
      elem_offset(r, j, io, oo);
      const C v = load_as_compute(x[ib + io]);
      if (better<C, Max>(v, j, best, bi)) best = v, bi = j;
    }
    val[threadIdx.x] = best;
    idx[threadIdx.x] = bi;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (int(threadIdx.x) < s &&
          better<C, Max>(val[threadIdx.x + s], idx[threadIdx.x + s], val[threadIdx.x], idx[threadIdx.x])) {
        val[threadIdx.x] = val[threadIdx.x + s];
        idx[threadIdx.x] = idx[threadIdx.x + s];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if constexpr (Index)
        static_cast<int64_t*>(y)[ob] = idx[0] < 0 ? 0 : idx[0];
      else
        static_cast<T*>(y)[ob] = cast_value<T>(val[0]);
    }
    __syncthreads();
  }
}

// ---- any, all: a block a row, each thread stopping at its first deciding element; the block's
// vote (__syncthreads_or/and) joins the threads ----
template <typename T, bool Any>
__global__ void any_all_kernel(const T* x, bool* y, Rows r) {
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    int64_t ib, ob;
    row_base(r, row, ib, ob);
    bool v = !Any;
    for (int64_t j = threadIdx.x; j < r.len && v != Any; j += blockDim.x) {
      int64_t io, oo;
      elem_offset(r, j, io, oo);
      if ((load_as_compute(x[ib + io]) != compute_t<T>(0)) == Any) v = Any;
    }
    const bool result = Any ? __syncthreads_or(v) : __syncthreads_and(v);
    if (threadIdx.x == 0) y[ob] = result;
  }
}

// ---- softmax, log_softmax (16-bit rows computed in f32, each output rounded once) ----
template <typename T, bool Log>
__global__ void softmax_kernel(const T* x, T* y, Rows r) {
  using C = compute_t<T>;
  __shared__ C part[kThreads];
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    int64_t ib, ob;
    row_base(r, row, ib, ob);
    C mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t io, oo;
      elem_offset(r, j, io, oo);
      const C v = load_as_compute(x[ib + io]);
      mx = (v > mx || v != v) ? v : mx;
    }
    part[threadIdx.x] = mx;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (int(threadIdx.x) < s) {
        const C o = part[threadIdx.x + s];
        if (o > part[threadIdx.x] || o != o) part[threadIdx.x] = o;
      }
      __syncthreads();
    }
    mx = part[0];
    __syncthreads();
    C sum = 0;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t io, oo;
      elem_offset(r, j, io, oo);
      sum += pw::exp_(load_as_compute(x[ib + io]) - mx);
    }
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (int(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
      __syncthreads();
    }
    sum = part[0];
    __syncthreads();
    const C shift = mx + pw::log_(sum), inv = C(1) / sum;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t io, oo;
      elem_offset(r, j, io, oo);
      const C v = load_as_compute(x[ib + io]);
      y[ob + oo] = cast_value<T>(Log ? v - shift : pw::exp_(v - mx) * inv);
    }
  }
}

// ---- layer_norm(input, weight, bias, normalized_shape, eps); 16-bit rows normalised in f32 ----
// With Add, add_layer_norm(input, other, weight, bias, normalized_shape, eps): each element of
// the row is input + other, summed in the compute type (as add computes it; 16-bit operands in
// f32, not rounded between the sum and the norm, as the CPU's route through its f32 kernel).
template <typename T, bool Add>
__global__ void layer_norm_kernel(const T* x, const T* other, T* y, const T* w, const T* b, Rows r, Rows orow, Rows wr,
                                  double eps) {
  using C = compute_t<T>;
  __shared__ double part[kThreads];
  for (int64_t row = blockIdx.x; row < r.rows; row += gridDim.x) {
    int64_t ib, ob, pb = 0, unused;
    row_base(r, row, ib, ob);
    if constexpr (Add) row_base(orow, row, pb, unused);
    // Element j of the row (the sum, with Add) and its output offset.
    const auto at = [&](int64_t j, int64_t& oo) {
      int64_t io;
      elem_offset(r, j, io, oo);
      C v = load_as_compute(x[ib + io]);
      if constexpr (Add) {
        int64_t po, none;
        elem_offset(orow, j, po, none);
        v = v + load_as_compute(other[pb + po]);
      }
      return v;
    };
    double s = 0;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t oo;
      s += double(at(j, oo));
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = kThreads / 2; k > 0; k /= 2) {
      if (int(threadIdx.x) < k) part[threadIdx.x] += part[threadIdx.x + k];
      __syncthreads();
    }
    const double mu = part[0] / double(r.len);
    __syncthreads();
    double q = 0;
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t oo;
      const double d = double(at(j, oo)) - mu;
      q += d * d;
    }
    part[threadIdx.x] = q;
    __syncthreads();
    for (int k = kThreads / 2; k > 0; k /= 2) {
      if (int(threadIdx.x) < k) part[threadIdx.x] += part[threadIdx.x + k];
      __syncthreads();
    }
    const C rstd = C(1.0 / ::sqrt(part[0] / double(r.len) + eps));
    const C m = C(mu);
    __syncthreads();
    for (int64_t j = threadIdx.x; j < r.len; j += blockDim.x) {
      int64_t oo, wo, none;
      C v = (at(j, oo) - m) * rstd;
      elem_offset(wr, j, wo, none);
      if (w) v = v * load_as_compute(w[wo]);
      if (b) v = v + load_as_compute(b[wo]);
      y[ob + oo] = cast_value<T>(v);
    }
  }
}

// Rows of at most 32 * PerLane elements, each dense (its elements one run, as a linear layer's
// output rows are), weight and bias dense too: a warp a row, the row held in its lanes'
// registers (element lane + 32 i), mean and variance accumulated in double and summed across
// the warp with shuffles, so a row costs one read and one write and no block-wide barrier
// (the block-a-row kernel above reads it three times and meets at 16 barriers). 8 rows a block.
constexpr int kRowWarps = 8;

__device__ inline double warp_sum_double(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, bool Add, int PerLane>
__global__ void __launch_bounds__(32 * kRowWarps)
    layer_norm_rows_kernel(const T* x, const T* other, T* y, const T* w, const T* b, Rows r, Rows orow, double eps) {
  using C = compute_t<T>;
  const int lane = int(threadIdx.x) % 32;
  const int64_t len = r.len;
  for (int64_t row = int64_t(blockIdx.x) * kRowWarps + threadIdx.x / 32; row < r.rows;
       row += int64_t(gridDim.x) * kRowWarps) {
    int64_t ib, ob, pb = 0, unused;
    row_base(r, row, ib, ob);
    if constexpr (Add) row_base(orow, row, pb, unused);
    C v[PerLane];
    double s = 0;
#pragma unroll
    for (int i = 0; i < PerLane; ++i) {
      const int64_t j = lane + 32 * i;
      v[i] = C(0);
      if (j < len) {
        v[i] = load_as_compute(x[ib + j]);
        if constexpr (Add) v[i] = v[i] + load_as_compute(other[pb + j]);
        s += double(v[i]);
      }
    }
    const double mu = warp_sum_double(s) / double(len);
    double q = 0;
#pragma unroll
    for (int i = 0; i < PerLane; ++i)
      if (lane + 32 * i < len) {
        const double d = double(v[i]) - mu;
        q += d * d;
      }
    const C rstd = C(1.0 / ::sqrt(warp_sum_double(q) / double(len) + eps));
    const C m = C(mu);
#pragma unroll
    for (int i = 0; i < PerLane; ++i) {
      const int64_t j = lane + 32 * i;
      if (j >= len) continue;
      C o = (v[i] - m) * rstd;
      if (w) o = o * load_as_compute(w[j]);
      if (b) o = o + load_as_compute(b[j]);
      y[ob + j] = cast_value<T>(o);
    }
  }
}

// All of x as one row into y's one element (argmax and argmin without a dim).
inline Rows flat_rows(const amber_tensor_view& x, const amber_tensor_view& y) {
  Rows r = rows_of(x, y, x.ndim == 0 ? 0 : (1u << x.ndim) - 1, false);
  r.nk = 0;
  r.rows = 1;
  return r;
}

// The elements of layer_norm's weight (or bias; p, NULL for neither) along x's last nn dims, the
// normalised ones: the row layer_norm_kernel reads them from (one, with no kept dims).
inline Rows param_rows(const amber_tensor_view& x, const amber_tensor_view* p, int nn) {
  Rows wr;
  wr.nr = nn;
  for (int i = 0; i < nn; ++i) {
    wr.rsize[i] = x.sizes[x.ndim - nn + i];
    wr.rin[i] = p ? p->strides[p->ndim - nn + i] : 0;
    wr.rout[i] = 0;
  }
  return wr;
}

// Whether the dims a Rows reduces are one dense run (each stride the product of the sizes
// inside it), for `in` (the input's strides) or the output's.
inline bool dense_rows(const Rows& r, bool out) {
  int64_t expect = 1;
  for (int d = r.nr - 1; d >= 0; --d) {
    const int64_t st = out ? r.rout[d] : r.rin[d];
    if (r.rsize[d] != 1 && st != expect) return false;
    expect *= r.rsize[d];
  }
  return true;
}

// topk(self, k, dim, largest, sorted): a thread per line keeps the best k so far, in order, in
// the outputs themselves (insertion by scan.h's topk_before): O(n k) per line, fine for the
// small k of top-k sampling and search, slow for k near a long line's length.
template <typename T>
__global__ void topk_kernel(const T* x, T* v, int64_t* ix, scan::Lines wv, scan::Lines wi, int dim, int64_t n,
                            int64_t k, bool largest, int64_t lines) {
  for (int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; l < lines; l += int64_t(gridDim.x) * blockDim.x) {
    int64_t xo, vo, io, unused;
    scan::line_start(wv, l, &xo, &vo);
    scan::line_start(wi, l, &unused, &io);
    const int64_t xs = wv.xstrides[dim], vs = wv.ystrides[dim], is = wi.ystrides[dim];
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T val = x[xo + i * xs];
      const auto c = load_as_compute(val);  // 16-bit values compared widened (exactly)
      if (count == k && !scan::topk_before(c, i, load_as_compute(v[vo + (k - 1) * vs]), ix[io + (k - 1) * is], largest))
        continue;
      int64_t j = count < k ? count++ : k - 1;
      for (; j > 0 && scan::topk_before(c, i, load_as_compute(v[vo + (j - 1) * vs]), ix[io + (j - 1) * is], largest);
           --j) {
        v[vo + j * vs] = v[vo + (j - 1) * vs];
        ix[io + j * is] = ix[io + (j - 1) * is];
      }
      v[vo + j * vs] = val;
      ix[io + j * is] = i;
    }
  }
}

// topk a block a line, for k up to kTopkBlockMax: each element's rank (topk_rank: an unsigned key
// whose larger values come first in topk_before's order, NaN and -0 folded as it folds them) and a
// radix select, eight bits a pass (a histogram of the candidates' next digit, its suffix sums, the
// digit holding the k-th), find the k-th rank; the ranks above it and the first of its ties by
// index (the ones topk_before puts first) go to shared memory, a bitonic sort orders them, and the
// outputs are read back from self. Four passes over the line for 32-bit ranks (eight for 64-bit)
// and O(k log^2 k) for the sort, where topk_kernel's thread walks the line once holding k.
constexpr int64_t kTopkBlockMax = 2048;

using scan::topk_rank;  // (scan.h, shared with the CPU's topk)
using scan::topk_rank_t;

// counts[0, 256) := its suffix sums (counts[b] = the sum from b on), by a block of kThreads (256)
// threads; every thread sees the result.
__device__ inline void suffix_sums_256(int* counts) {
  const unsigned t = threadIdx.x;
  for (int off = 1; off < 256; off <<= 1) {
    const int add = t + off < 256 ? counts[t + off] : 0;
    __syncthreads();
    if (t < 256) counts[t] += add;
    __syncthreads();
  }
}

// What block_top keeps in shared memory: a kernel declares one (__shared__) and passes it.
template <typename U>
struct TopkShared {
  int counts[256];
  U keys[kTopkBlockMax];
  int at[kTopkBlockMax];  // indices along the line (n < 2^31)
  int found[3];           // the pass's digit, the candidates above it; the next slot
};

// The first kk (<= kTopkBlockMax, <= m) of m candidates in topk_before's order, the larger rank
// first and the lower index among equal ranks, by the block's threads together: src.rank(i) and
// src.index(i) are candidate i's rank and index along the line, the indices of equal ranks
// ascending with i; out(j, rank, index) is told the j-th, for every j < kk.
template <typename U, typename Source, typename Out>
__device__ void block_top(const Source& src, int64_t m, int kk, const Out& out, TopkShared<U>& sh) {
  const unsigned t = threadIdx.x;
  // The radix select: the kk-th rank's digits from the top; `want` of the candidates (ranks
  // matching it so far) are still to be taken.
  U prefix = 0, mask = 0;
  int want = kk;
  for (int shift = int(sizeof(U)) * 8 - 8; shift >= 0; shift -= 8) {
    for (unsigned b = t; b < 256; b += blockDim.x) sh.counts[b] = 0;
    __syncthreads();
    for (int64_t i = t; i < m; i += blockDim.x) {
      const U r = src.rank(i);
      if ((r & mask) == prefix) atomicAdd(&sh.counts[int(r >> shift) & 255], 1);
    }
    __syncthreads();
    suffix_sums_256(sh.counts);
    if (t < 256 && sh.counts[t] >= want && (t == 255 || sh.counts[t + 1] < want)) {
      sh.found[0] = int(t);
      sh.found[1] = t == 255 ? 0 : sh.counts[t + 1];
    }
    __syncthreads();
    prefix |= U(sh.found[0]) << shift;
    mask |= U(255) << shift;
    want -= sh.found[1];
    __syncthreads();  // found and counts are rewritten next
  }
  // Ranks above the kk-th (kk - want of them) in any order at [0, kk - want); its ties, the
  // first `want` by index, in order at [kk - want, kk).
  if (t == 0) sh.found[2] = 0;
  __syncthreads();
  int taken = 0;  // ties taken so far (the same in every thread)
  for (int64_t base = 0; base < m; base += blockDim.x) {
    const int64_t i = base + t;
    const U r = i < m ? src.rank(i) : U(0);
    if (i < m && r > prefix) {
      const int s = atomicAdd(&sh.found[2], 1);
      sh.keys[s] = r;
      sh.at[s] = src.index(i);
    }
    const bool tie = i < m && r == prefix && taken < want;
    if (__syncthreads_count(tie) == 0) continue;
    if (t < 256) sh.counts[t] = 0;  // an inclusive prefix count of the ties (suffix sums, reversed)
    __syncthreads();
    if (tie) sh.counts[255 - t] = 1;
    __syncthreads();
    suffix_sums_256(sh.counts);
    const int upto = sh.counts[255 - t], total = sh.counts[0];
    if (tie && taken + upto <= want) {
      sh.keys[kk - want + taken + upto - 1] = r;
      sh.at[kk - want + taken + upto - 1] = src.index(i);
    }
    taken += total;
    __syncthreads();  // counts is rewritten next
  }
  // Pad to a power of two with entries after every real one, then sort: slot j before j + 1
  // when rank is larger, or equal with the lower index.
  int p = 1;
  while (p < kk) p <<= 1;
  for (int j = kk + int(t); j < p; j += int(blockDim.x)) sh.keys[j] = U(0), sh.at[j] = 0x7fffffff;
  __syncthreads();
  for (int size = 2; size <= p; size <<= 1)
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      for (int j = int(t); j < p / 2; j += int(blockDim.x)) {
        const int lo = 2 * stride * (j / stride) + j % stride, hi = lo + stride;
        const bool hi_first = sh.keys[hi] > sh.keys[lo] || (sh.keys[hi] == sh.keys[lo] && sh.at[hi] < sh.at[lo]);
        if (hi_first == ((lo & size) == 0)) {
          const U kt = sh.keys[lo];
          sh.keys[lo] = sh.keys[hi], sh.keys[hi] = kt;
          const int it = sh.at[lo];
          sh.at[lo] = sh.at[hi], sh.at[hi] = it;
        }
      }
      __syncthreads();
    }
  for (int j = int(t); j < kk; j += int(blockDim.x)) out(j, sh.keys[j], sh.at[j]);
  __syncthreads();  // keys and at are rewritten by the next call
}

// A stretch of a line as block_top's candidates: the ranks of x[0], x[xs], ... and their
// indices from `first` on.
template <typename T>
struct LineCandidates {
  const T* x;
  int64_t xs;
  int first;
  bool largest;
  __device__ topk_rank_t<compute_t<T>> rank(int64_t i) const { return topk_rank(load_as_compute(x[i * xs]), largest); }
  __device__ int index(int64_t i) const { return first + int(i); }
};
// Candidates kept in memory: ranks and their indices.
template <typename U>
struct KeptCandidates {
  const U* keys;
  const int* at;
  __device__ U rank(int64_t i) const { return keys[i]; }
  __device__ int index(int64_t i) const { return at[i]; }
};

// Each line's first k (of m candidates: candidates(l, xo, xs) makes line l's, its offset xo and
// stride xs in x) written to v and ix, the values read back from x, a block a line.
template <typename T, typename U, typename Candidates>
__device__ void top_of_lines(const T* x, T* v, int64_t* ix, const scan::Lines& wv, const scan::Lines& wi, int dim,
                             int64_t m, int64_t k, int64_t lines, const Candidates& candidates, TopkShared<U>& sh) {
  for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
    int64_t xo, vo, io, unused;
    scan::line_start(wv, l, &xo, &vo);
    scan::line_start(wi, l, &unused, &io);
    const int64_t xs = wv.xstrides[dim], vs = wv.ystrides[dim], is = wi.ystrides[dim];
    block_top<U>(
        candidates(l, xo, xs), m, int(k),
        [&](int j, U, int i) {
          v[vo + j * vs] = x[xo + int64_t(i) * xs];
          ix[io + j * is] = i;
        },
        sh);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    topk_block_kernel(const T* x, T* v, int64_t* ix, scan::Lines wv, scan::Lines wi, int dim, int64_t n, int64_t k,
                      bool largest, int64_t lines) {
  using U = topk_rank_t<compute_t<T>>;
  __shared__ TopkShared<U> sh;
  top_of_lines(
      x, v, ix, wv, wi, dim, n, k, lines,
      [&](int64_t, int64_t xo, int64_t xs) {
        return LineCandidates<T>{x + xo, xs, 0, largest};
      },
      sh);
}

// topk a line split among blocks, for few long lines (block_top's select alone would leave most
// of the GPU idle): topk_split_kernel's block (l, s) keeps the first k of part s of line l (parts
// of `chunk` elements, chunk >= k, the last one shorter) in the scratch, ranks and indices in
// order, the last part's missing ones padded with rank 0 and index 2^31 - 1 (after every real
// one); topk_merge_kernel's block l then selects the first k of the line's parts * k kept, whose
// equal ranks ascend by index as block_top asks (each part's in order, the parts in the line's).
// Scratch: topk_split_bytes.
template <typename U>
AMBER_HD inline size_t topk_split_bytes(int64_t lines, int64_t parts, int64_t k) {
  return size_t(lines * parts * k) * (sizeof(U) + sizeof(int));
}
template <typename T>
__global__ void __launch_bounds__(kThreads)
    topk_split_kernel(const T* x, scan::Lines wv, int dim, int64_t n, int64_t k, bool largest, int64_t lines,
                      int64_t parts, int64_t chunk, void* scratch) {
  using U = topk_rank_t<compute_t<T>>;
  __shared__ TopkShared<U> sh;
  U* const keys = static_cast<U*>(scratch);
  int* const at = reinterpret_cast<int*>(keys + lines * parts * k);
  for (int64_t b = blockIdx.x; b < lines * parts; b += gridDim.x) {
    const int64_t l = b / parts, start = b % parts * chunk, len = n - start < chunk ? n - start : chunk;
    int64_t xo, unused;
    scan::line_start(wv, l, &xo, &unused);
    const int64_t xs = wv.xstrides[dim];
    const int kk = int(len < k ? len : k);
    U* const kept = keys + b * k;
    int* const kept_at = at + b * k;
    block_top<U>(
        LineCandidates<T>{x + xo + start * xs, xs, int(start), largest}, len, kk,
        [&](int j, U r, int i) { kept[j] = r, kept_at[j] = i; }, sh);
    for (int64_t j = kk + threadIdx.x; j < k; j += blockDim.x) kept[j] = U(0), kept_at[j] = 0x7fffffff;
  }
}
template <typename T>
__global__ void __launch_bounds__(kThreads)
    topk_merge_kernel(const T* x, T* v, int64_t* ix, scan::Lines wv, scan::Lines wi, int dim, int64_t k, int64_t lines,
                      int64_t parts, const void* scratch) {
  using U = topk_rank_t<compute_t<T>>;
  __shared__ TopkShared<U> sh;
  const U* const keys = static_cast<const U*>(scratch);
  const int* const at = reinterpret_cast<const int*>(keys + lines * parts * k);
  top_of_lines(
      x, v, ix, wv, wi, dim, parts * k, k, lines,
      [&](int64_t l, int64_t, int64_t) {
        return KeptCandidates<U>{keys + l * parts * k, at + l * parts * k};
      },
      sh);
}

// topk for k above kTopkBlockMax (up to the whole line: a sort), a block a line: the line's ranks
// (topk_rank, complemented: ascending order puts the larger first) and indices copied into the
// block's scratch in index order, then a stable LSD radix sort, eight bits a pass (a histogram of
// the digit, its prefix sums, each tile of kThreads elements scattered in order), so that equal
// ranks keep index order as topk_before puts them; the first k are read back from self. O(n) a
// pass, 4 passes for 32-bit ranks (8 for 64-bit); scratch: topk_sort_block_bytes a block. Within
// a tile, an element's place among its digit's is its warp's earlier lanes of that digit
// (__match_any_sync) after the earlier warps' counts of it; launched with kThreads threads.
template <typename U>
AMBER_HD inline size_t topk_sort_block_bytes(int64_t n) {
  return size_t(n) * 2 * (sizeof(U) + sizeof(int));  // ranks and indices, a source and a destination
}
template <typename T>
__global__ void __launch_bounds__(kThreads)
    topk_sort_kernel(const T* x, T* v, int64_t* ix, scan::Lines wv, scan::Lines wi, int dim, int64_t n, int64_t k,
                     bool largest, int64_t lines, void* scratch) {
  using C = compute_t<T>;
  using U = topk_rank_t<C>;
  constexpr int kWarps = kThreads / 32;
  __shared__ int first[256];                // the pass's next slot for each digit
  __shared__ int warp_digits[kWarps][256];  // a tile's count of each digit in each warp (else 0)
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  for (int j = int(t); j < kWarps * 256; j += int(blockDim.x)) warp_digits[j / 256][j % 256] = 0;
  char* mine = static_cast<char*>(scratch) + size_t(blockIdx.x) * topk_sort_block_bytes<U>(n);
  U* keys[2] = {reinterpret_cast<U*>(mine), reinterpret_cast<U*>(mine) + n};
  int* at[2] = {reinterpret_cast<int*>(keys[1] + n), reinterpret_cast<int*>(keys[1] + n) + n};
  for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
    int64_t xo, vo, io, unused;
    scan::line_start(wv, l, &xo, &vo);
    scan::line_start(wi, l, &unused, &io);
    const int64_t xs = wv.xstrides[dim], vs = wv.ystrides[dim], is = wi.ystrides[dim];
    for (int64_t i = t; i < n; i += blockDim.x) {
      keys[0][i] = ~topk_rank(load_as_compute(x[xo + i * xs]), largest);
      at[0][i] = int(i);
    }
    int src = 0;
    for (int shift = 0; shift < int(sizeof(U)) * 8; shift += 8, src ^= 1) {
      const U* ks = keys[src];
      const int* is_from = at[src];
      if (t < 256) first[t] = 0;
      __syncthreads();
      for (int64_t i = t; i < n; i += blockDim.x) atomicAdd(&first[int(ks[i] >> shift) & 255], 1);
      __syncthreads();
      suffix_sums_256(first);  // first[d]: the ranks whose digit is d or more
      const int from = t < 256 ? int(n) - first[t] : 0;
      __syncthreads();
      if (t < 256) first[t] = from;
      for (int64_t base = 0; base < n; base += blockDim.x) {
        const int64_t i = base + t;
        const int d = i < n ? int(ks[i] >> shift) & 255 : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, d);  // the warp's lanes of digit d
        const int in_warp = __popc(peers & ((1u << lane) - 1));   // those of them before this lane
        const bool leader = d >= 0 && in_warp == 0;
        if (leader) warp_digits[warp][d] = __popc(peers);
        __syncthreads();
        if (d >= 0) {
          int before = in_warp;  // the tile's earlier elements of the same digit
          for (unsigned w = 0; w < warp; ++w) before += warp_digits[w][d];
          const int slot = first[d] + before;
          keys[src ^ 1][slot] = ks[i];
          at[src ^ 1][slot] = is_from[i];
        }
        int in_tile = 0;
        if (t < 256)
          for (int w = 0; w < kWarps; ++w) in_tile += warp_digits[w][t];
        __syncthreads();
        if (t < 256) first[t] += in_tile;
        if (leader) warp_digits[warp][d] = 0;
        __syncthreads();  // first and warp_digits are rewritten next
      }
    }
    for (int64_t j = t; j < k; j += blockDim.x) {  // (an even number of passes: the result is in [0])
      v[vo + j * vs] = x[xo + int64_t(at[src][j]) * xs];
      ix[io + j * is] = at[src][j];
    }
    __syncthreads();  // the scratch is rewritten for the next line
  }
}

// cumsum(self, dim, dtype) along lines (scan.h's walk and sum, shared with the CPU).
template <typename T>
__global__ void cumsum_kernel(const T* x, T* y, scan::Lines w, int64_t xstride, int64_t ystride, int64_t n,
                              int64_t lines) {
  for (int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; l < lines; l += int64_t(gridDim.x) * blockDim.x) {
    int64_t xo, yo;
    scan::line_start(w, l, &xo, &yo);
    if constexpr (std::is_same_v<compute_t<T>, T>) {
      scan::cumsum_line(x + xo, xstride, y + yo, ystride, n);
    } else {  // 16 bits: scan.h's sum in double, each result through f32 (the f32 kernel's, rounded)
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        acc += double(load_as_compute(x[xo + i * xstride]));
        y[yo + i * ystride] = from_acc<T>(acc);
      }
    }
  }
}

// cumsum a block a line, for long lines: tiles of kThreads * kCumsumPer elements staged in shared
// memory (read and written along the line), each thread's kCumsumPer summed in order, the
// threads' totals scanned (Hillis-Steele), each tile's total carried into the next. Floats sum in
// double as cumsum_kernel's do (16-bit ones written through f32), integers in uint64 (wrapping
// alike): the same sums in another order, equal to the thread's where the double sums are exact,
// as for f32 elements within 2^29 of one another in magnitude. Launched with kThreads threads.
constexpr int kCumsumPer = 8;
template <typename T>
using cumsum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
template <typename T>
__global__ void __launch_bounds__(kThreads)
    cumsum_block_kernel(const T* x, T* y, scan::Lines w, int64_t xstride, int64_t ystride, int64_t n, int64_t lines) {
  using A = cumsum_acc_t<T>;
  constexpr int kTile = kThreads * kCumsumPer;
  __shared__ A tile[kTile];
  __shared__ A totals[kThreads];
  const int t = int(threadIdx.x), first = t * kCumsumPer;
  for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
    int64_t xo, yo;
    scan::line_start(w, l, &xo, &yo);
    A carry = 0;
    for (int64_t base = 0; base < n; base += kTile) {
      const int m = n - base < kTile ? int(n - base) : kTile;
      for (int j = t; j < m; j += kThreads) tile[j] = A(load_as_compute(x[xo + (base + j) * xstride]));
      __syncthreads();
      A s = 0;
      for (int j = first; j < first + kCumsumPer && j < m; ++j) tile[j] = s += tile[j];
      totals[t] = s;
      __syncthreads();
      for (int off = 1; off < kThreads; off <<= 1) {  // totals[t] := the sum of totals[0..t]
        const A add = t >= off ? totals[t - off] : A(0);
        __syncthreads();
        totals[t] += add;
        __syncthreads();
      }
      const A before = carry + (t > 0 ? totals[t - 1] : A(0));
      for (int j = first; j < first + kCumsumPer && j < m; ++j) tile[j] += before;
      carry += totals[kThreads - 1];
      __syncthreads();
      for (int j = t; j < m; j += kThreads) {
        if constexpr (std::is_same_v<compute_t<T>, T>)
          y[yo + (base + j) * ystride] = T(tile[j]);
        else
          y[yo + (base + j) * ystride] = from_acc<T>(tile[j]);
      }
      __syncthreads();  // tile and totals are rewritten next
    }
  }
}

}  // namespace amber::cuda::rows
