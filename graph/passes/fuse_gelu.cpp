// GELU fusion: GELU written as its erf formula, as torch.onnx.export spells nn.GELU() (ONNX has
// no Gelu before opset 20) —
//   x * (erf(x / sqrt(2)) + 1) * 0.5
// (the division may be a product with 1 / sqrt(2), the 0.5 may scale x first, each product and
// the sum in either operand order, the numbers as one-element constants or .Scalar operands)
// — becomes one gelu node, which pointwise fusion then emits as one instruction instead of
// five. An intermediate read elsewhere or a graph output in the middle leaves the graph alone.

#include <cmath>

#include "amber/graph/passes.h"

namespace amber::graph {
namespace {

bool is_f32(const Value* v) { return v && v->type.dtype == DType::f32; }

// The number n multiplies, divides or adds to `x` by (the other operand of a binary op of
// `op`, `op`.Scalar's `other`; add's alpha must be 1), when it is one: by the other operand of
// mul and add in either order, by the divisor of div.
std::optional<double> number_with(const Node* n, const Value* x, const std::string& op) {
  const std::string& name = n->op->name;
  const bool scalar = name == op + ".Scalar";
  if (!scalar && (name != op || n->inputs.size() < 2)) return std::nullopt;
  if (op == "add" && n->attr("alpha").f() != 1.0) return std::nullopt;
  if (op == "div" && !n->attr("rounding_mode").is_none()) return std::nullopt;
  if (scalar) return n->inputs[0] == x ? std::optional<double>(n->attr("other").f()) : std::nullopt;
  if (n->inputs[0] == x) return constant_scalar(n->inputs[1]);
  if (op != "div" && n->inputs[1] == x) return constant_scalar(n->inputs[0]);
  return std::nullopt;
}

bool near(std::optional<double> v, double want) { return v && std::fabs(*v - want) <= 1e-6 * std::fabs(want); }

// The operand of binary node n other than v (n reads v once).
Value* other_operand(const Node* n, const Value* v) {
  if (n->inputs.size() < 2) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

}  // namespace

void fuse_gelu(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  const OpSchema& gelu = op_schema("gelu");
  for (Node* erf : g.nodes()) {
    if (erf->op->name != "erf" || !is_f32(erf->outputs[0])) continue;
    // x / sqrt(2), or x * (1 / sqrt(2)), read by the erf alone
    Value* scaled = erf->inputs[0];
    Node* scale = scaled->producer;
    if (!scale || sole_reader(scaled, outputs) != erf) continue;
    Value* x = nullptr;
    for (Value* cand : scale->inputs) {
      if (!cand || !is_f32(cand)) continue;
      if (near(number_with(scale, cand, "div"), M_SQRT2) || near(number_with(scale, cand, "mul"), M_SQRT1_2)) {
        x = cand;
        break;
      }
    }
    if (!x || !(x->type.shape == erf->outputs[0]->type.shape)) continue;
    // erf(...) + 1
    Node* plus = sole_reader(erf->outputs[0], outputs);
    if (!plus || !near(number_with(plus, erf->outputs[0], "add"), 1.0)) continue;
    Value* a = plus->outputs[0];
    Node* times = sole_reader(a, outputs);
    if (!times || times->op->name != "mul") continue;
    Value* by = other_operand(times, a);
    Node* last = nullptr;
    if (by == x) {  // (x * a) * 0.5
      Node* half = sole_reader(times->outputs[0], outputs);
      if (half && near(number_with(half, times->outputs[0], "mul"), 0.5)) last = half;
    } else if (by && by->producer && sole_reader(by, outputs) == times &&
               near(number_with(by->producer, x, "mul"), 0.5)) {  // (x * 0.5) * a
      last = times;
    }
    if (!last || !is_f32(last->outputs[0]) || !(last->outputs[0]->type.shape == x->type.shape)) continue;
    Node* n = g.insert_node(last, &gelu, {x}, {Attr("none")}, {{g.fresh_name(), last->outputs[0]->type}});
    n->source = last->source;
    n->scope = last->scope;
    g.replace_uses(last->outputs[0], n->outputs[0]);
  }
  eliminate_dead_code(g);
}

}  // namespace amber::graph
