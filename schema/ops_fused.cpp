// Op table entry for `fused`: a chain of f32 pointwise ops made into one node by the
// fusion pass; its program attribute (fused_program.h) is data run by one generic kernel.
// The program computes in f32; inputs all of one 16-bit dtype give an output of that dtype.

#include "amber/schema/fused_program.h"
#include "amber/schema/infer_util.h"

namespace amber {
namespace {

void infer_fused(InferCtx& c) {
  c.check(c.num_inputs() <= kMaxFusedInputs, "at most ", kMaxFusedInputs, " inputs are supported, got ",
          c.num_inputs());
  DimVec sizes = c.in(0).sizes;
  bool one_half = dtypes::half.contains(c.in(0).dtype);  // every input of one 16-bit dtype
  for (int i = 0; i < c.num_inputs(); ++i) {
    const DType t = c.in(i).dtype;
    c.check(t == DType::f32 || dtypes::half.contains(t), "input ", i, " must be f32, f16 or bf16, got ", t);
    one_half = one_half && t == c.in(0).dtype;
    sizes = broadcast_shapes(c.op().name.c_str(), sizes, c.in(i).sizes);
  }
  parse_fused_program(c.attr("program").s(), c.num_inputs());  // validates; throws naming the instruction
  const DType t = one_half ? c.in(0).dtype : DType::f32;       // mixed: the 16-bit inputs widened to f32
  c.add_output(t, sizes).format = infer::pointwise_format(c, sizes);
  c.cast_all_inputs_to(t);
}

const OpRegistrar registrar{
    {"fused(Tensor[] inputs, str program) -> Tensor", DTypeSet{DType::f32}, infer_fused,
     op_flags::pointwise | op_flags::program, nullptr, 1,
     "A chain of pointwise ops run as one node in f32; the program is data (see docs/OPS.md)."},
};

}  // namespace
}  // namespace amber
