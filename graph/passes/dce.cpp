// Dead code elimination: nodes whose outputs are neither used nor graph outputs go (every
// op is free of side effects), then constants nothing uses.

#include <set>

#include "amber/graph/passes.h"

namespace amber::graph {

void eliminate_dead_code(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  std::vector<Node*> nodes = g.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    bool dead = true;
    for (const Value* out : n->outputs) dead &= out->uses.empty() && !outputs.count(out);
    if (dead) g.remove_node(n);
  }
  g.remove_unused_constants();
}

}  // namespace amber::graph
