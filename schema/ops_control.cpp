// Op table entries of control flow (schema/control_flow.h): loop, while_loop and cond. Their
// nodes hold bodies (graph::Node::bodies) that graph/control_flow.cpp checks against the
// operands and runs for the interpreter and the loader; no kernel runs them.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

// The outputs: the num_state operands after the `leading` control operands.
void state_outputs(InferCtx& c, int leading) {
  const int64_t num_state = c.attr("num_state").i();
  c.check(num_state >= 1 - leading && num_state <= c.num_inputs() - leading, "num_state is ", num_state,
          " but there are ", c.num_inputs(), " operands");
  for (int i = leading; i < leading + num_state; ++i) c.add_output(c.in(i).dtype, c.in(i).sizes);
}

void check_control(InferCtx& c, bool boolean, const char* role) {
  c.check(c.num_inputs() >= 1, "the ", role, " (operand 0) is missing");
  const TensorMeta& m = c.in(0);
  const bool ok = m.sizes.empty() && (boolean ? m.dtype == DType::b8 : m.dtype == DType::i64 || m.dtype == DType::i32);
  c.check(ok, "the ", role, " (operand 0) must be a 0-d ", boolean ? "bool" : "i64 or i32", " tensor, got ",
          dtype_name(m.dtype), m.sizes);
}

void infer_loop(InferCtx& c) {
  check_control(c, false, "trip count");
  state_outputs(c, 1);
}

void infer_while_loop(InferCtx& c) { state_outputs(c, 0); }

// cond's outputs are its branches' (any dtypes and shapes, the same in both), which the op
// table cannot see: inference checks the predicate and the operand count only, and the
// verifier checks the outputs against the branches (graph/control_flow.h).
void infer_cond(InferCtx& c) {
  check_control(c, true, "predicate");
  const int64_t num_state = c.attr("num_state").i();
  c.check(num_state >= 0 && num_state < c.num_inputs(), "num_state is ", num_state, " but there are ", c.num_inputs(),
          " operands");
}

using namespace op_flags;

const OpRegistrar registrar{
    {"loop(Tensor[] operands, int num_state) -> Tensor[]", dtypes::all, infer_loop, control_flow, nullptr, 1,
     "amber::loop: runs its one body n times. Operands: the trip count n (0-d i64/i32), num_state state tensors, then "
     "the tensors the body reads from outside; the body takes the index i (0-d i64), the state and those tensors and "
     "gives the next state (same dtypes and shapes); the outputs are the final state."},
    {"while_loop(Tensor[] operands, int num_state) -> Tensor[]", dtypes::all, infer_while_loop, control_flow, nullptr,
     1,
     "amber::while_loop: two bodies, the condition (state and its captured tensors -> 0-d bool) and the body (state "
     "and "
     "its captured tensors -> next state); operands: num_state (>= 1) state tensors, the condition's captured tensors, "
     "the body's; the outputs are the state once the condition is false."},
    {"cond(Tensor[] operands, int num_state) -> Tensor[]", dtypes::all, infer_cond, control_flow, nullptr, 1,
     "amber::cond: two bodies, then and else (the num_state operands and the branch's captured tensors -> the "
     "outputs, of the same dtypes and shapes in both); operands: the predicate (0-d bool), the operands, the then "
     "branch's captured tensors, the else branch's; the outputs are those of the branch the predicate picks."},
};

}  // namespace
}  // namespace amber
