// TensorMeta (dtype and sizes: what shape/dtype inference works on) and Layout (sizes,
// strides and offset: what view functions work on). Tensors embed a TensorMeta so the
// dispatcher can hand it to inference without copying.
#pragma once

#include "amber/core/dtype.h"
#include "amber/core/shape.h"

namespace amber {

// How a 4-D tensor's elements are laid out when Amber allocates it. channels_last is
// NHWC memory for an NCHW-shaped tensor (PyTorch's torch.channels_last): convolutions run
// fastest on it, so conv2d produces it and pointwise, pooling and norm ops keep it.
enum class MemoryFormat : uint8_t { contiguous, channels_last };

struct TensorMeta {
  DType dtype = DType::f32;
  DimVec sizes;
  MemoryFormat format = MemoryFormat::contiguous;
};

struct Layout {
  DimVec sizes;
  DimVec strides;
  int64_t offset = 0;
};

}  // namespace amber
