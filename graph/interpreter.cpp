// Eager graph execution (interpreter.h); a control-flow node runs its body graph as many
// times as its count says, within kDefaultMaxLoopTrips body runs a call.

#include "amber/graph/interpreter.h"

#include <unordered_map>

#include "amber/schema/control_flow.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber::graph {
namespace {

std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe,
                            int64_t& trips_left);

// A `loop` node: its body run count times on the state, the captured operands passed along.
std::vector<Tensor> run_loop(const Node& n, const std::vector<const Tensor*>& ins, int64_t& trips_left) {
  const int64_t num_state = n.attr("num_state").i();
  const int64_t count = ins[0]->to(DType::i64, SrcLoc::none()).item<int64_t>(SrcLoc::none());
  AMBER_CHECK(count >= 0, "node %", n.outputs.empty() ? std::string("?") : n.outputs[0]->name,
              " = loop: the trip count is ", count, "; it must be at least 0");
  AMBER_CHECK(count <= trips_left, "node %", n.outputs.empty() ? std::string("?") : n.outputs[0]->name,
              " = loop: ", count, " iterations would pass the call's limit of ", kDefaultMaxLoopTrips,
              " body runs (kDefaultMaxLoopTrips)");
  trips_left -= count;
  std::vector<Tensor> body_in(ins.size());
  for (size_t k = 1; k < ins.size(); ++k) body_in[k] = *ins[k];
  const Device device = ins.size() > 1 ? ins[1]->device() : ins[0]->device();
  for (int64_t i = 0; i < count; ++i) {
    body_in[0] = full({}, i, {DType::i64, device}, SrcLoc::none());
    std::vector<Tensor> next = execute(*n.bodies[0], body_in, {}, trips_left);
    for (int64_t k = 0; k < num_state; ++k) body_in[size_t(1 + k)] = std::move(next[size_t(k)]);
  }
  return std::vector<Tensor>(body_in.begin() + 1, body_in.begin() + 1 + num_state);
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
    std::vector<Tensor> outs =
        n->op->is_control_flow() ? run_loop(*n, ins, trips_left) : dispatch(*n->op, ins, n->attrs, SrcLoc::none());
    for (size_t i = 0; i < outs.size() && i < n->outputs.size(); ++i) env[n->outputs[i]] = outs[i];
    if (observe) observe(*n, outs);
  }
  std::vector<Tensor> out;
  for (const auto& [name, v] : g.outputs()) out.push_back(env.at(v));
  return out;
}

}  // namespace

std::vector<Tensor> Interpreter::run(const std::vector<Tensor>& inputs, const NodeObserver& observe) const {
  const int64_t n = batch_size_of(graph_, inputs);
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
