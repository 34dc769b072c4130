// Residual-norm fusion: layer_norm(add(a, b)) with alpha 1, a and b of one type (shape and
// dtype), the sum read by nothing else and not a graph output, becomes add_layer_norm(a, b):
// a post-norm transformer's residual connection and its norm in one pass over each row, the
// sum never stored (two nodes and a buffer fewer per residual). The sum is the one add
// computes; the norm's weight, bias, shape and eps carry over.

#include "amber/graph/passes.h"

namespace amber::graph {

void fuse_residual_norm(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  const OpSchema& fused = op_schema("add_layer_norm");
  bool changed = false;
  for (Node* ln : g.nodes()) {
    if (ln->op->name != "layer_norm") continue;
    const Value* sum = ln->inputs[0];
    const Node* add = sum->producer;
    if (!add || add->op->name != "add" || add->attr("alpha").f() != 1.0 || !sole_reader(sum, outputs)) continue;
    Value *a = add->inputs[0], *b = add->inputs[1];
    if (!(a->type == sum->type) || !(b->type == sum->type)) continue;  // no broadcasting, no promotion
    Node* n = g.insert_node(ln, &fused, {a, b, ln->inputs[1], ln->inputs[2]}, ln->attrs,
                            {{g.fresh_name(), ln->outputs[0]->type}});
    n->attr_syms = ln->attr_syms;
    n->source = ln->source;
    n->scope = ln->scope;
    g.replace_uses(ln->outputs[0], n->outputs[0]);
    changed = true;
  }
  if (changed) eliminate_dead_code(g);
}

}  // namespace amber::graph
