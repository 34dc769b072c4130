// Linear-bias folding: add(linear(x, W, None), b) (either order, alpha 1) with b a constant
// of the layer's out_features values ([out], or [1, ..., 1, out] no wider than the product),
// the product read only by the add, becomes linear(x, W, b). ONNX exporters write a linear
// layer over a 3-D input as MatMul then Add; one node lets the product's kernel add the bias
// as it writes (no pass over the output) and lets `amber quantize` see the activation after
// the layer as the layer's.

#include "amber/graph/passes.h"

namespace amber::graph {
namespace {

// b as the [out] bias of a linear layer whose product is y, or an undefined tensor.
Tensor bias_of(const Value* b, const Value* y, int64_t out) {
  if (!b || !b->is_constant() || !b->data.defined() || b->data.dtype() != DType::f32) return {};
  const DimVec& s = b->data.sizes();
  if (s.empty() || size_t(s.size()) > y->type.shape.size() || s.back() != out || b->data.numel() != out) return {};
  return b->data.reshape({out}, SrcLoc::none()).contiguous(SrcLoc::none());
}

}  // namespace

void fold_linear_bias(Graph& g) {
  for (Node* add : g.nodes()) {
    if (add->op->name != "add" || add->attr("alpha").f() != 1.0) continue;
    for (int side = 0; side < 2; ++side) {
      Value* y = add->inputs[size_t(side)];
      Node* lin = y->producer;
      if (!lin || lin->op->name != "linear" || lin->inputs[2] || !sole_reader(y, output_values(g))) continue;
      if (y->type.dtype != DType::f32 || !(add->outputs[0]->type == y->type)) continue;
      const Value* w = lin->inputs[1];
      if (w->type.shape.size() != 2 || !w->type.shape[0].is_static()) continue;
      Tensor b = bias_of(add->inputs[size_t(1 - side)], y, w->type.shape[0].value);
      if (!b.defined()) continue;
      Value* bias = add->inputs[size_t(1 - side)];
      if (bias->data.dim() != 1) {  // [1, ..., 1, out]: a new [out] constant
        bias = g.add_constant(g.unused_name(bias->name + ".bias"), b, bias->source);
      }
      Node* folded = g.insert_node(add, lin->op, {lin->inputs[0], lin->inputs[1], bias}, lin->attrs,
                                   {{g.fresh_name(), add->outputs[0]->type}});
      folded->attr_syms = lin->attr_syms;
      folded->source = lin->source;
      folded->scope = lin->scope;
      g.replace_uses(add->outputs[0], folded->outputs[0]);
      g.remove_node(add);
      g.remove_node(lin);
      break;
    }
  }
  g.remove_unused_constants();
}

}  // namespace amber::graph
