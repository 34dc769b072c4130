// Head-merge fusion: scaled_dot_product_attention's [*, H, L, Ev] output transposed to
// [*, L, H, Ev] (transpose of dims -3 and -2, or the permute doing that) and reshaped to
// [*, L, H * Ev] (reshape, view or flatten) — how multi-head attention hands its heads to the
// output projection — becomes attention_merge_heads, which writes each head's rows there
// directly: the reshape's copy of the whole output is gone. The sdpa and transposed outputs
// must have no other reader and not be graph outputs; H and Ev must be static.

#include "amber/graph/passes.h"

namespace amber::graph {
namespace {

// Whether n swaps dims r - 3 and r - 2 of its rank-r input and nothing else.
bool swaps_heads_and_rows(const Node* n, int r) {
  if (n->op->name == "transpose") {
    const int d0 = wrap_dim("transpose", n->attr("dim0").i(), r), d1 = wrap_dim("transpose", n->attr("dim1").i(), r);
    return std::min(d0, d1) == r - 3 && std::max(d0, d1) == r - 2;
  }
  if (n->op->name == "permute") {
    const std::vector<int64_t>& dims = n->attr("dims").ints();
    if (int(dims.size()) != r) return false;
    for (int i = 0; i < r; ++i) {
      const int want = i == r - 3 ? r - 2 : i == r - 2 ? r - 3 : i;
      if (wrap_dim("permute", dims[size_t(i)], r) != want) return false;
    }
    return true;
  }
  return false;
}

bool is_reshape(const Node* n) {
  const std::string& op = n->op->name;
  return op == "reshape" || op == "view" || op == "flatten";
}

}  // namespace

void merge_attention_heads(Graph& g) {
  std::set<const Value*> outputs;
  for (const auto& [name, v] : g.outputs()) outputs.insert(v);
  const OpSchema& merged = op_schema("attention_merge_heads");
  auto only_reader = [&](const Value* v) -> Node* {
    return v->uses.size() == 1 && !outputs.count(v) ? v->uses[0] : nullptr;
  };
  bool changed = false;
  for (Node* sdpa : g.nodes()) {
    if (sdpa->op->name != "scaled_dot_product_attention") continue;
    const ValueType& t = sdpa->outputs[0]->type;
    const int r = int(t.shape.size());
    if (r < 3 || !t.shape[size_t(r - 3)].is_static() || !t.shape[size_t(r - 1)].is_static()) continue;
    Node* swap = only_reader(sdpa->outputs[0]);
    if (!swap || swap->inputs[0] != sdpa->outputs[0] || !swaps_heads_and_rows(swap, r)) continue;
    Node* reshape = only_reader(swap->outputs[0]);
    if (!reshape || !is_reshape(reshape)) continue;
    SymShape want(t.shape.begin(), t.shape.end() - 3);
    want.push_back(t.shape[size_t(r - 2)]);
    want.push_back(SymInt(t.shape[size_t(r - 3)].value * t.shape[size_t(r - 1)].value));
    if (!(reshape->outputs[0]->type == ValueType{t.dtype, want})) continue;
    Node* n = g.insert_node(reshape, &merged, sdpa->inputs, sdpa->attrs, {{g.fresh_name(), reshape->outputs[0]->type}});
    n->attr_syms = sdpa->attr_syms;
    n->source = sdpa->source;
    n->scope = sdpa->scope;
    g.replace_uses(reshape->outputs[0], n->outputs[0]);
    changed = true;
  }
  if (changed) eliminate_dead_code(g);
}

}  // namespace amber::graph
