// fused_conv2d's and fused_linear's activation on the CPU (activation_kind.h's Act), by its
// pointwise op's formula (pointwise_math.h: clamp keeps NaN,
// silu with libmvec's exp, hardswish) over a dense f32 run in place, compiled per ISA
// (IsaVariants) and split over the intra-op threads in chunks a core's cache holds.
#pragma once

#include <algorithm>
#include <cstdint>

#include "amber/core/parallel.h"
#include "amber/kernels/activation_kind.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/pointwise_math.h"

namespace amber::cpu {

// The activation over n dense floats in place (ctx: clamp's bounds).
template <Act A>
struct ActivationRun {
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    float* __restrict x = reinterpret_cast<float*>(p[0]);
    if constexpr (A == Act::silu) {
      for (int64_t i = 0; i < n; ++i) x[i] = pw::op::silu(x[i]);
    } else if constexpr (A == Act::hardswish) {
      for (int64_t i = 0; i < n; ++i) x[i] = pw::op::hardswish(x[i]);
    } else {
      const float lo = static_cast<const float*>(ctx)[0], hi = static_cast<const float*>(ctx)[1];
      for (int64_t i = 0; i < n; ++i) x[i] = pw::op::clamp(x[i], lo, hi);
    }
  }
};

// `act` (not none) over p[0, n) in place, in chunks of 4096 over the intra-op threads.
inline void activation_dense(float* p, int64_t n, Act act, float lo, float hi) {
  static const InnerFn silu = IsaVariants<ActivationRun<Act::silu>>::pick();
  static const InnerFn hardswish = IsaVariants<ActivationRun<Act::hardswish>>::pick();
  static const InnerFn clamp = IsaVariants<ActivationRun<Act::clamp>>::pick();
  const InnerFn run = act == Act::silu ? silu : act == Act::hardswish ? hardswish : clamp;
  const float bounds[2] = {lo, hi};
  constexpr int64_t kChunk = 4096;
  parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
    char* at[1] = {reinterpret_cast<char*>(p + b * kChunk)};
    run(at, nullptr, std::min(n, e * kChunk) - b * kChunk, bounds);
  });
}

}  // namespace amber::cpu
