// Eager graph execution (interpreter.h).

#include "amber/graph/interpreter.h"

#include <unordered_map>

#include "amber/schema/dispatcher.h"

namespace amber::graph {
namespace {

void check_input(const Value& v, const Tensor& t, int64_t n) {
  AMBER_CHECK(t.defined(), "input ", v.name, ": the tensor is undefined");
  const DimVec want = concrete_shape(v.type.shape, n);
  AMBER_CHECK(t.dtype() == v.type.dtype && t.sizes() == want, "input ", v.name, ": expected ", v.type,
              is_static(v.type.shape) ? std::string() : str(" (", dtype_name(v.type.dtype), want, " at N=", n, ")"),
              ", got ", dtype_name(t.dtype()), t.sizes());
}

std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe) {
  std::unordered_map<const Value*, Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs()[i]] = inputs[i];
  for (const Value* c : g.constants()) {
    AMBER_CHECK(c->data.defined(), "graph: constant %", c->name, " has no data");
    env[c] = c->data;
  }
  std::vector<const Tensor*> ins;
  for (const Node* n : g.nodes()) {
    ins.clear();
    for (const Value* v : n->inputs) ins.push_back(v ? &env.at(v) : nullptr);
    std::vector<Tensor> outs = dispatch(*n->op, ins, n->attrs, SrcLoc::none());
    for (size_t i = 0; i < outs.size() && i < n->outputs.size(); ++i) env[n->outputs[i]] = outs[i];
    if (observe) observe(*n, outs);
  }
  std::vector<Tensor> out;
  for (const auto& [name, v] : g.outputs()) out.push_back(env.at(v));
  return out;
}

}  // namespace

int64_t Interpreter::batch_of(const std::vector<Tensor>& inputs) const {
  int64_t n = -1;
  std::string from;
  for (size_t i = 0; i < inputs.size() && i < graph_.inputs().size(); ++i) {
    const Value* v = graph_.inputs()[i];
    for (size_t d = 0; d < v->type.shape.size(); ++d) {
      const SymInt& s = v->type.shape[d];
      if (s.is_static() || !inputs[i].defined() || int(d) >= inputs[i].dim()) continue;
      const int64_t size = inputs[i].size(int64_t(d));
      const int64_t diff = size - s.value;
      AMBER_CHECK(diff % s.coef == 0 && diff / s.coef >= 0, "input ", v->name, ": dim ", d, " is ", size,
                  ", which is not ", s, " for any batch size N");
      const int64_t this_n = diff / s.coef;
      AMBER_CHECK(n < 0 || this_n == n, "input ", v->name, " implies batch size ", this_n, " but ", from, " implies ",
                  n);
      n = this_n;
      from = "input " + v->name;
    }
  }
  return n < 0 ? 0 : n;
}

std::vector<Tensor> Interpreter::run(const std::vector<Tensor>& inputs, const NodeObserver& observe) const {
  AMBER_CHECK(
      inputs.size() == graph_.inputs().size(), "expected ", graph_.inputs().size(), " inputs (",
      [&] {
        std::string s;
        for (const Value* v : graph_.inputs()) s += (s.empty() ? "" : ", ") + v->name;
        return s;
      }(),
      "), got ", inputs.size());
  if (!graph_.is_dynamic()) {
    for (size_t i = 0; i < inputs.size(); ++i) check_input(*graph_.inputs()[i], inputs[i], 0);
    return execute(graph_, inputs, observe);
  }
  const int64_t n = batch_of(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) check_input(*graph_.inputs()[i], inputs[i], n);
  std::shared_ptr<Graph> inst;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(n);
    if (it == instances_.end()) it = instances_.emplace(n, std::make_shared<Graph>(graph_.instantiate(n))).first;
    inst = it->second;
  }
  return execute(*inst, inputs, observe);
}

std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe) {
  return Interpreter(g).run(inputs, observe);
}

}  // namespace amber::graph
