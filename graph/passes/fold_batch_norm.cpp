// Batch-norm folding: y = batch_norm(conv2d(x, W, b), gamma, beta, mean, var, eps) in
// inference, with every parameter constant and the convolution used only by the norm,
// becomes conv2d(x, W', b') with PyTorch's fuse_conv_bn_weights:
//   W' = W * (gamma / sqrt(var + eps))   (per output channel)
//   b' = (b - mean) / sqrt(var + eps) * gamma + beta
// computed in f32 with the same kernels as eager code.

#include "amber/graph/passes.h"
#include "amber/schema/eager.h"

namespace amber::graph {
namespace {

bool constant_data(const Value* v) { return v && v->is_constant() && v->data.defined(); }

}  // namespace

void fold_batch_norm(Graph& g) {
  std::vector<Node*> nodes = g.nodes();
  for (Node* bn : nodes) {
    if (bn->op->name != "batch_norm" || bn->attr("training").b()) continue;
    Value* y = bn->inputs[0];
    Node* conv = y->producer;
    if (!conv || conv->op->name != "conv2d" || !sole_reader(y, output_values(g))) continue;
    Value *w = conv->inputs[1], *b = conv->inputs[2];
    Value *gamma = bn->inputs[1], *beta = bn->inputs[2], *mean = bn->inputs[3], *var = bn->inputs[4];
    if (!constant_data(w) || (b && !constant_data(b)) || (gamma && !constant_data(gamma)) ||
        (beta && !constant_data(beta)) || !constant_data(mean) || !constant_data(var))
      continue;
    if (w->data.dtype() != DType::f32) continue;
    const double eps = bn->attr("eps").f();
    const int64_t oc = w->data.size(0);
    const SrcLoc none = SrcLoc::none();
    Tensor rsqrt_var = rsqrt(var->data + eps, none);
    Tensor scale = gamma ? rsqrt_var * gamma->data : rsqrt_var;
    Tensor new_w = (w->data * scale.reshape({oc, 1, 1, 1}, none)).contiguous(none);
    Tensor conv_b = b ? b->data : zeros({oc});
    Tensor new_b = (conv_b - mean->data) * scale;
    if (beta) new_b = new_b + beta->data;
    Value* wc = g.add_constant(g.unused_name(w->name + ".bn_folded"), new_w, w->source);
    Value* bc = g.add_constant(g.unused_name((b ? b->name : w->name + ".bias") + ".bn_folded"), new_b.contiguous(none),
                               b ? b->source : w->source);
    Node* fused =
        g.insert_node(bn, conv->op, {conv->inputs[0], wc, bc}, conv->attrs, {{g.fresh_name(), bn->outputs[0]->type}});
    fused->attr_syms = conv->attr_syms;
    fused->source = conv->source;
    fused->scope = conv->scope;
    g.replace_uses(bn->outputs[0], fused->outputs[0]);
    g.remove_node(bn);
    g.remove_node(conv);
  }
  g.remove_unused_constants();
}

}  // namespace amber::graph
