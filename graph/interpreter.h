// Runs a graph eagerly, node by node, through the dispatcher (the traced module's own
// executor and check_trace's reference; the loader has its planned executor). Inputs are
// checked against the graph's input types; a graph with the batch symbol N is instantiated
// at the batch size the inputs give (instantiations are cached).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "amber/graph/graph.h"

namespace amber::graph {

// Called after each node with its outputs.
using NodeObserver = std::function<void(const Node& node, const std::vector<Tensor>& outputs)>;

class Interpreter {
 public:
  explicit Interpreter(const Graph& g) : graph_(g) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const NodeObserver& observe = {}) const;

 private:
  const Graph& graph_;
  mutable std::mutex mutex_;
  mutable std::map<SymValues, std::shared_ptr<Graph>> instances_;
};

// One-shot form of Interpreter::run.
std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs, const NodeObserver& observe = {});

}  // namespace amber::graph
