// amber::loop, amber::while_loop and amber::cond (control_flow.h): the eager forms, and under a
// trace the recording of their bodies through the DispatchHook's begin_body / end_body and of
// the node through on_op.

#include "amber/schema/control_flow.h"

#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber {
namespace {

// A second handle on t's memory: the trace tells it apart from t (a body input, a node
// output) while no data is copied.
Tensor fresh_handle(const Tensor& t) {
  return Tensor::make(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype());
}
std::vector<Tensor> fresh_handles(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(fresh_handle(t));
  return out;
}

std::string where_of(const char* op, SrcLoc loc) { return loc.known() ? str(op, " (", loc, ")") : std::string(op); }

// Reads a 0-d tensor on the host without it counting as a host read of the traced model.
int64_t read_scalar(const Tensor& t) {
  DispatchHookGuard quiet(nullptr);
  return t.to(DType::i64, SrcLoc::none()).item<int64_t>(SrcLoc::none());
}

void check_scalar(const Tensor& t, bool boolean, const std::string& what, const char* role) {
  const bool ok = t.defined() && t.dim() == 0 &&
                  (boolean ? t.dtype() == DType::b8 : t.dtype() == DType::i64 || t.dtype() == DType::i32);
  AMBER_CHECK(ok, what, ": the ", role, " must be a 0-d ", boolean ? "bool" : "i64 or i32", " tensor, got ",
              t.defined() ? str(dtype_name(t.dtype()), t.sizes()) : std::string("an undefined tensor"));
}

// Checks that a body's result can replace `like` (count, dtypes and shapes).
std::vector<Tensor> checked(std::vector<Tensor> next, const std::vector<Tensor>& like, const std::string& what,
                            const std::string& when) {
  AMBER_CHECK(next.size() == like.size(), what, ": ", when, " returned ", next.size(), " tensors for a state of ",
              like.size());
  for (size_t k = 0; k < next.size(); ++k)
    AMBER_CHECK(next[k].defined() && next[k].dtype() == like[k].dtype() && next[k].sizes() == like[k].sizes(), what,
                ": ", when, " returned state tensor ", k, " as ",
                next[k].defined() ? str(dtype_name(next[k].dtype()), next[k].sizes()) : std::string("undefined"),
                " but the state is ", dtype_name(like[k].dtype()), like[k].sizes(),
                " (every step must keep the state's dtypes and shapes)");
  return next;
}

// Runs fn on fresh handles of `inputs` while the hook records it as one body; returns its
// outputs and appends what it read from outside to captures.
template <typename Fn>
std::vector<Tensor> record_body(DispatchHook* hook, const std::vector<Tensor>& inputs, bool first_is_index, SrcLoc loc,
                                const Fn& fn, std::vector<Tensor>& captures) {
  const std::vector<Tensor> in = fresh_handles(inputs);
  hook->begin_body(in, first_is_index, loc);
  std::vector<Tensor> out = fn(in);
  const std::vector<Tensor> read = hook->end_body(out);
  captures.insert(captures.end(), read.begin(), read.end());
  return out;
}

void record_node(DispatchHook* hook, const char* name, const std::vector<const Tensor*>& operands, size_t num_state,
                 const std::vector<Tensor>& outs, SrcLoc loc) {
  const Attr attrs[] = {Attr(int64_t(num_state))};
  hook->on_op(op_schema(name), operands, attrs, outs, loc);
}

std::vector<Tensor> run_loop(const Tensor& count, const std::vector<Tensor>& state, const LoopBody& body, SrcLoc loc) {
  const std::string what = where_of("loop", loc);
  check_scalar(count, false, what, "trip count");
  for (size_t k = 0; k < state.size(); ++k)
    AMBER_CHECK(state[k].defined(), what, ": state tensor ", k, " is undefined");
  const int64_t n = read_scalar(count);
  AMBER_CHECK(n >= 0, what, ": the trip count is ", n, "; it must be at least 0");
  const Device device = state.empty() ? count.device() : state[0].device();
  auto index = [&](int64_t i) {
    DispatchHookGuard quiet(nullptr);
    return full({}, i, {DType::i64, device}, SrcLoc::none());
  };
  auto step = [&](int64_t i, const std::vector<Tensor>& s) {
    return checked(body(index(i), s), state, what, str("the body (iteration ", i, ")"));
  };
  DispatchHook* hook = current_dispatch_hook();
  if (!hook) {
    std::vector<Tensor> cur = state;
    for (int64_t i = 0; i < n; ++i) cur = step(i, cur);
    return cur;
  }
  // Traced: the body runs once recording into its own graph, the other iterations untraced.
  std::vector<Tensor> captures, prefix{index(0)};
  prefix.insert(prefix.end(), state.begin(), state.end());
  std::vector<Tensor> first = record_body(
      hook, prefix, true, loc,
      [&](const std::vector<Tensor>& in) {
        return checked(body(in[0], std::vector<Tensor>(in.begin() + 1, in.end())), state, what, "the body");
      },
      captures);
  std::vector<Tensor> cur = n >= 1 ? first : state;
  {
    DispatchHookGuard quiet(nullptr);
    for (int64_t i = 1; i < n; ++i) cur = step(i, cur);
  }
  const std::vector<Tensor> outs = fresh_handles(cur);
  std::vector<const Tensor*> operands{&count};
  for (const Tensor& s : state) operands.push_back(&s);
  for (const Tensor& c : captures) operands.push_back(&c);
  record_node(hook, "loop", operands, state.size(), outs, loc);
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

std::vector<Tensor> while_loop(const WhileCond& cond, const StateFn& body, const std::vector<Tensor>& state,
                               SrcLoc loc) {
  const std::string what = where_of("while_loop", loc);
  AMBER_CHECK(!state.empty(), what, ": the state must hold at least one tensor");
  for (size_t k = 0; k < state.size(); ++k)
    AMBER_CHECK(state[k].defined(), what, ": state tensor ", k, " is undefined");
  auto holds = [&](const Tensor& pred) {
    check_scalar(pred, true, what, "condition's result");
    return read_scalar(pred) != 0;
  };
  DispatchHook* hook = current_dispatch_hook();
  if (!hook) {
    std::vector<Tensor> cur = state;
    while (holds(cond(cur))) cur = checked(body(cur), state, what, "the body");
    return cur;
  }
  // Traced: the condition and the body recorded once each on the initial state.
  std::vector<Tensor> captures;
  const std::vector<Tensor> pred = record_body(
      hook, state, false, loc, [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{cond(in)}; }, captures);
  const std::vector<Tensor> first = record_body(
      hook, state, false, loc,
      [&](const std::vector<Tensor>& in) { return checked(body(in), state, what, "the body"); }, captures);
  std::vector<Tensor> cur = state;
  {
    DispatchHookGuard quiet(nullptr);
    if (holds(pred[0])) {
      cur = first;
      while (holds(cond(cur))) cur = checked(body(cur), state, what, "the body");
    }
  }
  const std::vector<Tensor> outs = fresh_handles(cur);
  std::vector<const Tensor*> operands;
  for (const Tensor& s : state) operands.push_back(&s);
  for (const Tensor& c : captures) operands.push_back(&c);
  record_node(hook, "while_loop", operands, state.size(), outs, loc);
  return outs;
}

std::vector<Tensor> cond(const Tensor& pred, const StateFn& then_fn, const StateFn& else_fn,
                         const std::vector<Tensor>& operands, SrcLoc loc) {
  const std::string what = where_of("cond", loc);
  check_scalar(pred, true, what, "predicate");
  for (size_t k = 0; k < operands.size(); ++k)
    AMBER_CHECK(operands[k].defined(), what, ": operand ", k, " is undefined");
  const bool taken = read_scalar(pred) != 0;
  DispatchHook* hook = current_dispatch_hook();
  auto defined = [&](std::vector<Tensor> out, const char* branch) {
    for (size_t k = 0; k < out.size(); ++k)
      AMBER_CHECK(out[k].defined(), what, ": the ", branch, " branch's output ", k, " is undefined");
    return out;
  };
  if (!hook) return taken ? defined(then_fn(operands), "then") : defined(else_fn(operands), "else");
  // Traced: both branches recorded, and they must agree; the one the predicate picks gives the
  // result now.
  std::vector<Tensor> captures;
  auto record_branch = [&](const StateFn& fn, const char* branch) {
    return record_body(
        hook, operands, false, loc, [&](const std::vector<Tensor>& in) { return defined(fn(in), branch); }, captures);
  };
  const std::vector<Tensor> then_out = record_branch(then_fn, "then"), else_out = record_branch(else_fn, "else");
  AMBER_CHECK(then_out.size() == else_out.size(), what, ": the then branch gives ", then_out.size(),
              " tensors but the else branch ", else_out.size());
  for (size_t k = 0; k < then_out.size(); ++k)
    AMBER_CHECK(then_out[k].dtype() == else_out[k].dtype() && then_out[k].sizes() == else_out[k].sizes(), what,
                ": output ", k, " is ", dtype_name(then_out[k].dtype()), then_out[k].sizes(),
                " from the then branch but ", dtype_name(else_out[k].dtype()), else_out[k].sizes(),
                " from the else branch (both branches must give the same dtypes and shapes)");
  const std::vector<Tensor> outs = fresh_handles(taken ? then_out : else_out);
  std::vector<const Tensor*> node_operands{&pred};
  for (const Tensor& s : operands) node_operands.push_back(&s);
  for (const Tensor& c : captures) node_operands.push_back(&c);
  record_node(hook, "cond", node_operands, operands.size(), outs, loc);
  return outs;
}

Tensor cond(const Tensor& pred, const std::function<Tensor(const Tensor& x)>& then_fn,
            const std::function<Tensor(const Tensor& x)>& else_fn, const Tensor& operand, SrcLoc loc) {
  return cond(
      pred, [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{then_fn(in[0])}; },
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{else_fn(in[0])}; }, {operand}, loc)[0];
}

}  // namespace amber
