// Control-flow nodes in the graph (control_flow.h): operand layout, body signatures and the
// semantics of loop, while_loop and cond.

#include "amber/graph/control_flow.h"

#include "amber/schema/eager.h"

namespace amber::graph {
namespace {

enum class Kind { loop, while_loop, cond };

Kind kind_of(const Node& n) {
  const std::string& name = n.op->name;
  if (name == "loop") return Kind::loop;
  if (name == "while_loop") return Kind::while_loop;
  AMBER_ASSERT(name == "cond", "control flow: unknown control-flow op ", name);
  return Kind::cond;
}

std::string label(const Node& n) {
  std::string s = str("node %", n.outputs.empty() ? std::string("?") : n.outputs[0]->name, " = ", n.op->name);
  if (!n.source.empty()) s += " (" + n.source + ")";
  return s;
}

}  // namespace

size_t leading_operands(const Node& n) { return kind_of(n) == Kind::while_loop ? 0 : 1; }

size_t num_state(const Node& n) {
  const int64_t s = n.attr("num_state").i();
  return s < 0 ? 0 : size_t(s);
}

size_t expected_bodies(const Node& n) { return kind_of(n) == Kind::loop ? 1 : 2; }

bool outputs_inferred(const Node& n) { return kind_of(n) != Kind::cond; }

BodyOperands body_operands(const Node& n, size_t k) {
  AMBER_CHECK(k < n.bodies.size() && n.bodies.size() == expected_bodies(n), label(n), ": expected ", expected_bodies(n),
              " bodies, got ", n.bodies.size());
  BodyOperands b;
  b.num_index = kind_of(n) == Kind::loop ? 1 : 0;
  b.num_prefix = b.num_index + num_state(n);
  b.first_capture = leading_operands(n) + num_state(n);
  for (size_t j = 0; j <= k; ++j) {
    const size_t inputs = n.bodies[j]->inputs().size();
    AMBER_CHECK(inputs >= b.num_prefix, label(n), ": body ", j, " has ", inputs, " inputs, fewer than the ",
                b.num_prefix, " it must take");
    if (j < k) b.first_capture += inputs - b.num_prefix;
    if (j == k) b.num_captures = inputs - b.num_prefix;
  }
  AMBER_CHECK(b.first_capture + b.num_captures <= n.inputs.size(), label(n), ": body ", k, " reads operands up to ",
              b.first_capture + b.num_captures, " but the node has ", n.inputs.size());
  return b;
}

std::vector<std::string> check_body_signatures(const Node& n) {
  std::vector<std::string> problems;
  if (n.bodies.size() != expected_bodies(n)) {
    problems.push_back(
        str("expected ", expected_bodies(n), " bod", expected_bodies(n) == 1 ? "y" : "ies", ", got ", n.bodies.size()));
    return problems;
  }
  const size_t ns = num_state(n), lead = leading_operands(n);
  if (lead + ns > n.inputs.size()) {
    problems.push_back(str("num_state is ", ns, " but the node has ", n.inputs.size(), " operands"));
    return problems;
  }
  size_t used = lead + ns;
  const ValueType index{DType::i64, {}}, predicate{DType::b8, {}};
  for (size_t k = 0; k < n.bodies.size(); ++k) {
    const Graph& body = *n.bodies[k];
    BodyOperands b;
    try {
      b = body_operands(n, k);
    } catch (const Error& e) {
      problems.push_back(e.what());
      return problems;
    }
    used = b.first_capture + b.num_captures;
    const std::string which = n.bodies.size() == 1 ? "the body" : str("body ", k);
    for (size_t i = 0; i < body.inputs().size(); ++i) {
      const Value* in = body.inputs()[i];
      const Value* operand = i < b.num_index    ? nullptr
                             : i < b.num_prefix ? n.inputs[lead + i - b.num_index]
                                                : n.inputs[b.first_capture + i - b.num_prefix];
      if (!operand) {
        if (!(in->type == index))
          problems.push_back(str(which, " input %", in->name, " (the index) is ", in->type, ", expected i64[]"));
      } else if (!(in->type == operand->type)) {
        problems.push_back(
            str(which, " input %", in->name, " is ", in->type, " but operand %", operand->name, " is ", operand->type));
      }
    }
    const bool is_predicate = kind_of(n) == Kind::while_loop && k == 0;
    const bool is_branch = kind_of(n) == Kind::cond;  // gives the node's outputs, of any types
    const size_t want_outputs = is_predicate ? 1 : is_branch ? n.outputs.size() : ns;
    if (body.outputs().size() != want_outputs) {
      problems.push_back(str(which, " has ", body.outputs().size(), " outputs, expected ", want_outputs,
                             is_predicate ? " (the predicate)"
                             : is_branch  ? " (the node's)"
                                          : " (the state)"));
      continue;
    }
    for (size_t i = 0; i < want_outputs; ++i) {
      const auto& [name, v] = body.outputs()[i];
      const ValueType& want = is_predicate ? predicate : is_branch ? n.outputs[i]->type : n.inputs[lead + i]->type;
      if (!(v->type == want))
        problems.push_back(str(which, " output ", name, " is ", v->type, " but ",
                               is_predicate ? std::string("the predicate must be bool[]")
                               : is_branch  ? str("the node's output %", n.outputs[i]->name, " is ", want)
                                           : str("the state it replaces (%", n.inputs[lead + i]->name, ") is ", want)));
    }
  }
  if (used != n.inputs.size())
    problems.push_back(str("the node has ", n.inputs.size(), " operands but its bodies account for ", used));
  return problems;
}

std::vector<Tensor> run_control_flow(const Node& n, const std::vector<Tensor>& operands, const RunBody& run_body,
                                     const std::function<int64_t(const Tensor&)>& read_scalar, int64_t& trips_left,
                                     int64_t trip_limit, const char* limit_name, Device index_device) {
  const size_t ns = num_state(n), lead = leading_operands(n);
  std::vector<Tensor> state(operands.begin() + long(lead), operands.begin() + long(lead + ns));
  auto inputs_of = [&](size_t k, const std::vector<Tensor>& prefix) {
    const BodyOperands b = body_operands(n, k);
    std::vector<Tensor> in = prefix;
    in.insert(in.end(), operands.begin() + long(b.first_capture),
              operands.begin() + long(b.first_capture + b.num_captures));
    return in;
  };
  auto over_budget = [&](int64_t more) {
    return Error(str(label(n), ": ", more, " more iteration", more == 1 ? "" : "s", " would pass the call's limit of ",
                     trip_limit, " loop body runs (", limit_name, "; ", trip_limit - trips_left, " already run)"));
  };
  switch (kind_of(n)) {
    case Kind::loop: {
      const int64_t count = read_scalar(operands[0]);
      AMBER_CHECK(count >= 0, label(n), ": the trip count is ", count, "; it must be at least 0");
      if (count > trips_left) throw over_budget(count);
      trips_left -= count;
      std::vector<Tensor> prefix{Tensor()};
      prefix.insert(prefix.end(), state.begin(), state.end());
      std::vector<Tensor> in = inputs_of(0, prefix);
      for (int64_t i = 0; i < count; ++i) {
        in[0] = full({}, i, {DType::i64, index_device}, SrcLoc::none());
        std::vector<Tensor> next = run_body(0, in);
        for (size_t k = 0; k < ns; ++k) in[1 + k] = std::move(next[k]);
      }
      return std::vector<Tensor>(in.begin() + 1, in.begin() + long(1 + ns));
    }
    case Kind::while_loop: {
      while (true) {
        const std::vector<Tensor> pred = run_body(0, inputs_of(0, state));
        if (!read_scalar(pred[0])) return state;
        if (trips_left < 1) throw over_budget(1);
        --trips_left;
        state = run_body(1, inputs_of(1, state));
      }
    }
    case Kind::cond: {
      const size_t k = read_scalar(operands[0]) ? 0 : 1;
      return run_body(k, inputs_of(k, state));
    }
  }
  return state;
}

}  // namespace amber::graph
