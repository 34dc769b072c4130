// Layer-norm fusion: layer normalisation over the last dim written as its parts, as
// exporters spell LayerNormalization before opset 17 —
//   d = x - mean(x, -1, keepdim); n = d / sqrt(mean(d^2, -1, keepdim) + eps) [* gamma + beta]
// (the square as pow by 2 or d * d, eps a number or a one-element constant) — becomes one
// layer_norm node: one pass over each row instead of seven nodes and their intermediates.
// gamma and beta join it when they are one-dimensional [D]; otherwise their product and sum
// stay. An intermediate read elsewhere or a graph output in the middle leaves the graph alone.

#include "amber/graph/passes.h"

namespace amber::graph {
namespace {

bool is_f32(const Value* v) { return v && v->type.dtype == DType::f32; }

// v's producer when it is of op `name`, v has no other reader and is not a graph output.
Node* producer(const Value* v, const char* name, const std::set<const Value*>& outputs) {
  if (!v || !v->producer || v->producer->op->name != name || !sole_reader(v, outputs)) return nullptr;
  return v->producer;
}

// mean(x, dim=[-1] or [r-1], keepdim=true, dtype=None).
bool last_dim_mean(const Node* n) {
  if (!n || n->op->name != "mean" || !n->attr("keepdim").b() || !n->attr("dtype").is_none()) return false;
  const std::vector<int64_t>& dims = n->attr("dim").ints();
  const int64_t r = int64_t(n->inputs[0]->type.shape.size());
  return dims.size() == 1 && (dims[0] == -1 || dims[0] == r - 1);
}

// v's only reader: a node of op `name` with v as input `index`.
Node* only_reader(const Value* v, const char* name, size_t index, const std::set<const Value*>& outputs) {
  if (!sole_reader(v, outputs)) return nullptr;
  Node* u = v->uses[0];
  return u->op->name == name && u->inputs.size() > index && u->inputs[index] == v ? u : nullptr;
}

}  // namespace

void fuse_layer_norm(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  const OpSchema& layer_norm = op_schema("layer_norm");
  for (Node* div : g.nodes()) {  // d / sqrt(var + eps)
    if (div->op->name != "div" || !div->attr("rounding_mode").is_none() || !is_f32(div->outputs[0])) continue;
    Node* sub = div->inputs[0]->producer;
    Node* sqrt = producer(div->inputs[1], "sqrt", outputs);
    if (!sub || sub->op->name != "sub" || sub->attr("alpha").f() != 1.0 || !sqrt) continue;
    Value* d = sub->outputs[0];
    if (outputs.count(d)) continue;
    // var + eps
    Node* add_eps = sqrt->inputs[0]->producer;
    if (!add_eps || add_eps->inputs[0]->uses.size() != 1 || sqrt->inputs[0]->uses.size() != 1) continue;
    std::optional<double> eps;
    if (add_eps->op->name == "add.Scalar" && add_eps->attr("alpha").f() == 1.0)
      eps = add_eps->attr("other").f();
    else if (add_eps->op->name == "add" && add_eps->attr("alpha").f() == 1.0)
      eps = constant_scalar(add_eps->inputs[1]);
    if (!eps || *eps < 0) continue;
    // var = mean(d^2)
    Node* var = producer(add_eps->inputs[0], "mean", outputs);
    if (!last_dim_mean(var)) continue;
    Node* square = var->inputs[0]->producer;
    if (!square || !sole_reader(var->inputs[0], outputs)) continue;
    const bool squares =
        (square->op->name == "pow.Scalar" && square->attr("exponent").f() == 2.0 && square->inputs[0] == d) ||
        (square->op->name == "mul" && square->inputs[0] == d && square->inputs[1] == d);
    // d's readers: the square (twice when d * d) and the division.
    if (!squares || d->uses.size() != (square->op->name == "mul" ? 3u : 2u)) continue;
    // d = x - mean(x)
    Value* x = sub->inputs[0];
    Node* mean = producer(sub->inputs[1], "mean", outputs);
    if (!last_dim_mean(mean) || mean->inputs[0] != x || !is_f32(x)) continue;
    const SymShape& shape = x->type.shape;
    if (shape.empty() || !shape.back().is_static() || !(div->outputs[0]->type.shape == shape)) continue;
    const int64_t width = shape.back().value;
    // * gamma + beta, when both are [D] (gamma alone too).
    auto is_vector = [&](const Value* v) {
      return v && is_f32(v) && v->type.shape.size() == 1 && v->type.shape[0] == SymInt(width);
    };
    Node* last = div;
    Value *gamma = nullptr, *beta = nullptr;
    if (Node* mul = only_reader(div->outputs[0], "mul", 0, outputs); mul && is_vector(mul->inputs[1])) {
      gamma = mul->inputs[1];
      last = mul;
      if (Node* add = only_reader(mul->outputs[0], "add", 0, outputs);
          add && add->attr("alpha").f() == 1.0 && is_vector(add->inputs[1])) {
        beta = add->inputs[1];
        last = add;
      }
    }
    Node* ln = g.insert_node(last, &layer_norm, {x, gamma, beta}, {Attr(std::vector<int64_t>{width}), Attr(*eps)},
                             {{g.fresh_name(), last->outputs[0]->type}});
    ln->source = last->source;
    ln->scope = last->scope;
    g.replace_uses(last->outputs[0], ln->outputs[0]);
  }
  eliminate_dead_code(g);
}

}  // namespace amber::graph
