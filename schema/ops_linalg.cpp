// Op table entries for matrix products (mm, bmm, matmul with PyTorch's 1-D and batched
// broadcasting rules), linear (and fused_linear, with an activation; quantized_linear, int8
// weights and a static input quantization), and scaled_dot_product_attention (torch 2.0 semantics:
// softmax(q k^T / sqrt(E) + mask) v, a bool mask keeping the positions that are true), with its
// heads-merged form attention_merge_heads.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

void same_dtype(const InferCtx& c, int a, int b, const char* na, const char* nb) {
  c.check(c.in(a).dtype == c.in(b).dtype, "expected ", na, " and ", nb,
          " to have the same dtype, but got: ", c.in(a).dtype, " != ", c.in(b).dtype);
}

void infer_mm(InferCtx& c) {
  const TensorMeta &a = c.in(0), &b = c.in(1);
  c.check(a.sizes.size() == 2, "self must be a matrix, got shape ", a.sizes);
  c.check(b.sizes.size() == 2, "mat2 must be a matrix, got shape ", b.sizes);
  c.check(a.sizes[1] == b.sizes[0], "mat1 and mat2 shapes cannot be multiplied (", a.sizes[0], "x", a.sizes[1], " and ",
          b.sizes[0], "x", b.sizes[1], ")");
  same_dtype(c, 0, 1, "mat1", "mat2");
  c.add_output(a.dtype, DimVec{a.sizes[0], b.sizes[1]});
}

void infer_bmm(InferCtx& c) {
  const TensorMeta &a = c.in(0), &b = c.in(1);
  c.check(a.sizes.size() == 3, "batch1 must be a 3-D tensor, got shape ", a.sizes);
  c.check(b.sizes.size() == 3, "batch2 must be a 3-D tensor, got shape ", b.sizes);
  c.check(a.sizes[0] == b.sizes[0], "batch sizes differ: ", a.sizes, " and ", b.sizes);
  c.check(a.sizes[2] == b.sizes[1], "shapes cannot be multiplied: ", a.sizes, " and ", b.sizes);
  same_dtype(c, 0, 1, "batch1", "batch2");
  c.add_output(a.dtype, DimVec{a.sizes[0], a.sizes[1], b.sizes[2]});
}

void infer_matmul(InferCtx& c) {
  const DimVec &a = c.in(0).sizes, &b = c.in(1).sizes;
  c.check(!a.empty() && !b.empty(), "both arguments need at least one dimension, got shapes ", a, " and ", b);
  same_dtype(c, 0, 1, "self", "other");
  const int64_t ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  c.check(ka == kb, "shapes ", a, " and ", b, " cannot be multiplied (", ka, " vs ", kb, ")");
  DimVec out;
  if (a.size() >= 2 || b.size() >= 2) {
    DimVec ba, bb;  // batch dims
    for (int i = 0; i + 2 < a.size(); ++i) ba.push_back(a[i]);
    for (int i = 0; i + 2 < b.size(); ++i) bb.push_back(b[i]);
    out = broadcast_shapes(c.op().name.c_str(), ba, bb);
    if (a.size() >= 2) out.push_back(a[a.size() - 2]);
    if (b.size() >= 2) out.push_back(b.back());
  }
  c.add_output(c.in(0).dtype, out);
}

void infer_linear(InferCtx& c) {
  const DimVec &x = c.in(0).sizes, &w = c.in(1).sizes;
  c.check(!x.empty(), "input must have at least one dimension, got shape ", x);
  c.check(w.size() == 2, "weight must be a matrix [out_features, in_features], got shape ", w);
  c.check(x.back() == w[1], "input shape ", x, " does not match weight shape ", w, " (in_features ", w[1], ")");
  same_dtype(c, 0, 1, "input", "weight");
  DimVec out = x;
  out[out.size() - 1] = w[0];
  if (c.has_input(2)) {
    same_dtype(c, 0, 2, "input", "bias");
    const DimVec& b = c.in(2).sizes;
    c.check(b.size() <= 1 && (b.empty() || b[0] == w[0] || b[0] == 1), "bias shape ", b,
            " does not match out_features ", w[0]);
  }
  c.add_output(c.in(0).dtype, out);
}

// fused_linear: linear's rules, and an activation the kernels apply to its output as they
// write it (the product-activation fusion pass makes these; see docs/OPS.md).
void infer_fused_linear(InferCtx& c) {
  infer::check_activation(c);
  infer_linear(c);
}

// quantized_linear (made by tracer/quantize.h's calibration): linear's shapes with an int8
// weight, its scales and the input's quantization checked (infer::check_quantized); f32 out,
// or for quantized_linear.u8 (`requantized`) u8 after its activation.
void quantized_linear_output(InferCtx& c, bool requantized) {
  const DimVec &x = c.in(0).sizes, &w = c.in(1).sizes;
  c.check(!x.empty(), "input must have at least one dimension, got shape ", x);
  c.check(w.size() == 2, "weight must be a matrix [out_features, in_features], got shape ", w);
  c.check(x.back() == w[1], "input shape ", x, " does not match weight shape ", w, " (in_features ", w[1], ")");
  if (requantized) infer::check_activation(c);
  infer::check_quantized(c, w[0], w[1], requantized);
  DimVec out = x;
  out[out.size() - 1] = w[0];
  c.add_output(requantized ? DType::u8 : DType::f32, out);
}
void infer_quantized_linear(InferCtx& c) { quantized_linear_output(c, false); }
void infer_quantized_linear_u8(InferCtx& c) { quantized_linear_output(c, true); }

void infer_sdpa(InferCtx& c) {
  const DimVec &q = c.in(0).sizes, &k = c.in(1).sizes, &v = c.in(2).sizes;
  c.check(q.size() >= 2 && k.size() == q.size() && v.size() == q.size(),
          "query, key and value must have the same rank (at least 2), got ", q, ", ", k, ", ", v);
  for (int i = 0; i + 2 < q.size(); ++i)
    c.check(q[i] == k[i] && q[i] == v[i], "query, key and value must have equal batch dims, got ", q, ", ", k, ", ", v);
  const int r = q.size();
  c.check(q[r - 1] == k[r - 1], "query and key embedding sizes differ: ", q, " and ", k);
  c.check(k[r - 2] == v[r - 2], "key and value sequence lengths differ: ", k, " and ", v);
  same_dtype(c, 0, 1, "query", "key");
  same_dtype(c, 0, 2, "query", "value");
  c.check(c.attr("dropout_p").f() == 0.0, "dropout_p must be 0 (Amber runs inference only), got ", c.attr("dropout_p"));
  if (c.has_input(3)) {
    c.check(!c.attr("is_causal").b(), "is_causal and attn_mask cannot both be set");
    const TensorMeta& m = c.in(3);
    c.check(m.dtype == DType::b8 || m.dtype == c.in(0).dtype, "attn_mask must be bool or ", c.in(0).dtype, ", got ",
            m.dtype);
    DimVec scores = q;
    scores[r - 1] = k[r - 2];
    c.check(broadcast_shapes(c.op().name.c_str(), m.sizes, scores) == scores, "attn_mask of shape ", m.sizes,
            " does not broadcast to the attention scores ", scores);
  }
  DimVec out = q;
  out[r - 1] = v[r - 1];
  c.add_output(c.in(0).dtype, out);
  c.cast_mask = 0;
}

// attention_merge_heads: sdpa's [*, H, L, Ev] output as [*, L, H * Ev], each row the heads'
// outputs side by side (transpose(-3, -2), then the last two dims flattened).
void infer_attention_merge_heads(InferCtx& c) {
  const DimVec& q = c.in(0).sizes;
  c.check(q.size() >= 3, "query must be [*, heads, L, E] (at least 3 dims), got shape ", q);
  infer_sdpa(c);
  TensorMeta& o = c.output(0);
  const int r = int(o.sizes.size());
  DimVec out(std::span<const int64_t>(o.sizes.data(), size_t(r - 3)));
  out.push_back(o.sizes[r - 2]);
  out.push_back(checked_mul(o.sizes[r - 3], o.sizes[r - 1], "attention_merge_heads"));
  o.sizes = out;
}

const DTypeSet kF32{DType::f32};
// The quantized ops' inputs: f32 (quantized as it enters) or u8 (an int8 op's output).
const DTypeSet kQuantizedInput{DType::f32, DType::u8};

const OpRegistrar registrar{
    {"mm(Tensor self, Tensor mat2) -> Tensor", kF32, infer_mm, 0, nullptr, 1, "Matrix product of [n, k] and [k, m].",
     OpCost::matmul},
    {"bmm(Tensor self, Tensor mat2) -> Tensor", kF32, infer_bmm, 0, nullptr, 1,
     "Batched matrix product of [b, n, k] and [b, k, m].", OpCost::matmul},
    {"matmul(Tensor self, Tensor other) -> Tensor", kF32, infer_matmul, 0, nullptr, 1,
     "torch.matmul: dot, matrix-vector, matrix or batched products, broadcasting batch dims.", OpCost::matmul},
    {"linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", kF32, infer_linear, 0, nullptr, 1,
     "input @ weight^T + bias over the last dim of input.", OpCost::matmul},
    {"fused_linear(Tensor input, Tensor weight, Tensor? bias=None, str{clamp,silu,hardswish} activation=\"clamp\", "
     "float min_val=0.0, "
     "float max_val=6.0) -> Tensor",
     kF32, infer_fused_linear, 0, nullptr, 1,
     "linear followed by an activation of its output, fused_conv2d's: clamp (to [min_val, max_val]; either may be "
     "infinite; NaN stays NaN), silu or hardswish, each with its pointwise op's formula; made by the "
     "product-activation fusion pass.",
     OpCost::matmul, 8},
    {"quantized_linear(Tensor input, Tensor weight, Tensor weight_scale, Tensor? bias=None, float input_scale=1.0, "
     "int input_zero_point=0) -> Tensor",
     kQuantizedInput, infer_quantized_linear, 0, nullptr, 1,
     "linear of the input quantized to uint8 (q = clamp(round_half_even(x * (1 / input_scale)) + input_zero_point, 0, "
     "255); a u8 input is q) by the int8 weight [out, in] times its scale per output feature, accumulated exactly in "
     "integers: (q - input_zero_point) * input_scale * weight_scale[o] + bias[o], in f32. An infinite input "
     "saturates; a row holding a NaN gives a row of NaN. Made by `amber quantize`.",
     OpCost::matmul, 3},
    {"quantized_linear.u8(Tensor input, Tensor weight, Tensor weight_scale, Tensor? bias=None, float input_scale=1.0, "
     "int input_zero_point=0, str{clamp,silu,hardswish,none} activation=\"none\", float min_val=0.0, float "
     "max_val=6.0, float output_scale=1.0, "
     "int output_zero_point=0) -> Tensor",
     kQuantizedInput, infer_quantized_linear_u8, 0, nullptr, 1,
     "quantized_linear, then an activation (none, or fused_conv2d's) of its f32 result y, quantized to uint8: "
     "clamp(round_half_even(act(y) * (1 / output_scale)) + output_zero_point, 0, 255), for the next int8 op to read "
     "as it is. A NaN in an f32 input is quantized as level 0 (uint8 holds no NaN). Made by `amber quantize` "
     "between consecutive int8 layers.",
     OpCost::matmul, 4},
    {"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
     "float dropout_p=0.0, bool is_causal=False) -> Tensor",
     kF32, infer_sdpa, 0, nullptr, 1,
     "softmax(q k^T / sqrt(E) + mask) v over the last two dims; a bool mask keeps the true positions, a float mask "
     "is added; is_causal applies a lower-triangular mask.",
     OpCost::attention},
    {"attention_merge_heads(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, "
     "bool is_causal=False) -> Tensor",
     kF32, infer_attention_merge_heads, 0, nullptr, 1,
     "scaled_dot_product_attention over [*, H, L, E] queries with the heads merged: its output transposed to "
     "[*, L, H, Ev] and flattened to [*, L, H * Ev] (each row every head's output side by side, as a transformer's "
     "output projection reads it), written there directly; rank 3 [B, L, E] gives [L, B * Ev] (sequence-first "
     "attention with the heads folded into B). Made by the head-merge pass.",
     OpCost::attention, 7},
};

}  // namespace
}  // namespace amber
