// TensorMeta (dtype and sizes: what shape/dtype inference works on) and Layout (sizes,
// strides and offset: what view functions work on). Tensors embed a TensorMeta so the
// dispatcher can hand it to inference without copying.
#pragma once

#include "amber/core/dtype.h"
#include "amber/core/shape.h"

namespace amber {

struct TensorMeta {
  DType dtype = DType::f32;
  DimVec sizes;
};

struct Layout {
  DimVec sizes;
  DimVec strides;
  int64_t offset = 0;
};

}  // namespace amber
