// The CUDA kernels that gather, scatter or assemble, launched: embedding, index_select, gather,
// scatter (src, value, add, reduce; i64 or i32 indices), pad, roll, repeat, tril and triu (device
// code in index_kernels.cuh), and cat, stack (converting dtypes as their inference promotes) and
// flip as copies. An index out of range gives zeros here: the CPU reports it, which a GPU kernel
// could only do through a device-to-host read per call.

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/index_kernels.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/views.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace indexing;  // the kernels and their arguments (index_kernels.cuh)

// The view of v narrowed to [start, start + len) along dim (or with dim removed: select).
amber_tensor_view narrow(amber_tensor_view v, int dim, int64_t start, int64_t len, bool select) {
  v.data = static_cast<char*>(v.data) + start * v.strides[dim] * int64_t(itemsize(v.dtype));
  if (!select) {
    v.sizes[dim] = len;
    return v;
  }
  for (int d = dim; d + 1 < v.ndim; ++d) {
    v.sizes[d] = v.sizes[d + 1];
    v.strides[d] = v.strides[d + 1];
  }
  --v.ndim;
  return v;
}

template <typename T>
struct EmbeddingKernel {  // embedding(weight, indices, padding_idx)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &w = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(y);
    if (n == 0) return 0;
    DeviceScope scope(a->device);
    enqueue(a, &embedding_kernel<T>, dim3(grid_for(n)), dim3(256), static_cast<const T*>(w.data),
            static_cast<T*>(y.data), embedding_args(w, idx), n);
    return launched(a, "embedding");
  }
};

template <typename T>
struct IndexSelectKernel {  // index_select(self, index, dim)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(y);
    if (n == 0) return 0;
    if (x.ndim == 0) return copy_convert(a, y, x);  // a 0-D self: the index must be 0
    DeviceScope scope(a->device);
    enqueue(a, &index_select_kernel<T>, dim3(grid_for(n)), dim3(256), static_cast<const T*>(x.data),
            static_cast<T*>(y.data), select_args<T>(x, idx, y, a->attrs[op_attrs::index_select::dim].i), n);
    return launched(a, "index_select");
  }
};

template <typename T>
struct GatherKernel {  // gather(self, index, dim)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(y);
    if (n == 0) return 0;
    DeviceScope scope(a->device);
    enqueue(a, &gather_kernel<T>, dim3(grid_for(n)), dim3(256),
            gather_args<T>(x, idx, y, a->attrs[op_attrs::gather::dim].i), n);
    return launched(a, "gather");
  }
};

template <ScatterMode M>
struct ScatterKernels {
  static constexpr int kDim = M == ScatterMode::value ? op_attrs::scatter_value::dim
                              : M == ScatterMode::add ? op_attrs::scatter_add::dim
                                                      : op_attrs::scatter::dim;
  template <typename T>
  struct Kernel {  // scatter(self, index, src, dim), scatter.value(self, index, dim, value), scatter_add
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
      if (numel(y) == 0) return 0;
      if (copy_convert(a, y, x) != 0) return 1;
      const int64_t n = numel(idx);
      if (n == 0) return 0;
      T value{};
      if constexpr (M == ScatterMode::value) value = attr_scalar<T>(a, op_attrs::scatter_value::value);
      DeviceScope scope(a->device);
      enqueue(a, &scatter_kernel<T, M>, dim3(grid_for(n)), dim3(256),
              scatter_args<T>(idx, y, M == ScatterMode::value ? nullptr : &a->inputs[2], a->attrs[kDim].i), value, n);
      return launched(a, M == ScatterMode::add ? "scatter_add" : "scatter");
    }
  };
};

// scatter_reduce(self, index, src, dim, reduce, include_self): index_kernels.cuh's three kernels.
// The setup asks mean's counts, a slot per element of y's span.
int scatter_reduce_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes = scatter_fold::reduce_of(a) == scatter_fold::kMean
                         ? padded(size_t(views::span(a->outputs[0])) * sizeof(unsigned))
                         : 0;
  return 0;
}
template <typename T>
struct ScatterReduceKernel {
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::scatter_reduce;
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const scatter_fold::Reduce r = scatter_fold::reduce_of(a);
    const bool with_self = a->attrs[at::include_self].i != 0;
    const int64_t span = views::span(y), n = numel(idx);
    unsigned* count = nullptr;
    if (r == scatter_fold::kMean && n > 0) {
      if (a->workspace_bytes < size_t(span) * sizeof(unsigned))
        return fail(a, "scatter_reduce: its workspace is smaller than its setup asked");
      count = static_cast<unsigned*>(a->workspace);
    }
    if (numel(y) == 0) return 0;
    if (copy_convert(a, y, x) != 0) return 1;
    if (n == 0) return 0;
    DeviceScope scope(a->device);
    const Along s = scatter_args<T>(idx, y, &a->inputs[2], a->attrs[at::dim].i);
    if (!with_self) enqueue(a, &scatter_identity_kernel<T>, dim3(grid_for(n)), dim3(256), s, r, n);
    if (count && cudaMemsetAsync(count, 0, size_t(span) * sizeof(unsigned), stream_of(a)) != cudaSuccess)
      return launched(a, "scatter_reduce");
    enqueue(a, &scatter_reduce_kernel<T>, dim3(grid_for(n)), dim3(256), s, r, count, n);
    if (count)
      enqueue(a, &scatter_mean_kernel<T>, dim3(grid_for(span)), dim3(256), static_cast<T*>(y.data), count, with_self,
              span);
    return launched(a, "scatter_reduce");
  }
};
template <typename... Ts>
void register_scatter_reduce() {
  (register_kernel("scatter_reduce", dtype_code<Ts>(),
                   amber_kernel{&ScatterReduceKernel<Ts>::run, scatter_reduce_setup, nullptr, nullptr}),
   ...);
}

// pad, roll and repeat: index_kernels.cuh's pad_kernel, value where constant padding has no source.
template <typename T>
int pad_walk(const amber_kernel_args* a, const views::PadDims& p, views::PadMode mode, T value, const char* what) {
  const int64_t n = numel(a->outputs[0]);
  if (n == 0) return 0;
  DeviceScope scope(a->device);
  enqueue(a, &pad_kernel<T>, dim3(grid_for(n)), dim3(256), static_cast<const T*>(a->inputs[0].data),
          static_cast<T*>(a->outputs[0].data), p, mode, value, n);
  return launched(a, what);
}
template <typename T>
struct PadKernel {  // pad(self, pad, mode, value)
  static int run(const amber_kernel_args* a) {
    return pad_walk<T>(a, views::pad_dims(a->outputs[0], a->inputs[0], a->attrs[op_attrs::pad::pad]),
                       views::pad_mode(a), attr_scalar<T>(a, op_attrs::pad::value), "pad");
  }
};
template <typename T>
struct RollKernel {  // roll(self, shifts, dims): pad's walk with circular padding
  static int run(const amber_kernel_args* a) {
    return pad_walk<T>(
        a,
        views::roll_dims(a->outputs[0], a->inputs[0], a->attrs[op_attrs::roll::shifts], a->attrs[op_attrs::roll::dims]),
        views::kPadCircular, T{}, "roll");
  }
};
template <typename T>
struct RepeatKernel {  // repeat(self, repeats): pad's walk wrapping each output coordinate
  static int run(const amber_kernel_args* a) {
    return pad_walk<T>(a, views::repeat_dims(a->outputs[0], a->inputs[0]), views::kPadCircular, T{}, "repeat");
  }
};

template <typename T>
struct CatKernel {  // cat(tensors, dim): inputs of any dtype, converted to the output's
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    if (numel(y) == 0) return 0;
    int dim = int(a->attrs[op_attrs::cat::dim].i);
    if (dim < 0) dim += y.ndim;
    int64_t offset = 0;
    for (int i = 0; i < a->n_inputs; ++i) {
      const amber_tensor_view& x = a->inputs[i];
      if (x.ndim == 1 && x.sizes[0] == 0) continue;  // empty 1-D inputs are skipped, as PyTorch
      if (copy_convert(a, narrow(y, dim, offset, x.sizes[dim], false), x) != 0) return 1;
      offset += x.sizes[dim];
    }
    return 0;
  }
};

template <typename T>
struct StackKernel {  // stack(tensors, dim)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    int dim = int(a->attrs[op_attrs::stack::dim].i);
    if (dim < 0) dim += y.ndim;
    for (int i = 0; i < a->n_inputs; ++i)
      if (copy_convert(a, narrow(y, dim, i, 1, true), a->inputs[i]) != 0) return 1;
    return 0;
  }
};

// flip(self, dims): a copy from a view of self that walks the flipped dims backwards.
template <typename T>
struct FlipKernel {
  static int run(const amber_kernel_args* a) {
    bool empty = false;
    const amber_tensor_view src = views::flipped(a->inputs[0], a->attrs[op_attrs::flip::dims], sizeof(T), &empty);
    return empty ? 0 : copy_convert(a, a->outputs[0], src);
  }
};

// tril/triu(self, diagonal): index_kernels.cuh's triangle_kernel, elements moved as bits.
template <bool Lower>
struct Triangle {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::tril::diagonal == op_attrs::triu::diagonal);
      using U = Bits<sizeof(T)>;
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      const int64_t n = numel(y);
      if (n == 0) return 0;
      DeviceScope scope(a->device);
      enqueue(a, &triangle_kernel<U, Lower>, dim3(grid_for(n)), dim3(256), static_cast<const U*>(x.data),
              static_cast<U*>(y.data), strided_of(x, y), a->attrs[op_attrs::tril::diagonal].i, n);
      return launched(a, Lower ? "tril" : "triu");
    }
  };
};

AMBER_CUDA_KERNELS(index) {
  register_typed<EmbeddingKernel, AMBER_CUDA_ALL>("embedding");
  register_typed<IndexSelectKernel, AMBER_CUDA_ALL>("index_select");
  register_typed<GatherKernel, AMBER_CUDA_ALL>("gather");
  register_typed<ScatterKernels<ScatterMode::src>::Kernel, AMBER_CUDA_ALL>("scatter");
  register_typed<ScatterKernels<ScatterMode::value>::Kernel, AMBER_CUDA_ALL>("scatter.value");
  register_typed<ScatterKernels<ScatterMode::add>::Kernel, float, double, int64_t, int32_t>("scatter_add");
  register_scatter_reduce<float, double, int64_t, int32_t>();
  register_typed<CatKernel, AMBER_CUDA_ALL>("cat");
  register_typed<FlipKernel, AMBER_CUDA_ALL>("flip");
  register_typed<PadKernel, AMBER_CUDA_ALL>("pad");
  register_typed<RollKernel, AMBER_CUDA_ALL>("roll");
  register_typed<RepeatKernel, AMBER_CUDA_ALL>("repeat");
  register_typed<Triangle<true>::Kernel, AMBER_CUDA_ALL>("tril");
  register_typed<Triangle<false>::Kernel, AMBER_CUDA_ALL>("triu");
  register_typed<StackKernel, AMBER_CUDA_ALL>("stack");
}

}  // namespace
}  // namespace amber::cuda
