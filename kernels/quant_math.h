// Per-element formulas of the int8 quantized ops (docs/OPS.md, "Int8 convolutions and linear
// layers"), shared by the CPU loops (kernels/cpu/quantize.cpp) and the CUDA kernels
// (kernels/cuda/quantized.cu): a float to uint8 with a scale's reciprocal and a zero point,
// the activation of quantized_conv2d / the .u8 overloads, one int32 product's epilogue, and
// quantized_add's element.
#pragma once

#include <cstdint>

#include "amber/kernels/activation_kind.h"
#include "amber/kernels/hd.h"
#include "amber/kernels/pointwise_math.h"

namespace amber::quant {

// Round half to even of |v| < 2^22 by adding and subtracting 1.5 * 2^23 (vectorises where
// nearbyint does not); larger magnitudes, infinities and NaN pass through unchanged or nearly,
// and the callers saturate them.
AMBER_HD inline float round_even(float v) {
  constexpr float kRound = 12582912.0f;
  return (v + kRound) - kRound;
}

// clamp(round_half_even(x * inv_scale) + zero_point, 0, 255): PyTorch's fake quantization
// (multiplying by the scale's reciprocal). Infinities saturate; a NaN gives 0 (max first: the
// comparison is false for NaN, so no float-to-int conversion of a NaN happens).
// The product is rounded to float before round_even adds its constant, never fused with it
// (kernels/CMakeLists.txt builds the CPU users without contraction; on a GPU, __fmul_rn).
AMBER_HD inline uint8_t to_u8(float x, float inv_scale, float zero_point) {
#ifdef __CUDA_ARCH__
  const float m = __fmul_rn(x, inv_scale);
#else
  const float m = x * inv_scale;
#endif
  const float v = round_even(m) + zero_point;
  const float c = v > 0.0f ? v : 0.0f;
  return static_cast<uint8_t>(static_cast<int32_t>(c < 255.0f ? c : 255.0f));
}

// The activation of a quantized op's f32 result.
AMBER_HD inline float activate(float v, Act act, float lo, float hi) {
  switch (act) {
    case Act::none:
      return v;
    case Act::clamp:
      return pw::op::clamp(v, lo, hi);
    case Act::silu:
      return pw::op::silu(v);
    case Act::hardswish:
      return pw::op::hardswish(v);
  }
  return v;
}

// One output of a quantized product: the int32 sum acc of q_x * q_w over the reduction,
// corrected by the input's zero point times the weights' sum, scaled by the input's and the
// output channel's scales, plus the bias: (acc - zx * wsum) * sx * sw + b.
AMBER_HD inline float dequantized(int32_t acc, int32_t zx, int32_t wsum, float sx, float sw, float b) {
#ifdef __CUDA_ARCH__  // rounded as the CPU's (uncontracted) build rounds it
  return __fadd_rn(__fmul_rn(__fmul_rn(float(acc - zx * wsum), sx), sw), b);
#else
  return float(acc - zx * wsum) * sx * sw + b;
#endif
}

// quantized_add's parameters and element: the two uint8 values as what they stand for,
// (a - za) * sa + (b - zb) * sb, through the activation, requantized with the output's
// scale's reciprocal and zero point. The sum is formed in double, where both products are
// exact (9-bit integers times 24-bit scales), so a compiler contracting it into a fused
// multiply-add (which product it fuses differs between GCC, Clang and nvcc) cannot change
// it: one rounding to float, the same in every build.
struct AddParams {
  double sa = 1, za = 0, sb = 1, zb = 0;
  Act act = Act::none;
  float lo = 0, hi = 0;
  float inv_so = 1, zo = 0;
};
template <Act A>
AMBER_HD inline uint8_t add_u8(uint8_t a, uint8_t b, const AddParams& p) {
  const float v = float((double(a) - p.za) * p.sa + (double(b) - p.zb) * p.sb);
  return to_u8(activate(v, A, p.lo, p.hi), p.inv_so, p.zo);
}

}  // namespace amber::quant
