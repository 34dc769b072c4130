// The CUDA backend's reduced-precision products (AMBER_PRECISION_BF16 and AMBER_PRECISION_F16):
// which 16-bit type a convolution or linear layer multiplies in, and the setup-time conversion
// of its immutable f32 weights into that type (refused for f16 when a weight is beyond f16's
// range: that layer then stays f32). Used by conv.cu and gemm.cu. Private to libamber_cuda.so.
#pragma once

#include <cstdint>

#include "amber/core/backend.h"

namespace amber::cuda {

// kBF16 or kF16 (cuda_util.cuh's codes) when the step's precision asks for 16-bit products and
// its weights w are immutable f32 (converted once, at setup); -1 (f32 products) otherwise.
int32_t half_product_type(const amber_kernel_args* a, const amber_tensor_view& w);

// At setup: dst (dtype kBF16 or kF16, dense in some dim order, as a packed layout is) = src's values
// rounded to nearest even (or dst kF32: a 16-bit src widened, exactly), on a stream of the
// conversion's own that is waited for. Returns 0;
// 1 with the args' error set on a CUDA failure; -1, with nothing reported, when dst is f16 and
// a converted weight is not finite (src beyond f16's largest, 65504, or not finite itself).
int convert_weights(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src);

}  // namespace amber::cuda
