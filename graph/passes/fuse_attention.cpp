// Attention fusion: attention written as its parts, as exporters and hand-written models
// spell it —
//   matmul(softmax(mask(scale(matmul(scale(q), k^T))), dim=-1), v)
// with the 1/sqrt(E) scale on q or on the scores (a division by sqrt(E) or a product by its
// inverse), and optionally an additive f32 mask or a where() over a bool mask filling
// the masked scores with a very negative number — becomes one scaled_dot_product_attention
// node, whose kernel never writes the [.., Lq, Lk] scores to memory. Only exact matches are
// taken: a different scale, softmax over another dim, an intermediate read elsewhere, a graph
// output in the middle, or a where() mask that is not a constant keeping at least one score of
// every row (a fully masked row is uniform through where() and softmax, not through attention)
// leave the graph as it is.

#include <cmath>

#include "amber/graph/passes.h"
#include "amber/schema/eager.h"

namespace amber::graph {
namespace {

// The scalar a node multiplies its input 0 by, when it is x * s or x / s with s a number or a
// one-element constant: {the scaled input, s}.
std::optional<std::pair<Value*, double>> scaling(const Node* n) {
  if (!n) return std::nullopt;
  const std::string& op = n->op->name;
  if (op == "mul.Scalar") return std::pair{n->inputs[0], n->attr("other").f()};
  if (op == "div.Scalar" && n->attr("rounding_mode").is_none())
    return std::pair{n->inputs[0], 1 / n->attr("other").f()};
  if (op == "mul" || (op == "div" && n->attr("rounding_mode").is_none())) {
    const std::optional<double> s = constant_scalar(n->inputs[1]);
    if (!s) return std::nullopt;
    return std::pair{n->inputs[0], op == "mul" ? *s : 1 / *s};
  }
  return std::nullopt;
}

// v's producer, when v has no other reader and is not a graph output.
Node* sole_producer(const Value* v, const std::set<const Value*>& outputs) {
  if (!v || !v->producer || !sole_reader(v, outputs)) return nullptr;
  return v->producer;
}

bool is_f32(const Value* v) { return v && v->type.dtype == DType::f32; }

}  // namespace

void fuse_attention(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  const OpSchema& sdpa = op_schema("scaled_dot_product_attention");
  const OpSchema& permute = op_schema("permute");
  for (Node* pv : g.nodes()) {  // matmul(probabilities, v)
    if (pv->op->name != "matmul" || !is_f32(pv->outputs[0])) continue;
    Node* softmax = sole_producer(pv->inputs[0], outputs);
    if (!softmax || softmax->op->name != "softmax" || !softmax->attr("dtype").is_none()) continue;
    const SymShape& scores_shape = softmax->outputs[0]->type.shape;
    const int64_t r = int64_t(scores_shape.size()), dim = softmax->attr("dim").i();
    if (r < 2 || (dim != -1 && dim != r - 1)) continue;
    // The mask: add(scores, mask) with an f32 mask, or where(cond, fill, scores) /
    // where(cond, scores, fill) with a constant fill of -1e30 or less.
    Value* s = softmax->inputs[0];
    Value* mask = nullptr;
    Node* masking = sole_producer(s, outputs);
    if (masking && masking->op->name == "add" && masking->attr("alpha").f() == 1.0 && is_f32(masking->inputs[1])) {
      mask = masking->inputs[1];
      s = masking->inputs[0];
    } else if (masking && masking->op->name == "where" && masking->inputs[0]->type.dtype == DType::b8) {
      const bool fill_first = constant_scalar(masking->inputs[1]).value_or(0) <= -1e30;
      const bool fill_second = constant_scalar(masking->inputs[2]).value_or(0) <= -1e30;
      if (fill_first == fill_second) continue;
      const Value* cond = masking->inputs[0];
      if (!cond->is_constant() || !cond->data.defined() || cond->data.dim() == 0 || cond->data.dim() > r) continue;
      // true keeps a score; fill first: true marks what is masked.
      const Tensor keep = fill_first ? logical_not(cond->data, SrcLoc::none()) : cond->data;
      if (all(any(keep, {-1}), {}, false, SrcLoc::none()).to_vector<double>(SrcLoc::none())[0] == 0) continue;
      s = masking->inputs[fill_first ? 2 : 1];
      mask = g.add_constant(g.fresh_name(), keep, cond->source);
    }
    // The scores: matmul(q, k^T), scaled before or after.
    double scale = 1;
    Node* qk = sole_producer(s, outputs);
    if (auto sc = scaling(qk)) {
      scale = sc->second;
      qk = sole_producer(sc->first, outputs);
    }
    if (!qk || qk->op->name != "matmul") continue;
    Value *q = qk->inputs[0], *kt = qk->inputs[1], *v = pv->inputs[1];
    if (auto sc = scaling(sole_producer(q, outputs)); sc && scale == 1) {
      scale = sc->second;
      q = sc->first;
    }
    // Same rank and batch dims everywhere (SDPA does not broadcast them).
    const SymShape &qs = q->type.shape, &ks = kt->type.shape, &vs = v->type.shape;
    if (!is_f32(q) || !is_f32(kt) || !is_f32(v) || qs.size() != size_t(r) || ks.size() != size_t(r) ||
        vs.size() != size_t(r))
      continue;
    bool same_batch = true;
    for (int64_t i = 0; i + 2 < r; ++i) same_batch &= qs[size_t(i)] == ks[size_t(i)] && qs[size_t(i)] == vs[size_t(i)];
    const SymInt e = qs[size_t(r - 1)];
    if (!same_batch || !e.is_static() || e.value <= 0 || !(ks[size_t(r - 2)] == e)) continue;
    if (std::fabs(scale * std::sqrt(double(e.value)) - 1) > 1e-6) continue;  // SDPA's 1 / sqrt(E)
    // k [.., Lk, E]: k^T with its last two dims swapped back (a view).
    std::vector<int64_t> dims(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) dims[size_t(i)] = i;
    std::swap(dims[size_t(r - 1)], dims[size_t(r - 2)]);
    SymShape k_shape = ks;
    std::swap(k_shape[size_t(r - 1)], k_shape[size_t(r - 2)]);
    Node* k = g.insert_node(pv, &permute, {kt}, {Attr(dims)}, {{g.fresh_name(), ValueType{DType::f32, k_shape}}});
    k->source = qk->source;
    k->scope = qk->scope;
    Node* attention = nullptr;
    try {  // inference checks the mask broadcasts to the scores
      attention = g.insert_node(pv, &sdpa, {q, k->outputs[0], v, mask}, {Attr(0.0), Attr(false)},
                                {{g.fresh_name(), pv->outputs[0]->type}});
    } catch (const Error&) {
      continue;  // the permute is left unused, for dead-code elimination
    }
    attention->source = pv->source;
    attention->scope = pv->scope;
    g.replace_uses(pv->outputs[0], attention->outputs[0]);
  }
  eliminate_dead_code(g);
}

}  // namespace amber::graph
