// The whole model in a 16-bit float (graph/passes.h, half_model): f32 weights rounded once,
// f32 inputs converted as they enter and f32 outputs as they leave, and every value the model
// computed in f32 computed in the 16-bit dtype instead, node by node in order, with the op
// table's inference giving each node's new types. Nodes that cannot take the 16-bit dtype
// (control flow, ops that do not list it, readers of an f32 weight kept because f16 cannot hold
// it) run in f32 between conversions. Lone pointwise nodes become one-node `fused` programs
// first, which read and write 16-bit values themselves on every device.

#include "amber/graph/passes.h"

#include <algorithm>
#include <cmath>

namespace amber::graph {
namespace {

// True when t (f32) holds a finite value that f16 rounds to Inf (|x| >= 65520).
bool beyond_f16(const Tensor& t) {
  if (!t.defined()) return false;
  const Tensor c = t.contiguous(SrcLoc::none());
  const float* p = static_cast<const float*>(c.data());
  for (int64_t i = 0; i < c.numel(); ++i)
    if (std::isfinite(p[i]) && std::fabs(p[i]) >= 65520.0f) return true;
  return false;
}

class Converter {
 public:
  Converter(Graph& g, DType half) : g_(g), half_(half), at_(g.traced) {
    for_each_symbol(g.symbols(), [&](char s) {
      if (!at_.has(s)) at_.set(s, 2);
    });
  }

  void run() {
    const std::vector<Node*> nodes = g_.nodes();
    std::set<const Value*> was_f32;  // values the model computed in f32
    for (const Node* n : nodes)
      for (const Value* out : n->outputs)
        if (out->type.dtype == DType::f32) was_f32.insert(out);
    std::vector<DType> output_types;
    for (const auto& [name, v] : g_.outputs()) output_types.push_back(v->type.dtype);
    // Weights: rounded once. Under f16 a weight holding a finite value beyond its range stays
    // f32 (rounded it would be Inf): the nodes reading it run in f32, and their results are
    // stored in f16 as every other's.
    std::set<const Value*> kept_f32;
    for (Value* c : g_.constants())
      if (c->type.dtype == DType::f32) {
        if (half_ == DType::f16 && beyond_f16(c->data)) {
          kept_f32.insert(c);
          continue;
        }
        if (c->data.defined()) c->data = c->data.to(half_);
        c->type.dtype = half_;
      }
    // Inputs: converted as they enter.
    Node* first = nodes.empty() ? nullptr : nodes.front();
    for (Value* in : g_.inputs())
      if (in->type.dtype == DType::f32 && !in->uses.empty()) store_half(first, nullptr, in);
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node* n = nodes[i];
      if (n->op == &to_op_) continue;  // an explicit conversion stays as written
      const bool reads_kept =
          std::any_of(n->inputs.begin(), n->inputs.end(), [&](const Value* v) { return v && kept_f32.count(v); });
      if (n->op->is_control_flow() || !n->op->dtypes.contains(half_) || reads_kept) {
        // f32 between conversions; control-flow bodies keep their f32 signatures.
        for (size_t k = 0; k < n->inputs.size(); ++k)
          if (Value* v = n->inputs[k]; v && v->type.dtype == half_) g_.set_input(n, k, as_f32(n, v));
      } else {
        retype(n);
      }
      Node* next = i + 1 < nodes.size() ? nodes[i + 1] : nullptr;
      for (Value* out : n->outputs)
        if (out->type.dtype == DType::f32 && was_f32.count(out) && !out->uses.empty()) store_half(next, n, out);
    }
    // Outputs: converted as they leave, so the model's signature is unchanged.
    for (size_t k = 0; k < output_types.size(); ++k) {
      Value* v = g_.outputs()[k].second;
      if (v->type.dtype != output_types[k])
        g_.set_output(k, cast(nullptr, v, output_types[k], v->producer)->outputs[0]);
    }
  }

 private:
  Node* cast(Node* before, Value* v, DType t, const Node* like) {
    Node* c = g_.insert_node(before, &to_op_, {v}, {Attr(t)}, {{g_.fresh_name(), ValueType{t, v->type.shape}}});
    if (like) {
      c->source = like->source;
      c->scope = like->scope;
    }
    return c;
  }

  // v in f32 for node n: a weight's f32 twin (its rounded values, made once), else a conversion.
  Value* as_f32(Node* n, Value* v) {
    if (!v->is_constant()) return cast(n, v, DType::f32, n)->outputs[0];
    Value*& w = widened_[v];
    if (!w) {
      w = v->data.defined()
              ? g_.add_constant(g_.unused_name(v->name + "_f32"), v->data.to(DType::f32), v->source)
              : g_.add_constant_type(g_.unused_name(v->name + "_f32"), ValueType{DType::f32, v->type.shape}, v->source);
    }
    return w;
  }

  // Every use of `out` (made by n, or an input when n is null) reads its 16-bit rounding, made
  // before `next`.
  void store_half(Node* next, const Node* n, Value* out) {
    Node* c = cast(next, out, half_, n ? n : next);
    g_.replace_uses(out, c->outputs[0]);
    g_.set_input(c, 0, out);
  }

  // n's output types from the op table at its current input types.
  void retype(Node* n) {
    std::vector<TensorMeta> metas(n->inputs.size());
    std::vector<const TensorMeta*> ptrs;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->inputs[i];
      if (v) metas[i] = {v->type.dtype, concrete_shape(v->type.shape, at_)};
      ptrs.push_back(v ? &metas[i] : nullptr);
    }
    const std::vector<Attr> attrs = n->attrs_at(at_);
    InferCtx ctx(*n->op, ptrs.data(), int(ptrs.size()), attrs.data(), int(attrs.size()));
    try {
      n->op->infer(ctx);
    } catch (const Error& e) {
      throw Error(str("the model in ", dtype_name(half_), ": node %", n->outputs.empty() ? "?" : n->outputs[0]->name,
                      " = ", n->op->name, n->source.empty() ? "" : " (" + n->source + ")", ": ", e.what()));
    }
    AMBER_ASSERT(ctx.num_outputs() == int(n->outputs.size()), n->op->name, ": inference gives ", ctx.num_outputs(),
                 " outputs, the graph has ", n->outputs.size());
    for (size_t k = 0; k < n->outputs.size(); ++k) n->outputs[k]->type.dtype = ctx.outputs()[k].dtype;
  }

  Graph& g_;
  DType half_;
  SymValues at_;  // symbol values for inference: the traced ones (dtypes do not depend on sizes)
  const OpSchema& to_op_ = op_schema("to");
  std::map<const Value*, Value*> widened_;  // a 16-bit weight -> its f32 twin
};

}  // namespace

void half_model(Graph& g, DType half) {
  AMBER_CHECK(dtypes::half.contains(half), "half_model: expected f16 or bf16, got ", half);
  fuse_pointwise_all(g);  // a lone pointwise op as a `fused` node: 16-bit values in and out
  Converter(g, half).run();
}

}  // namespace amber::graph
