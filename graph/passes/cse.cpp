// Common subexpression elimination: a node with the same op, inputs, attributes and
// symbolic coefficients as an earlier one reuses the earlier node's outputs (every op in
// the table is deterministic). Control-flow nodes are left alone: their bodies are not in the key.

#include <map>
#include <sstream>

#include "amber/graph/passes.h"

namespace amber::graph {

void eliminate_common_subexpressions(Graph& g) {
  std::map<std::string, Node*> seen;
  for (Node* n : g.nodes()) {
    if (n->op->flags & (op_flags::nondeterministic | op_flags::control_flow)) continue;  // bodies differ
    std::ostringstream key;
    key << n->op->name << '/' << n->op->version << '(';
    for (const Value* in : n->inputs) key << (in ? static_cast<const void*>(in) : nullptr) << ',';
    key << ')';
    for (const Attr& a : n->attrs) key << a << ';';
    for (const auto& c : n->attr_syms)
      for (const SymInt& k : c) key << k << ',';
    auto [it, fresh] = seen.emplace(key.str(), n);
    if (fresh) continue;
    Node* first = it->second;
    for (size_t i = 0; i < n->outputs.size(); ++i) g.replace_uses(n->outputs[i], first->outputs[i]);
    g.remove_node(n);
  }
}

}  // namespace amber::graph
