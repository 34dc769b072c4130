// The tracer (trace.h): a DispatchHook that appends one node per executed op (a control-flow
// body's ops into the body's own graph), unification of two traces into a graph with the batch
// symbol N, and check_trace.

#include "amber/tracer/trace.h"

#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>

#include "amber/core/random.h"
#include "amber/graph/interpreter.h"
#include "amber/graph/passes.h"
#include "amber/graph/verify.h"
#include "amber/schema/control_flow.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber {

struct TracedModule::State {
  std::unique_ptr<graph::Graph> graph, recorded;
  std::unique_ptr<graph::Interpreter> interpreter;
  std::vector<TraceWarning> warnings;
  std::vector<Tensor> examples;
};

const graph::Graph& TracedModule::graph() const { return *state_->graph; }
const graph::Graph& TracedModule::recorded_graph() const { return *state_->recorded; }
const std::vector<TraceWarning>& TracedModule::warnings() const { return state_->warnings; }
const std::vector<Tensor>& TracedModule::example_inputs() const { return state_->examples; }

ArchiveInfo TracedModule::archive_info() const {
  ArchiveInfo info;
  for (const Tensor& t : state_->examples) info.example_input_shapes.push_back(t.sizes());
  for (const TraceWarning& w : state_->warnings) info.warnings.push_back({w.kind, w.source, w.message});
  return info;
}

void TracedModule::save(const std::string& path, const SaveOptions& options) const {
  save_archive(path, *state_->graph, archive_info(), options);
}

std::vector<uint8_t> TracedModule::save_to_bytes(const SaveOptions& options) const {
  return archive_bytes(*state_->graph, archive_info(), options);
}

std::vector<Tensor> TracedModule::forward(const std::vector<Tensor>& inputs) const {
  return state_->interpreter->run(inputs);
}

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;
using graph::ValueType;

std::string loc_text(SrcLoc loc) {
  if (!loc.known()) return "";
  const char* f = loc.file;
  if (const char* slash = std::strrchr(f, '/')) f = slash + 1;
  return str(f, ":", loc.line);
}

ValueType type_of(const Tensor& t) { return ValueType{t.dtype(), graph::sym_shape(t.sizes())}; }

// What one recording produced.
struct Recording {
  std::unique_ptr<Graph> graph;
  std::vector<TraceWarning> warnings;
  std::vector<std::vector<Tensor>> node_outputs;  // eager outputs of each node, in order
};

class Recorder final : public DispatchHook {
 public:
  Recorder(const TraceOptions& o, const nn::Module* module) : options_(o) {
    frames_.emplace_back();
    frames_.back().graph = std::make_unique<Graph>();
    if (module)
      for (const auto& [name, t] : module->state_dict()) param_names_.emplace(t.impl(), name);
  }

  void add_input(const std::string& name, const Tensor& t) { bind(t, top().graph->add_input(name, type_of(t))); }

  void add_output(const std::string& name, const Tensor& t) {
    top().graph->add_output(name, value_for(t, SrcLoc::none()));
  }

  void on_op(const OpSchema& op, std::span<const Tensor* const> inputs, std::span<const Attr> attrs,
             std::span<const Tensor> outputs, SrcLoc loc) override {
    Frame& f = frames_.back();
    std::vector<Value*> ins;
    for (const Tensor* t : inputs) ins.push_back(t && t->defined() ? value_for(*t, loc) : nullptr);
    std::vector<std::pair<std::string, ValueType>> outs;
    for (const Tensor& t : outputs) outs.emplace_back(f.graph->fresh_name(), type_of(t));
    Node* n = f.graph->add_node(&op, std::move(ins), std::vector<Attr>(attrs.begin(), attrs.end()), outs);
    if (op.is_control_flow()) n->bodies = std::move(f.ended_bodies);
    f.ended_bodies.clear();
    // Ops inside Amber's own modules carry the line of user code that called the module;
    // operators (no line of their own) the nearest line recorded before them.
    const SrcLoc site = nn::ModuleScope::user_call_site();
    if (site.known()) loc = site;
    if (loc.known()) last_source_ = loc_text(loc);
    n->source = loc.known() ? loc_text(loc) : last_source_;
    n->scope = nn::ModuleScope::current_path();
    for (size_t i = 0; i < outputs.size(); ++i) bind(outputs[i], n->outputs[i]);
    if (frames_.size() == 1) node_outputs_.emplace_back(outputs.begin(), outputs.end());
  }

  // A body's graph: inputs "i" (a loop's index) and "s0", "s1", ... (the state); what it reads
  // from outside becomes further inputs "c0", "c1", ... as value_for meets it.
  void begin_body(std::span<const Tensor> inputs, bool first_is_index, SrcLoc loc) override {
    AMBER_CHECK(int(frames_.size()) <= kMaxBodyDepth, "trace: control flow nested more than ", kMaxBodyDepth, " deep",
                loc.known() ? " at " + loc_text(loc) : std::string());
    frames_.emplace_back();
    Frame& f = frames_.back();
    f.graph = std::make_unique<Graph>();
    for (size_t k = 0; k < inputs.size(); ++k)
      bind(inputs[k],
           f.graph->add_input(first_is_index && k == 0 ? std::string("i") : str("s", k - (first_is_index ? 1 : 0)),
                              type_of(inputs[k])));
  }

  std::vector<Tensor> end_body(std::span<const Tensor> outputs) override {
    AMBER_ASSERT(frames_.size() > 1, "trace: end_body without begin_body");
    for (size_t k = 0; k < outputs.size(); ++k)
      frames_.back().graph->add_output(str("s", k), value_for(outputs[k], SrcLoc::none()));
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    frames_.back().ended_bodies.push_back(std::shared_ptr<Graph>(std::move(f.graph)));
    return std::move(f.captures);
  }

  void on_host_read(const Tensor& t, const char* what, SrcLoc loc) override {
    const Value* v = find(t);
    if (!v || v->is_constant()) return;  // reading a constant is harmless
    warn("host read", loc,
         str("reading tensor data on the host (", what,
             ") from a traced value: the value read is baked into the trace, "
             "so control flow or sizes that depend on it will not follow other inputs"));
  }

  void on_random(const Tensor& t, const char* what, SrcLoc loc) override {
    warn("random", loc, str(what, " creates random values: the trace freezes them as a constant"));
  }

  void on_device_copy(const Tensor& src, const Tensor& dst) override {
    auto it = frames_.back().values.find(src.impl());
    if (it != frames_.back().values.end()) bind(dst, it->second);  // archives are device-independent
  }

  Recording finish() {
    AMBER_ASSERT(frames_.size() == 1, "trace: a body was not ended");
    Recording r;
    r.graph = std::move(top().graph);
    r.warnings = std::move(warnings_);
    r.node_outputs = std::move(node_outputs_);
    return r;
  }

 private:
  // The graph being recorded: the model's (frames_[0]) or a control-flow body's.
  struct Frame {
    std::unique_ptr<Graph> graph;
    std::unordered_map<const TensorImpl*, Value*> values;
    std::vector<Tensor> captures;                      // tensors from outside, one per "c<k>" input
    std::vector<std::shared_ptr<Graph>> ended_bodies;  // for the next (control-flow) node
  };
  Frame& top() { return frames_.front(); }

  void bind(const Tensor& t, Value* v) {
    frames_.back().values[t.impl()] = v;
    keep_.push_back(t);  // keeps the address from being reused by another tensor
  }

  // The value of t in any frame, innermost first.
  const Value* find(const Tensor& t) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
      if (auto it = f->values.find(t.impl()); it != f->values.end()) return it->second;
    return nullptr;
  }

  // The value of a tensor in the current frame; tensors the trace did not create become
  // constants of the model's graph, and inside a body what comes from outside becomes an input.
  Value* value_for(const Tensor& t, SrcLoc loc) {
    (void)loc;
    Frame& f = frames_.back();
    if (auto it = f.values.find(t.impl()); it != f.values.end()) return it->second;
    if (frames_.size() > 1) {
      if (!find(t)) constant_for(t);
      Value* in = f.graph->add_input(str("c", f.captures.size()), type_of(t));
      f.captures.push_back(t);
      f.values[t.impl()] = in;
      return in;
    }
    return constant_for(t);
  }

  Value* constant_for(const Tensor& t) {
    Frame& model = top();
    Value* c;
    auto p = param_names_.find(t.impl());
    if (p != param_names_.end()) {
      c = model.graph->add_constant(p->second, t);
    } else {
      std::string name = str("const_", const_count_++);
      std::string source = loc_text(t.origin());
      c = model.graph->add_constant(name, t, source.empty() ? "" : source);
    }
    model.values[t.impl()] = c;
    keep_.push_back(t);
    return c;
  }

  void warn(const std::string& kind, SrcLoc loc, const std::string& message) {
    TraceWarning w{kind, loc.known() ? loc_text(loc) : "?", message};
    if (options_.strict) throw Error(str("trace (strict): ", w.source, ": ", w.message));
    warnings_.push_back(std::move(w));
  }

  const TraceOptions& options_;
  std::vector<Frame> frames_;
  std::unordered_map<const TensorImpl*, std::string> param_names_;
  std::vector<Tensor> keep_;
  std::vector<TraceWarning> warnings_;
  std::vector<std::vector<Tensor>> node_outputs_;
  std::string last_source_;
  int const_count_ = 0;
};

std::string name_at(const std::vector<std::string>& names, size_t i, const char* prefix) {
  return i < names.size() ? names[i] : str(prefix, i);
}

Recording record(const TraceFn& fn, const std::vector<Tensor>& inputs, const TraceOptions& options,
                 const nn::Module* module) {
  AMBER_CHECK(!current_dispatch_hook(), "trace: a trace is already running on this thread");
  Recorder rec(options, module);
  std::vector<Tensor> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    AMBER_CHECK(inputs[i].defined(), "trace: input ", i, " is undefined");
    // A fresh handle per input, so the same tensor passed twice gives two inputs.
    const Tensor& t = inputs[i];
    args.push_back(Tensor::make(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype()));
    rec.add_input(name_at(options.input_names, i, "input"), args.back());
  }
  std::vector<Tensor> outs;
  {
    DispatchHookGuard guard(&rec);
    outs = fn(args);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    AMBER_CHECK(outs[i].defined(), "trace: output ", i, " is undefined");
    rec.add_output(name_at(options.output_names, i, "output"), outs[i]);
  }
  Recording r = rec.finish();
  graph::verify_or_throw(*r.graph, "the recorded graph");
  return r;
}

// ---- dynamic batch: unify the traces at batch b and b + 1 ----

std::string describe(const Node& n) {
  std::string s = str("node %", n.outputs.empty() ? std::string("?") : n.outputs[0]->name, " = ", n.op->name);
  if (!n.source.empty()) s += " (" + n.source + ")";
  return s;
}

// The affine dim through (b, x1) and (b + 1, x2).
graph::SymInt fit(int64_t b, int64_t x1, int64_t x2) {
  const int64_t coef = x2 - x1;
  return graph::SymInt(coef, x1 - coef * b);
}

graph::SymShape unify_shape(const graph::SymShape& s1, const graph::SymShape& s2, int64_t b, const std::string& what) {
  AMBER_CHECK(s1.size() == s2.size(), "trace (dynamic batch): ", what, " has rank ", s1.size(), " at batch ", b,
              " but ", s2.size(), " at batch ", b + 1);
  graph::SymShape out;
  for (size_t i = 0; i < s1.size(); ++i) out.push_back(fit(b, s1[i].value, s2[i].value));
  return out;
}

void unify(Graph& g1, const Graph& g2, int64_t b) {
  const std::string at = str(" at batch ", b, " and ", b + 1);
  const auto n1 = g1.nodes(), n2 = g2.nodes();
  AMBER_CHECK(n1.size() == n2.size(), "trace (dynamic batch): the graph has ", n1.size(), " nodes at batch ", b,
              " but ", n2.size(), " at batch ", b + 1,
              ": the model's structure depends on the batch size (a loop over the batch, or a size read from data?); "
              "trace at a fixed batch size instead");
  for (Value* v : g1.inputs())
    v->type.shape = unify_shape(v->type.shape, g2.find(v->name)->type.shape, b, "input %" + v->name);
  for (Value* c : g1.constants()) {
    const Value* c2 = g2.find(c->name);
    AMBER_CHECK(c2 && c2->is_constant(), "trace (dynamic batch): constant %", c->name, " exists at batch ", b,
                " only: the model's structure depends on the batch size");
    AMBER_CHECK(c->type == c2->type, "trace (dynamic batch): constant %", c->name,
                c->source.empty() ? std::string() : " (created at " + c->source + ")", " has type ", c->type,
                " at batch ", b, " but ", c2->type, " at batch ", b + 1,
                ": it bakes the batch size in; compute it inside the traced code from the input's size");
  }
  for (size_t i = 0; i < n1.size(); ++i) {
    Node& a = *n1[i];
    const Node& c = *n2[i];
    AMBER_CHECK(a.op == c.op && a.inputs.size() == c.inputs.size() && a.outputs.size() == c.outputs.size(),
                "trace (dynamic batch): ", describe(a), " at batch ", b, " is ", describe(c), " at batch ", b + 1,
                ": the model's structure depends on the batch size");
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      const bool same =
          (!a.inputs[k] && !c.inputs[k]) || (a.inputs[k] && c.inputs[k] && a.inputs[k]->name == c.inputs[k]->name);
      AMBER_CHECK(same, "trace (dynamic batch): ", describe(a), " reads different values", at,
                  ": the model's structure depends on the batch size");
    }
    AMBER_CHECK(a.bodies.size() == c.bodies.size(), "trace (dynamic batch): ", describe(a),
                " has a different number of bodies", at);
    for (size_t k = 0; k < a.bodies.size(); ++k) unify(*a.bodies[k], *c.bodies[k], b);
    a.attr_coefs.assign(a.attrs.size(), {});
    bool symbolic = false;
    for (size_t k = 0; k < a.attrs.size(); ++k) {
      const Attr &x = a.attrs[k], &y = c.attrs[k];
      if (x == y) continue;
      const std::string& name = a.op->attr_spec(int(k)).name;
      if (x.kind() == AttrKind::i && y.kind() == AttrKind::i) {
        const graph::SymInt s = fit(b, x.i(), y.i());
        a.attrs[k] = Attr(s.value);
        a.attr_coefs[k] = {s.coef};
        symbolic = true;
      } else if (x.kind() == AttrKind::ints && y.kind() == AttrKind::ints && x.ints().size() == y.ints().size()) {
        std::vector<int64_t> values, coefs;
        for (size_t e = 0; e < x.ints().size(); ++e) {
          const graph::SymInt s = fit(b, x.ints()[e], y.ints()[e]);
          values.push_back(s.value);
          coefs.push_back(s.coef);
        }
        a.attrs[k] = Attr(values);
        a.attr_coefs[k] = coefs;
        symbolic = true;
      } else {
        throw Error(str("trace (dynamic batch): ", describe(a), ": attribute ", name, " is ", x, " at batch ", b,
                        " but ", y, " at batch ", b + 1,
                        ": a value that depends on the batch size and cannot be "
                        "expressed as a size (read on the host?); trace at a fixed batch size instead"));
      }
    }
    if (!symbolic) a.attr_coefs.clear();
    for (size_t k = 0; k < a.outputs.size(); ++k)
      a.outputs[k]->type.shape = unify_shape(a.outputs[k]->type.shape, c.outputs[k]->type.shape, b,
                                             describe(a) + " output %" + a.outputs[k]->name);
  }
  g1.traced_batch = b;
}

// The first example input with a batch dim (0-d inputs have none), or null.
const Tensor* first_batched(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.dim() > 0) return &t;
  return nullptr;
}

// The example inputs with one more entry along batch dim d (the first one repeated); 0-d
// inputs (a loop's count, a limit, a flag) stay as they are.
std::vector<Tensor> grow_batch(const std::vector<Tensor>& inputs, int d) {
  std::vector<Tensor> out;
  const Tensor* ref = first_batched(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.dim() == 0) {
      out.push_back(t);
      continue;
    }
    AMBER_CHECK(d < t.dim() && t.size(d) >= 1, "trace (dynamic batch): input ", i, " of shape ", t.sizes(),
                " has no batch dimension ", d, " to vary");
    AMBER_CHECK(t.size(d) == ref->size(d), "trace (dynamic batch): inputs disagree on the batch size (", ref->size(d),
                " and ", t.size(d), " in dim ", d, ")");
    out.push_back(cat({t, t.slice(d, 0, 1, 1, SrcLoc::none())}, d, SrcLoc::none()));
  }
  return out;
}

void print_warnings(const std::vector<TraceWarning>& ws) {
  for (const TraceWarning& w : ws)
    std::cerr << "amber trace warning (" << w.kind << ") at " << w.source << ": " << w.message << "\n";
}

}  // namespace

TracedModule trace_function(const TraceFn& fn, const std::vector<Tensor>& inputs, const TraceOptions& options,
                            const nn::Module* module) {
  Recording r = record(fn, inputs, options, module);
  auto state = std::make_shared<TracedModule::State>();
  state->examples = inputs;
  state->warnings = std::move(r.warnings);
  const int d = options.batch_dim;
  AMBER_CHECK(d >= 0, "trace: batch_dim must be >= 0, got ", d);
  const Tensor* batched = first_batched(inputs);
  if (batched && batched->dim() > d) r.graph->traced_batch = batched->size(d);
  if (options.dynamic_batch) {
    const int64_t b = batched && batched->dim() > d ? batched->size(d) : 0;
    TraceOptions quiet = options;
    quiet.strict = false;
    Recording r2;
    try {
      r2 = record(fn, grow_batch(inputs, d), quiet, module);
    } catch (const Error& e) {
      throw Error(str("trace (dynamic batch): the model traced at batch ", b, " fails at batch ", b + 1,
                      ", so it bakes the batch size in (a reshape or view to a fixed size?): ", e.what()));
    }
    unify(*r.graph, *r2.graph, b);
    graph::verify_or_throw(*r.graph, "the unified graph");
  }
  state->recorded = std::move(r.graph);
  state->graph = std::make_unique<Graph>(state->recorded->clone());
  if (options.optimize) {
    graph::optimize(*state->graph);
    graph::verify_or_throw(*state->graph, "the optimised graph");
  }
  state->interpreter = std::make_unique<graph::Interpreter>(*state->graph);
  if (options.print_warnings) print_warnings(state->warnings);
  return TracedModule(std::move(state));
}

namespace {

// Generated inputs for check_trace: same shapes; floats random, integers as the examples.
std::vector<Tensor> fresh_inputs(const std::vector<Tensor>& examples) {
  Generator gen(20261122);
  std::vector<Tensor> out;
  for (const Tensor& t : examples) {
    if (is_floating(t.dtype()))
      out.push_back(randn(t.sizes(), {DType::f32}, &gen, SrcLoc::none()).to(t.dtype(), SrcLoc::none()));
    else
      out.push_back(t);
  }
  return out;
}

}  // namespace

CheckTraceResult check_trace_function(const TracedModule& traced, const TraceFn& fn, std::vector<Tensor> inputs,
                                      double atol, double rtol, const nn::Module* module) {
  if (inputs.empty()) inputs = fresh_inputs(traced.example_inputs());
  TraceOptions quiet;
  quiet.print_warnings = false;
  Recording now = record(fn, inputs, quiet, module);
  const Graph& rec = traced.recorded_graph();
  const int64_t n = rec.is_dynamic() ? graph::batch_size_of(rec, inputs) : 0;
  const Graph inst = rec.is_dynamic() ? rec.instantiate(n) : rec.clone();
  const auto a = inst.nodes(), b = now.graph->nodes();
  CheckTraceResult res;
  // Structure: the same ops with the same attributes, in the same order.
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const Node &x = *a[i], &y = *b[i];
    if (x.op != y.op) {
      res.ok = false;
      res.message = str("check_trace: ", describe(x), " was traced, but the code now runs ", y.op->name,
                        y.source.empty() ? std::string() : " at " + y.source,
                        " (control flow that depends on data or on values read on the host?)");
      return res;
    }
    for (size_t k = 0; k < x.attrs.size(); ++k)
      if (!(x.attrs[k] == y.attrs[k])) {
        res.ok = false;
        res.message =
            str("check_trace: ", describe(x), ": attribute ", x.op->attr_spec(int(k)).name, " was traced as ",
                x.attrs[k], " but the code now gives ", y.attrs[k], " (a value read on the host changed the trace?)");
        return res;
      }
  }
  if (a.size() != b.size()) {
    res.ok = false;
    res.message = str("check_trace: the trace has ", a.size(), " nodes but the code now runs ", b.size(),
                      " ops (control flow that depends on the inputs?)");
    return res;
  }
  // Values: run the recorded graph and compare node by node with eager execution.
  size_t idx = 0;
  std::string first;
  graph::run_graph(inst, inputs, [&](const Node& node, const std::vector<Tensor>& outs) {
    const std::vector<Tensor>& eager = now.node_outputs[idx++];
    if (!first.empty()) return;
    for (size_t k = 0; k < outs.size() && k < eager.size(); ++k) {
      if (!is_floating(outs[k].dtype()) && outs[k].dtype() != DType::b8 && !is_integral(outs[k].dtype(), false))
        continue;
      const auto g = outs[k].to_vector<double>(SrcLoc::none());
      const auto e = eager[k].to_vector<double>(SrcLoc::none());
      for (size_t j = 0; j < g.size() && j < e.size(); ++j) {
        const bool both_nan = std::isnan(g[j]) && std::isnan(e[j]);
        if (!both_nan && !(std::fabs(g[j] - e[j]) <= atol + rtol * std::fabs(e[j]))) {
          first = str("check_trace: ", describe(node), ": output ", k, " element ", j, " is ", g[j],
                      " in the graph but ", e[j], " when run eagerly (a value baked into the trace?)");
          return;
        }
      }
    }
  });
  if (!first.empty()) {
    res.ok = false;
    res.message = first;
  }
  return res;
}

}  // namespace amber
