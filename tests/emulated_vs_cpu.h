// What the emulated CUDA tests checked against Amber's CPU kernels share: a tensor as a kernel's
// view, an output to write, a tensor in reversed memory order, an int[] attribute, a str
// attribute's choice, a grid-stride launch, and the comparison with the CPU's output (exact for integers; for floats
// NaN where NaN, else within 1e-6 relative). Include after <amber/amber.h>, catch2 and cuda_emulation.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "amber/core/backend.h"
#include "amber/schema/op_schema.h"

namespace amber::emulation {

inline amber_tensor_view view_of(const Tensor& t) {
  amber_tensor_view v{};
  v.data = const_cast<void*>(t.data());
  v.dtype = int32_t(t.dtype());  // (the backend table's dtype codes are DType's)
  v.ndim = int32_t(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) v.sizes[d] = t.sizes()[size_t(d)], v.strides[d] = t.strides()[size_t(d)];
  return v;
}

// A tensor of `sizes` and dtype filled with NaN (f32) or -7 (so that an element a kernel leaves
// unwritten shows), channels-last (NCHW sizes over NHWC memory) where asked and 4-D.
inline Tensor unwritten(const DimVec& sizes, DType dtype, bool channels_last) {
  const double fill = dtype == DType::f32 ? double(NAN) : -7.0;
  if (!channels_last || sizes.size() != 4) return full(sizes, fill, dtype);
  return full({sizes[0], sizes[2], sizes[3], sizes[1]}, fill, dtype).permute({0, 3, 1, 2});
}

// x's values in memory of the reversed dim order (every stride other than dense).
inline Tensor reversed_layout(const Tensor& x) {
  DimVec back;
  for (int64_t d = x.dim() - 1; d >= 0; --d) back.push_back(d);
  return x.permute(back).contiguous().permute(back);
}

// An int[] attribute over v's values (v outlives it).
inline amber_attr ints_attr(const std::vector<int64_t>& v) {
  amber_attr a{};
  a.kind = AMBER_ATTR_INTS;
  a.count = int32_t(v.size());
  a.ints = v.data();
  return a;
}

// A grid-stride kernel on two blocks of 64 threads (its loop covers the rest).
// What a kernel reads as amber_attr::i for op's str attribute attr set to value: its index
// among the op table's choices (-1 for none of them).
inline int choice(std::string_view op, std::string_view attr, std::string_view value) {
  const OpSchema& s = op_schema(op);
  return s.attr_spec(s.attr_index(attr)).choice_index(value);
}

template <typename Kernel, typename... Args>
void launch_small(Kernel kernel, Args... args) {
  launch(kernel, dim3(2), dim3(64), args...);
}

inline bool same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  REQUIRE(got.dtype() == want.dtype());
  if (want.dtype() == DType::i64) {
    const Tensor gc = got.contiguous(), wc = want.contiguous();
    const int64_t* g = gc.const_data_ptr<int64_t>();
    const int64_t* w = wc.const_data_ptr<int64_t>();
    return std::equal(g, g + want.numel(), w);
  }
  const Tensor gd = got.to(DType::f64).contiguous(), wd = want.to(DType::f64).contiguous();
  const double* g = gd.const_data_ptr<double>();
  const double* w = wd.const_data_ptr<double>();
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (std::isnan(w[i]) != std::isnan(g[i])) return false;
    if (!std::isnan(w[i]) && std::fabs(g[i] - w[i]) > 1e-6 * std::max(1.0, std::fabs(w[i]))) return false;
  }
  return true;
}

}  // namespace amber::emulation
