// CUDA kernel for grid_sample: one thread per output pixel, its taps (kernels/grid_sample.h,
// ATen's rules, the CPU kernel's formulas) computed once from its grid point and applied to
// every channel. 4-D input and grid of any strides.

#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/grid_sample.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

struct Views {  // sizes and element strides of input, grid and output
  int64_t n, c, h, w, oh, ow;
  int64_t xs[4], gs[4], ys[4];
};

template <typename T, typename A>
__global__ void grid_sample_kernel(const T* x, const T* gd, T* y, Views v, grid::Mode mode, grid::Padding padding,
                                   bool corners) {
  const int64_t total = v.n * v.oh * v.ow;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = p % v.ow, i = (p / v.ow) % v.oh, n = p / (v.ow * v.oh);
    const T* gp = gd + n * v.gs[0] + i * v.gs[1] + j * v.gs[2];
    const grid::Taps<A> t = grid::taps<A>(A(gp[0]), A(gp[v.gs[3]]), v.h, v.w, mode, padding, corners);
    for (int64_t c = 0; c < v.c; ++c)
      y[n * v.ys[0] + c * v.ys[1] + i * v.ys[2] + j * v.ys[3]] =
          T(grid::sample<A>(x + n * v.xs[0] + c * v.xs[1], t, v.xs[2], v.xs[3]));
  }
}

template <typename T>
struct GridSampleKernel {  // grid_sample(input, grid, mode, padding_mode, align_corners)
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::grid_sample;
    const amber_tensor_view &x = a->inputs[0], &g = a->inputs[1], &y = a->outputs[0];
    Views v{y.sizes[0], y.sizes[1], x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3], {}, {}, {}};
    for (int d = 0; d < 4; ++d) v.xs[d] = x.strides[d], v.gs[d] = g.strides[d], v.ys[d] = y.strides[d];
    const int64_t total = v.n * v.oh * v.ow;
    if (total == 0 || v.c == 0) return 0;
    DeviceScope scope(a->device);
    grid_sample_kernel<T, A><<<grid_for(total), 256, 0, stream_of(a)>>>(
        static_cast<const T*>(x.data), static_cast<const T*>(g.data), static_cast<T*>(y.data), v,
        grid::mode_of(a->attrs[at::mode].str), grid::padding_of(a->attrs[at::padding_mode].str),
        a->attrs[at::align_corners].i != 0);
    return launched(a, "grid_sample");
  }
};

AMBER_CUDA_KERNELS(grid_sample) { register_typed<GridSampleKernel, AMBER_CUDA_FLOATING>("grid_sample"); }

}  // namespace
}  // namespace amber::cuda
