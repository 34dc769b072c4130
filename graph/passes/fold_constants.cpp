// Constant folding: a node whose tensor inputs are all constants with data (or a factory)
// and whose attributes and output shapes are static is evaluated now, through the same
// kernels as at run time, and its outputs become constants. Results much larger than their
// inputs stay computed (folding `expand` or a big `full` would bloat archives).

#include <algorithm>
#include <cctype>

#include "amber/graph/passes.h"
#include "amber/schema/dispatcher.h"

namespace amber::graph {

void fold_constants(Graph& g, int64_t max_new_elements) {
  for (Node* n : g.nodes()) {
    if (n->has_symbolic_attrs() || n->op->is_control_flow()) continue;
    int64_t in_elems = 0;
    bool all_const = true;
    std::vector<const Tensor*> ins;
    std::string base_name;
    for (const Value* in : n->inputs) {
      if (!in) {
        ins.push_back(nullptr);
        continue;
      }
      if (!in->is_constant() || !in->data.defined()) {
        all_const = false;
        break;
      }
      in_elems += in->data.numel();
      if (base_name.empty()) base_name = in->name;
      ins.push_back(&in->data);
    }
    if (!all_const) continue;
    int64_t out_elems = 0;
    bool static_out = true;
    for (const Value* out : n->outputs) {
      static_out &= is_static(out->type.shape);
      if (static_out) out_elems += checked_numel(static_shape(out->type.shape));
    }
    if (!static_out || out_elems > std::max(in_elems, max_new_elements)) continue;
    std::vector<Tensor> results;
    try {
      results = dispatch(*n->op, ins, n->attrs, SrcLoc::none());
    } catch (const Error&) {
      continue;  // leave it to fail at run time with the node's context
    }
    if (base_name.empty()) base_name = "const";
    for (size_t i = 0; i < results.size(); ++i) {
      std::string name = base_name + "." + n->op->name;
      for (char& c : name)
        if (!(std::isalnum(uint8_t(c)) || c == '_' || c == '.')) c = '_';
      if (results.size() > 1) name += "." + std::to_string(i);
      for (int k = 1; g.find(name); ++k) name = base_name + "." + n->op->name + "_" + std::to_string(k);
      // A folded view must own its memory: copy it out of its input's storage.
      Tensor data = results[i].is_contiguous() ? results[i] : results[i].contiguous(SrcLoc::none());
      if (n->op->is_view() || n->op->is_maybe_view()) data = data.clone(SrcLoc::none());
      Value* c = g.add_constant(name, data, n->source);
      g.replace_uses(n->outputs[i], c);
    }
    g.remove_node(n);
  }
  g.remove_unused_constants();
}

}  // namespace amber::graph
