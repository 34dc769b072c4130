// Op table entries of control flow (schema/control_flow.h): `loop`. Their nodes hold bodies
// (graph::Node::bodies) that graph/verify.cpp checks against the operands; no kernel runs
// them: the interpreter and the loader do.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

void infer_loop(InferCtx& c) {
  const int64_t num_state = c.attr("num_state").i();
  c.check(num_state >= 0 && num_state < c.num_inputs(), "num_state is ", num_state, " but there are ", c.num_inputs(),
          " operands (the count, then the state, then the captured tensors)");
  const TensorMeta& n = c.in(0);
  c.check(n.sizes.empty() && (n.dtype == DType::i64 || n.dtype == DType::i32),
          "the trip count (operand 0) must be a 0-d i64 or i32 tensor, got ", dtype_name(n.dtype), n.sizes);
  for (int i = 1; i <= num_state; ++i) c.add_output(c.in(i).dtype, c.in(i).sizes);
}

using namespace op_flags;

const OpRegistrar registrar{
    {"loop(Tensor[] operands, int num_state) -> Tensor[]", dtypes::all, infer_loop, control_flow, nullptr, 1,
     "Runs its one body n times (amber::loop): operands are the trip count n (0-d i64/i32), num_state state tensors, "
     "then the tensors the body reads from outside; the body's inputs are the index i (0-d i64), the state and those "
     "tensors, its outputs the next state (same dtypes and shapes); the outputs are the final state."},
};

}  // namespace
}  // namespace amber
