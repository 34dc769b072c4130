// Op table entries for comparisons (eq, ne, lt, le, gt, ge with a tensor or a number), the
// logical ops (and, or, xor, not), where and masked_fill. Comparisons promote their operands as arithmetic does and
// give bool; where picks between two promoted operands under a bool condition, broadcasting all three.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

using infer::pointwise_format;
using infer::priority_of;

void infer_compare(InferCtx& c) {
  ResultType rt;
  rt.add(c.in(0).dtype, priority_of(c.in(0)));
  rt.add(c.in(1).dtype, priority_of(c.in(1)));
  DimVec sizes = broadcast_shapes(c.op().name.c_str(), c.in(0).sizes, c.in(1).sizes);
  c.add_output(DType::b8, sizes).format = pointwise_format(c, sizes);
  c.cast_all_inputs_to(rt.result());
}

void infer_compare_scalar(InferCtx& c) {
  ResultType rt;
  rt.add(c.in(0).dtype, priority_of(c.in(0)));
  rt.add(c.attr("other").scalar().wrapped_dtype(), Priority::wrapped);
  c.add_output(DType::b8, c.in(0).sizes).format = c.in(0).format;
  c.cast_all_inputs_to(rt.result());
}

void infer_logical_not(InferCtx& c) {  // any input dtype as it is; bool result
  c.add_output(DType::b8, c.in(0).sizes).format = c.in(0).format;
}

void infer_masked_fill(InferCtx& c) {  // masked_fill.Scalar(self, mask, value)
  const TensorMeta &x = c.in(0), &mask = c.in(1);
  c.check(mask.dtype == DType::b8, "expected mask to be a bool tensor, got ", mask.dtype);
  const DimVec sizes = broadcast_shapes(c.op().name.c_str(), x.sizes, mask.sizes);
  c.check(sizes == x.sizes, "mask of shape ", mask.sizes, " does not broadcast to self's shape ", x.sizes);
  c.add_output(x.dtype, x.sizes).format = x.format;
  c.compute_dtype = x.dtype;
  c.cast_mask = 0;
}

void infer_where(InferCtx& c) {
  c.check(c.in(0).dtype == DType::b8, "expected condition to be a bool tensor, got ", c.in(0).dtype);
  ResultType rt;
  rt.add(c.in(1).dtype, priority_of(c.in(1)));
  rt.add(c.in(2).dtype, priority_of(c.in(2)));
  const DType t = rt.result();
  const char* name = c.op().name.c_str();
  DimVec sizes = broadcast_shapes(name, broadcast_shapes(name, c.in(0).sizes, c.in(1).sizes), c.in(2).sizes);
  c.add_output(t, sizes).format = pointwise_format(c, sizes);
  c.compute_dtype = t;
  c.cast_mask = 0;
  for (int i = 1; i <= 2; ++i)
    if (c.in(i).dtype != t) c.cast_mask |= 1u << i;
}

using namespace op_flags;
const DTypeSet kCompare = dtypes::comparable;

#define AMBER_COMPARE_OPS(name, text)                                                                            \
  {#name "(Tensor self, Tensor other) -> Tensor",    kCompare, infer_compare, pointwise, nullptr, 1,             \
   "self " text " other, broadcasting; bool result."},                                                           \
  {                                                                                                              \
#name ".Scalar(Tensor self, Scalar other) -> Tensor", kCompare, infer_compare_scalar, pointwise, nullptr, 1, \
        "self " text " other; bool result."                                                                      \
  }

const OpRegistrar registrar{
    AMBER_COMPARE_OPS(eq, "=="),
    AMBER_COMPARE_OPS(ne, "!="),
    AMBER_COMPARE_OPS(lt, "<"),
    AMBER_COMPARE_OPS(le, "<="),
    AMBER_COMPARE_OPS(gt, ">"),
    AMBER_COMPARE_OPS(ge, ">="),
    {"logical_and(Tensor self, Tensor other) -> Tensor", kCompare, infer_compare, pointwise, nullptr, 1,
     "self != 0 and other != 0 (NaN counts as nonzero), broadcasting; bool result."},
    {"logical_or(Tensor self, Tensor other) -> Tensor", kCompare, infer_compare, pointwise, nullptr, 1,
     "self != 0 or other != 0 (NaN counts as nonzero), broadcasting; bool result."},
    {"logical_xor(Tensor self, Tensor other) -> Tensor", kCompare, infer_compare, pointwise, nullptr, 1,
     "exactly one of self and other is nonzero (NaN counts as nonzero), broadcasting; bool result."},
    {"logical_not(Tensor self) -> Tensor", kCompare, infer_logical_not, pointwise, nullptr, 1,
     "self == 0; bool result."},
    {"masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", dtypes::all, infer_masked_fill, pointwise,
     nullptr, 1, "value (converted to self's dtype) where mask is true, else self; mask broadcasts to self's shape."},
    {"where(Tensor condition, Tensor self, Tensor other) -> Tensor", dtypes::all, infer_where, pointwise, nullptr, 1,
     "self where condition is true, else other; broadcasting. The kernel is keyed by the result dtype."},
};

}  // namespace
}  // namespace amber
