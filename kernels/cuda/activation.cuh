// fused_conv2d's and fused_linear's activation on CUDA (activation_kind.h's Act): one value's by
// its pointwise op's formula (pointwise_math.h, the CPU's: clamp keeps NaN), for the passes that
// apply it after cuDNN's or cuBLASLt's product.
#pragma once

#include "amber/kernels/activation_kind.h"
#include "amber/kernels/pointwise_math.h"

namespace amber::cuda {

__device__ inline float apply_act(float v, Act act, float lo, float hi) {
  return act == Act::none    ? v
         : act == Act::clamp ? pw::op::clamp(v, lo, hi)
         : act == Act::silu  ? pw::op::silu(v)
                             : pw::op::hardswish(v);
}

}  // namespace amber::cuda
