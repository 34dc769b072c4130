// CUDA kernels that gather, scatter or assemble: embedding, index_select, gather and scatter
// (src, value, add; i64 or i32 indices), cat and stack (converting dtypes as their inference promotes without casting
// first), flip, pad, roll, repeat, tril and triu. An index out of range gives zeros here: the CPU reports it,
// which a GPU kernel could only do through a device-to-host read per call.

#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/views.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

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
Index index_of(const amber_tensor_view& v) {
  Index ix{v.data, v.dtype == kI32, v.ndim, {}, {}};
  for (int d = 0; d < v.ndim; ++d) ix.sizes[d] = v.sizes[d], ix.strides[d] = v.strides[d];
  return ix;
}

// embedding: output [indices..., dim] (contiguous) = weight[index, :].
template <typename T>
__global__ void embedding_kernel(const T* w, int64_t rows, int64_t dim, int64_t ws0, int64_t ws1, Index idx, T* y,
                                 int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i / dim, j = i % dim, row = idx.at(k);
    y[i] = row >= 0 && row < rows ? w[row * ws0 + j * ws1] : T(0);
  }
}
template <typename T>
struct EmbeddingKernel {  // embedding(weight, indices, padding_idx)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &w = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(y);
    if (n == 0) return 0;
    DeviceScope scope(a->device);
    embedding_kernel<T><<<grid_for(n), 256, 0, stream_of(a)>>>(static_cast<const T*>(w.data), w.sizes[0], w.sizes[1],
                                                               w.strides[0], w.strides[1], index_of(idx),
                                                               static_cast<T*>(y.data), n);
    return launched(a, "embedding");
  }
};

// index_select: y[..., k, ...] = x[..., index[k], ...] along dim.
template <typename T>
__global__ void index_select_kernel(const T* x, T* y, Operands<2> o, int dim, int64_t size, int64_t xstride, Index idx,
                                    int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, yo = 0, xo = 0;
    bool inside = true;
    for (int d = o.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % o.sizes[d];
      rest /= o.sizes[d];
      yo += c * o.bytes[0][d];
      if (d == dim) {
        const int64_t src = idx.at(c);
        inside = src >= 0 && src < size;
        xo += (inside ? src : 0) * xstride;
      } else {
        xo += c * o.bytes[1][d];
      }
    }
    *reinterpret_cast<T*>(reinterpret_cast<char*>(y) + yo) =
        inside ? *reinterpret_cast<const T*>(reinterpret_cast<const char*>(x) + xo) : T(0);
  }
}
template <typename T>
struct IndexSelectKernel {  // index_select(self, index, dim)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(y);
    if (n == 0) return 0;
    if (x.ndim == 0) return copy_convert(a, y, x);  // a 0-D self: the index must be 0
    int dim = int(a->attrs[op_attrs::index_select::dim].i);
    if (dim < 0) dim += x.ndim;
    // x's strides in y's dims (the same rank), dim's replaced by the gather.
    const amber_tensor_view* v[2] = {&y, &x};
    const int64_t items[2] = {sizeof(T), sizeof(T)};
    amber_tensor_view xs = x;
    xs.sizes[dim] = y.sizes[dim];  // only the strides of the other dims are read
    v[1] = &xs;
    const Operands<2> o = operands<2>(v, items);
    DeviceScope scope(a->device);
    index_select_kernel<T>
        <<<grid_for(n), 256, 0, stream_of(a)>>>(static_cast<const T*>(x.data), static_cast<T*>(y.data), o, dim,
                                                x.sizes[dim], x.strides[dim] * int64_t(sizeof(T)), index_of(idx), n);
    return launched(a, "index_select");
  }
};

// gather: y[c] = x[c with c[dim] replaced by index[c]], c over the output's (index's) shape.
template <typename T>
__global__ void gather_kernel(Operands<3> o, int dim, int64_t size, int64_t xstride, bool i32, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, yo = 0, xo = 0, io = 0;
    for (int d = o.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % o.sizes[d];
      rest /= o.sizes[d];
      yo += c * o.bytes[0][d];
      io += c * o.bytes[2][d];
      if (d != dim) xo += c * o.bytes[1][d];
    }
    const char* ip = o.ptr[2] + io;
    const int64_t src = i32 ? *reinterpret_cast<const int32_t*>(ip) : *reinterpret_cast<const int64_t*>(ip);
    const bool inside = src >= 0 && src < size;
    *reinterpret_cast<T*>(o.ptr[0] + yo) = inside ? *reinterpret_cast<const T*>(o.ptr[1] + xo + src * xstride) : T(0);
  }
}
template <typename T>
struct GatherKernel {  // gather(self, index, dim)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view &x = a->inputs[0], &idx = a->inputs[1], &y = a->outputs[0];
    const int64_t n = numel(y);
    if (n == 0) return 0;
    int dim = int(a->attrs[op_attrs::gather::dim].i);
    if (dim < 0) dim += x.ndim > 0 ? x.ndim : 1;
    // x's strides in the output's dims (the same rank; dim's is applied to the index read).
    amber_tensor_view xs = x;
    for (int d = 0; d < x.ndim; ++d) xs.sizes[d] = y.sizes[d];
    const amber_tensor_view* v[3] = {&y, &xs, &idx};
    const int64_t items[3] = {sizeof(T), sizeof(T), idx.dtype == kI32 ? 4 : 8};
    const Operands<3> o = operands<3>(v, items);
    DeviceScope scope(a->device);
    gather_kernel<T><<<grid_for(n), 256, 0, stream_of(a)>>>(o, x.ndim ? dim : -1, x.ndim ? x.sizes[dim] : 1,
                                                            x.ndim ? x.strides[dim] * int64_t(sizeof(T)) : 0,
                                                            idx.dtype == kI32, n);
    return launched(a, "gather");
  }
};

// scatter: self copied, then one thread per index element c writes src[c] (or value, or adds
// it atomically) at c with c[dim] replaced by index[c]. Repeated indices: some write wins and
// sums accumulate in no fixed order (PyTorch's CUDA scatter does the same).
enum class ScatterMode { src, value, add };
__device__ inline void add_to(float* p, float v) { atomicAdd(p, v); }
__device__ inline void add_to(double* p, double v) { atomicAdd(p, v); }
__device__ inline void add_to(int32_t* p, int32_t v) { atomicAdd(reinterpret_cast<int*>(p), int(v)); }
__device__ inline void add_to(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement
}
template <typename T, ScatterMode M>
__global__ void scatter_kernel(Operands<3> o, int64_t dim_bytes, int64_t size, bool i32, T value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, io = 0, yo = 0, so = 0;
    for (int d = o.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % o.sizes[d];
      rest /= o.sizes[d];
      io += c * o.bytes[0][d];
      yo += c * o.bytes[1][d];
      so += c * o.bytes[2][d];
    }
    const char* ip = o.ptr[0] + io;
    const int64_t at = i32 ? *reinterpret_cast<const int32_t*>(ip) : *reinterpret_cast<const int64_t*>(ip);
    if (at < 0 || at >= size) continue;
    T* dst = reinterpret_cast<T*>(o.ptr[1] + yo + at * dim_bytes);
    if constexpr (M == ScatterMode::value) {
      *dst = value;
    } else if constexpr (M == ScatterMode::add) {
      add_to(dst, *reinterpret_cast<const T*>(o.ptr[2] + so));
    } else {
      *dst = *reinterpret_cast<const T*>(o.ptr[2] + so);
    }
  }
}
template <ScatterMode M>
struct Scatter {
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
      int dim = int(a->attrs[kDim].i);
      if (dim < 0) dim += x.ndim > 0 ? x.ndim : 1;
      // The output's and src's strides in index's dims; dim's is applied to the index read.
      amber_tensor_view ys = y, ss = M == ScatterMode::value ? y : a->inputs[2];
      for (int d = 0; d < idx.ndim; ++d) ys.sizes[d] = ss.sizes[d] = idx.sizes[d];
      if (x.ndim) ys.sizes[dim] = 1;
      const amber_tensor_view* v[3] = {&idx, &ys, &ss};
      const int64_t items[3] = {idx.dtype == kI32 ? 4 : 8, sizeof(T), sizeof(T)};
      const Operands<3> o = operands<3>(v, items);
      T value{};
      if constexpr (M == ScatterMode::value) value = attr_scalar<T>(a, op_attrs::scatter_value::value);
      DeviceScope scope(a->device);
      scatter_kernel<T, M><<<grid_for(n), 256, 0, stream_of(a)>>>(
          o, x.ndim ? y.strides[dim] * int64_t(sizeof(T)) : 0, x.ndim ? x.sizes[dim] : 1, idx.dtype == kI32, value, n);
      return launched(a, M == ScatterMode::add ? "scatter_add" : "scatter");
    }
  };
};

// pad: each output element from its source in x (views.h's pad_element), or value where
// constant padding has none.
template <typename T>
__global__ void pad_kernel(const T* x, T* y, views::PadDims p, views::PadMode mode, T value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t yo = 0, xo = 0;
    const bool inside = views::pad_element(p, mode, i, &yo, &xo);
    y[yo] = inside ? x[xo] : value;
  }
}
template <typename T>
int pad_walk(const amber_kernel_args* a, const views::PadDims& p, views::PadMode mode, T value, const char* what) {
  const int64_t n = numel(a->outputs[0]);
  if (n == 0) return 0;
  DeviceScope scope(a->device);
  pad_kernel<T><<<grid_for(n), 256, 0, stream_of(a)>>>(static_cast<const T*>(a->inputs[0].data),
                                                       static_cast<T*>(a->outputs[0].data), p, mode, value, n);
  return launched(a, what);
}
template <typename T>
struct PadKernel {  // pad(self, pad, mode, value)
  static int run(const amber_kernel_args* a) {
    return pad_walk<T>(a, views::pad_dims(a->outputs[0], a->inputs[0], a->attrs[op_attrs::pad::pad]),
                       views::pad_mode(a->attrs[op_attrs::pad::mode].str), attr_scalar<T>(a, op_attrs::pad::value),
                       "pad");
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

// tril/triu(self, diagonal): each matrix of the last two dims keeps element (i, j) where
// j - i <= diagonal (tril) or >= diagonal (triu); every other element is zero. Elements are
// moved as unsigned integers of their size, so one kernel serves every dtype.
struct Strided {
  int ndim;
  int64_t sizes[AMBER_MAX_DIMS], xs[AMBER_MAX_DIMS], ys[AMBER_MAX_DIMS];
};
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
template <bool Lower>
struct Triangle {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      static_assert(op_attrs::tril::diagonal == op_attrs::triu::diagonal);
      using U = std::conditional_t<
          sizeof(T) == 1, uint8_t,
          std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
      static_assert(sizeof(U) == sizeof(T));
      const amber_tensor_view &x = a->inputs[0], &y = a->outputs[0];
      const int64_t n = numel(y);
      if (n == 0) return 0;
      Strided s{x.ndim, {}, {}, {}};
      for (int d = 0; d < x.ndim; ++d) s.sizes[d] = x.sizes[d], s.xs[d] = x.strides[d], s.ys[d] = y.strides[d];
      DeviceScope scope(a->device);
      triangle_kernel<U, Lower><<<grid_for(n), 256, 0, stream_of(a)>>>(
          static_cast<const U*>(x.data), static_cast<U*>(y.data), s, a->attrs[op_attrs::tril::diagonal].i, n);
      return launched(a, Lower ? "tril" : "triu");
    }
  };
};

AMBER_CUDA_KERNELS(index) {
  register_typed<EmbeddingKernel, AMBER_CUDA_ALL>("embedding");
  register_typed<IndexSelectKernel, AMBER_CUDA_ALL>("index_select");
  register_typed<GatherKernel, AMBER_CUDA_ALL>("gather");
  register_typed<Scatter<ScatterMode::src>::Kernel, AMBER_CUDA_ALL>("scatter");
  register_typed<Scatter<ScatterMode::value>::Kernel, AMBER_CUDA_ALL>("scatter.value");
  register_typed<Scatter<ScatterMode::add>::Kernel, float, double, int64_t, int32_t>("scatter_add");
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
