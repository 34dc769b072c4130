// Identity removal: ops that return their input unchanged at inference (dropout with
// train=false, pad by zeros on every side, cat of one tensor) are bypassed, their consumers
// reading the input directly; a graph output that is such an op keeps it (the output must
// stay a distinct value). Exporters leave such ops behind: DenseNet-121 from
// torch.onnx.export pads each transition's pooling input by zeros, 4 ms a call here.

#include <algorithm>
#include <set>

#include "amber/graph/passes.h"

namespace amber::graph {

void remove_identities(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  for (Node* n : std::vector<Node*>(g.nodes())) {
    const std::string& op = n->op->name;
    bool identity = false;
    if (op == "dropout") {
      identity = !n->attr("train").b();
    } else if (op == "pad") {
      const std::vector<int64_t>& pads = n->attr("pad").ints();
      identity = !n->has_symbolic_attrs() && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
    } else if (op == "cat") {
      identity = n->inputs.size() == 1;
    }
    if (!identity) continue;
    Value* out = n->outputs[0];
    if (outputs.count(out) || n->inputs[0]->type != out->type) continue;
    g.replace_uses(out, n->inputs[0]);
    g.remove_node(n);
  }
}

}  // namespace amber::graph
