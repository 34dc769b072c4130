// The CUDA convolution's own passes around cuDNN (kernels/cuda/conv_passes_kernels.cuh) run on
// the CPU (cuda_emulation.h), without a GPU, against Amber's CPU ops: the weights' KRSC packing
// from strided weights, and the pass after the product (bias of any stride or none, each
// activation, NaN; an element a thread and four a thread; f32, and bf16 widened to f32 or rounded
// back once). scripts/gpu_check.sh runs the real kernels.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/conv_passes_kernels.cuh"

namespace {

namespace passes = amber::cuda::passes;
using amber::Act;
using amber::DType;
using amber::Tensor;
using amber::emulation::launch_small;
using amber::emulation::same;
using amber::emulation::view_of;

// What the pass computes, by the CPU's ops: act(src + bias) over [rows, channels].
Tensor reference(const Tensor& src, const Tensor* bias, Act act, float lo, float hi) {
  Tensor v = src.to(DType::f32);
  if (bias) v = v + *bias;
  switch (act) {
    case Act::clamp:
      return amber::clamp(v, lo, hi);
    case Act::silu:
      return amber::silu(v);
    case Act::hardswish:
      return amber::hardswish(v);
    case Act::none:
      break;
  }
  return v;
}

const char* name_of(Act act) {
  return act == Act::clamp ? "clamp" : act == Act::silu ? "silu" : act == Act::hardswish ? "hardswish" : "none";
}

}  // namespace

TEST_CASE("cuda emulated: the weights' KRSC packing equals a permuted copy", "[emulated]") {
  amber::manual_seed(51);
  // [5, 6, 3, 2] with C outermost in memory (every stride other than dense).
  const Tensor w = amber::randn({6, 5, 3, 2}).permute({1, 0, 2, 3});
  const amber_tensor_view wv = view_of(w);
  const Tensor out = amber::full({5, 3, 2, 6}, double(NAN));
  launch_small(&passes::pack_krsc<>, static_cast<const float*>(wv.data), static_cast<float*>(view_of(out).data), 5, 6,
               3, 2, wv.strides[0], wv.strides[1], wv.strides[2], wv.strides[3]);
  CHECK(same(out, w.permute({0, 2, 3, 1}).contiguous()));
}

TEST_CASE("cuda emulated: the pass after the convolution equals the CPU's bias and activation", "[emulated]") {
  amber::manual_seed(52);
  const Tensor bias_base = amber::randn({24});
  for (int64_t channels : {12, 6})  // 6: not a multiple of four (one element a thread only)
    for (bool with_bias : {true, false})
      for (Act act : {Act::none, Act::clamp, Act::silu, Act::hardswish}) {
        INFO(channels << " channels, " << (with_bias ? "bias" : "no bias") << ", " << name_of(act));
        const float lo = -0.5f, hi = 1.0f;
        Tensor src = amber::randn({7, channels}) * 3.0;  // 7 rows (pixels) of channels
        src.data_ptr<float>()[5] = NAN;
        const Tensor bias = bias_base.slice(0, 0, 2 * channels, 2);  // stride 2
        const int64_t bstride = 2, n = src.numel();
        const float* bp = with_bias ? static_cast<const float*>(bias_base.data()) : nullptr;
        const Tensor want = reference(src, with_bias ? &bias : nullptr, act, lo, hi);
        // f32: an element a thread (32-bit indexing, and 64-bit), and four a thread.
        const Tensor y32 = amber::full({7, channels}, double(NAN)), y64 = amber::full({7, channels}, double(NAN));
        launch_small(&passes::finish<float, uint32_t, float>, static_cast<const float*>(src.data()),
                     static_cast<float*>(view_of(y32).data), uint32_t(n), uint32_t(channels), bp, bstride, act, lo, hi);
        launch_small(&passes::finish<float, int64_t, float>, static_cast<const float*>(src.data()),
                     static_cast<float*>(view_of(y64).data), n, channels, bp, bstride, act, lo, hi);
        CHECK(same(y32, want));
        CHECK(same(y64, want));
        const Tensor y4 = amber::full({7, channels}, double(NAN));
        if (passes::by_four(n, channels, src.data(), y4.data())) {
          launch_small(&passes::finish4<float>, static_cast<const float*>(src.data()),
                       static_cast<float*>(view_of(y4).data), uint32_t(n / 4), uint32_t(channels), bp, bstride, act, lo,
                       hi);
          CHECK(same(y4, want));
        } else {
          CHECK(channels % 4 != 0);  // Amber's allocations are 16-byte aligned: only the channels refuse
        }
        // bf16 (a 16-bit product's output widened to f32, four a thread; a model in bf16, rounded
        // back once), where the f32 math is exact (no activation, or clamp): the same bits.
        if (act == Act::silu || act == Act::hardswish) continue;
        const Tensor src16 = src.to(DType::bf16);
        const Tensor want16 = reference(src16, with_bias ? &bias : nullptr, act, lo, hi);
        const auto* s16 = static_cast<const __nv_bfloat16*>(src16.data());
        const Tensor yb = amber::full({7, channels}, double(NAN), DType::bf16);
        launch_small(&passes::finish<__nv_bfloat16, uint32_t, __nv_bfloat16>, s16,
                     static_cast<__nv_bfloat16*>(view_of(yb).data), uint32_t(n), uint32_t(channels), bp, bstride, act,
                     lo, hi);
        CHECK(same(yb, want16.to(DType::bf16)));
        if (channels % 4 == 0) {
          const Tensor yw = amber::full({7, channels}, double(NAN));
          launch_small(&passes::finish4<__nv_bfloat16>, s16, static_cast<float*>(view_of(yw).data), uint32_t(n / 4),
                       uint32_t(channels), bp, bstride, act, lo, hi);
          CHECK(same(yw, want16));
        }
      }
}
