// For test_kernels_emulated: the emulated device has no cuDNN, so its route for attention
// (kernels/cuda/attention_cudnn.h) declines every step and call, as the library's does where
// AMBER_CUDA_CUDNN_ATTENTION is unset, and attention.cu runs its own kernels.
#include "amber/kernels/cuda/attention_cudnn.h"

namespace amber::cuda {

int cudnn_attention_setup(const amber_kernel_args*, bool, bool, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes = 0;
  return 0;
}
void cudnn_attention_destroy(void*) {}
int cudnn_attention_run(const amber_kernel_args*, bool, int*) { return 0; }

}  // namespace amber::cuda
