// The CUDA kernels along rows, launched: reductions, softmax/log_softmax and layer_norm (their
// device code in row_kernels.cuh: a block a row, a fixed-order tree, floats in double and integers
// in int64 as on the CPU, NaN first as PyTorch, 16-bit elements widened and each result rounded
// once), any/all, cumsum (there too, a thread or a block a line), topk (a block or a thread a
// line, a long line's parts a block each) and inference batch_norm (its formula in
// batch_norm_kernels.cuh).

#include <algorithm>
#include <cstring>

#include "amber/kernels/cuda/batch_norm_kernels.cuh"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/row_kernels.cuh"
#include "amber/kernels/pointwise_math.h"
#include "amber/kernels/scan.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace rows;  // Rows, the threads a block, the kernels a row (row_kernels.cuh)

// The dims a reduction's int[] attribute names (none or empty: all).
uint32_t dims_mask(const amber_attr& at, int ndim) {
  if (at.kind != AMBER_ATTR_INTS || at.count == 0) return ndim == 0 ? 0 : (1u << ndim) - 1;
  uint32_t m = 0;
  for (int i = 0; i < at.count; ++i) {
    int64_t d = at.ints[i];
    if (d < 0) d += ndim;
    if (d >= 0 && d < ndim) m |= 1u << d;
  }
  return m;
}

unsigned blocks_for(int64_t rows) { return unsigned(rows < 65535 ? (rows > 0 ? rows : 1) : 65535); }

template <typename T, Fold F>
int run_fold(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
  static_assert(op_attrs::sum::dim == op_attrs::mean::dim && op_attrs::sum::dim == op_attrs::prod::dim);
  const Rows r = rows_of(x, y, dims_mask(a->attrs[op_attrs::sum::dim], x.ndim), false);
  if (r.rows == 0) return 0;
  DeviceScope scope(a->device);
  enqueue(a, &fold_kernel<T, F>, dim3(blocks_for(r.rows)), dim3(kThreads), static_cast<const T*>(x.data),
          static_cast<T*>(y.data), r);
  return launched(a, F == Fold::sum ? "sum" : F == Fold::prod ? "prod" : "mean");
}
template <typename T>
struct SumKernel {
  static int run(const amber_kernel_args* a) { return run_fold<T, Fold::sum>(a); }
};
template <typename T>
struct ProdKernel {
  static int run(const amber_kernel_args* a) { return run_fold<T, Fold::prod>(a); }
};
template <typename T>
struct MeanKernel {
  static int run(const amber_kernel_args* a) { return run_fold<T, Fold::mean>(a); }
};

template <bool Max>
struct Extremum {
  template <typename T>
  struct Kernel {  // amax/amin(self, dim, keepdim)
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      static_assert(op_attrs::amax::dim == op_attrs::amin::dim);
      const Rows r = rows_of(x, y, dims_mask(a->attrs[op_attrs::amax::dim], x.ndim), false);
      if (r.rows == 0) return 0;
      DeviceScope scope(a->device);
      enqueue(a, &extremum_kernel<T, Max, false>, dim3(blocks_for(r.rows)), dim3(kThreads),
              static_cast<const T*>(x.data), y.data, r);
      return launched(a, Max ? "amax" : "amin");
    }
  };
};

template <bool Max>
struct ArgExtremum {
  template <typename T>
  struct Kernel {  // argmax/argmin(self, dim?, keepdim): over everything (flattened) without a dim
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::argmax::dim == op_attrs::argmin::dim);
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      Rows r;
      if (a->attrs[op_attrs::argmax::dim].kind == AMBER_ATTR_NONE || x.ndim == 0) {
        r = flat_rows(x, y);
      } else {
        int64_t d = a->attrs[op_attrs::argmax::dim].i;
        if (d < 0) d += x.ndim;
        r = rows_of(x, y, 1u << d, false);
      }
      if (r.rows == 0 || r.len == 0) return 0;
      DeviceScope scope(a->device);
      enqueue(a, &extremum_kernel<T, Max, true>, dim3(blocks_for(r.rows)), dim3(kThreads),
              static_cast<const T*>(x.data), y.data, r);
      return launched(a, Max ? "argmax" : "argmin");
    }
  };
};

template <bool Log>
struct Softmax {
  template <typename T>
  struct Kernel {  // softmax(self, dim, dtype)
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      if (numel(x) == 0) return 0;
      static_assert(op_attrs::softmax::dim == op_attrs::log_softmax::dim);
      int64_t d = a->attrs[op_attrs::softmax::dim].i;
      if (x.ndim > 0 && d < 0) d += x.ndim;
      const Rows r = rows_of(x, y, x.ndim == 0 ? 0 : 1u << d, true);
      DeviceScope scope(a->device);
      enqueue(a, &softmax_kernel<T, Log>, dim3(blocks_for(r.rows)), dim3(kThreads), static_cast<const T*>(x.data),
              static_cast<T*>(y.data), r);
      return launched(a, Log ? "log_softmax" : "softmax");
    }
  };
};

template <bool Add>
struct LayerNorm {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      namespace la = op_attrs::layer_norm;
      namespace aa = op_attrs::add_layer_norm;
      static_assert(aa::normalized_shape == la::normalized_shape && aa::eps == la::eps);
      constexpr int kParams = Add ? 2 : 1;  // weight's input
      const amber_tensor_view &x = a->inputs[0], &w = a->inputs[kParams], &b = a->inputs[kParams + 1],
                              &y = a->outputs[0];
      const char* name = Add ? "add_layer_norm" : "layer_norm";
      const int nn = a->attrs[la::normalized_shape].count;
      uint32_t mask = 0;
      for (int d = x.ndim - nn; d < x.ndim; ++d) mask |= 1u << d;
      const Rows r = rows_of(x, y, mask, true);
      if (r.rows == 0 || r.len == 0) return 0;
      // other's rows (the op's inference gives it x's shape), in the same order as x's.
      const Rows orow = Add ? rows_of(a->inputs[1], y, mask, true) : Rows{};
      // The weight's (and bias's) strides over the normalised dims; both share a shape.
      const amber_tensor_view& p = present(w) ? w : b;
      const Rows wr = param_rows(x, present(p) ? &p : nullptr, nn);
      if (present(w) && present(b))
        for (int i = 0; i < nn; ++i)
          if (w.strides[w.ndim - nn + i] != b.strides[b.ndim - nn + i] && wr.rsize[i] > 1)
            return fail(a, "%s: weight and bias with different strides are not supported on CUDA", name);
      DeviceScope scope(a->device);
      const T* xp = static_cast<const T*>(x.data);
      const T* op = Add ? static_cast<const T*>(a->inputs[1].data) : nullptr;
      const T* wp = present(w) ? static_cast<const T*>(w.data) : nullptr;
      const T* bp = present(b) ? static_cast<const T*>(b.data) : nullptr;
      T* yp = static_cast<T*>(y.data);
      const double eps = a->attrs[la::eps].f;
      if (r.len <= 32 * 32 && dense_rows(r, false) && dense_rows(r, true) && (!Add || dense_rows(orow, false)) &&
          (!(present(w) || present(b)) || dense_rows(wr, false))) {
        const unsigned blocks = unsigned(std::min<int64_t>((r.rows + kRowWarps - 1) / kRowWarps, 65535));
        if (r.len <= 32 * 8)
          enqueue(a, &layer_norm_rows_kernel<T, Add, 8>, dim3(blocks), dim3(32 * kRowWarps), xp, op, yp, wp, bp, r,
                  orow, eps);
        else
          enqueue(a, &layer_norm_rows_kernel<T, Add, 32>, dim3(blocks), dim3(32 * kRowWarps), xp, op, yp, wp, bp, r,
                  orow, eps);
        return launched(a, name);
      }
      enqueue(a, &layer_norm_kernel<T, Add>, dim3(blocks_for(r.rows)), dim3(kThreads), xp, op, yp, wp, bp, r, orow, wr,
              eps);
      return launched(a, name);
    }
  };
};

// ---- batch_norm (inference): batch_norm_kernels.cuh's BatchNormF through the strided map ----
template <typename T>
struct BatchNormKernel {  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& x = a->inputs[0];
    amber_tensor_view ch[4];
    batch_norm_channels(a->inputs, ch);
    const amber_tensor_view* v[6] = {&a->outputs[0], &x, &ch[0], &ch[1], &ch[2], &ch[3]};
    const int64_t items[6] = {sizeof(T), sizeof(T), sizeof(T), sizeof(T), sizeof(T), sizeof(T)};
    return map<6>(a, v, items, BatchNormF<T>{a->attrs[op_attrs::batch_norm::eps].f}, "batch_norm");
  }
};

// any/all(self, dim, keepdim): row_kernels.cuh's any_all_kernel, a block a row.
template <bool Any>
struct AnyAll {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::any::dim == op_attrs::all::dim);
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      const Rows r = rows_of(x, y, dims_mask(a->attrs[op_attrs::any::dim], x.ndim), false);
      if (r.rows == 0) return 0;
      DeviceScope scope(a->device);
      enqueue(a, &any_all_kernel<T, Any>, dim3(blocks_for(r.rows)), dim3(kThreads), static_cast<const T*>(x.data),
              static_cast<bool*>(y.data), r);
      return launched(a, Any ? "any" : "all");
    }
  };
};

// The device's multiprocessors, 0 where the runtime cannot say (routes that want them step aside).
int multiprocessors(int32_t device) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

// topk(self, k, dim, largest, sorted): row_kernels.cuh's topk_block_kernel, a block a line, for k
// up to kTopkBlockMax on lines of more than 32 elements, or, where there are no more lines than
// multiprocessors and each is long (kTopkSplitMin or more, at least 8k), each split into parts a
// block each (topk_split_kernel, then topk_merge_kernel a block a line, through the
// workspace); topk_sort_kernel, a block a line sorting it whole in the workspace, for larger k;
// topk_kernel, a thread a line, otherwise (short lines, where a block would mostly idle). The
// setup asks the sort's scratch for kTopkSortBlocks blocks.
constexpr int64_t kTopkSortBlocks = 16;
constexpr int64_t kTopkSplitMin = 8192;  // a line's elements
constexpr int64_t kTopkMaxParts = 64;    // a line's parts (the merge's candidates: at most 64 k)
struct TopkPlan {
  int dim;
  int64_t n, k, lines;
  // topk_kernel, topk_block_kernel, topk_split_kernel then topk_merge_kernel, topk_sort_kernel
  enum Route { kThread, kBlock, kSplit, kSort } route;
  int64_t parts = 1, chunk = 0;  // kSplit: each line's parts, of chunk elements (the last one shorter)
};
// Whether a line split helps: no more lines than multiprocessors, each long, in parts of 4k or
// more (the merge reads at most a quarter of the line), about two blocks a multiprocessor in all.
void plan_split(TopkPlan& p, int32_t device) {
  if (p.n < kTopkSplitMin || p.n < 8 * p.k) return;
  const int sms = multiprocessors(device);
  const int64_t blocks = 2 * int64_t(sms);
  if (p.lines > sms) return;
  const int64_t parts = std::min({kTopkMaxParts, p.n / (4 * p.k), (blocks + p.lines - 1) / p.lines});
  if (parts < 2) return;
  p.chunk = (p.n + parts - 1) / parts;
  p.parts = (p.n + p.chunk - 1) / p.chunk;  // (every part holds an element)
  p.route = TopkPlan::kSplit;
}
TopkPlan topk_plan(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &v = a->outputs[0];
  TopkPlan p{};
  p.k = a->attrs[op_attrs::topk::k].i;
  p.dim = x.ndim == 0 ? 0 : int(a->attrs[op_attrs::topk::dim].i);
  if (p.dim < 0) p.dim += x.ndim;
  p.n = x.ndim == 0 ? 1 : x.sizes[p.dim];
  p.lines = p.k > 0 ? numel(v) / p.k : 0;
  const bool blocks = p.n < (int64_t(1) << 31) && numel(v) > 0;  // (a block's indices are 32-bit)
  p.route = !blocks               ? TopkPlan::kThread
            : p.k > kTopkBlockMax ? TopkPlan::kSort
            : p.n > 32            ? TopkPlan::kBlock
                                  : TopkPlan::kThread;
  if (p.route == TopkPlan::kBlock) plan_split(p, a->device);
  return p;
}
template <typename T>
struct TopkKernel {
  using U = topk_rank_t<compute_t<T>>;
  static unsigned sort_blocks(const TopkPlan& p) { return unsigned(std::min(p.lines, kTopkSortBlocks)); }
  static size_t scratch_bytes(const TopkPlan& p) {
    return p.route == TopkPlan::kSort    ? sort_blocks(p) * topk_sort_block_bytes<U>(p.n)
           : p.route == TopkPlan::kSplit ? topk_split_bytes<U>(p.lines, p.parts, p.k)
                                         : 0;
  }
  static int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
    *state = nullptr;
    const size_t bytes = scratch_bytes(topk_plan(a));
    *workspace_bytes = bytes ? padded(bytes) : 0;
    return 0;
  }
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &v = a->outputs[0], &ix = a->outputs[1];
    const TopkPlan p = topk_plan(a);
    if (p.k == 0 || numel(v) == 0) return 0;
    // A 0-D self: one line of one element (the walk sees no dims; strides unused past n = 1).
    const scan::Lines wv = scan::lines_along(v, x, p.dim), wi = scan::lines_along(ix, x, p.dim);
    DeviceScope scope(a->device);
    const bool largest = a->attrs[op_attrs::topk::largest].i != 0;
    const auto* xp = static_cast<const T*>(x.data);
    auto* vp = static_cast<T*>(v.data);
    auto* ip = static_cast<int64_t*>(ix.data);
    if (const size_t bytes = scratch_bytes(p); bytes && (!a->workspace || a->workspace_bytes < bytes))
      return fail(a, "topk: its workspace (%zu bytes) is smaller than its setup asked (%zu; k %lld of %lld)",
                  a->workspace_bytes, bytes, (long long)p.k, (long long)p.n);
    if (p.route == TopkPlan::kSort) {
      enqueue(a, &topk_sort_kernel<T>, dim3(sort_blocks(p)), dim3(kThreads), xp, vp, ip, wv, wi, p.dim, p.n, p.k,
              largest, p.lines, a->workspace);
    } else if (p.route == TopkPlan::kSplit) {
      enqueue(a, &topk_split_kernel<T>, dim3(unsigned(p.lines * p.parts)), dim3(kThreads), xp, wv, p.dim, p.n, p.k,
              largest, p.lines, p.parts, p.chunk, a->workspace);
      enqueue(a, &topk_merge_kernel<T>, dim3(unsigned(p.lines)), dim3(kThreads), xp, vp, ip, wv, wi, p.dim, p.k,
              p.lines, p.parts, static_cast<const void*>(a->workspace));
    } else if (p.route == TopkPlan::kBlock) {
      enqueue(a, &topk_block_kernel<T>, dim3(blocks_for(p.lines)), dim3(kThreads), xp, vp, ip, wv, wi, p.dim, p.n, p.k,
              largest, p.lines);
    } else {
      enqueue(a, &topk_kernel<T>, dim3(grid_for(p.lines)), dim3(256), xp, vp, ip, wv, wi, p.dim, p.n, p.k, largest,
              p.lines);
    }
    return launched(a, "topk");
  }
};
template <typename... Ts>
void register_topk() {
  (register_kernel("topk", dtype_code<Ts>(),
                   amber_kernel{&TopkKernel<Ts>::run, &TopkKernel<Ts>::setup, nullptr, nullptr}),
   ...);
}

// cumsum(self, dim, dtype): self already in the output's dtype (inference casts it); a thread per
// line (row_kernels.cuh's cumsum_kernel), or a block per line (cumsum_block_kernel) where lines are
// kCumsumBlockMin long or more and either dense or no more than twice the multiprocessors (a
// batch-1 sampler's running sum of 128256 probabilities was one thread's walk).
constexpr int64_t kCumsumBlockMin = 512;
template <typename T>
struct CumsumKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
    if (x.ndim == 0) return copy_convert(a, y, x);
    int dim = int(a->attrs[op_attrs::cumsum::dim].i);
    if (dim < 0) dim += x.ndim;
    const int64_t n = x.sizes[dim];
    if (n == 0 || numel(y) == 0) return 0;
    const int64_t lines = numel(y) / n;
    DeviceScope scope(a->device);
    const auto* xp = static_cast<const T*>(x.data);
    auto* yp = static_cast<T*>(y.data);
    const scan::Lines w = scan::lines_along(y, x, dim);
    const bool dense = x.strides[dim] == 1 && y.strides[dim] == 1;
    if (n >= kCumsumBlockMin && (dense || lines <= 2 * int64_t(multiprocessors(a->device)))) {
      enqueue(a, &cumsum_block_kernel<T>, dim3(blocks_for(lines)), dim3(kThreads), xp, yp, w, x.strides[dim],
              y.strides[dim], n, lines);
    } else {
      enqueue(a, &cumsum_kernel<T>, dim3(grid_for(lines)), dim3(256), xp, yp, w, x.strides[dim], y.strides[dim], n,
              lines);
    }
    return launched(a, "cumsum");
  }
};

AMBER_CUDA_KERNELS(reduce) {
  register_typed<CumsumKernel, float, double, int64_t, AMBER_CUDA_HALF>("cumsum");
  register_topk<AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>();
  register_typed<AnyAll<true>::Kernel, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>("any");
  register_typed<AnyAll<false>::Kernel, AMBER_CUDA_COMPARABLE, AMBER_CUDA_HALF>("all");
  register_typed<SumKernel, float, double, int64_t, AMBER_CUDA_HALF>("sum");
  register_typed<ProdKernel, float, double, int64_t, AMBER_CUDA_HALF>("prod");
  register_typed<MeanKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("mean");
  register_typed<Extremum<true>::Kernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("amax");
  register_typed<Extremum<false>::Kernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("amin");
  register_typed<ArgExtremum<true>::Kernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("argmax");
  register_typed<ArgExtremum<false>::Kernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("argmin");
  register_typed<Softmax<false>::Kernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("softmax");
  register_typed<Softmax<true>::Kernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("log_softmax");
  register_typed<LayerNorm<false>::Kernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("layer_norm");
  register_typed<LayerNorm<true>::Kernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("add_layer_norm");
  register_typed<BatchNormKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("batch_norm");
}

}  // namespace
}  // namespace amber::cuda
