// CPU kernel for grid_sample: each output pixel's taps (kernels/grid_sample.h, ATen's rules,
// shared with the CUDA kernel) computed once from its grid point and applied to every
// channel. 4-D input and grid of any strides; a row of output pixels per task.

#include <algorithm>
#include <type_traits>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/grid_sample.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

template <typename T>
struct GridSampleKernel {  // grid_sample(input, grid, mode, padding_mode, align_corners)
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::grid_sample;
    const amber_tensor_view &x = a->inputs[0], &g = a->inputs[1], &y = a->outputs[0];
    const int64_t n = y.sizes[0], c = y.sizes[1], oh = y.sizes[2], ow = y.sizes[3], h = x.sizes[2], w = x.sizes[3];
    if (n * c * oh * ow == 0) return 0;
    const grid::Mode mode = grid::mode_of(a->attrs[at::mode].str);
    const grid::Padding padding = grid::padding_of(a->attrs[at::padding_mode].str);
    const bool corners = attr_bool(a, at::align_corners);
    const T* xd = static_cast<const T*>(x.data);
    const T* gd = static_cast<const T*>(g.data);
    T* yd = static_cast<T*>(y.data);
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(n * oh, std::max<int64_t>(1, 1024 / std::max<int64_t>(1, ow * c)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t in = r / oh, i = r % oh;
        for (int64_t j = 0; j < ow; ++j) {
          const T* gp = gd + in * g.strides[0] + i * g.strides[1] + j * g.strides[2];
          const grid::Taps<A> t = grid::taps<A>(A(gp[0]), A(gp[g.strides[3]]), h, w, mode, padding, corners);
          for (int64_t ch = 0; ch < c; ++ch)
            yd[in * y.strides[0] + ch * y.strides[1] + i * y.strides[2] + j * y.strides[3]] =
                T(grid::sample<A>(xd + in * x.strides[0] + ch * x.strides[1], t, x.strides[2], x.strides[3]));
        }
      }
    });
    return 0;
  }
};

AMBER_CPU_KERNELS(grid_sample) { register_typed<GridSampleKernel>(ctypes::floating{}, "grid_sample"); }

}  // namespace
}  // namespace amber::cpu
