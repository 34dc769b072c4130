// Op table entries for matrix products: mm.

#include "amber/schema/op_schema.h"

namespace amber {
namespace {

void infer_mm(InferCtx& c) {
  const TensorMeta &a = c.in(0), &b = c.in(1);
  c.check(a.sizes.size() == 2, "self must be a matrix, got shape ", a.sizes);
  c.check(b.sizes.size() == 2, "mat2 must be a matrix, got shape ", b.sizes);
  c.check(a.sizes[1] == b.sizes[0], "mat1 and mat2 shapes cannot be multiplied (", a.sizes[0], "x", a.sizes[1], " and ",
          b.sizes[0], "x", b.sizes[1], ")");
  c.check(a.dtype == b.dtype, "expected mat1 and mat2 to have the same dtype, but got: ", a.dtype, " != ", b.dtype);
  c.add_output(a.dtype, DimVec{a.sizes[0], b.sizes[1]});
}

const OpRegistrar registrar{
    {"mm(Tensor self, Tensor mat2) -> Tensor", DTypeSet{DType::f32}, infer_mm, 0, nullptr, 1,
     "Matrix product of [n, k] and [k, m]."},
};

}  // namespace
}  // namespace amber
