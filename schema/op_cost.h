// How much work one call of an op is, from its table cost kind (OpSchema::cost), its shapes
// and, for window ops, its window: the loader's thread-pool decision (loader/step_cost.h)
// and the eager work limit (WorkLimit in dispatcher.h, which bounds running an untrusted
// model at import) both read it.
#pragma once

#include "amber/core/backend.h"
#include "amber/schema/op_schema.h"

namespace amber {

struct OpWork {
  double flops = 0;  // arithmetic of products, convolutions, attention, window ops
  double bytes = 0;  // bytes read and written, for window ops and every op but the above
  double total() const { return flops + bytes; }
};

// The work of a call with these input and output views (an absent optional input has
// ndim < 0); window is the window's element count for OpCost::window ops, the samples per
// bin for OpCost::roi_align (0: an adaptive grid) (window_elements).
OpWork estimate_work(OpCost cost, const amber_tensor_view* in, int n_in, const amber_tensor_view* out, int n_out,
                     double window = 1);
// The product of op's kernel_size attribute (attrs in the op's attribute order); for
// roi_align sampling_ratio squared (0 when adaptive); 1 for other cost kinds.
double window_elements(const OpSchema& op, const amber_attr* attrs, int n_attrs);

}  // namespace amber
