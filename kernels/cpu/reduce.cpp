// CPU kernels for reductions over any set of dims (sum, prod, mean, amax, amin, argmax, any, all),
// cumsum and topk (scan.h's running sum and order per line). Floats accumulate in double, integers
// in int64 (runs of 16 or more: sixteen partial sums or products in a fixed order, vectorised);
// amax/amin/argmax propagate NaN as PyTorch. Work splits over output elements, or over the
// reduced elements (partials merged in a fixed order) when outputs are too few.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/row_ops.h"
#include "amber/kernels/scan.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// One side of a reduction: dims (outermost first) with input and output strides.
struct DimSet {
  int n = 0;
  int64_t size[AMBER_MAX_DIMS];
  int64_t in_stride[AMBER_MAX_DIMS];
  int64_t out_stride[AMBER_MAX_DIMS];
  int64_t count() const {
    int64_t c = 1;
    for (int i = 0; i < n; ++i) c *= size[i];
    return c;
  }
  // Appends a dim, merged into the previous one when both strides continue it (the flat
  // row-major index stays the same).
  void push(int64_t s, int64_t is, int64_t os) {
    if (s == 1) return;
    if (n > 0 && in_stride[n - 1] == s * is && out_stride[n - 1] == s * os) {
      size[n - 1] *= s;
      in_stride[n - 1] = is;
      out_stride[n - 1] = os;
      return;
    }
    size[n] = s;
    in_stride[n] = is;
    out_stride[n] = os;
    ++n;
  }
  // Input and output offsets of flat (row-major) index k.
  void offsets(int64_t k, int64_t& in_off, int64_t& out_off) const {
    in_off = out_off = 0;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t i = k % size[d];
      k /= size[d];
      in_off += i * in_stride[d];
      out_off += i * out_stride[d];
    }
  }
};

struct Plan {
  DimSet kept, red;
};

// mask: reduced dims of the input. Output dims are the kept ones (with size-1 dims in
// place of reduced ones when keepdim).
Plan plan(const amber_tensor_view& in, const amber_tensor_view& out, uint32_t mask, bool keepdim) {
  Plan p;
  int od = 0;
  for (int d = 0; d < in.ndim; ++d) {
    if (mask & (1u << d)) {
      p.red.push(in.sizes[d], in.strides[d], 0);
      if (keepdim) ++od;
    } else {
      p.kept.push(in.sizes[d], in.strides[d], out.strides[od]);
      ++od;
    }
  }
  return p;
}

uint32_t dims_mask(const amber_kernel_args* a, int attr, int ndim) {
  if (ndim == 0) return 0u;  // a scalar's dims 0 and -1 (inference accepted them) reduce nothing
  if (attr_none(a, attr) || a->attrs[attr].count == 0) return (1u << ndim) - 1;
  uint32_t mask = 0;
  for (int64_t d : attr_ints(a, attr)) mask |= 1u << (d < 0 ? d + ndim : d);
  return mask;
}

// ---- Contiguous runs, compiled per ISA (IsaVariants): p[0] is the run, ctx the accumulator ----
template <typename T, typename Acc>
struct SumRun {
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    Acc& acc = *static_cast<Acc*>(const_cast<void*>(ctx));
    acc = pw::wrap_add(acc, row_sum<T, Acc>(reinterpret_cast<const T*>(p[0]), n));
  }
};
// Max (or min) of a contiguous run into *ctx; NaN propagates. Four vectors of running extrema
// (elementwise selects, where one running value would be a chain), then their lanes in order.
template <typename T, bool Max>
struct ExtremumRun {
  typedef T V __attribute__((vector_size(16)));
  static constexpr int64_t kLanes = 16 / sizeof(T);
  template <typename U>
  static U better(U x, U best) {
    return Max ? (x > best ? x : best) : (x < best ? x : best);
  }
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    const T* x = reinterpret_cast<const T*>(p[0]);
    T& out = *static_cast<T*>(const_cast<void*>(ctx));
    T best = out;
    bool nan = false;
    int64_t i = 0;
    if (n >= 4 * kLanes) {
      V acc[4], nans[4];  // nans: a NaN the lane met, else 0
      for (int k = 0; k < 4; ++k) acc[k] = V{} + best, nans[k] = V{};
      for (; i + 4 * kLanes <= n; i += 4 * kLanes)
        for (int k = 0; k < 4; ++k) {
          V v;
          std::memcpy(&v, x + i + k * kLanes, sizeof v);
          if constexpr (std::is_floating_point_v<T>) nans[k] = v != v ? v : nans[k];
          acc[k] = better(v, acc[k]);
        }
      for (int k = 0; k < 4; ++k)
        for (int64_t l = 0; l < kLanes; ++l) {
          nan |= nans[k][l] != nans[k][l];
          best = better(T(acc[k][l]), best);
        }
    }
    for (; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>) nan |= x[i] != x[i];
      best = better(x[i], best);
    }
    if constexpr (std::is_floating_point_v<T>)
      out = nan ? std::numeric_limits<T>::quiet_NaN() : best;
    else
      out = best;
  }
};
template <typename Run>
void run_isa(const void* data, int64_t n, void* acc) {
  static const InnerFn fn = IsaVariants<Run>::pick();
  char* p[1] = {static_cast<char*>(const_cast<void*>(data))};
  fn(p, nullptr, n, acc);
}

// ---- Reducers: Acc state, fold over values (k is the flat reduced index), merge ----
template <typename T>
struct SumReducer {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  static constexpr bool kRows = true;  // reduce() may add whole rows of outputs (sum_rows)
  static Acc init() { return 0; }
  // Contiguous runs of 16 or more: sixteen partial sums in a fixed order, vectorised per ISA.
  static void fold_run(Acc& acc, const T* p, int64_t n, int64_t stride, int64_t) {
    if (stride == 1 && n >= 16) {
      run_isa<SumRun<T, Acc>>(p, n, &acc);
    } else {
      for (int64_t i = 0; i < n; ++i) acc = pw::wrap_add(acc, Acc(p[i * stride]));
    }
  }
  static void merge(Acc& a, const Acc& b) { a = pw::wrap_add(a, b); }
};

// Products: floats in double, integers in i64 wrapping on overflow (as PyTorch's).
template <typename Acc>
Acc times(Acc a, Acc b) {
  if constexpr (std::is_floating_point_v<Acc>)
    return a * b;
  else
    return Acc(uint64_t(a) * uint64_t(b));
}
// The product of a contiguous run into *ctx in sum's order: sixteen partial products over
// elements i + j (vectorised; one chain of dependent multiplies ran 12x slower than PyTorch's
// float lanes), then halved in halve_sum's tree.
template <typename T, typename Acc>
struct ProdRun {
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    const T* x = reinterpret_cast<const T*>(p[0]);
    Acc part[16];
    for (Acc& v : part) v = 1;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) part[j] = times(part[j], Acc(x[i + j]));
    for (int j = 0; i < n; ++i, ++j) part[j] = times(part[j], Acc(x[i]));
    Acc& acc = *static_cast<Acc*>(const_cast<void*>(ctx));
    acc = times(acc, halve<16>(part, times<Acc>));
  }
};
template <typename T>
struct ProdReducer {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  static Acc init() { return 1; }
  static void fold_run(Acc& acc, const T* p, int64_t n, int64_t stride, int64_t) {
    if (stride == 1 && n >= 16)
      run_isa<ProdRun<T, Acc>>(p, n, &acc);
    else
      for (int64_t i = 0; i < n; ++i) acc = times(acc, Acc(p[i * stride]));
  }
  static void merge(Acc& a, const Acc& b) { a = times(a, b); }
};

template <typename T, bool Max>
struct ExtremumReducer {
  struct Acc {
    T v;
    bool set;
  };
  static Acc init() { return {T(0), false}; }
  static bool nan(T x) {
    if constexpr (std::is_floating_point_v<T>)
      return std::isnan(x);
    else
      return false;
  }
  // The better of a and b; NaN wins (propagates).
  static T pick(T a, T b) {
    if (nan(a)) return a;
    if (nan(b)) return b;
    return Max ? (b > a ? b : a) : (b < a ? b : a);
  }
  static void fold_run(Acc& acc, const T* p, int64_t n, int64_t stride, int64_t) {
    if (n == 0) return;
    T v = acc.set ? acc.v : p[0];
    if (stride == 1 && n >= 16 && !nan(v)) {
      run_isa<ExtremumRun<T, Max>>(p, n, &v);
    } else {
      for (int64_t i = 0; i < n; ++i) v = pick(v, p[i * stride]);
    }
    acc = {v, true};
  }
  static void merge(Acc& a, const Acc& b) {
    if (!b.set) return;
    a = a.set ? Acc{pick(a.v, b.v), true} : b;
  }
};

template <typename T, bool Max>
struct ArgExtremumReducer {
  struct Acc {
    T v;
    int64_t index;  // -1: empty
  };
  static Acc init() { return {T(0), -1}; }
  static bool nan(T x) {
    if constexpr (std::is_floating_point_v<T>)
      return std::isnan(x);
    else
      return false;
  }
  // b (later) replaces a only when strictly better; the first NaN is the extremum.
  static bool better(T b, T a) { return !nan(a) && (nan(b) || (Max ? b > a : b < a)); }
  static void fold_run(Acc& acc, const T* p, int64_t n, int64_t stride, int64_t k0) {
    for (int64_t i = 0; i < n; ++i) {
      const T x = p[i * stride];
      if (acc.index < 0 || better(x, acc.v)) acc = {x, k0 + i};
    }
  }
  static void merge(Acc& a, const Acc& b) {  // b covers later indices than a
    if (b.index >= 0 && (a.index < 0 || better(b.v, a.v))) a = b;
  }
};

// Folds the reduced elements [b, e) (flat, row-major over red) starting at x.
template <typename R, typename T>
void fold_range(typename R::Acc& acc, const T* x, const DimSet& red, int64_t b, int64_t e) {
  if (red.n == 0) {
    if (b < e) R::fold_run(acc, x, 1, 1, 0);
    return;
  }
  if (red.n == 1) {  // one run: no index arithmetic
    if (b < e) R::fold_run(acc, x + b * red.in_stride[0], e - b, red.in_stride[0], b);
    return;
  }
  const int inner = red.n - 1;
  const int64_t isz = red.size[inner], ist = red.in_stride[inner];
  for (int64_t k = b; k < e;) {
    int64_t off, unused;
    red.offsets(k, off, unused);
    const int64_t len = std::min(isz - k % isz, e - k);
    R::fold_run(acc, x + off, len, ist, k);
    k += len;
  }
}

// Column sums of rows, compiled per ISA: p[0] is column 0 of row 0, s[0] the row stride and
// s[1] the number of columns w (at most kRowCols), n the rows; ctx receives Acc[w]. Each
// column is added in row_sum's order (sixteen partials over rows i + j, then halved); the
// partials stay in L1 and consecutive rows add into different ones, so no chain of dependent
// additions holds the loop up.
constexpr int64_t kRowCols = 16;
constexpr int64_t kRowBlock = 256;
template <typename T, typename Acc>
struct SumRowsRun {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* ctx) {
    const T* x = reinterpret_cast<const T*>(p[0]);
    const int64_t rs = s[0], w = s[1];
    Acc* out = static_cast<Acc*>(const_cast<void*>(ctx));
    Acc part[16][kRowCols] = {};
    if (w == kRowCols)
      add_rows<kRowCols>(part, x, rs, n, kRowCols);
    else
      add_rows<0>(part, x, rs, n, w);
    halve_sum_columns(part, w);
    for (int64_t c = 0; c < w; ++c) out[c] = part[0][c];
  }
  // W > 0: w is W (a fixed trip the compiler vectorises); 0: any w.
  template <int64_t W>
  static void add_rows(Acc (&part)[16][kRowCols], const T* x, int64_t rs, int64_t n, int64_t w) {
    const int64_t cols = W > 0 ? W : w;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) {
        const T* row = x + (i + j) * rs;
        for (int64_t c = 0; c < cols; ++c) part[j][c] = pw::wrap_add(part[j][c], Acc(row[c]));
      }
    for (int j = 0; i < n; ++i, ++j) {
      const T* row = x + i * rs;
      for (int64_t c = 0; c < cols; ++c) part[j][c] = pw::wrap_add(part[j][c], Acc(row[c]));
    }
  }
};

// Sums where the kept dim is contiguous and each output's run strides across rows of it
// (mean over H and W of a channels-last [N, C, H, W]: the pooling of squeeze-excitation
// blocks). Tasks are blocks of kRowBlock rows by 16 columns (one cache line of f32), in that
// order, so a thread reads whole lines of a few consecutive rows; the blocks' sums are added
// in row order. The split depends on the shape only: the same bits for any thread count.
template <typename R, typename T, typename Out, typename Finish>
void sum_rows(const Plan& p, const T* x, Out* y, Finish finish) {
  using Acc = typename R::Acc;
  static const InnerFn fn = IsaVariants<SumRowsRun<T, Acc>>::pick();
  const int64_t m = p.kept.count(), l = p.red.count(), rs = p.red.in_stride[0], os = p.kept.out_stride[0];
  const int64_t groups = (m + kRowCols - 1) / kRowCols, blocks = (l + kRowBlock - 1) / kRowBlock;
  std::vector<Acc> part(static_cast<size_t>(blocks * groups * kRowCols));
  parallel_for(blocks * groups, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t r0 = t / groups * kRowBlock, c0 = t % groups * kRowCols;
      const int64_t s[2] = {rs, std::min(kRowCols, m - c0)};
      char* ptr[1] = {reinterpret_cast<char*>(const_cast<T*>(x + r0 * rs + c0))};
      fn(ptr, s, std::min(kRowBlock, l - r0), part.data() + t * kRowCols);
    }
  });
  for (int64_t c = 0; c < m; ++c) {
    const int64_t g = c / kRowCols, j = c % kRowCols;
    Acc acc = part[size_t(g * kRowCols + j)];
    for (int64_t blk = 1; blk < blocks; ++blk) acc = pw::wrap_add(acc, part[size_t((blk * groups + g) * kRowCols + j)]);
    finish(acc, y + c * os);
  }
}

// Runs reducer R over every output; finish(acc, out_ptr) writes one result.
template <typename R, typename T, typename Out, typename Finish>
void reduce(const amber_kernel_args* a, uint32_t mask, bool keepdim, Finish finish) {
  const amber_tensor_view& in = a->inputs[0];
  const Plan p = plan(in, a->outputs[0], mask, keepdim);
  const T* x = static_cast<const T*>(in.data);
  Out* y = static_cast<Out*>(a->outputs[0].data);
  const int64_t m = p.kept.count(), l = p.red.count();
  if (l == 0) {  // nothing reduced (an empty input, whose data may be null): each output is the identity
    for (int64_t i = 0; i < m; ++i) {
      int64_t io, oo;
      p.kept.offsets(i, io, oo);
      finish(R::init(), y + oo);
    }
    return;
  }
  const int threads = std::max(1, a->num_threads);
  ThreadLimit limit(threads);
  if constexpr (requires { R::kRows; }) {
    if (p.kept.n == 1 && p.red.n == 1 && p.kept.in_stride[0] == 1 && p.red.in_stride[0] >= m && m >= 8) {
      sum_rows<R, T, Out>(p, x, y, finish);
      return;
    }
  }
  if (m >= threads || l < 32768) {
    parallel_for(m, std::max<int64_t>(1, 32768 / std::max<int64_t>(l, 1)), [&](int64_t b, int64_t e) {
      if (p.kept.n == 1 && p.red.n == 1) {  // one kept dim, one run per output: a plain loop
        const int64_t is = p.kept.in_stride[0], os = p.kept.out_stride[0], rs = p.red.in_stride[0];
        for (int64_t i = b; i < e; ++i) {
          typename R::Acc acc = R::init();
          R::fold_run(acc, x + i * is, l, rs, 0);
          finish(acc, y + i * os);
        }
        return;
      }
      // Walk the kept dims with an index counter (no divisions per output).
      int64_t idx[AMBER_MAX_DIMS] = {}, io = 0, oo = 0;
      p.kept.offsets(b, io, oo);
      {
        int64_t k = b;
        for (int d = p.kept.n - 1; d >= 0; --d) {
          idx[d] = k % p.kept.size[d];
          k /= p.kept.size[d];
        }
      }
      for (int64_t i = b; i < e; ++i) {
        typename R::Acc acc = R::init();
        if (p.red.n == 1)  // one run per output (the common case): no call per output
          R::fold_run(acc, x + io, l, p.red.in_stride[0], 0);
        else
          fold_range<R>(acc, x + io, p.red, 0, l);
        finish(acc, y + oo);
        for (int d = p.kept.n - 1; d >= 0; --d) {
          io += p.kept.in_stride[d];
          oo += p.kept.out_stride[d];
          if (++idx[d] < p.kept.size[d]) break;
          io -= p.kept.in_stride[d] * p.kept.size[d];
          oo -= p.kept.out_stride[d] * p.kept.size[d];
          idx[d] = 0;
        }
      }
    });
    return;
  }
  // Few outputs, long reductions: per-thread partials over the reduced range.
  const int64_t chunks = std::min<int64_t>(threads, l / 16384 + 1);
  std::vector<typename R::Acc> partial(static_cast<size_t>(chunks));
  for (int64_t i = 0; i < m; ++i) {
    int64_t io, oo;
    p.kept.offsets(i, io, oo);
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        partial[size_t(c)] = R::init();
        fold_range<R>(partial[size_t(c)], x + io, p.red, l * c / chunks, l * (c + 1) / chunks);
      }
    });
    typename R::Acc acc = partial[0];
    for (int64_t c = 1; c < chunks; ++c) R::merge(acc, partial[size_t(c)]);
    finish(acc, y + oo);
  }
}

// sum(self, dim, keepdim, dtype)
template <typename T>
struct SumKernel {
  static int run(const amber_kernel_args* a) {
    const uint32_t mask = dims_mask(a, op_attrs::sum::dim, a->inputs[0].ndim);
    reduce<SumReducer<T>, T, T>(a, mask, attr_bool(a, op_attrs::sum::keepdim), [](auto acc, T* out) { *out = T(acc); });
    return 0;
  }
};

// prod(self, dim, keepdim, dtype)
template <typename T>
struct ProdKernel {
  static int run(const amber_kernel_args* a) {
    const uint32_t mask = dims_mask(a, op_attrs::prod::dim, a->inputs[0].ndim);
    reduce<ProdReducer<T>, T, T>(a, mask, attr_bool(a, op_attrs::prod::keepdim),
                                 [](auto acc, T* out) { *out = T(acc); });
    return 0;
  }
};

// mean(self, dim, keepdim, dtype): the sum divided by the number of reduced elements.
template <typename T>
struct MeanKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& in = a->inputs[0];
    const uint32_t mask = dims_mask(a, op_attrs::mean::dim, in.ndim);
    int64_t count = 1;
    for (int d = 0; d < in.ndim; ++d)
      if (mask & (1u << d)) count *= in.sizes[d];
    const double n = double(count);
    reduce<SumReducer<T>, T, T>(a, mask, attr_bool(a, op_attrs::mean::keepdim),
                                [n](double acc, T* out) { *out = T(acc / n); });
    return 0;
  }
};

template <bool Max>
struct Extremum {
  template <typename T>
  struct Kernel {  // amax/amin(self, dim, keepdim)
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::amax::dim == op_attrs::amin::dim && op_attrs::amax::keepdim == op_attrs::amin::keepdim);
      const uint32_t mask = dims_mask(a, op_attrs::amax::dim, a->inputs[0].ndim);
      reduce<ExtremumReducer<T, Max>, T, T>(a, mask, attr_bool(a, op_attrs::amax::keepdim),
                                            [](auto acc, T* out) { *out = acc.v; });
      return 0;
    }
  };
};

// argmax/argmin(self, dim, keepdim): None reduces over the flattened tensor.
template <bool Max>
struct ArgExtremum {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::argmax::dim == op_attrs::argmin::dim &&
                    op_attrs::argmax::keepdim == op_attrs::argmin::keepdim);
      const int nd = a->inputs[0].ndim;
      uint32_t mask;
      bool keepdim = attr_bool(a, op_attrs::argmax::keepdim);
      if (attr_none(a, op_attrs::argmax::dim)) {
        mask = nd == 0 ? 0u : (1u << nd) - 1;
      } else {
        const int64_t d = attr_int(a, op_attrs::argmax::dim);
        mask = nd == 0 ? 0u : 1u << (d < 0 ? d + nd : d);
      }
      reduce<ArgExtremumReducer<T, Max>, T, int64_t>(
          a, mask, keepdim, [](auto acc, int64_t* out) { *out = std::max<int64_t>(acc.index, 0); });
      return 0;
    }
  };
};

// any/all(self, dim, keepdim): whether any (every) element is nonzero; stops at the first
// element that decides.
template <typename T, bool Any>
struct AnyAllReducer {
  struct Acc {  // not a bare bool: partial results live in a std::vector<Acc>
    bool v;
  };
  static Acc init() { return {!Any}; }
  static void fold_run(Acc& acc, const T* p, int64_t n, int64_t stride, int64_t) {
    for (int64_t i = 0; i < n && acc.v != Any; ++i)
      if ((p[i * stride] != T(0)) == Any) acc.v = Any;
  }
  static void merge(Acc& a, const Acc& b) { a.v = Any ? (a.v || b.v) : (a.v && b.v); }
};
template <bool Any>
struct AnyAll {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::any::dim == op_attrs::all::dim && op_attrs::any::keepdim == op_attrs::all::keepdim);
      const uint32_t mask = dims_mask(a, op_attrs::any::dim, a->inputs[0].ndim);
      reduce<AnyAllReducer<T, Any>, T, bool>(a, mask, attr_bool(a, op_attrs::any::keepdim),
                                             [](auto acc, bool* out) { *out = acc.v; });
      return 0;
    }
  };
};

// topk(self, k, dim, largest, sorted): per line, each element's key, its rank (scan.h's topk_rank,
// complemented: ascending puts topk_before's first first) then its index, ordered as integers: for
// k up to n / 64 one pass keeping a heap of the first k (select), else a selection of the first k
// then their sort (as ATen picks). 32-bit ranks and indices pack into one 64-bit key; for k from
// n / 8 on a line of 1024 or more, those keys go through a stable radix sort of their ranks
// instead (a sampler's sort of its logits: O(n)). The values are read back from self. Lines split
// over threads.
template <typename T>
struct TopkKernel {
  using U = scan::topk_rank_t<T>;
  // Puts the k first keys of the line first, in order; scratch: the radix sort's.
  template <typename Key>
  static void order(std::vector<Key>& keys, int64_t k, std::vector<Key>& scratch) {
    const auto first = keys.begin(), kth = first + k;
    if constexpr (std::is_same_v<Key, uint64_t>) {
      if (k * 8 >= int64_t(keys.size()) && keys.size() >= 1024) return radix_sort(keys, scratch);
    }
    if (kth != keys.end()) std::nth_element(first, kth - 1, keys.end());
    std::sort(first, kth);
  }
  // The k first keys of the line's n elements, in order, into keys: a heap of the first so
  // far, in one pass (std::partial_sort's selection, without a key for every element). A later
  // element joins only if its rank is smaller (its index is larger than any in the heap), so a
  // block of elements none of which compares past the heap's last value (t) is passed over
  // unranked (a NaN compares past anything, and goes to its rank).
  template <typename Key>
  static void select(const T* x, int64_t xs, int64_t n, int64_t k, bool largest, std::vector<Key>& keys) {
    keys.resize(size_t(k));
    for (int64_t i = 0; i < k; ++i) key_of(keys[size_t(i)], x, xs, i, largest);
    std::make_heap(keys.begin(), keys.end());
    T t = x[index_of(keys.front()) * xs];
    auto offer = [&](int64_t i) {
      Key key;
      key_of(key, x, xs, i, largest);
      if (key < keys.front()) {
        std::pop_heap(keys.begin(), keys.end());
        keys.back() = key;
        std::push_heap(keys.begin(), keys.end());
        t = x[index_of(keys.front()) * xs];
      }
    };
    constexpr int64_t kBlock = 16;
    auto past = [&](const T* p, int64_t stride) {  // how many of a block's elements may join
      int count = 0;
      if (largest) {
        for (int64_t l = 0; l < kBlock; ++l) count += !(p[l * stride] <= t);
      } else {
        for (int64_t l = 0; l < kBlock; ++l) count += !(p[l * stride] >= t);
      }
      return count;
    };
    int64_t i = k;
    for (; i + kBlock <= n; i += kBlock)
      if (xs == 1 ? past(x + i, 1) : past(x + i * xs, xs))
        for (int64_t l = 0; l < kBlock; ++l) offer(i + l);
    for (; i < n; ++i) offer(i);
    std::sort_heap(keys.begin(), keys.end());
  }
  // Packed keys in index order sorted by their ranks (the high 32 bits), eight bits a pass, stably:
  // equal ranks keep index order, as the whole keys' sort would put them. A pass whose digit is
  // the same for every key is skipped.
  static void radix_sort(std::vector<uint64_t>& keys, std::vector<uint64_t>& scratch) {
    scratch.resize(keys.size());
    for (int shift = 32; shift < 64; shift += 8) {
      size_t at[256] = {};
      for (uint64_t key : keys) ++at[key >> shift & 255];
      if (at[keys[0] >> shift & 255] == keys.size()) continue;
      size_t sum = 0;
      for (size_t& c : at) sum += std::exchange(c, sum);
      for (uint64_t key : keys) scratch[at[key >> shift & 255]++] = key;
      keys.swap(scratch);
    }
  }
  // A key from its rank and index, and the index back: packed, or a (rank, index) pair.
  static void make_key(uint64_t& key, U rank, int64_t i) { key = uint64_t(rank) << 32 | uint64_t(i); }
  static void make_key(std::pair<U, int64_t>& key, U rank, int64_t i) { key = {rank, i}; }
  // Element i's key (line x, element stride xs).
  template <typename Key>
  static void key_of(Key& key, const T* x, int64_t xs, int64_t i, bool largest) {
    make_key(key, U(~scan::topk_rank(x[i * xs], largest)), i);
  }
  static int64_t index_of(uint64_t key) { return int64_t(key & 0xffffffffu); }
  static int64_t index_of(const std::pair<U, int64_t>& key) { return key.second; }
  template <typename Key>
  static void line(const T* x, int64_t xs, int64_t n, int64_t k, bool largest, std::vector<Key>& keys,
                   std::vector<Key>& scratch, T* v, int64_t vs, int64_t* ix, int64_t is) {
    if (k * 64 <= n) {
      select(x, xs, n, k, largest, keys);
    } else {
      keys.resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) key_of(keys[size_t(i)], x, xs, i, largest);
      order(keys, k, scratch);
    }
    for (int64_t i = 0; i < k; ++i) {
      const int64_t at = index_of(keys[size_t(i)]);
      v[i * vs] = x[at * xs];
      ix[i * is] = at;
    }
  }
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &v = a->outputs[0], &ix = a->outputs[1];
    const int64_t k = attr_int(a, op_attrs::topk::k);
    const bool largest = attr_bool(a, op_attrs::topk::largest);
    if (k == 0) return 0;
    if (x.ndim == 0) {
      *static_cast<T*>(v.data) = *static_cast<const T*>(x.data);
      *static_cast<int64_t*>(ix.data) = 0;
      return 0;
    }
    int dim = int(attr_int(a, op_attrs::topk::dim));
    if (dim < 0) dim += x.ndim;
    const int64_t n = x.sizes[dim], lines = numel(v) / k;
    const scan::Lines wv = scan::lines_along(v, x, dim), wi = scan::lines_along(ix, x, dim);
    const T* xp = static_cast<const T*>(x.data);
    T* vp = static_cast<T*>(v.data);
    int64_t* ip = static_cast<int64_t*>(ix.data);
    const bool packed = sizeof(U) == 4 && n <= (int64_t(1) << 32);
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(lines, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
      std::vector<uint64_t> packed_keys, packed_scratch;
      std::vector<std::pair<U, int64_t>> pairs, pairs_scratch;
      for (int64_t l = b; l < e; ++l) {
        int64_t xo, vo, io, unused;
        scan::line_start(wv, l, &xo, &vo);
        scan::line_start(wi, l, &unused, &io);
        const int64_t xs = x.strides[dim], vs = v.strides[dim], is = ix.strides[dim];
        if (packed)
          line(xp + xo, xs, n, k, largest, packed_keys, packed_scratch, vp + vo, vs, ip + io, is);
        else
          line(xp + xo, xs, n, k, largest, pairs, pairs_scratch, vp + vo, vs, ip + io, is);
      }
    });
    return 0;
  }
};

// cumsum(self, dim, dtype): self already in the output's dtype (inference casts it).
template <typename T>
struct CumsumKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
    if (x.ndim == 0) {
      *static_cast<T*>(y.data) = *static_cast<const T*>(x.data);
      return 0;
    }
    int dim = int(attr_int(a, op_attrs::cumsum::dim));
    if (dim < 0) dim += x.ndim;
    const int64_t n = x.sizes[dim];
    if (n == 0) return 0;
    const scan::Lines w = scan::lines_along(y, x, dim);
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(y.data);
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(numel(y) / n, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        int64_t xo, yo;
        scan::line_start(w, l, &xo, &yo);
        scan::cumsum_line(xp + xo, x.strides[dim], yp + yo, y.strides[dim], n);
      }
    });
    return 0;
  }
};

AMBER_CPU_KERNELS(reduce) {
  register_typed<CumsumKernel, float, double, int64_t>("cumsum");
  register_typed<TopkKernel, float, double, int64_t, int32_t, int16_t, int8_t, uint8_t>("topk");
  register_typed<AnyAll<true>::Kernel, float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, bool>("any");
  register_typed<AnyAll<false>::Kernel, float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, bool>("all");
  register_typed<SumKernel, float, double, int64_t>("sum");
  register_typed<ProdKernel, float, double, int64_t>("prod");
  register_typed<MeanKernel>(ctypes::floating{}, "mean");
  register_typed<Extremum<true>::Kernel>(ctypes::numeric{}, "amax");
  register_typed<Extremum<false>::Kernel>(ctypes::numeric{}, "amin");
  register_typed<ArgExtremum<true>::Kernel>(ctypes::numeric{}, "argmax");
  register_typed<ArgExtremum<false>::Kernel>(ctypes::numeric{}, "argmin");
}

}  // namespace
}  // namespace amber::cpu
