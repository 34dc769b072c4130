// The CUDA backend's switches read from the environment: a variable counts as set when it is
// exactly "1". The opt-in cuDNN backend-API paths (convolution plans, fused attention) are read
// here once, for the kernels that take them and for the captures that take turns with them
// (capture_lock.h); diagnostics' logs are read where they print. Private to libamber_cuda.so.
#pragma once

#include <cstdlib>

namespace amber::cuda {

inline bool env_is_one(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] == '1' && v[1] == '\0';
}

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

}  // namespace amber::cuda
