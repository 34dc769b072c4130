// Identity removal: ops that return their input unchanged at inference (dropout with
// train=false) are bypassed, their consumers reading the input directly; a graph output
// that is such an op keeps it (the output must stay a distinct value).

#include <set>

#include "amber/graph/passes.h"

namespace amber::graph {

void remove_identities(Graph& g) {
  std::set<const Value*> outputs;
  for (const auto& [name, v] : g.outputs()) outputs.insert(v);
  for (Node* n : std::vector<Node*>(g.nodes())) {
    if (n->op->name != "dropout" || n->attr("train").b()) continue;
    Value* out = n->outputs[0];
    if (outputs.count(out) || n->inputs[0]->type != out->type) continue;
    g.replace_uses(out, n->inputs[0]);
    g.remove_node(n);
  }
}

}  // namespace amber::graph
