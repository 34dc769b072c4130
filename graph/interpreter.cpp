// Eager graph execution (interpreter.h); a control-flow node runs its body graph as many
// times as its count says, within kDefaultMaxLoopTrips body runs a call.

#include "amber/graph/interpreter.h"

#include <unordered_map>

#include "amber/graph/control_flow.h"
#include "amber/schema/control_flow.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber::graph {
namespace {

std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe,
                            int64_t& trips_left);

// A control-flow node: its bodies run by this interpreter.
std::vector<Tensor> run_node_bodies(const Node& n, const std::vector<const Tensor*>& ins, int64_t& trips_left) {
  std::vector<Tensor> operands;
  for (const Tensor* t : ins) operands.push_back(*t);
  // Loop indices are made where the state lives (the first state operand; else any operand).
  const size_t first_state = leading_operands(n);
  const Device device = first_state < operands.size() ? operands[first_state].device()
                        : operands.empty()            ? Device::cpu()
                                                      : operands.front().device();
  return run_control_flow(
      n, operands, [&](size_t k, const std::vector<Tensor>& in) { return execute(*n.bodies[k], in, {}, trips_left); },
      [](const Tensor& t) { return t.to(DType::i64, SrcLoc::none()).item<int64_t>(SrcLoc::none()); }, trips_left,
      kDefaultMaxLoopTrips, "kDefaultMaxLoopTrips", device);
}

std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe,
                            int64_t& trips_left) {
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
    std::vector<Tensor> outs = n->op->is_control_flow() ? run_node_bodies(*n, ins, trips_left)
                                                        : dispatch(*n->op, ins, n->attrs, SrcLoc::none());
    for (size_t i = 0; i < outs.size() && i < n->outputs.size(); ++i) env[n->outputs[i]] = outs[i];
    if (observe) observe(*n, outs);
  }
  std::vector<Tensor> out;
  for (const auto& [name, v] : g.outputs()) out.push_back(env.at(v));
  return out;
}

}  // namespace

std::vector<Tensor> Interpreter::run(const std::vector<Tensor>& inputs, const NodeObserver& observe) const {
  const SymValues n = symbol_values(graph_, inputs);
  check_inputs(graph_, inputs, n);
  int64_t trips_left = kDefaultMaxLoopTrips;
  if (!graph_.is_dynamic()) return execute(graph_, inputs, observe, trips_left);
  std::shared_ptr<Graph> inst;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(n);
    if (it == instances_.end()) it = instances_.emplace(n, std::make_shared<Graph>(graph_.instantiate(n))).first;
    inst = it->second;
  }
  return execute(*inst, inputs, observe, trips_left);
}

std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe) {
  return Interpreter(g).run(inputs, observe);
}

}  // namespace amber::graph
