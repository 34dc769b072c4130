// CPU kernel for roi_align: every box's batch index checked first, then one (box, channel)
// plane of bins per task over the thread pool, each bin by kernels/roi_align.h (torchvision's
// rules, shared with the CUDA kernel). Input and boxes of any strides; a box whose batch index
// is outside the batch, or whose adaptive sample grid passes 2^31 - 1 a side, is refused.

#include <algorithm>
#include <cinttypes>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/roi_align.h"

namespace amber::cpu {
namespace {

template <typename T>
struct RoiAlignKernel {  // roi_align(input, boxes, output_size, spatial_scale, sampling_ratio, aligned)
  static int run(const amber_kernel_args* a) {
    const roi::Args g = roi::args_of(a);
    if (g.k * g.c * g.oh * g.ow == 0) return 0;
    const T* x = static_cast<const T*>(a->inputs[0].data);
    const T* boxes = static_cast<const T*>(a->inputs[1].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    for (int64_t k = 0; k < g.k; ++k) {
      if (roi::batch_of(boxes, g, k) < 0)
        return fail(a, "box %" PRId64 "'s batch index %g is not an index into the input's batch of %" PRId64, k,
                    double(boxes[k * g.bs[0]]), g.n);
      if (!roi::box_of(boxes, g, k).valid)
        return fail(a, "box %" PRId64 " needs more than 2^31 - 1 samples a bin side (a box far larger than the image)",
                    k);
    }
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(g.k * g.c, 1, [&](int64_t b, int64_t e) {
      for (int64_t kc = b; kc < e; ++kc) {
        const int64_t k = kc / g.c, c = kc % g.c;
        const roi::Box<T> box = roi::box_of(boxes, g, k);
        const T* plane = x + roi::batch_of(boxes, g, k) * g.xs[0] + c * g.xs[1];
        T* out = y + k * g.ys[0] + c * g.ys[1];
        for (int64_t ph = 0; ph < g.oh; ++ph)
          for (int64_t pw = 0; pw < g.ow; ++pw)
            out[ph * g.ys[2] + pw * g.ys[3]] = roi::bin_value(plane, g, box, ph, pw);
      }
    });
    return 0;
  }
};

AMBER_CPU_KERNELS(roi_align) { register_typed<RoiAlignKernel>(ctypes::floating{}, "roi_align"); }

}  // namespace
}  // namespace amber::cpu
