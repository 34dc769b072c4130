// The opt-in cuDNN route of 16-bit attention (AMBER_CUDA_CUDNN_ATTENTION=1): which calls cuDNN's
// fused attention takes (4-D, no broadcast, no mask, not causal: attention_plan.h), the step's plan
// built at setup, and the calls run on it. attention.cu tries it first and keeps its own kernels
// where it declines. Merged: attention_merge_heads (out [B, L, H * Ev]), else
// scaled_dot_product_attention. Private to libamber_cuda.so.
#pragma once

#include <cstddef>

#include "amber/core/backend.h"

namespace amber::cuda {

// Setup of a 16-bit attention step (f16, else bf16): with the route asked for and a shape cuDNN's
// operation takes, its plan as *state and its workspace; otherwise no state. Always 0: a plan
// cuDNN does not make is said on stderr, and the step runs Amber's kernels.
int cudnn_attention_setup(const amber_kernel_args* a, bool merged, bool f16, void** state, size_t* workspace_bytes);
void cudnn_attention_destroy(void* state);
// 1 when the call ran on the step's plan (*rc its result), 0 to take Amber's kernels: no plan, or
// a call of another shape or with buffers off 16 bytes.
int cudnn_attention_run(const amber_kernel_args* a, bool merged, int* rc);

}  // namespace amber::cuda
