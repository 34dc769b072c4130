// What a control-flow node (schema/control_flow.h: loop, while_loop, cond) means in the
// graph: how its operands split into the leading control operand, the state and each body's
// captured tensors; what each body takes and gives (checked by the verifier); and the one
// implementation of its semantics, which the interpreter and the loader both run with their
// own way of running a body.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "amber/graph/graph.h"

namespace amber::graph {

// The operands of body k of control-flow node n: body inputs [0, num_prefix) are the loop's
// index (loop only) then the state; inputs after them are the node's operands
// [first_capture, first_capture + num_captures).
struct BodyOperands {
  size_t num_index = 0;  // 1 for loop's body (input 0 is the index), else 0
  size_t num_prefix = 0;
  size_t first_capture = 0, num_captures = 0;
};
// 1 for loop (the count) and cond (the predicate), 0 for while_loop.
size_t leading_operands(const Node& n);
size_t num_state(const Node& n);
size_t expected_bodies(const Node& n);
// Throws amber::Error when the bodies do not fit the operands (the verifier says why first).
BodyOperands body_operands(const Node& n, size_t k);

// Problems of n's bodies against its operands ("" prefix: the caller names the node); the
// bodies themselves are verified by the caller.
std::vector<std::string> check_body_signatures(const Node& n);

// Whether the op table's inference gives n's outputs (loop, while_loop: the state's types);
// cond's outputs are its branches', which the verifier checks through check_body_signatures.
bool outputs_inferred(const Node& n);

// Runs n on operands (one tensor per node input). run_body(k, inputs) runs body k;
// read_scalar reads a 0-d integer or bool tensor on the host. trips_left is the call's budget
// of body runs (loop and while_loop iterations; limit_name names where it is set) and
// index_device where loop indices are made. Returns the final state.
using RunBody = std::function<std::vector<Tensor>(size_t body, const std::vector<Tensor>& inputs)>;
std::vector<Tensor> run_control_flow(const Node& n, const std::vector<Tensor>& operands, const RunBody& run_body,
                                     const std::function<int64_t(const Tensor&)>& read_scalar, int64_t& trips_left,
                                     int64_t trip_limit, const char* limit_name, Device index_device);

}  // namespace amber::graph
