// CUDA pooling with the CPU kernels' window rules (ATen's): max_pool2d (NaN propagates, dilation,
// ceil_mode; with indices; u8 too), avg_pool2d (count_include_pad, divisor_override),
// adaptive_avg_pool2d and max_unpool2d, in f32, f64 and 16 bits (compared and summed in f32, rounded
// once), any strides. Own kernels (pool_kernels.cuh, a thread per output) rather than cuDNN's
// pooling, which has no dilation and other rounding rules; this file launches them.

#include <cmath>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/pool_kernels.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace pool;  // the kernels and their geometry (pool_kernels.cuh)

void ints2(const amber_kernel_args* a, int i, int64_t fallback0, int64_t fallback1, int64_t& v0, int64_t& v1) {
  const amber_attr& at = a->attrs[i];
  if (at.count == 0) {
    v0 = fallback0;
    v1 = fallback1;
  } else {
    v0 = at.ints[0];
    v1 = at.count > 1 ? at.ints[1] : at.ints[0];
  }
}

template <typename T, Kind K>
int run_pool(const amber_kernel_args* a, const Params& p, const char* what) {
  const Geometry g = geometry(a->inputs[0], a->outputs[0]);
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total == 0) return 0;
  const Indices yi = a->n_outputs > 1 ? indices_of(a->inputs[0], a->outputs[1]) : Indices{};
  DeviceScope scope(a->device);
  const auto* x = static_cast<const T*>(a->inputs[0].data);
  auto* y = static_cast<T*>(a->outputs[0].data);
  if (fits_32(g, p))
    enqueue(a, &pool_kernel<T, K, int32_t>, dim3(grid_for(total)), dim3(256), x, y, g, p, yi);
  else
    enqueue(a, &pool_kernel<T, K, int64_t>, dim3(grid_for(total)), dim3(256), x, y, g, p, yi);
  return launched(a, what);
}

template <typename T>
struct MaxPoolKernel {  // max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode)
  static int run(const amber_kernel_args* a) {
    Params p{};
    namespace at = op_attrs::max_pool2d;
    ints2(a, at::kernel_size, 1, 1, p.kh, p.kw);
    ints2(a, at::stride, p.kh, p.kw, p.sh, p.sw);
    ints2(a, at::padding, 0, 0, p.ph, p.pw);
    ints2(a, at::dilation, 1, 1, p.dh, p.dw);
    return run_pool<T, Kind::max>(a, p, "max_pool2d");
  }
};
template <typename T>
struct MaxPoolWithIndicesKernel {  // max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
  static int run(const amber_kernel_args* a) {
    Params p{};
    namespace at = op_attrs::max_pool2d_with_indices;
    ints2(a, at::kernel_size, 1, 1, p.kh, p.kw);
    ints2(a, at::stride, p.kh, p.kw, p.sh, p.sw);
    ints2(a, at::padding, 0, 0, p.ph, p.pw);
    ints2(a, at::dilation, 1, 1, p.dh, p.dw);
    return run_pool<T, Kind::max>(a, p, "max_pool2d_with_indices");
  }
};
template <typename T>
struct AvgPoolKernel {  // avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        // divisor_override)
  static int run(const amber_kernel_args* a) {
    Params p{};
    namespace at = op_attrs::avg_pool2d;
    ints2(a, at::kernel_size, 1, 1, p.kh, p.kw);
    ints2(a, at::stride, p.kh, p.kw, p.sh, p.sw);
    ints2(a, at::padding, 0, 0, p.ph, p.pw);
    p.include_pad = a->attrs[at::count_include_pad].i != 0;
    p.has_override = a->attrs[at::divisor_override].kind != AMBER_ATTR_NONE;
    p.override_div = p.has_override ? a->attrs[at::divisor_override].i : 0;
    return run_pool<T, Kind::avg>(a, p, "avg_pool2d");
  }
};
// max_unpool2d(self, indices, output_size): the output zeroed, then one thread per element of
// self writes it at its index in its plane (an index outside the plane is skipped; of repeated
// indices some write wins, as in PyTorch's CUDA kernel).
template <typename T>
struct MaxUnpoolKernel {
  static int run(const amber_kernel_args* a) {
    const Geometry g = geometry(a->inputs[0], a->outputs[0]), gi = geometry(a->inputs[1], a->outputs[0]);
    const int64_t total = g.n * g.c * g.oh * g.ow;
    if (total == 0) return 0;
    DeviceScope scope(a->device);
    T* y = static_cast<T*>(a->outputs[0].data);
    enqueue(a, &unpool_zero_kernel<T>, dim3(grid_for(total)), dim3(256), y, g);
    if (g.n * g.c * g.h * g.w > 0)
      enqueue(a, &unpool_kernel<T>, dim3(grid_for(g.n * g.c * g.h * g.w)), dim3(256),
              static_cast<const T*>(a->inputs[0].data), static_cast<const int64_t*>(a->inputs[1].data), y, g, gi);
    return launched(a, "max_unpool2d");
  }
};

template <typename T>
struct AdaptiveAvgPoolKernel {  // adaptive_avg_pool2d(self, output_size)
  static int run(const amber_kernel_args* a) { return run_pool<T, Kind::adaptive>(a, Params{}, "adaptive_avg_pool2d"); }
};

template <template <typename> class K>
void register_floats(const char* op) {  // f16 and bf16: a model in 16 bits
  register_kernel(op, kF32, &K<float>::run);
  register_kernel(op, kF64, &K<double>::run);
  register_kernel(op, kF16, &K<__half>::run);
  register_kernel(op, kBF16, &K<__nv_bfloat16>::run);
}

AMBER_CUDA_KERNELS(pool) {
  register_floats<MaxPoolKernel>("max_pool2d");
  register_kernel("max_pool2d", kU8, &MaxPoolKernel<uint8_t>::run);
  register_floats<MaxPoolWithIndicesKernel>("max_pool2d_with_indices");
  register_floats<MaxUnpoolKernel>("max_unpool2d");
  register_floats<AvgPoolKernel>("avg_pool2d");
  register_floats<AdaptiveAvgPoolKernel>("adaptive_avg_pool2d");
}

}  // namespace
}  // namespace amber::cuda
