// The pass pipeline run on traced graphs before they are saved (control-flow bodies first,
// their folded constants hoisted to the graph that holds them), and what passes share
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

namespace {

// Moves the constants of a control-flow node's body (what its passes folded) to g, each passed
// to the body as one more captured input: an archive keeps every tensor in the model's graph.
void hoist_body_constants(Graph& g, Node* n, Graph& body) {
  for (Value* c : std::vector<Value*>(body.constants())) {
    std::string name = c->name;
    for (int k = 1; g.find(name); ++k) name = str(c->name, "_", k);
    Value* outer = g.add_constant(name, c->data, c->source);
    std::string in_name = str("c", body.inputs().size());
    for (int k = 1; body.find(in_name); ++k) in_name = str("c", body.inputs().size(), "_", k);
    Value* in = body.add_input(in_name, c->type);
    body.replace_uses(c, in);
    n->inputs.push_back(outer);
    outer->uses.push_back(n);
  }
  body.remove_unused_constants();
}

}  // namespace

void optimize(Graph& g) {
  for (Node* n : g.nodes())
    for (const auto& body : n->bodies) {
      optimize(*body);
      hoist_body_constants(g, n, *body);
    }
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
