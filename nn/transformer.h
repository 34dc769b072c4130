// Attention and the transformer encoder, shaped like torch.nn.MultiheadAttention,
// TransformerEncoderLayer and TransformerEncoder (same parameter names, batch_first,
// norm_first, relu or gelu activation), for inference.
#pragma once

#include <string>
#include <vector>

#include "amber/nn/layers.h"

namespace amber::nn {

class MultiheadAttention : public BuiltinModule<MultiheadAttention> {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false);
  // Attention output only (PyTorch's need_weights=False). key_padding_mask: bool [N, S],
  // true = ignore that key. attn_mask: [L, S] or [N*heads, L, S], bool (true = not
  // allowed) or float (added to the scores).
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask = {},
                 const Tensor& attn_mask = {});
  Tensor in_proj_weight, in_proj_bias;  // [3E, E], [3E]
  Linear out_proj;
  int64_t embed_dim, num_heads;
  double dropout;
  bool batch_first;
};

struct TransformerEncoderLayerOptions {
  int64_t d_model = 512, nhead = 8, dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false, norm_first = false;
};

class TransformerEncoderLayer : public BuiltinModule<TransformerEncoderLayer> {
 public:
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  MultiheadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;
  TransformerEncoderLayerOptions options;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& key_padding_mask);
  Tensor feed_forward_block(const Tensor& x);
};

// num_layers layers with distinct weights ("layers.0", ...), and an optional final norm.
class TransformerEncoder : public BuiltinModule<TransformerEncoder> {
 public:
  TransformerEncoder(const TransformerEncoderLayerOptions& layer, int64_t num_layers, bool final_norm = false);
  Tensor forward(const Tensor& src, const Tensor& mask = {}, const Tensor& src_key_padding_mask = {});
  ModuleList layers;
  std::unique_ptr<LayerNorm> norm;

 private:
  std::vector<TransformerEncoderLayer*> typed_;
};

}  // namespace amber::nn
