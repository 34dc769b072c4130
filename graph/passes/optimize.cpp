// The pass pipeline run on traced graphs before they are saved (control-flow bodies first,
// their folded constants hoisted to the graph that holds them), and what passes share
// (passes.h).

#include "amber/graph/passes.h"

#include <charconv>
#include <cstdlib>

#include "amber/graph/control_flow.h"

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

std::set<const Value*> output_values(const Graph& g) {
  std::set<const Value*> out;
  for (const auto& [name, v] : g.outputs()) out.insert(v);
  return out;
}

Node* sole_reader(const Value* v, const std::set<const Value*>& outputs) {
  return v && v->uses.size() == 1 && !outputs.count(v) ? v->uses[0] : nullptr;
}

namespace {

// Moves the constants of control-flow node n's body k (what its passes folded) to g, each
// passed to the body as one more captured input (the last of the body's, placed among the node's
// operands where the body's captures end): an archive keeps every tensor in the model's graph.
void hoist_body_constants(Graph& g, Node* n, size_t k) {
  Graph& body = *n->bodies[k];
  for (Value* c : std::vector<Value*>(body.constants())) {
    const BodyOperands b = body_operands(*n, k);
    Value* outer = g.add_constant(g.unused_name(c->name), c->data, c->source);
    body.replace_uses(c, body.add_input(body.unused_name(str("c", b.num_captures)), c->type));
    n->inputs.insert(n->inputs.begin() + long(b.first_capture + b.num_captures), outer);
    outer->uses.push_back(n);
  }
  body.remove_unused_constants();
}

}  // namespace

void optimize(Graph& g) {
  for (Node* n : g.nodes())
    for (size_t k = 0; k < n->bodies.size(); ++k) {
      optimize(*n->bodies[k]);
      hoist_body_constants(g, n, k);
    }
  remove_identities(g);
  fold_constants(g);
  fold_batch_norm(g);
  fold_linear_bias(g);
  eliminate_common_subexpressions(g);
  fuse_attention(g);
  merge_attention_heads(g);
  fuse_layer_norm(g);
  fuse_gelu(g);
  fuse_residual_norm(g);
  fuse_pointwise(g);
  fuse_product_activation(g);
  pool_before_cat(g);
  eliminate_dead_code(g);
}

}  // namespace amber::graph
