// Op table entry for `fused`: a chain of f32 pointwise ops made into one node by the
// fusion pass; its program attribute (fused_program.h) is data run by one generic kernel.

#include "amber/schema/fused_program.h"
#include "amber/schema/infer_util.h"

namespace amber {
namespace {

void infer_fused(InferCtx& c) {
  c.check(c.num_inputs() <= kMaxFusedInputs, "at most ", kMaxFusedInputs, " inputs are supported, got ",
          c.num_inputs());
  DimVec sizes = c.in(0).sizes;
  for (int i = 0; i < c.num_inputs(); ++i) {
    c.check(c.in(i).dtype == DType::f32, "input ", i, " must be f32, got ", c.in(i).dtype);
    sizes = broadcast_shapes(c.op().name.c_str(), sizes, c.in(i).sizes);
  }
  parse_fused_program(c.attr("program").s(), c.num_inputs());  // validates; throws naming the instruction
  c.add_output(DType::f32, sizes).format = infer::pointwise_format(c, sizes);
  c.compute_dtype = DType::f32;
}

const OpRegistrar registrar{
    {"fused(Tensor[] inputs, str program) -> Tensor", DTypeSet{DType::f32}, infer_fused,
     op_flags::pointwise | op_flags::program, nullptr, 1,
     "A chain of f32 pointwise ops run as one node; the program is data (see docs/OPS.md)."},
};

}  // namespace
}  // namespace amber
