// Inference helpers shared by the ops_*.cpp files: result-type priorities, the output
// memory format of pointwise ops, ATen's int[2] argument expansion, reduced-dim masks and
// the broadcast of several shapes.
#pragma once

#include "amber/schema/op_schema.h"

namespace amber::infer {

inline Priority priority_of(const TensorMeta& m) {
  return m.sizes.empty() ? Priority::zero_dim : Priority::dimensioned;
}

// A pointwise op's output is channels-last when every input of the output's (4-D) shape is
// channels-last, as PyTorch keeps torch.channels_last through elementwise ops.
inline MemoryFormat pointwise_format(const InferCtx& c, const DimVec& out_sizes) {
  if (out_sizes.size() != 4) return MemoryFormat::contiguous;
  bool any = false;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i) || !(c.in(i).sizes == out_sizes)) continue;
    if (c.in(i).format != MemoryFormat::channels_last) return MemoryFormat::contiguous;
    any = true;
  }
  return any ? MemoryFormat::channels_last : MemoryFormat::contiguous;
}

// ATen's int[2] arguments accept one value for both dims.
inline std::array<int64_t, 2> pair(const InferCtx& c, const Attr& a, const char* name) {
  const auto& v = a.ints();
  c.check(v.size() == 1 || v.size() == 2, name, " must have one or two elements, got ", DimVec(v));
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

// Bit d set for each dim reduced; None or [] means every dim. Throws on repeats.
inline uint32_t reduced_dims_mask(const InferCtx& c, int ndim, const Attr& dims) {
  if (dims.is_none() || dims.ints().empty()) return ndim == 0 ? 0u : (1u << ndim) - 1;
  uint32_t mask = 0;
  for (int64_t d : dims.ints()) {
    const int w = c.wrap(d, ndim);
    c.check(!(mask & (1u << w)), "dim ", w, " appears multiple times in the list of dims");
    mask |= 1u << w;
  }
  return mask;
}

inline DimVec reduced_sizes(const DimVec& sizes, uint32_t mask, bool keepdim) {
  DimVec out;
  for (int i = 0; i < sizes.size(); ++i) {
    if (!(mask & (1u << i)))
      out.push_back(sizes[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

}  // namespace amber::infer
