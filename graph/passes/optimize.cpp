// The pass pipeline run on traced graphs before they are saved, and what passes share
// (passes.h).

#include "amber/graph/passes.h"

#include <charconv>
#include <cstdlib>

namespace amber::graph {

std::optional<double> constant_scalar(const Value* v) {
  if (!v || !v->is_constant() || !v->data.defined() || v->data.numel() != 1) return std::nullopt;
  const double d = v->data.to_vector<double>(SrcLoc::none())[0];
  if (v->data.dtype() != DType::f32) return d;
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf - 1, float(d)).ptr;
  *end = '\0';
  return std::strtod(buf, nullptr);
}

void optimize(Graph& g) {
  remove_identities(g);
  fold_constants(g);
  fold_batch_norm(g);
  eliminate_common_subexpressions(g);
  fuse_attention(g);
  fuse_layer_norm(g);
  fuse_pointwise(g);
  fuse_conv_activation(g);
  eliminate_dead_code(g);
}

}  // namespace amber::graph
