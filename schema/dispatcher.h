// The dispatcher: the single entry point of every eager op. It validates arguments against
// the op table, runs inference, applies type-promotion casts, allocates outputs, resolves
// the kernel by (op, device, compute dtype) through the device's backend table, runs it,
// and finally reports the call to the thread's DispatchHook (the tracer) if one is
// installed. Only the outermost call on a thread is reported: ops run inside an op (casts,
// composite kernels) are not recorded twice.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "amber/core/backend.h"
#include "amber/core/tensor.h"
#include "amber/schema/op_schema.h"

namespace amber {

class DispatchHook : public HostAccessHook {
 public:
  // Called after op ran at the outermost level on this thread; inputs are as the caller
  // passed them (an absent optional tensor is undefined), attrs complete and canonical.
  virtual void on_op(const OpSchema& op, std::span<const Tensor* const> inputs, std::span<const Attr> attrs,
                     std::span<const Tensor> outputs, SrcLoc loc) = 0;
  // Control flow (schema/control_flow.h): the ops run between begin_body and end_body form one
  // body whose inputs are `inputs` (a loop's index first when first_is_index, then the state)
  // and whose outputs are `outputs`; end_body returns the tensors from outside the body that
  // it read, which the control-flow op appends to its operands (and the body to its inputs, in
  // the same order). The node itself then arrives through on_op, holding the bodies ended
  // since the previous node. A hook that records nothing may ignore both.
  virtual void begin_body(std::span<const Tensor> inputs, bool first_is_index, SrcLoc loc) {
    (void)inputs;
    (void)first_is_index;
    (void)loc;
  }
  virtual std::vector<Tensor> end_body(std::span<const Tensor> outputs) {
    (void)outputs;
    return {};
  }
};

// Installs hook on the calling thread while alive; restores the previous one after.
class DispatchHookGuard {
 public:
  explicit DispatchHookGuard(DispatchHook* hook);
  ~DispatchHookGuard();
  DispatchHookGuard(const DispatchHookGuard&) = delete;
  DispatchHookGuard& operator=(const DispatchHookGuard&) = delete;

 private:
  DispatchHook* previous_;
  HostAccessHook* previous_host_;
};
DispatchHook* current_dispatch_hook();

// Caps the work of the eager kernels the calling thread runs while alive (nested limits keep
// the smaller budget): running an untrusted model at import (onnx/) cannot run for hours on a
// file whose every tensor is small. Work is schema/op_cost.h's estimate, floating-point
// operations plus bytes moved, plus 1024 a call for the call itself, summed over the calls; the call that would pass
// the budget throws an amber::Error naming the op, its work, what remains and `source` (the option that sets the
// budget) before its kernel runs.
class WorkLimit {
 public:
  WorkLimit(double max_work, const char* source);
  ~WorkLimit();
  WorkLimit(const WorkLimit&) = delete;
  WorkLimit& operator=(const WorkLimit&) = delete;

 private:
  double previous_left_;
  const char* previous_source_;
  double start_left_;
};

// Runs op eagerly. inputs follow the op's tensor arguments (a Tensor[] argument expanded
// in place); nullptr or an undefined tensor marks an absent optional one. device is used
// only by ops without tensor inputs (factories).
std::vector<Tensor> dispatch(const OpSchema& op, std::span<const Tensor* const> inputs, std::span<const Attr> attrs,
                             SrcLoc loc, Device device = Device::cpu());
// Single-output shorthand used by the eager API.
Tensor call(const OpSchema& op, std::initializer_list<const Tensor*> inputs, std::initializer_list<Attr> attrs,
            SrcLoc loc, Device device = Device::cpu());

// ---- Pieces shared with the loader's executor. ----
// The kernel for (op, device type, dtype), cached after the first lookup; throws an error
// naming the op, device and dtype when the backend has none.
const amber_kernel& resolve_kernel(const OpSchema& op, Device device, DType dtype);
// The C view of an attribute for kernels, its op's argument spec: pointers refer into a
// (which must outlive c); a str's i is its index among spec's choices (-1 without them).
void fill_c_attr(amber_attr& c, const Attr& a, const ArgSpec& spec);
// Runs kernel eagerly on prepared tensors (inputs already of the compute dtype, outputs
// allocated on device) on the device's default stream; throws amber::Error "op: message" if
// the kernel reports a failure. A kernel with a setup gets its state from a bounded cache
// keyed by the call's shapes, strides, attributes, thread count and immutable inputs (64
// entries, least recently used dropped; docs/OPS.md), and scratch memory for this call.
void launch_kernel(const OpSchema& op, const amber_kernel& kernel, std::span<const Tensor* const> inputs,
                   std::span<const Tensor> outputs, std::span<const Attr> attrs, Device device);
// Kernel states held by the eager cache (tests).
size_t eager_kernel_states();
// Applies a view op's layout function to in, giving one tensor per inferred output; with
// allow_copy (maybe_view ops) a layout that cannot be a view is produced from a
// contiguous copy instead.
std::vector<Tensor> apply_view(const OpSchema& op, const InferCtx& ctx, const Tensor& in, bool allow_copy);

}  // namespace amber
