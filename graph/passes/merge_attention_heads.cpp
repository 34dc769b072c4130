// Head-merge fusion: scaled_dot_product_attention's [*, H, L, Ev] output transposed to
// [*, L, H, Ev] (transpose of dims -3 and -2, or the permute doing only that) and then
// reshaped (reshape or view to any shape, flatten to [*, L, H * Ev]) — how multi-head
// attention hands its heads to the output projection — becomes attention_merge_heads, which
// writes each head's rows into [*, L, H * Ev] directly, and the reshape (now a view) reads
// that: the reshape's copy of the whole output is gone. Rank 3 is PyTorch's sequence-first
// nn.MultiheadAttention as ONNX exports it (heads folded into the batch: [N * H, L, Ev] ->
// [L, N * H * Ev]). The sdpa and transposed outputs must have no other reader and not be
// graph outputs; Ev must be static.

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

// s * k for a static k > 0, or nothing when a coefficient would overflow.
std::optional<SymInt> times(const SymInt& s, int64_t k) {
  int64_t v = 0;
  if (__builtin_mul_overflow(s.value, k, &v)) return std::nullopt;
  SymInt out(v);
  for (int i = 0; i < s.n_terms; ++i) {
    int64_t c = 0;
    if (__builtin_mul_overflow(s.terms[size_t(i)].coef, k, &c)) return std::nullopt;
    out.add(s.terms[size_t(i)].symbols, c);
  }
  return out;
}

}  // namespace

void merge_attention_heads(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  const OpSchema& merged = op_schema("attention_merge_heads");
  bool changed = false;
  for (Node* sdpa : g.nodes()) {
    if (sdpa->op->name != "scaled_dot_product_attention") continue;
    const ValueType& t = sdpa->outputs[0]->type;
    const int r = int(t.shape.size());
    if (r < 3 || !t.shape[size_t(r - 1)].is_static()) continue;
    Node* swap = sole_reader(sdpa->outputs[0], outputs);
    if (!swap || swap->inputs[0] != sdpa->outputs[0] || !swaps_heads_and_rows(swap, r)) continue;
    Node* reshape = sole_reader(swap->outputs[0], outputs);
    if (!reshape || reshape->inputs[0] != swap->outputs[0]) continue;
    const std::string& how = reshape->op->name;
    if (how != "reshape" && how != "view" && how != "flatten") continue;
    const std::optional<SymInt> width = times(t.shape[size_t(r - 3)], t.shape[size_t(r - 1)].value);
    if (!width) continue;
    SymShape merged_shape(t.shape.begin(), t.shape.end() - 3);
    merged_shape.push_back(t.shape[size_t(r - 2)]);
    merged_shape.push_back(*width);
    const ValueType merged_type{t.dtype, merged_shape};
    const bool same = reshape->outputs[0]->type == merged_type;
    if (!same && how == "flatten") continue;  // its dims would mean others of the merged rank
    Node* n = g.insert_node(reshape, &merged, sdpa->inputs, sdpa->attrs, {{g.fresh_name(), merged_type}});
    n->attr_syms = sdpa->attr_syms;
    n->source = sdpa->source;
    n->scope = sdpa->scope;
    if (same) {
      g.replace_uses(reshape->outputs[0], n->outputs[0]);
    } else {  // the reshape reads the merged rows: the same elements in the same order, now a view
      g.set_input(reshape, 0, n->outputs[0]);
    }
    changed = true;
  }
  if (changed) eliminate_dead_code(g);
}

}  // namespace amber::graph
