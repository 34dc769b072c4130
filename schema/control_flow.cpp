// amber::loop (control_flow.h): the eager loop, and under a trace the recording of its body
// through the DispatchHook's begin_body / end_body and of the node through on_op.

#include "amber/schema/control_flow.h"

#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber {
namespace {

// A second handle on t's memory: the trace tells it apart from t (a body input, a loop
// output) while no data is copied.
Tensor fresh_handle(const Tensor& t) {
  return Tensor::make(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype());
}

std::vector<Tensor> run_loop(const Tensor& count, const std::vector<Tensor>& state, const LoopBody& body, SrcLoc loc) {
  const std::string where = loc.known() ? str(" (", loc, ")") : std::string();
  AMBER_CHECK(count.defined() && count.dim() == 0 && (count.dtype() == DType::i64 || count.dtype() == DType::i32),
              "loop", where, ": the trip count must be a 0-d i64 or i32 tensor, got ",
              count.defined() ? str(dtype_name(count.dtype()), count.sizes()) : std::string("an undefined tensor"));
  for (size_t k = 0; k < state.size(); ++k)
    AMBER_CHECK(state[k].defined(), "loop", where, ": state tensor ", k, " is undefined");
  DispatchHook* hook = current_dispatch_hook();
  int64_t n;
  {
    DispatchHookGuard quiet(nullptr);  // reading the count is the loop's business, not a host read of the model
    n = count.to(DType::i64, SrcLoc::none()).item<int64_t>(SrcLoc::none());
  }
  AMBER_CHECK(n >= 0, "loop", where, ": the trip count is ", n, "; it must be at least 0");
  const Device device = state.empty() ? count.device() : state[0].device();
  auto index = [&](int64_t i) {
    DispatchHookGuard quiet(nullptr);
    return full({}, i, {DType::i64, device}, SrcLoc::none());
  };
  auto checked = [&](std::vector<Tensor> next, int64_t i) {
    AMBER_CHECK(next.size() == state.size(), "loop", where, ": the body returned ", next.size(),
                " tensors for a state of ", state.size(), " (iteration ", i, ")");
    for (size_t k = 0; k < next.size(); ++k)
      AMBER_CHECK(next[k].defined() && next[k].dtype() == state[k].dtype() && next[k].sizes() == state[k].sizes(),
                  "loop", where, ": the body returned state tensor ", k, " as ",
                  next[k].defined() ? str(dtype_name(next[k].dtype()), next[k].sizes()) : std::string("undefined"),
                  " but the state is ", dtype_name(state[k].dtype()), state[k].sizes(),
                  " (each iteration must keep the state's dtypes and shapes)");
    return next;
  };
  if (!hook) {
    std::vector<Tensor> cur = state;
    for (int64_t i = 0; i < n; ++i) cur = checked(body(index(i), cur), i);
    return cur;
  }
  // Traced: the body runs once recording into its own subgraph...
  std::vector<Tensor> body_in{index(0)};
  for (const Tensor& s : state) body_in.push_back(fresh_handle(s));
  hook->begin_body(body_in, loc);
  std::vector<Tensor> first = checked(body(body_in[0], std::vector<Tensor>(body_in.begin() + 1, body_in.end())), 0);
  const std::vector<Tensor> captures = hook->end_body(first);
  // ...and the remaining iterations run untraced.
  std::vector<Tensor> cur = n >= 1 ? first : state;
  {
    DispatchHookGuard quiet(nullptr);
    for (int64_t i = 1; i < n; ++i) cur = checked(body(index(i), cur), i);
  }
  std::vector<Tensor> outs;
  for (const Tensor& t : cur) outs.push_back(fresh_handle(t));
  std::vector<const Tensor*> operands{&count};
  for (const Tensor& s : state) operands.push_back(&s);
  for (const Tensor& c : captures) operands.push_back(&c);
  static const OpSchema& op = op_schema("loop");
  const Attr attrs[] = {Attr(int64_t(state.size()))};
  hook->on_op(op, operands, attrs, outs, loc);
  return outs;
}

Tensor count_tensor(int64_t n) {
  DispatchHookGuard quiet(nullptr);  // a number: the trace makes it a constant where the loop reads it
  return full({}, n, {DType::i64, Device::cpu()}, SrcLoc::none());
}

}  // namespace

std::vector<Tensor> loop(const Tensor& n, const std::vector<Tensor>& state, const LoopBody& body, SrcLoc loc) {
  return run_loop(n, state, body, loc);
}

std::vector<Tensor> loop(int64_t n, const std::vector<Tensor>& state, const LoopBody& body, SrcLoc loc) {
  return run_loop(count_tensor(n), state, body, loc);
}

Tensor loop(const Tensor& n, const Tensor& state, const std::function<Tensor(const Tensor& i, const Tensor& x)>& body,
            SrcLoc loc) {
  return run_loop(
      n, {state}, [&](const Tensor& i, const std::vector<Tensor>& s) { return std::vector<Tensor>{body(i, s[0])}; },
      loc)[0];
}

Tensor loop(int64_t n, const Tensor& state, const std::function<Tensor(const Tensor& i, const Tensor& x)>& body,
            SrcLoc loc) {
  return loop(count_tensor(n), state, body, loc);
}

}  // namespace amber
