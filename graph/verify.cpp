// Graph verification (verify.h).

#include "amber/graph/verify.h"

#include <algorithm>
#include <bit>
#include <set>

#include "amber/graph/control_flow.h"
#include "amber/schema/control_flow.h"

namespace amber::graph {
namespace {

std::string describe(const Node* n) {
  std::string s = "node ";
  for (size_t i = 0; i < n->outputs.size(); ++i) s += (i ? ", %" : "%") + n->outputs[i]->name;
  s += " = " + (n->op ? n->op->name : std::string("?"));
  if (!n->source.empty()) s += " (" + n->source + ")";
  return s;
}

// Checks inferred types against recorded ones at the symbol values n.
void check_types(const Graph& g, const SymValues& n, std::vector<std::string>& problems) {
  for (const Node* node : g.nodes()) {
    if (!node->op) continue;
    if (node->op->is_control_flow() && !outputs_inferred(*node)) continue;  // cond: its branches give its types
    std::vector<TensorMeta> metas(node->inputs.size());
    std::vector<const TensorMeta*> ptrs;
    bool missing = false;
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Value* v = node->inputs[i];
      if (!v) {
        ptrs.push_back(nullptr);
        continue;
      }
      try {
        metas[i] = TensorMeta{v->type.dtype, concrete_shape(v->type.shape, n)};
      } catch (const Error& e) {
        problems.push_back(str(describe(node), ": input %", v->name, " has an invalid shape: ", e.what()));
        missing = true;
      }
      ptrs.push_back(&metas[i]);
    }
    if (missing) continue;
    const std::vector<Attr> attrs = node->attrs_at(n);
    try {
      InferCtx ctx(*node->op, ptrs.data(), int(ptrs.size()), attrs.data(), int(attrs.size()));
      node->op->infer(ctx);
      if (ctx.num_outputs() != int(node->outputs.size())) {
        problems.push_back(str(describe(node), ": the op gives ", ctx.num_outputs(), " outputs, the graph records ",
                               node->outputs.size()));
        continue;
      }
      for (int i = 0; i < ctx.num_outputs(); ++i) {
        const Value* out = node->outputs[size_t(i)];
        const TensorMeta& m = ctx.outputs()[size_t(i)];
        DimVec recorded = concrete_shape(out->type.shape, n);
        if (m.dtype != out->type.dtype || !(m.sizes == recorded))
          problems.push_back(str(describe(node), ": output %", out->name, " is recorded as ",
                                 dtype_name(out->type.dtype), recorded, " but inference gives ", dtype_name(m.dtype),
                                 m.sizes, n.bound ? str(" (at ", n, ")") : std::string()));
      }
    } catch (const Error& e) {
      problems.push_back(str(describe(node), ": ", e.what(), n.bound ? str(" (at ", n, ")") : std::string()));
    }
  }
}

std::vector<std::string> verify_at(const Graph& g, int depth);

// A control-flow node's bodies: each verified (depth counts the nesting), and their inputs and
// outputs against the node's operands (graph/control_flow.h).
void check_bodies(const Node* n, int depth, std::vector<std::string>& problems) {
  if (!n->op->is_control_flow()) {
    if (!n->bodies.empty()) problems.push_back(describe(n) + ": holds bodies, but the op is not control flow");
    return;
  }
  for (const auto& b : n->bodies)
    if (!b) {
      problems.push_back(describe(n) + ": a body is missing");
      return;
    }
  if (depth >= kMaxBodyDepth && !n->bodies.empty()) {
    problems.push_back(str(describe(n), ": bodies nest more than ", kMaxBodyDepth, " deep"));
    return;
  }
  for (size_t k = 0; k < n->bodies.size(); ++k)
    for (const std::string& p : verify_at(*n->bodies[k], depth + 1))
      problems.push_back(str(describe(n), " body ", k, ": ", p));
  for (const std::string& p : check_body_signatures(*n)) problems.push_back(describe(n) + ": " + p);
}

std::vector<std::string> verify_at(const Graph& g, int depth) {
  std::vector<std::string> problems;
  std::set<const Value*> defined;
  std::set<std::string> names;
  auto define = [&](const Value* v, const std::string& where) {
    if (!names.insert(v->name).second) problems.push_back(str(where, ": value %", v->name, " is defined twice"));
    defined.insert(v);
  };
  for (const Value* v : g.inputs()) define(v, "graph input");
  for (const Value* c : g.constants()) {
    define(c, "constant");
    if (c->data.defined()) {
      if (c->data.dtype() != c->type.dtype || !(sym_shape(c->data.sizes()) == c->type.shape))
        problems.push_back(str("constant %", c->name, " is typed ", c->type, " but holds ", dtype_name(c->data.dtype()),
                               c->data.sizes()));
    }
  }
  for (const Node* n : g.nodes()) {
    if (!n->op) {
      problems.push_back(describe(n) + ": no op");
      continue;
    }
    const OpSchema& op = *n->op;
    if (op.has_tensor_list) {
      if (n->inputs.empty()) problems.push_back(describe(n) + ": expected at least one tensor in the list");
    } else if (int(n->inputs.size()) != op.num_tensor_args) {
      problems.push_back(str(describe(n), ": expected ", op.num_tensor_args, " tensor inputs, got ", n->inputs.size()));
    }
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      const bool optional = !op.has_tensor_list && i < op.args.size() && op.args[i].kind == ArgKind::optional_tensor;
      if (!in) {
        if (!optional) problems.push_back(str(describe(n), ": required tensor input ", i, " is missing"));
        continue;
      }
      if (!defined.count(in))
        problems.push_back(str(describe(n), ": input %", in->name, " is used before it is produced"));
      if (std::count(in->uses.begin(), in->uses.end(), n) != std::count(n->inputs.begin(), n->inputs.end(), in))
        problems.push_back(str(describe(n), ": the use list of %", in->name, " is inconsistent"));
    }
    if (!attrs_are_canonical(op, n->attrs))
      problems.push_back(str(describe(n), ": attributes do not match the op table's (", op.signature, ")"));
    check_bodies(n, depth, problems);
    for (const Value* out : n->outputs) {
      if (out->producer != n) problems.push_back(str(describe(n), ": output %", out->name, " names another producer"));
      define(out, describe(n));
    }
  }
  for (const auto& [name, v] : g.outputs())
    if (!defined.count(v)) problems.push_back(str("graph output ", name, " (%", v->name, ") is never produced"));
  if (!problems.empty()) return problems;  // types need a well-formed graph
  // Dynamic: at the traced values (1 for a symbol without one) and at each plus one.
  const SymMask symbols = g.symbols();
  if (std::popcount(symbols) > kMaxSymbols) {
    problems.push_back(str("the graph's sizes depend on ", std::popcount(symbols), " symbols (", symbol_names(symbols),
                           "); at most ", kMaxSymbols));
    return problems;
  }
  if (depth == 0) {  // a call reads each symbol's size from an input dim of the form coef*S+value
    SymMask readable = 0;
    for (const Value* v : g.inputs())
      for (const SymInt& d : v->type.shape) {
        char sym = 0;
        int64_t coef = 0;
        if (d.affine_in(&sym, &coef)) readable |= symbol_bit(sym);
      }
    if (symbols & ~readable) {
      problems.push_back(str("the graph's sizes depend on ", symbol_names(symbols & ~readable),
                             ", which no input dim gives (as coef*S+value)"));
      return problems;
    }
  }
  const SymValues at0 = default_sizes(symbols, g.traced);
  SymValues at1 = at0;
  for_each_symbol(symbols, [&](char s) { at1.set(s, at0.get(s) + 1); });
  check_types(g, at0, problems);
  if (symbols) check_types(g, at1, problems);
  return problems;
}

}  // namespace

std::vector<std::string> verify(const Graph& g) { return verify_at(g, 0); }

void verify_or_throw(const Graph& g, const std::string& what) {
  const std::vector<std::string> problems = verify(g);
  if (problems.empty()) return;
  std::string msg = str(what, " is invalid (", problems.size(), " problem", problems.size() == 1 ? "" : "s", "):");
  for (const auto& p : problems) msg += "\n  " + p;
  throw Error(msg);
}

}  // namespace amber::graph
