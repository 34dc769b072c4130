// The device code of the convolution's own passes around cuDNN (conv.cu): packing weights into
// KRSC order, and the pass after the product (bias, activation, the 16-bit output widened or
// rounded once), in a header of its own so that tests/test_conv_passes_emulated.cpp runs the same
// code on the CPU against the CPU's ops; conv.cu launches them. Private to libamber_cuda.so.
#pragma once

#include <cstdint>
#include <type_traits>

#include "amber/kernels/cuda/activation.cuh"
#include "amber/kernels/cuda/cuda_util.cuh"

namespace amber::cuda::passes {

// w[k, c, r, s] (any strides) -> out[k, r, s, c] dense.
template <int Unused = 0>  // (a header's kernel must not be defined once per file)
__global__ void pack_krsc(const float* w, float* out, int K, int C, int R, int S, int64_t sk, int64_t sc, int64_t sr,
                          int64_t ss) {
  const int64_t n = int64_t(K) * C * R * S;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i;
    const int c = int(rest % C);
    rest /= C;
    const int s = int(rest % S);
    rest /= S;
    const int r = int(rest % R);
    const int k = int(rest / R);
    out[i] = w[k * sk + c * sc + r * sr + s * ss];
  }
}

// The pass after the convolution: fused_conv2d's bias (when the convolution did not add it;
// NULL otherwise) and activation, and in 16 bits the widening to f32 (with conv2d's bias), over
// n dense channels-last elements of src into y (in place when both are the f32 output; y of
// type D: f32, or the 16-bit type of a model in 16 bits, rounded once):
// y = act(src + bias[i % channels]), the one rounding where cudnnAddTensor and a separate pass
// would make two. I indexes: 32-bit where n fits, since a 64-bit remainder costs tens of
// instructions an element.
template <typename T, typename I, typename D = float>
__global__ void finish(const T* src, D* y, I n, I channels, const float* bias, int64_t bias_stride, Act act, float lo,
                       float hi) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    float v = float(widen(src[i]));
    if (bias) v += bias[int64_t(i % channels) * bias_stride];
    y[i] = cast_value<D>(apply_act(v, act, lo, hi));
  }
}
// The same four elements a thread (channels a multiple of four, src and y aligned for whole
// groups): one 16-byte store (and load of an f32 source) a group, the channel's remainder once.
template <typename T>
__global__ void finish4(const T* src, float* y, uint32_t groups, uint32_t channels, const float* bias,
                        int64_t bias_stride, Act act, float lo, float hi) {
  for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += gridDim.x * blockDim.x) {
    float v[4];
    if constexpr (std::is_same_v<T, float>) {
      const float4 x = reinterpret_cast<const float4*>(src)[g];
      v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = float(widen(src[size_t(g) * 4 + e]));
    }
    const uint32_t c = (g * 4) % channels;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (bias) v[e] += bias[int64_t(c + e) * bias_stride];
      v[e] = apply_act(v[e], act, lo, hi);
    }
    reinterpret_cast<float4*>(y)[g] = make_float4(v[0], v[1], v[2], v[3]);
  }
}
// Whether finish4 serves a pass over n f32 outputs (y) of `channels` channels from src: channels
// a multiple of four, n within 32-bit indexing, both buffers 16-byte aligned.
inline bool by_four(int64_t n, int64_t channels, const void* src, const void* y) {
  return channels % 4 == 0 && n <= int64_t(UINT32_MAX) && aligned16(y) && aligned16(src);
}

}  // namespace amber::cuda::passes
