// The frame of the fused kernels compiled at run time (fused_rtc.h writes a program's source around
// it, NVRTC compiles it): every operand dense and 16-byte aligned, eight elements a thread, the
// program straight-line code with its immediates as constants. NVRTC has no standard library (its
// names come from kernels/rtc_std.h); tests/test_fused_rtc_emulated.cpp runs it on the CPU.
#pragma once

#include "amber/kernels/pointwise_math.h"

namespace amber::cuda::rtc {

// The output's and the inputs' data: the kernel's second parameter (fused.cu fills this layout).
template <int K>
struct Pointers {
  char* y;
  const char* x[K];
};

// The storage of every operand; the program runs in f32. 16-bit values round to nearest even.
struct F32 {
  static constexpr int kBytes = 4;
  __device__ static float widen(unsigned bits) { return __uint_as_float(bits); }
  __device__ static unsigned narrow(float v) { return __float_as_uint(v); }
};
struct Bf16 {
  static constexpr int kBytes = 2;
  __device__ static float widen(unsigned bits) { return __uint_as_float(bits << 16); }
  __device__ static unsigned narrow(float v) {
#if defined(AMBER_CUDA_EMULATION)
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
#else
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
#endif
  }
};
struct F16 {
  static constexpr int kBytes = 2;
  __device__ static float widen(unsigned bits) {
#if defined(AMBER_CUDA_EMULATION)
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(bits)));
    return f;
#endif
  }
  __device__ static unsigned narrow(float v) {
#if defined(AMBER_CUDA_EMULATION)
    return __half_as_ushort(__float2half_rn(v));
#else
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
#endif
  }
};

// Elements a thread: eight (two 16-byte loads an input in f32, one in 16 bits), four for f32
// programs of more than four inputs (their values stay in registers).
template <typename S, int K>
__host__ __device__ constexpr int per_thread() {
  return S::kBytes == 2 || K <= 4 ? 8 : 4;
}

// E elements from p (16-byte aligned, E * kBytes a multiple of 16), widened; and E stored.
template <typename S, int E>
__device__ inline void load_whole(const char* p, float (&v)[E]) {
#pragma unroll
  for (int q = 0; q < E * S::kBytes / 16; ++q) {
    const uint4 w = reinterpret_cast<const uint4*>(p)[q];
    const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if constexpr (S::kBytes == 4) {
        v[4 * q + j] = S::widen(words[j]);
      } else {
        v[8 * q + 2 * j] = S::widen(words[j] & 0xffffu);
        v[8 * q + 2 * j + 1] = S::widen(words[j] >> 16);
      }
    }
  }
}
template <typename S, int E>
__device__ inline void store_whole(char* p, const float (&v)[E]) {
#pragma unroll
  for (int q = 0; q < E * S::kBytes / 16; ++q) {
    unsigned words[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      words[j] = S::kBytes == 4 ? S::narrow(v[4 * q + j])
                                : S::narrow(v[8 * q + 2 * j]) | S::narrow(v[8 * q + 2 * j + 1]) << 16;
    reinterpret_cast<uint4*>(p)[q] = make_uint4(words[0], words[1], words[2], words[3]);
  }
}
template <typename S>
__device__ inline float load_one(const char* p) {
  if constexpr (S::kBytes == 4)
    return S::widen(*reinterpret_cast<const unsigned*>(p));
  else
    return S::widen(*reinterpret_cast<const unsigned short*>(p));
}
template <typename S>
__device__ inline void store_one(char* p, float v) {
  if constexpr (S::kBytes == 4)
    *reinterpret_cast<unsigned*>(p) = S::narrow(v);
  else
    *reinterpret_cast<unsigned short*>(p) = static_cast<unsigned short>(S::narrow(v));
}

// The kernel's body: thread t computes elements [t E, t E + E) of n; P::run(x) is the program
// on one element's inputs x[0..K). A chunk past the end reads and writes element by element.
template <typename S, int K, typename P>
__device__ inline void dense(long long n, const Pointers<K>& p) {
  constexpr int E = per_thread<S, K>();
  const long long base = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * E;
  if (base >= n) return;
  const bool whole = base + E <= n;
  float in[K][E];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (whole) {
      load_whole<S, E>(p.x[k] + base * S::kBytes, in[k]);
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e) in[k][e] = load_one<S>(p.x[k] + (base + e < n ? base + e : base) * S::kBytes);
    }
  }
  float out[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    float x[K];
#pragma unroll
    for (int k = 0; k < K; ++k) x[k] = in[k][e];
    out[e] = P::run(x);
  }
  if (whole) {
    store_whole<S, E>(p.y + base * S::kBytes, out);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (base + e < n) store_one<S>(p.y + (base + e) * S::kBytes, out[e]);
  }
}

}  // namespace amber::cuda::rtc
