// The graph verifier: SSA (each value defined once, before its uses), consistent use
// lists, node arity and canonical attributes against the op table, graph outputs present,
// constant data matching its type, and recorded dtypes and shapes equal to what the op
// table's inference gives (for symbolic graphs at two batch sizes), and control-flow bodies
// (recursively, at most kMaxBodyDepth deep) matching their node's operands. Run after every
// pass in tests and on every loaded archive.
#pragma once

#include <string>
#include <vector>

#include "amber/graph/graph.h"

namespace amber::graph {

// Every problem found, each naming the node or value; empty when the graph is valid.
std::vector<std::string> verify(const Graph& g);
// Throws amber::Error listing every problem.
void verify_or_throw(const Graph& g, const std::string& what = "graph");

}  // namespace amber::graph
