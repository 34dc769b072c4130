// CPU kernel for grid_sample: output pixels (kernels/grid_sample.h, ATen's rules, shared
// with the CUDA kernel, each pixel's taps computed once for all its channels) spread over
// the thread pool a row at a time. 4-D input and grid of any strides.

#include <algorithm>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/grid_sample.h"

namespace amber::cpu {
namespace {

template <typename T>
struct GridSampleKernel {  // grid_sample(input, grid, mode, padding_mode, align_corners)
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& y = a->outputs[0];
    const int64_t n = y.sizes[0], c = y.sizes[1], oh = y.sizes[2], ow = y.sizes[3];
    if (n * c * oh * ow == 0) return 0;
    const grid::Params p = grid::params_of(a);
    const grid::Views v = grid::views_of(a);
    const T* x = static_cast<const T*>(a->inputs[0].data);
    const T* g = static_cast<const T*>(a->inputs[1].data);
    T* yd = static_cast<T*>(y.data);
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(n * oh, std::max<int64_t>(1, 1024 / std::max<int64_t>(1, ow * c)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        for (int64_t j = 0; j < ow; ++j) grid::sample_pixel(x, g, yd, v, p, r / oh, r % oh, j);
    });
    return 0;
  }
};

AMBER_CPU_KERNELS(grid_sample) { register_typed<GridSampleKernel>(ctypes::floating{}, "grid_sample"); }

}  // namespace
}  // namespace amber::cpu
