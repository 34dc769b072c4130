// Op table entries for reductions: sum over dims (or all dims), with keepdim and an
// optional result dtype. Integer and bool sums accumulate in i64, as PyTorch.

#include "amber/schema/op_schema.h"

namespace amber {
namespace {

// Which dims of sizes a reduction covers: attr dim (None or [] means all), wrapped, unique.
uint32_t reduced_dims_mask(const InferCtx& c, const DimVec& sizes, const Attr& dims) {
  const int nd = sizes.size();
  if (dims.is_none() || dims.ints().empty()) return nd == 0 ? 0u : (1u << nd) - 1;
  uint32_t mask = 0;
  for (int64_t d : dims.ints()) {
    const int w = c.wrap(d, nd);
    c.check(!(mask & (1u << w)), "dim ", w, " appears multiple times in the list of dims");
    mask |= 1u << w;
  }
  return mask;
}

DimVec reduced_sizes(const DimVec& sizes, uint32_t mask, bool keepdim) {
  DimVec out;
  for (int i = 0; i < sizes.size(); ++i) {
    if (mask & (1u << i)) {
      if (keepdim) out.push_back(1);
    } else {
      out.push_back(sizes[i]);
    }
  }
  return out;
}

void infer_sum(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const uint32_t mask = reduced_dims_mask(c, x.sizes, c.attr(0));
  DType t = c.attr(2).is_none() ? (is_integral(x.dtype, true) ? DType::i64 : x.dtype) : c.attr(2).dtype();
  c.add_output(t, reduced_sizes(x.sizes, mask, c.attr(1).b()));
  c.cast_all_inputs_to(t);
}

const OpRegistrar registrar{
    {"sum(Tensor self, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
     DTypeSet{DType::f32, DType::f64, DType::i64}, infer_sum, 0, nullptr, 1,
     "Sum over dim (all dims when None or empty); integer inputs sum in i64."},
};

}  // namespace
}  // namespace amber
