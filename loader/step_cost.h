// How much work one plan step is, estimated from its op and shapes at plan time, and so
// whether it is worth the intra-op thread pool: waking the pool and joining it costs a few
// microseconds, more than small convolutions, products and elementwise passes take alone
// (LeNet at batch 1 ran 40% slower on 2 threads than on 1 before steps were sized).
#pragma once

#include "amber/core/backend.h"
#include "amber/schema/op_cost.h"

namespace amber::loader {

// Estimated single-thread time of the step in nanoseconds, from its op's work
// (schema/op_cost.h: floating-point operations for convolutions, products, attention and
// pooling windows, bytes read and written for everything else); window as estimate_work's.
double estimate_step_ns(OpCost cost, const amber_tensor_view* inputs, int n_inputs, const amber_tensor_view* outputs,
                        int n_outputs, double window = 1);

// Steps estimated below this run on the calling thread alone.
inline constexpr double kParallelMinNs = 16000;

}  // namespace amber::loader
