// Strided copy with dtype conversion between two views of the same shape (dst may have any
// strides, src broadcasts to dst). Used by the kernels that assemble outputs from pieces:
// cat, stack, index_select, embedding.
#pragma once

#include "amber/core/backend.h"

namespace amber::cpu {

void copy_convert(const amber_tensor_view& dst, const amber_tensor_view& src, int num_threads);

// A view of v with dimension dim fixed at index (rank drops by one).
amber_tensor_view select_view(const amber_tensor_view& v, int dim, int64_t index);
// A view of v narrowed to [start, start + length) along dim.
amber_tensor_view narrow_view(const amber_tensor_view& v, int dim, int64_t start, int64_t length);

}  // namespace amber::cpu
