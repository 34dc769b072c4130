// MultiheadAttention and the transformer encoder (transformer.h), following PyTorch's
// forward passes: packed q/k/v projection for self-attention, heads as a batch dim,
// scaled_dot_product_attention, output projection; post- or pre-norm residual blocks.

#include "amber/nn/transformer.h"

#include <cmath>
#include <limits>

namespace amber::nn {
namespace {

// A mask in PyTorch's MultiheadAttention convention (bool: true = not allowed; float:
// added) as an additive float mask.
Tensor additive(const Tensor& mask, DType dtype) {
  if (mask.dtype() != DType::b8) return mask.to(dtype);
  return where(mask, full({}, -std::numeric_limits<double>::infinity(), dtype), zeros({}, dtype));
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, double p, bool bias, bool bf)
    : out_proj(e, e, bias), embed_dim(e), num_heads(h), dropout(p), batch_first(bf) {
  AMBER_CHECK(h > 0 && e % h == 0, "MultiheadAttention: embed_dim ", e, " must be divisible by num_heads ", h);
  // PyTorch: xavier_uniform on in_proj_weight, zero biases.
  const double bound = std::sqrt(6.0 / double(e + 3 * e));
  in_proj_weight = rand({3 * e, e}, {}, nullptr, SrcLoc::none()) * (2 * bound) - bound;
  register_parameter("in_proj_weight", in_proj_weight);
  if (bias) {
    in_proj_bias = zeros({3 * e});
    register_parameter("in_proj_bias", in_proj_bias);
    out_proj.bias = zeros({e});
  }
  register_module("out_proj", out_proj);
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& key_padding_mask, const Tensor& attn_mask) {
  AMBER_CHECK(query.dim() == 3, "MultiheadAttention: expected a 3-D query, got shape ", query.sizes());
  Tensor q = batch_first ? query : query.transpose(0, 1);
  Tensor k = batch_first ? key : key.transpose(0, 1);
  Tensor v = batch_first ? value : value.transpose(0, 1);
  const int64_t B = q.size(0), L = q.size(1), S = k.size(1), E = embed_dim, H = num_heads, D = E / H;
  AMBER_CHECK(q.size(2) == E, "MultiheadAttention: query has ", q.size(2), " features, expected embed_dim ", E);
  Tensor qp, kp, vp;
  if (query.is_same(key) && key.is_same(value)) {  // self-attention: one packed projection
    std::vector<Tensor> qkv = linear(q, in_proj_weight, in_proj_bias).chunk(3, -1);
    qp = qkv[0], kp = qkv[1], vp = qkv[2];
  } else {
    auto part = [&](const Tensor& t, int64_t i) {
      Tensor w = in_proj_weight.slice(0, i * E, (i + 1) * E);
      Tensor b = in_proj_bias.defined() ? in_proj_bias.slice(0, i * E, (i + 1) * E) : Tensor();
      return linear(t, w, b);
    };
    qp = part(q, 0), kp = part(k, 1), vp = part(v, 2);
  }
  // [B, L, E] -> [B, H, L, D]
  auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({B, len, H, D}).transpose(1, 2); };
  Tensor mask;
  if (attn_mask.defined()) {
    mask = additive(attn_mask, q.dtype());
    if (mask.dim() == 3) mask = mask.reshape({B, H, L, S});
  }
  if (key_padding_mask.defined()) {
    AMBER_CHECK((key_padding_mask.sizes() == DimVec{B, S}), "MultiheadAttention: key_padding_mask must have shape [", B,
                ", ", S, "], got ", key_padding_mask.sizes());
    Tensor kpm = additive(key_padding_mask, q.dtype()).reshape({B, 1, 1, S});
    mask = mask.defined() ? mask + kpm : kpm;
  }
  Tensor attn = scaled_dot_product_attention(heads(qp, L), heads(kp, S), heads(vp, S), mask, 0.0, false);
  Tensor out = out_proj(attn.transpose(1, 2).reshape({B, L, E}));
  return batch_first ? out : out.transpose(0, 1);
}

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
    : self_attn(o.d_model, o.nhead, o.dropout, true, o.batch_first),
      linear1(o.d_model, o.dim_feedforward),
      dropout(o.dropout),
      linear2(o.dim_feedforward, o.d_model),
      norm1(o.d_model, o.layer_norm_eps),
      norm2(o.d_model, o.layer_norm_eps),
      dropout1(o.dropout),
      dropout2(o.dropout),
      options(o) {
  AMBER_CHECK(o.activation == "relu" || o.activation == "gelu",
              "TransformerEncoderLayer: activation must be relu or gelu, got '", o.activation, "'");
  register_modules({{"self_attn", self_attn},
                    {"linear1", linear1},
                    {"dropout", dropout},
                    {"linear2", linear2},
                    {"norm1", norm1},
                    {"norm2", norm2},
                    {"dropout1", dropout1},
                    {"dropout2", dropout2}});
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& kpm) {
  return dropout1(self_attn(x, x, x, kpm, mask));
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
  Tensor h = linear1(x);
  h = options.activation == "gelu" ? gelu(h) : relu(h);
  return dropout2(linear2(dropout(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& mask, const Tensor& kpm) {
  Tensor x = src;
  if (options.norm_first) {
    x = x + self_attention_block(norm1(x), mask, kpm);
    return x + feed_forward_block(norm2(x));
  }
  x = norm1(x + self_attention_block(x, mask, kpm));
  return norm2(x + feed_forward_block(x));
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayerOptions& layer, int64_t num_layers,
                                       bool final_norm) {
  AMBER_CHECK(num_layers >= 0, "TransformerEncoder: num_layers must be non-negative, got ", num_layers);
  for (int64_t i = 0; i < num_layers; ++i) typed_.push_back(&layers.emplace_back<TransformerEncoderLayer>(layer));
  register_module("layers", layers);
  if (final_norm) {
    norm = std::make_unique<LayerNorm>(layer.d_model, layer.layer_norm_eps);
    register_module("norm", *norm);
  }
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& kpm) {
  Tensor x = src;
  for (TransformerEncoderLayer* l : typed_) x = (*l)(x, mask, kpm);
  return norm ? (*norm)(x) : x;
}

}  // namespace amber::nn
