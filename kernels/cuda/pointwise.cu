// The CUDA backend's elementwise kernels (pointwise_kernels.cuh) registered when the library
// loads, and copy_convert (cuda_util.cuh). f16 and bf16 elements are computed in f32 (compute_t)
// and rounded once, as the f32 kernel between conversions would (docs/OPS.md, "16-bit floats"). The
// formulas are the CPU kernels' own (kernels/arith.h, kernels/pointwise_math.h: host and device
// functions). Integer division by zero gives 0 here (the CPU reports an error).

#include "amber/kernels/cuda/pointwise_kernels.cuh"

namespace amber::cuda {

AMBER_CUDA_KERNELS(pointwise) { pointwise::register_kernels(); }

int copy_convert(const amber_kernel_args* a, const amber_tensor_view& dst, const amber_tensor_view& src) {
  switch (src.dtype) {
    case kF32:
      return pointwise::convert_from<float>(a, dst, src);
    case kF64:
      return pointwise::convert_from<double>(a, dst, src);
    case kF16:
      return pointwise::convert_from<__half>(a, dst, src);
    case kBF16:
      return pointwise::convert_from<__nv_bfloat16>(a, dst, src);
    case kI64:
      return pointwise::convert_from<int64_t>(a, dst, src);
    case kI32:
      return pointwise::convert_from<int32_t>(a, dst, src);
    case kI16:
      return pointwise::convert_from<int16_t>(a, dst, src);
    case kI8:
      return pointwise::convert_from<int8_t>(a, dst, src);
    case kU8:
      return pointwise::convert_from<uint8_t>(a, dst, src);
    case kBool:
      return pointwise::convert_from<bool>(a, dst, src);
  }
  return fail(a, "unknown source dtype %d", int(src.dtype));
}

}  // namespace amber::cuda
