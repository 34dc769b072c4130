// fused_conv2d's and fused_linear's activation on CUDA: the op's `activation` attribute as an
// enum and the activation of one value by its pointwise op's formula (pointwise_math.h, the
// CPU's: clamp keeps NaN), for the passes that apply it after cuDNN's or cuBLASLt's product.
#pragma once

#include <cstring>

#include "amber/kernels/pointwise_math.h"

namespace amber::cuda {

enum class Act { none, clamp, silu, hardswish };

// The attribute's value, which the op table's inference has checked.
inline Act act_of(const char* name) {
  return std::strcmp(name, "clamp") == 0       ? Act::clamp
         : std::strcmp(name, "silu") == 0      ? Act::silu
         : std::strcmp(name, "hardswish") == 0 ? Act::hardswish
                                               : Act::none;
}

__device__ inline float apply_act(float v, Act act, float lo, float hi) {
  return act == Act::none    ? v
         : act == Act::clamp ? pw::op::clamp(v, lo, hi)
         : act == Act::silu  ? pw::op::silu(v)
                             : pw::op::hardswish(v);
}

}  // namespace amber::cuda
