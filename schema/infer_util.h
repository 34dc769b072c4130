// Inference helpers shared by the ops_*.cpp files: result-type priorities, the output
// memory format of pointwise ops, ATen's int[2] argument expansion, reduced-dim masks and
// the broadcast of several shapes.
#pragma once

#include <cmath>

#include "amber/core/backend.h"
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

// fused_conv2d's and the quantized ops' activation of their output: the op table's choices
// (clamp, silu, hardswish; the quantized ops' also none) hold the names, and "clamp" clamps to
// [min_val, max_val], which must be an interval.
inline void check_activation(const InferCtx& c) {
  if (c.attr("activation").s() == "clamp") {
    const double lo = c.attr("min_val").f(), hi = c.attr("max_val").f();
    c.check(lo <= hi, "clamp needs min_val <= max_val, got ", lo, " and ", hi);
  }
}

// A uint8 quantization's attributes PREFIX_scale (finite and positive, also as a float) and
// PREFIX_zero_point (in [0, 255]).
inline void check_uint8_quantization(const InferCtx& c, const std::string& prefix) {
  const double s = c.attr(prefix + "_scale").f();
  c.check(std::isfinite(s) && s > 0 && float(s) > 0 && std::isfinite(float(s)), prefix,
          "_scale must be finite and positive (as a float), got ", s);
  const int64_t z = c.attr(prefix + "_zero_point").i();
  c.check(z >= 0 && z <= 255, prefix, "_zero_point must be in [0, 255] (uint8), got ", z);
}

// The quantization parameters of quantized_conv2d and quantized_linear (and their .u8
// overloads; docs/OPS.md): input 0 f32 (quantized as it enters) or u8 (quantized already with
// input_scale and input_zero_point), the weight int8 with `channels` output channels, its
// scale f32 [channels] (input 2), an f32 bias of [channels] (input 3) when present,
// input_scale finite and positive, input_zero_point in [0, 255], at most
// AMBER_MAX_INT8_REDUCTION products per output; for the .u8 overloads (`requantized`) the
// same of output_scale and output_zero_point. The weight scales' values are the kernels' to
// check.
inline void check_quantized(InferCtx& c, int64_t channels, int64_t reduction, bool requantized = false) {
  c.check(reduction <= AMBER_MAX_INT8_REDUCTION, "each output sums ", reduction, " products, more than the ",
          AMBER_MAX_INT8_REDUCTION, " whose int32 accumulators cannot overflow");
  c.check(c.in(0).dtype == DType::f32 || c.in(0).dtype == DType::u8, "input must be f32 or u8, got ", c.in(0).dtype);
  c.check(c.in(1).dtype == DType::i8, "weight must be int8, got ", c.in(1).dtype);
  c.check(c.in(2).dtype == DType::f32 && c.in(2).sizes == DimVec{channels}, "weight_scale must be f32 [", channels,
          "] (one scale per output channel), got ", c.in(2).dtype, " ", c.in(2).sizes);
  if (c.has_input(3))
    c.check(c.in(3).dtype == DType::f32 && c.in(3).sizes == DimVec{channels}, "bias must be f32 [", channels, "], got ",
            c.in(3).dtype, " ", c.in(3).sizes);
  check_uint8_quantization(c, "input");
  if (requantized) check_uint8_quantization(c, "output");
  c.cast_mask = 0;
}

}  // namespace amber::infer
