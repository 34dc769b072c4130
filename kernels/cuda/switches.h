// The CUDA backend's switches, read from the environment once: a variable counts as set when it
// is exactly "1" (off, for a switch with a default of its own, when exactly "0"; one with more
// settings takes a digit): the opt-in paths (cuDNN's plans and fused attention, the prefetching
// fused kernel), the compiled fused kernels, the convolution routes' overrides, whether choices
// are timed. Diagnostics' logs are read where they print. Private to libamber_cuda.so.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace amber::cuda {

// A switch's value: 0 to 9 where the variable is exactly that digit, -1 where it is unset or
// anything else.
inline int env_switch(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] >= '0' && v[0] <= '9' && v[1] == '\0' ? v[0] - '0' : -1;
}
inline bool env_is_one(const char* name) { return env_switch(name) == 1; }

// AMBER_CUDA_CONV_PLANS=1: convolutions on cuDNN backend-API plans (conv_plan.h).
inline bool conv_plans_asked() {
  static const bool asked = env_is_one("AMBER_CUDA_CONV_PLANS");
  return asked;
}

// AMBER_CUDA_CUDNN_ATTENTION=1: 16-bit attention on cuDNN's fused operation (attention_plan.h).
inline bool cudnn_attention_asked() {
  static const bool asked = env_is_one("AMBER_CUDA_CUDNN_ATTENTION");
  return asked;
}

// AMBER_CUDA_FUSED_AHEAD=1: dense fused programs of one or two inputs on the prefetching kernel
// (fused.cu's fused_ahead_kernel), until a GPU run times it against the default one.
inline bool fused_ahead_asked() {
  static const bool asked = env_is_one("AMBER_CUDA_FUSED_AHEAD");
  return asked;
}

// AMBER_CUDA_ATTENTION_SPLIT=0: attention with few blocks of query rows stays on the tiled
// kernel, one row a warp walking every key, instead of the kernel whose warps split the keys
// (attention_kernels.cuh's sdpa_split_kernel), for a GPU run to time one against the other.
inline bool attention_split_wanted() {
  static const bool wanted = env_switch("AMBER_CUDA_ATTENTION_SPLIT") != 0;
  return wanted;
}

// AMBER_CUDA_FUSED_RTC: unset (or 1), each fused step whose operands are dense gets a kernel of
// its own, compiled at setup with NVRTC (fused_rtc.h); 2 only those of at least kRtcMinElements
// elements; 0 none (every program interpreted). On an H200 (2026-11-30) the compiled kernel
// moved relu(2x + 1) at 90% of the device copy where the interpreting one reached 61%, and
// ten_mul's call took 8 us where interpreting took 11; an NVRTC run costs load about 25 ms.
constexpr int64_t kRtcMinElements = int64_t(1) << 20;
inline bool fused_rtc_wanted(int64_t elements) {
  static const int value = env_switch("AMBER_CUDA_FUSED_RTC");
  return value != 0 && (value != 2 || elements >= kRtcMinElements);
}

// AMBER_CUDA_CONV_NCHW: 1 runs every f32 convolution through NCHW copies where cuDNN has an NCHW
// algorithm for it, untimed (scripts/gpu_check.sh checks that route on every model so; the own
// kernel's AMBER_CUDA_CONV_DIRECT=1 comes first); 0 never; unset, as each times fastest at load
// (conv.cu's choose_route). Returns the digit, or -1 (unset).
inline int conv_nchw_switch() {
  static const int value = env_switch("AMBER_CUDA_CONV_NCHW");
  return value;
}

// AMBER_CUDA_CONV_DIRECT: 1, 2 or 3 runs every f32 convolution Amber's own kernel takes
// (conv_direct.h) on it with tiles of 64 x 64, 128 x 128 or 128 x 64 outputs, untimed
// (scripts/gpu_check.sh checks each on every op, and 1 on every model); 0 never; unset, as
// each times fastest at load (conv.cu's choose_route). Returns the digit, or -1 (unset).
inline int conv_direct_switch() {
  static const int value = env_switch("AMBER_CUDA_CONV_DIRECT");
  return value;
}

// AMBER_CUDA_TUNING=0: every choice made without running candidates: cuBLASLt's and cuDNN's
// heuristics take their first, f32 convolutions stay on cuDNN's legacy route unless a route is
// forced, a plan's engine is the first that builds. For runs where every kernel is slow
// (compute-sanitizer: scripts/gpu_check.sh's memcheck) or a load must be quick; the kernels so
// chosen can be slower. Unset (or anything else): timed, the default.
inline bool timed_choices() {
  static const bool timed = env_switch("AMBER_CUDA_TUNING") != 0;
  return timed;
}

}  // namespace amber::cuda
