// CPU kernels that gather, scatter or assemble: embedding, index_select, gather, scatter (src,
// value, add, reduce), cat, stack, flip, pad, roll, repeat and the triangles tril and triu. Most
// copy strided pieces with copy_convert (cat and stack also convert dtypes, as their inference
// promotes without casting first). Out-of-range indices are errors naming the index.

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/arith.h"
#include "amber/kernels/cpu/copy.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/scatter_reduce.h"
#include "amber/kernels/views.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// Index k of an i64 or i32 index view.
int64_t index_at(const amber_tensor_view& idx, int64_t k) {
  int64_t off = 0, rem = k;
  for (int d = idx.ndim - 1; d >= 0; --d) {
    off += (rem % idx.sizes[d]) * idx.strides[d];
    rem /= idx.sizes[d];
  }
  return idx.dtype == int32_t(DType::i32) ? static_cast<const int32_t*>(idx.data)[off]
                                          : static_cast<const int64_t*>(idx.data)[off];
}

// The error for index i outside [0, size) along dim.
int index_error(const amber_kernel_args* a, int64_t i, int64_t dim, int64_t size) {
  return fail(a, "index %" PRId64 " is out of range for dimension %" PRId64 " of size %" PRId64, i, dim, size);
}

// Whether v's elements but along dim lie dense (row-major, no gaps): a slice at one index of dim
// is then one run of memory.
bool dense_but(const amber_tensor_view& v, int dim) {
  int64_t expect = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    if (d == dim || v.sizes[d] == 1) continue;
    if (v.strides[d] != expect) return false;
    expect *= v.sizes[d];
  }
  return true;
}

// embedding(weight, indices, padding_idx)
template <typename T>
struct EmbeddingKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &w = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(idx), rows = w.sizes[0];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = index_at(idx, k);
      if (i < 0 || i >= rows)
        return fail(a, "index %" PRId64 " is out of range for a weight of %" PRId64 " rows", i, rows);
    }
    // Output rows: [n, dim] over the output's leading dims (the output is contiguous).
    const int64_t dim = w.sizes[1];
    T* yp = static_cast<T*>(y.data);
    const T* wp = static_cast<const T*>(w.data);
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(dim, 1)), [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const T* src = wp + index_at(idx, k) * w.strides[0];
        T* dst = yp + k * dim;
        if (w.strides[1] == 1)
          std::copy_n(src, dim, dst);
        else
          for (int64_t j = 0; j < dim; ++j) dst[j] = src[j * w.strides[1]];
      }
    });
    return 0;
  }
};

// index_select(self, index, dim)
template <typename T>
struct IndexSelectKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    if (x.ndim == 0) {  // a 0-D self: the index must be 0
      const int64_t i = index_at(idx, 0);
      if (i != 0) return fail(a, "index %" PRId64 " is out of range for a 0-dimensional tensor", i);
      *static_cast<T*>(y.data) = *static_cast<const T*>(x.data);
      return 0;
    }
    int64_t dim = attr_int(a, op_attrs::index_select::dim);
    if (dim < 0) dim += x.ndim;
    const int64_t n = numel(idx), size = x.sizes[dim];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = index_at(idx, k);
      if (i < 0 || i >= size) return index_error(a, i, dim, size);
    }
    // Slices dense in both (dim 0 of contiguous tensors): each a memcpy; else each a strided copy,
    // many small ones split over threads.
    const int64_t slice = n ? numel(y) / n : 0;
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(y.data);
    if (dense_but(x, int(dim)) && dense_but(y, int(dim))) {
      ThreadLimit limit(std::max(1, a->num_threads));
      parallel_for(n, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, slice)), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k)
          std::memcpy(yp + k * y.strides[dim], xp + index_at(idx, k) * x.strides[dim], size_t(slice) * sizeof(T));
      });
    } else if (slice >= kGrainCheap || a->num_threads <= 1) {
      for (int64_t k = 0; k < n; ++k)
        copy_convert(narrow_view(y, int(dim), k, 1), narrow_view(x, int(dim), index_at(idx, k), 1), a->num_threads);
    } else {
      ThreadLimit limit(a->num_threads);
      parallel_for(n, std::max<int64_t>(1, kGrainCheap / std::max<int64_t>(1, slice)), [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k)
          copy_convert(narrow_view(y, int(dim), k, 1), narrow_view(x, int(dim), index_at(idx, k), 1), 1);
      });
    }
    return 0;
  }
};

// gather(self, index, dim): out[c] = self[c with c[dim] replaced by index[c]], c over index's
// shape (each dim of index no larger than self's but dim).
template <typename T>
struct GatherKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    int64_t dim = attr_int(a, op_attrs::gather::dim);
    if (dim < 0) dim += std::max(x.ndim, 1);
    const int64_t n = numel(y), size = x.ndim ? x.sizes[dim] : 1;
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(y.data);
    ThreadLimit limit(std::max(1, a->num_threads));
    if (x.ndim == 0 || y.ndim != x.ndim || idx.ndim != y.ndim) {  // a 0-D self, element by element
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = index_at(idx, k);
        if (i < 0 || i >= size) return index_error(a, i, dim, size);
      }
      for (int64_t k = 0; k < n; ++k) {
        int64_t rest = k, yo = 0;
        for (int d = y.ndim - 1; d >= 0; --d) {
          yo += rest % y.sizes[d] * y.strides[d];
          rest /= y.sizes[d];
        }
        yp[yo] = xp[0];
      }
      return 0;
    }
    // A row (along the last dim) at a time: its first element's offsets in y, index and self
    // (without the index's term) found once, the rest stepped to.
    const int last = y.ndim - 1;
    const int64_t len = y.sizes[last], rows = len ? n / len : 0, xs = dim == last ? 0 : x.strides[last];
    const bool i32 = idx.dtype == int32_t(DType::i32);
    auto row_start = [&](int64_t r, int64_t& yo, int64_t& io, int64_t& xo) {
      yo = io = xo = 0;
      for (int d = last - 1; d >= 0; --d) {
        const int64_t c = r % y.sizes[d];
        r /= y.sizes[d];
        yo += c * y.strides[d];
        io += c * idx.strides[d];
        if (d != dim) xo += c * x.strides[d];
      }
    };
    auto index = [&](int64_t at) {
      return i32 ? int64_t(static_cast<const int32_t*>(idx.data)[at]) : static_cast<const int64_t*>(idx.data)[at];
    };
    // Each row's indices are checked before the row is copied, in the same parallel pass (checked
    // serially first, a strided loop with a branch, they took 15% of [4096, 64] of [4096, 1024]);
    // a task stops at its first bad row, and the error names the first bad index of the lowest.
    const int64_t is = idx.strides[last];
    std::atomic<int64_t> bad_row{rows};
    const int64_t ys = y.strides[last], xd = x.strides[dim];
    // One row: false, copying nothing, when an index is outside [0, size) (compared unsigned).
    auto copy_row = [&](const auto* iv, T* yr, const T* xr) {
      uint64_t over = 0;
      for (int64_t j = 0; j < len; ++j) over |= uint64_t(uint64_t(iv[j * is]) >= uint64_t(size));
      if (over) return false;
      if (ys == 1 && is == 1 && xs == 0)  // gathering along the last dim, dense rows
        for (int64_t j = 0; j < len; ++j) yr[j] = xr[iv[j] * xd];
      else
        for (int64_t j = 0; j < len; ++j) yr[j * ys] = xr[j * xs + iv[j * is] * xd];
      return true;
    };
    parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, len)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t yo, io, xo;
        row_start(r, yo, io, xo);
        if (!(i32 ? copy_row(static_cast<const int32_t*>(idx.data) + io, yp + yo, xp + xo)
                  : copy_row(static_cast<const int64_t*>(idx.data) + io, yp + yo, xp + xo))) {
          int64_t seen = bad_row.load();
          while (r < seen && !bad_row.compare_exchange_weak(seen, r)) {
          }
          return;
        }
      }
    });
    if (const int64_t r = bad_row.load(); r < rows) {
      int64_t yo, io, xo;
      row_start(r, yo, io, xo);
      for (int64_t j = 0;; ++j)
        if (const int64_t i = index(io + j * is); i < 0 || i >= size) return index_error(a, i, dim, size);
    }
    return 0;
  }
};

// scatter's index checked against self's size along dim (the index's values in [0, size)); a
// contiguous index read straight through (index_at's divisions per element took most of
// scatter_add's time).
int check_scatter_index(const amber_kernel_args* a, const amber_tensor_view& idx, int64_t dim, int64_t size) {
  const int64_t n = numel(idx);
  if (is_contiguous(idx)) {
    const auto first_bad = [&](const auto* v) {
      for (int64_t k = 0; k < n; ++k)
        if (uint64_t(v[k]) >= uint64_t(size)) return index_error(a, int64_t(v[k]), dim, size);
      return 0;
    };
    return idx.dtype == int32_t(DType::i32) ? first_bad(static_cast<const int32_t*>(idx.data))
                                            : first_bad(static_cast<const int64_t*>(idx.data));
  }
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = index_at(idx, k);
    if (i < 0 || i >= size) return index_error(a, i, dim, size);
  }
  return 0;
}

// f(yo, so) for every element c of idx: yo the offset in y of c with c[dim] replaced by idx[c],
// so c's offset in src (0 without one). Elements that differ in a coordinate other than dim's
// reach different outputs, so groups of them (every coordinate but dim's and the last's alike)
// run on threads side by side; within a group, each output's elements come in index order.
template <typename F>
void walk_scatter(const amber_kernel_args* a, const amber_tensor_view& idx, const amber_tensor_view& y,
                  const amber_tensor_view* src, int64_t dim, F&& f) {
  const int64_t n = numel(idx);
  if (n == 0) return;
  if (idx.ndim == 0 || y.ndim != idx.ndim) {  // a 0-D index or self: element by element
    for (int64_t k = 0; k < n; ++k) {
      int64_t rest = k, yo = 0, so = 0;
      for (int d = idx.ndim - 1; d >= 0; --d) {
        const int64_t c = rest % idx.sizes[d];
        rest /= idx.sizes[d];
        if (d != dim) yo += c * y.strides[d];
        if (src) so += c * src->strides[d];
      }
      if (y.ndim) yo += index_at(idx, k) * y.strides[dim];
      f(yo, so);
    }
    return;
  }
  const int last = idx.ndim - 1;
  const int64_t len = idx.sizes[last], along = dim == last ? 1 : idx.sizes[dim], group = len * along;
  const int64_t ys = dim == last ? 0 : y.strides[last], is = idx.strides[last], ss = src ? src->strides[last] : 0;
  const int64_t it = dim == last ? 0 : idx.strides[dim], st = src && dim != last ? src->strides[dim] : 0;
  const bool i32 = idx.dtype == int32_t(DType::i32);
  ThreadLimit limit(std::max(1, a->num_threads));
  parallel_for(n / group, std::max<int64_t>(1, 16384 / group), [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      int64_t rest = g, yo = 0, io = 0, so = 0;
      for (int d = last - 1; d >= 0; --d) {
        if (d == dim) continue;
        const int64_t c = rest % idx.sizes[d];
        rest /= idx.sizes[d];
        yo += c * y.strides[d], io += c * idx.strides[d];
        if (src) so += c * src->strides[d];
      }
      for (int64_t t = 0; t < along; ++t, io += it, so += st)
        for (int64_t j = 0; j < len; ++j) {
          const int64_t at = io + j * is;
          const int64_t i =
              i32 ? int64_t(static_cast<const int32_t*>(idx.data)[at]) : static_cast<const int64_t*>(idx.data)[at];
          f(yo + j * ys + i * y.strides[dim], so + j * ss);
        }
    }
  });
}

// scatter(self, index, src, dim), scatter.value(self, index, dim, value) and
// scatter_add(self, index, src, dim): self copied, then for every c over index's shape
// out[c with c[dim] replaced by index[c]] = src[c] (or value, or += src[c]), in index order, so
// the last of repeated indices wins and sums accumulate in a fixed order.
enum class ScatterMode { src, value, add };
template <ScatterMode M>
struct Scatter {
  static constexpr int kDim = M == ScatterMode::value ? op_attrs::scatter_value::dim
                              : M == ScatterMode::add ? op_attrs::scatter_add::dim
                                                      : op_attrs::scatter::dim;
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
      int64_t dim = attr_int(a, kDim);
      if (dim < 0) dim += std::max(x.ndim, 1);
      if (check_scatter_index(a, idx, dim, x.ndim ? x.sizes[dim] : 1) != 0) return 1;
      copy_convert(y, x, a->num_threads);
      T value{};
      if constexpr (M == ScatterMode::value) value = attr_scalar<T>(a, op_attrs::scatter_value::value);
      const amber_tensor_view* src = M == ScatterMode::value ? nullptr : &a->inputs[2];
      T* yp = static_cast<T*>(y.data);
      walk_scatter(a, idx, y, src, dim, [&](int64_t yo, int64_t so) {
        if constexpr (M == ScatterMode::value) {
          yp[yo] = value;
        } else {
          const T v = static_cast<const T*>(src->data)[so];
          if constexpr (M == ScatterMode::add)
            yp[yo] = pw::wrap_add(yp[yo], v);  // integer sums wrap, as PyTorch's (no overflow UB)
          else
            yp[yo] = v;
        }
      });
      return 0;
    }
  };
};

// scatter_reduce(self, index, src, dim, reduce, include_self): self copied; without include_self
// each element scattered to starts at the reduction's identity instead; src's elements are folded
// in, in index order (kernels/scatter_reduce.h, shared with CUDA); mean then divides each element
// scattered to by the number folded in (one more with include_self), counted in the workspace.
// The setup asks mean's counts, a slot per element of y's span.
int scatter_reduce_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes =
      scatter_fold::reduce_of(a) == scatter_fold::kMean ? size_t(views::span(a->outputs[0])) * sizeof(int64_t) : 0;
  return 0;
}
template <typename T>
struct ScatterReduceKernel {
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::scatter_reduce;
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &src = a->inputs[2], &y = a->outputs[0];
    const scatter_fold::Reduce r = scatter_fold::reduce_of(a);
    const bool with_self = attr_bool(a, at::include_self);
    int64_t dim = attr_int(a, at::dim);
    if (dim < 0) dim += std::max(x.ndim, 1);
    if (check_scatter_index(a, idx, dim, x.ndim ? x.sizes[dim] : 1) != 0) return 1;
    copy_convert(y, x, a->num_threads);
    T* yp = static_cast<T*>(y.data);
    const T* sp = static_cast<const T*>(src.data);
    if (!with_self)
      walk_scatter(a, idx, y, &src, dim, [&](int64_t yo, int64_t) { yp[yo] = scatter_fold::identity<T>(r); });
    if (r != scatter_fold::kMean) {
      walk_scatter(a, idx, y, &src, dim,
                   [&](int64_t yo, int64_t so) { yp[yo] = scatter_fold::combine(r, yp[yo], sp[so]); });
      return 0;
    }
    const size_t span = size_t(views::span(y));
    CallScratch scratch(a);
    int64_t* count = scratch.take_array<int64_t>(span);
    std::fill_n(count, span, 0);
    walk_scatter(a, idx, y, &src, dim, [&](int64_t yo, int64_t so) {
      yp[yo] = scatter_fold::combine(r, yp[yo], sp[so]);
      ++count[yo];
    });
    for (size_t o = 0; o < span; ++o)
      if (count[o]) yp[o] = scatter_fold::mean_of(yp[o], count[o] + with_self);
    return 0;
  }
};

template <typename... Ts>
void register_scatter_reduce(TypeList<Ts...>) {
  (register_kernel("scatter_reduce", dtype_v<Ts>,
                   amber_kernel{&ScatterReduceKernel<Ts>::run, scatter_reduce_setup, nullptr, nullptr}),
   ...);
}

// cat(tensors, dim): inputs of any dtype, converted to the output's.
template <typename T>
struct CatKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    if (numel(y) == 0) return 0;
    int64_t dim = attr_int(a, op_attrs::cat::dim);
    if (dim < 0) dim += y.ndim;
    int64_t offset = 0;
    for (int i = 0; i < a->n_inputs; ++i) {
      const amber_tensor_view& x = a->inputs[i];
      if (x.ndim == 1 && x.sizes[0] == 0) continue;  // empty 1-D inputs are skipped, as PyTorch
      copy_convert(narrow_view(y, int(dim), offset, x.sizes[dim]), x, a->num_threads);
      offset += x.sizes[dim];
    }
    return 0;
  }
};

// stack(tensors, dim)
template <typename T>
struct StackKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    int64_t dim = attr_int(a, op_attrs::stack::dim);
    if (dim < 0) dim += y.ndim;
    for (int i = 0; i < a->n_inputs; ++i) copy_convert(select_view(y, int(dim), i), a->inputs[i], a->num_threads);
    return 0;
  }
};

// flip(self, dims): a copy from a view of self that walks the flipped dims backwards.
template <typename T>
struct FlipKernel {
  static int run(const amber_kernel_args* a) {
    bool empty = false;
    const amber_tensor_view src = views::flipped(a->inputs[0], a->attrs[op_attrs::flip::dims], sizeof(T), &empty);
    if (!empty) copy_convert(a->outputs[0], src, a->num_threads);
    return 0;
  }
};

// pad(self, pad, mode, value): each output element from its source in self (views.h's
// pad_source per dim, as pad_element), or value where constant padding has none.
template <typename T>
void pad_walk(const amber_kernel_args* a, const views::PadDims& p, views::PadMode mode, T value) {
  const T* xp = static_cast<const T*>(a->inputs[0].data);
  T* yp = static_cast<T*>(a->outputs[0].data);
  const int64_t n = numel(a->outputs[0]);
  if (n == 0) return;
  if (p.ndim == 0) {  // a 0-d tensor is its own only element
    yp[0] = xp[0];
    return;
  }
  // A row of the last dim at a time: the leading dims' offsets (and whether the row has a
  // source at all) once per row, then the row as runs whose sources are consecutive, the same
  // for every row (found once: a constant pad's three, a roll's two, a repeat's copies).
  // pad_element's divisions per element cost 10 ns here (4 ms for a 128 x 56 x 56 channels-last
  // pad); a source per element and divisions per row, a roll of [64, 256, 256] along its last
  // dim 2.6 ms at 2 threads (PyTorch 0.37), 0.33-0.54 as runs.
  const int last = p.ndim - 1;
  const int64_t w = p.ysizes[last], ys = p.ystrides[last], xs = p.xstrides[last];
  struct Run {
    int64_t j, len, src;  // outputs [j, j + len) from sources src...; src < 0: value
  };
  std::vector<Run> runs;
  for (int64_t j = 0; j < w; ++j) {
    int64_t src = 0;
    if (!views::pad_source(j, p.before[last], p.xsizes[last], mode, &src)) src = -1;
    if (!runs.empty() && (runs.back().src < 0 ? src < 0 : runs.back().src + runs.back().len == src))
      ++runs.back().len;
    else
      runs.push_back({j, 1, src});
  }
  ThreadLimit limit(std::max(1, a->num_threads));
  parallel_for(n / w, std::max<int64_t>(1, 4096 / w), [&](int64_t b, int64_t e) {
    // The leading dims' coordinates as an odometer, each dim's share of the offsets kept.
    int64_t idx[AMBER_MAX_DIMS], yd[AMBER_MAX_DIMS], xd[AMBER_MAX_DIMS];
    bool has[AMBER_MAX_DIMS];
    auto at = [&](int d) {
      int64_t src = 0;
      has[d] = views::pad_source(idx[d], p.before[d], p.xsizes[d], mode, &src);
      yd[d] = idx[d] * p.ystrides[d], xd[d] = src * p.xstrides[d];
    };
    int64_t rest = b;
    for (int d = last - 1; d >= 0; --d) {
      idx[d] = rest % p.ysizes[d];
      rest /= p.ysizes[d];
      at(d);
    }
    for (int64_t r = b; r < e; ++r) {
      int64_t yo = 0, xo = 0;
      bool inside = true;
      for (int d = 0; d < last; ++d) yo += yd[d], xo += xd[d], inside = inside && has[d];
      for (int d = last - 1; d >= 0; --d) {  // the next row's coordinates
        const bool carry = ++idx[d] == p.ysizes[d];
        if (carry) idx[d] = 0;
        at(d);
        if (!carry) break;
      }
      for (const Run& run : runs) {
        T* y = yp + yo + run.j * ys;
        if (!inside || run.src < 0) {
          for (int64_t i = 0; i < run.len; ++i) y[i * ys] = value;
        } else if (ys == 1 && xs == 1) {
          std::copy_n(xp + xo + run.src, run.len, y);
        } else {
          const T* x = xp + xo + run.src * xs;
          for (int64_t i = 0; i < run.len; ++i) y[i * ys] = x[i * xs];
        }
      }
    }
  });
}
template <typename T>
struct PadKernel {
  static int run(const amber_kernel_args* a) {
    const views::PadDims p = views::pad_dims(a->outputs[0], a->inputs[0], a->attrs[op_attrs::pad::pad]);
    pad_walk<T>(a, p, views::pad_mode(a), attr_scalar<T>(a, op_attrs::pad::value));
    return 0;
  }
};
// roll(self, shifts, dims): pad's walk with circular padding (views.h's roll_dims).
template <typename T>
struct RollKernel {
  static int run(const amber_kernel_args* a) {
    const views::PadDims p =
        views::roll_dims(a->outputs[0], a->inputs[0], a->attrs[op_attrs::roll::shifts], a->attrs[op_attrs::roll::dims]);
    pad_walk<T>(a, p, views::kPadCircular, T{});
    return 0;
  }
};
// repeat(self, repeats): pad's walk wrapping each output coordinate (views.h's repeat_dims).
template <typename T>
struct RepeatKernel {
  static int run(const amber_kernel_args* a) {
    pad_walk<T>(a, views::repeat_dims(a->outputs[0], a->inputs[0]), views::kPadCircular, T{});
    return 0;
  }
};

// tril/triu(self, diagonal): each matrix of the last two dims keeps element (i, j) where
// j - i <= diagonal (tril) or >= diagonal (triu); every other element is zero.
template <bool Lower>
struct Triangle {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::tril::diagonal == op_attrs::triu::diagonal);
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      const int nd = x.ndim;
      const int64_t diag = attr_int(a, op_attrs::tril::diagonal);
      const int64_t rows = x.sizes[nd - 2], cols = x.sizes[nd - 1];
      int64_t batches = 1;
      for (int d = 0; d < nd - 2; ++d) batches *= x.sizes[d];
      if (batches == 0 || rows == 0 || cols == 0) return 0;
      const T* xp = static_cast<const T*>(x.data);
      T* yp = static_cast<T*>(y.data);
      ThreadLimit limit(a->num_threads);
      parallel_for(batches * rows, std::max<int64_t>(1, kGrainCheap / cols), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t i = r % rows;
          int64_t xo = i * x.strides[nd - 2], yo = i * y.strides[nd - 2];
          for (int64_t rest = r / rows, d = nd - 3; d >= 0; --d) {  // the batch dims
            const int64_t k = rest % x.sizes[d];
            rest /= x.sizes[d];
            xo += k * x.strides[d];
            yo += k * y.strides[d];
          }
          const int64_t xs = x.strides[nd - 1], ys = y.strides[nd - 1];
          for (int64_t j = 0; j < cols; ++j) {
            const bool keep = Lower ? j - i <= diag : j - i >= diag;
            yp[yo + j * ys] = keep ? xp[xo + j * xs] : T{};
          }
        }
      });
      return 0;
    }
  };
};

AMBER_CPU_KERNELS(index) {
  register_typed<FlipKernel>(ctypes::all{}, "flip");
  register_typed<GatherKernel>(ctypes::all{}, "gather");
  register_typed<Scatter<ScatterMode::src>::Kernel>(ctypes::all{}, "scatter");
  register_typed<Scatter<ScatterMode::value>::Kernel>(ctypes::all{}, "scatter.value");
  register_typed<Scatter<ScatterMode::add>::Kernel>(TypeList<float, double, int64_t, int32_t>{}, "scatter_add");
  register_scatter_reduce(TypeList<float, double, int64_t, int32_t>{});
  register_typed<PadKernel>(ctypes::all{}, "pad");
  register_typed<RollKernel>(ctypes::all{}, "roll");
  register_typed<RepeatKernel>(ctypes::all{}, "repeat");
  register_typed<Triangle<true>::Kernel>(ctypes::all{}, "tril");
  register_typed<Triangle<false>::Kernel>(ctypes::all{}, "triu");
  register_typed<EmbeddingKernel>(ctypes::all{}, "embedding");
  register_typed<IndexSelectKernel>(ctypes::all{}, "index_select");
  register_typed<CatKernel>(ctypes::all{}, "cat");
  register_typed<StackKernel>(ctypes::all{}, "stack");
}

}  // namespace
}  // namespace amber::cpu
