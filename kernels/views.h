// Views derived from a kernel's tensor views by index arithmetic alone, shared by the CPU
// and CUDA kernels (host code: kernels build them before launching): flip's reversed view.
#pragma once

#include <cstdint>

#include "amber/core/backend.h"

namespace amber::views {

// v walking each dim of dims (negative dims count from the end) backwards: its data points
// at the last element along them and their strides are negated. itemsize: v's element bytes.
// Sets *empty when a flipped dim has no elements (nothing to read).
inline amber_tensor_view flipped(amber_tensor_view v, const amber_attr& dims, int64_t itemsize, bool* empty) {
  *empty = false;
  for (int i = 0; i < dims.count; ++i) {
    const int d = int(dims.ints[i] < 0 ? dims.ints[i] + v.ndim : dims.ints[i]);
    if (v.sizes[d] == 0) {
      *empty = true;
      return v;
    }
    v.data = static_cast<char*>(v.data) + (v.sizes[d] - 1) * v.strides[d] * itemsize;
    v.strides[d] = -v.strides[d];
  }
  return v;
}

}  // namespace amber::views
