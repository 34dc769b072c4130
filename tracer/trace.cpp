// The tracer (trace.h): a DispatchHook that appends one node per executed op (a control-flow
// body's ops into the body's own graph), unification of the traces at several sizes into a
// graph whose sizes are sums of products of the dynamic dims' symbols, and check_trace.

#include "amber/tracer/trace.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
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

// ---- dynamic dims: unify the traces at every corner of the sizes' unit cube ----

std::string describe(const Node& n) {
  std::string s = str("node %", n.outputs.empty() ? std::string("?") : n.outputs[0]->name, " = ", n.op->name);
  if (!n.source.empty()) s += " (" + n.source + ")";
  return s;
}

// The traces of one dynamic trace: the symbols, their example sizes, and the graphs recorded
// with the symbols in corner mask c one larger (graphs[c], c < 2^k; graphs[0] the examples'),
// and `check`, recorded with every symbol two larger.
struct Corners {
  std::vector<char> symbols;
  std::vector<int64_t> base;
  std::vector<const Graph*> graphs;
  const Graph* check = nullptr;

  size_t count() const { return graphs.size(); }
  graph::SymValues at(size_t c, int64_t plus = 1) const {
    graph::SymValues v;
    for (size_t j = 0; j < symbols.size(); ++j) v.set(symbols[j], base[j] + ((c >> j) & 1 ? plus : 0));
    return v;
  }
  std::string label(size_t c) const { return str(at(c)); }
  std::string check_label() const { return str(at(count() - 1, 2)); }
};

// The sum of products of the symbols that takes the values xs at the corners (xs[c] at
// corners.at(c)), checked against x_check at every symbol two larger; nullopt when it does
// not take that value there (or overflows).
std::optional<graph::SymInt> fit(const Corners& k, const std::vector<int64_t>& xs, int64_t x_check) {
  const size_t n = xs.size();
  try {
    // Coefficients in u_j = s_j - base_j (Moebius inversion over the corners) ...
    std::vector<int64_t> d(n, 0);
    for (size_t m = 0; m < n; ++m)
      for (size_t sub = m;; sub = (sub - 1) & m) {
        const int64_t sign = std::popcount(m ^ sub) % 2 ? -1 : 1;
        d[m] = checked_add(d[m], checked_mul(sign, xs[sub], "a dynamic size"), "a dynamic size");
        if (sub == 0) break;
      }
    // ... expanded in s: prod_{j in m} (s_j - b_j) = sum_{t in m} prod_{j in t} s_j prod_{j in m\t} -b_j.
    graph::SymInt out;
    for (size_t m = 0; m < n; ++m) {
      if (d[m] == 0) continue;
      for (size_t t = m;; t = (t - 1) & m) {
        int64_t c = d[m];
        graph::SymMask symbols = 0;
        for (size_t j = 0; j < k.symbols.size(); ++j) {
          if (!((m >> j) & 1)) continue;
          if ((t >> j) & 1)
            symbols |= graph::symbol_bit(k.symbols[j]);
          else
            c = checked_mul(c, -k.base[j], "a dynamic size");
        }
        out.add(symbols, c);
        if (t == 0) break;
      }
    }
    if (out.at(k.at(n - 1, 2)) != x_check) return std::nullopt;
    return out;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// One size or attribute value across the traces, fitted; what cannot be is an error.
graph::SymInt unify_int(const Corners& k, const std::function<int64_t(const Graph&)>& value, const std::string& what) {
  std::vector<int64_t> xs;
  for (const Graph* g : k.graphs) xs.push_back(value(*g));
  const int64_t x_check = value(*k.check);
  if (std::optional<graph::SymInt> s = fit(k, xs, x_check)) return *s;
  std::string seen;
  for (size_t c = 0; c < xs.size(); ++c) seen += str(c ? "; " : "", xs[c], " at ", k.label(c));
  throw Error(str("trace (dynamic dims): ", what, " is ", seen, "; ", x_check, " at ", k.check_label(),
                  ": not a sum of products of ", graph::symbol_names(k.at(0).bound),
                  " (a size divided, squared or clamped?); make that dim static or compute it from whole sizes"));
}

void unify(Graph& g0, const Corners& k, const std::function<const Graph&(const Graph&)>& corresponding) {
  const std::string at = str(" at ", k.label(0), " and at ", k.check_label());
  // The graph of each trace that corresponds to g0 (g0 itself may be a body of the first).
  Corners here = k;
  std::vector<const Graph*> gs;
  for (const Graph* g : k.graphs) gs.push_back(&corresponding(*g));
  here.graphs = gs;
  here.check = &corresponding(*k.check);
  std::vector<std::vector<Node*>> nodes;
  for (const Graph* g : here.graphs) nodes.push_back(g->nodes());
  nodes.push_back(here.check->nodes());
  const std::vector<Node*>& n0 = nodes[0];
  // The sizes trace t ran at (the last one is the check).
  auto label_of = [&](size_t t) { return t + 1 < nodes.size() ? k.label(t) : k.check_label(); };
  for (size_t c = 1; c < nodes.size(); ++c)
    AMBER_CHECK(nodes[c].size() == n0.size(), "trace (dynamic dims): the graph has ", n0.size(), " nodes at ",
                k.label(0), " but ", nodes[c].size(), " at ", label_of(c),
                ": the model's structure depends on a dynamic size (a loop over it, or a size read from data?); "
                "make that dim static");
  auto find_in = [&](size_t c, const std::string& name) -> const Value* {
    return (c < here.graphs.size() ? here.graphs[c] : here.check)->find(name);
  };
  auto shape_of = [&](const std::string& name, const graph::SymShape& s0, const std::string& what) {
    for (size_t c = 0; c < nodes.size(); ++c) {
      const Value* v = find_in(c, name);
      AMBER_CHECK(v && v->type.shape.size() == s0.size(), "trace (dynamic dims): ", what, " has rank ", s0.size(),
                  " at ", k.label(0), " but not at ", label_of(c));
    }
    graph::SymShape out;
    for (size_t i = 0; i < s0.size(); ++i)
      out.push_back(unify_int(
          here, [&](const Graph& g) { return g.find(name)->type.shape[i].value; }, str(what, " dim ", i)));
    return out;
  };
  for (Value* v : g0.inputs()) v->type.shape = shape_of(v->name, v->type.shape, "input %" + v->name);
  for (Value* c : g0.constants())
    for (size_t t = 0; t < nodes.size(); ++t) {
      const Value* ct = find_in(t, c->name);
      AMBER_CHECK(ct && ct->is_constant() && ct->type == c->type, "trace (dynamic dims): constant %", c->name,
                  c->source.empty() ? std::string() : " (created at " + c->source + ")", " is ", c->type, " at ",
                  k.label(0), ct ? str(" but ", ct->type, " at ") : std::string(" and missing at "), label_of(t),
                  ": it bakes a dynamic size in; compute it inside the traced code from the input's size");
    }
  for (size_t i = 0; i < n0.size(); ++i) {
    Node& a = *n0[i];
    for (size_t t = 1; t < nodes.size(); ++t) {
      const Node& c = *nodes[t][i];
      AMBER_CHECK(a.op == c.op && a.inputs.size() == c.inputs.size() && a.outputs.size() == c.outputs.size() &&
                      a.attrs.size() == c.attrs.size() && a.bodies.size() == c.bodies.size(),
                  "trace (dynamic dims): ", describe(a), " at ", k.label(0), " is ", describe(c), " at ", label_of(t),
                  ": the model's structure depends on a dynamic size");
      for (size_t j = 0; j < a.inputs.size(); ++j) {
        const bool same =
            (!a.inputs[j] && !c.inputs[j]) || (a.inputs[j] && c.inputs[j] && a.inputs[j]->name == c.inputs[j]->name);
        AMBER_CHECK(same, "trace (dynamic dims): ", describe(a), " reads different values", at,
                    ": the model's structure depends on a dynamic size");
      }
    }
    // The node at index i of a corresponding graph.
    auto node_in = [&](const Graph& g) -> const Node& {
      size_t t = 0;
      while (t + 1 < nodes.size() && here.graphs[t] != &g) ++t;
      return *nodes[t][i];
    };
    for (size_t b = 0; b < a.bodies.size(); ++b)
      unify(*a.bodies[b], here, [&, b](const Graph& g) -> const Graph& { return *node_in(g).bodies[b]; });
    a.attr_syms.assign(a.attrs.size(), {});
    bool symbolic = false;
    for (size_t j = 0; j < a.attrs.size(); ++j) {
      bool varies = false;
      for (size_t t = 1; t < nodes.size(); ++t) varies |= !(nodes[t][i]->attrs[j] == a.attrs[j]);
      if (!varies) continue;
      const std::string& name = a.op->attr_spec(int(j)).name;
      const Attr& x = a.attrs[j];
      bool same_kind = true;
      for (size_t t = 1; t < nodes.size(); ++t) {
        const Attr& y = nodes[t][i]->attrs[j];
        same_kind &= y.kind() == x.kind() &&
                     (x.kind() == AttrKind::i || (x.kind() == AttrKind::ints && y.ints().size() == x.ints().size()));
      }
      if (!same_kind || (x.kind() != AttrKind::i && x.kind() != AttrKind::ints))
        throw Error(str("trace (dynamic dims): ", describe(a), ": attribute ", name, " is ", x, " at ", k.label(0),
                        " but ", nodes.back()[i]->attrs[j], " at ", k.check_label(),
                        ": a value that depends on a dynamic size and cannot be expressed as a size (read on the "
                        "host?); make that dim static"));
      if (x.kind() == AttrKind::i) {
        const graph::SymInt s = unify_int(
            here, [&](const Graph& g) { return node_in(g).attrs[j].i(); }, describe(a) + ": attribute " + name);
        a.attrs[j] = Attr(s.value);
        a.attr_syms[j] = {s.symbolic_part()};
      } else {
        std::vector<int64_t> values;
        std::vector<graph::SymInt> parts;
        for (size_t e = 0; e < x.ints().size(); ++e) {
          const graph::SymInt s = unify_int(
              here, [&](const Graph& g) { return node_in(g).attrs[j].ints()[e]; },
              str(describe(a), ": attribute ", name, "[", e, "]"));
          values.push_back(s.value);
          parts.push_back(s.symbolic_part());
        }
        a.attrs[j] = Attr(values);
        a.attr_syms[j] = parts;
      }
      symbolic = true;
    }
    if (!symbolic) a.attr_syms.clear();
    for (Value* out : a.outputs)
      out->type.shape = shape_of(out->name, out->type.shape, describe(a) + " output %" + out->name);
  }
  g0.traced = k.at(0);
}

// The dynamic dims options name: dynamic_dims, and dynamic_batch's N at batch_dim of every
// input but 0-d ones. Checked: valid inputs, dims and symbols, one size per symbol.
std::vector<TraceOptions::DynamicDim> dynamic_dims(const std::vector<Tensor>& inputs, const TraceOptions& o,
                                                   Corners& k) {
  std::vector<TraceOptions::DynamicDim> dims = o.dynamic_dims;
  if (o.dynamic_batch)
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dim() == 0) continue;  // a loop's count, a limit, a flag
      AMBER_CHECK(o.batch_dim < inputs[i].dim(), "trace (dynamic batch): input ", i, " of shape ", inputs[i].sizes(),
                  " has no batch dimension ", o.batch_dim, " to vary");
      bool named = false;
      for (const auto& d : o.dynamic_dims) named |= d.input == i && d.dim == o.batch_dim;
      if (!named) dims.push_back({i, o.batch_dim, 'N'});
    }
  std::map<char, std::pair<int64_t, std::string>> sizes;  // symbol -> (size, where)
  for (const auto& d : dims) {
    AMBER_CHECK(d.input < inputs.size(), "trace: a dynamic dim names input ", d.input, " of ", inputs.size());
    const Tensor& t = inputs[d.input];
    AMBER_CHECK(d.dim >= 0 && d.dim < t.dim(), "trace: a dynamic dim names dim ", d.dim, " of input ", d.input,
                ", whose shape is ", t.sizes());
    (void)graph::symbol_bit(d.symbol);
    const std::string where = str("input ", d.input, " dim ", d.dim);
    AMBER_CHECK(t.size(d.dim) >= 1, "trace: dynamic dim ", d.symbol, " (", where, ") is 0 in the example");
    auto [it, fresh] = sizes.emplace(d.symbol, std::make_pair(t.size(d.dim), where));
    AMBER_CHECK(fresh || it->second.first == t.size(d.dim), "trace: the inputs disagree on the size ",
                std::string(1, d.symbol), ": ", it->second.first, " in ", it->second.second, ", ", t.size(d.dim),
                " in ", where);
  }
  AMBER_CHECK(sizes.size() <= size_t(graph::kMaxSymbols), "trace: ", sizes.size(), " dynamic symbols; at most ",
              graph::kMaxSymbols);
  for (const auto& [sym, size] : sizes) {
    k.symbols.push_back(sym);
    k.base.push_back(size.first);
  }
  return dims;
}

// The example inputs with each dynamic dim of a symbol in corner c `plus` larger (the first
// entry repeated).
std::vector<Tensor> grow(const std::vector<Tensor>& inputs, const std::vector<TraceOptions::DynamicDim>& dims,
                         const Corners& k, size_t c, int64_t plus) {
  std::vector<Tensor> out = inputs;
  for (const auto& d : dims) {
    const size_t j = size_t(std::find(k.symbols.begin(), k.symbols.end(), d.symbol) - k.symbols.begin());
    if (!((c >> j) & 1)) continue;
    Tensor& t = out[d.input];
    std::vector<Tensor> parts{t};
    for (int64_t p = 0; p < plus; ++p) parts.push_back(t.slice(d.dim, 0, 1, 1, SrcLoc::none()));
    t = cat(parts, d.dim, SrcLoc::none());
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
  for (const Tensor& t : inputs)
    if (t.dim() > d) {
      r.graph->traced.set('N', t.size(d));  // recorded for static graphs too
      break;
    }
  Corners k;
  const std::vector<TraceOptions::DynamicDim> dims = dynamic_dims(inputs, options, k);
  if (!dims.empty()) {
    TraceOptions quiet = options;
    quiet.strict = false;
    std::vector<Recording> more;
    auto trace_at = [&](size_t c, int64_t plus) {
      try {
        more.push_back(record(fn, grow(inputs, dims, k, c, plus), quiet, module));
      } catch (const Error& e) {
        throw Error(str("trace (dynamic dims): the model traced at ", k.label(0), " fails at ", k.at(c, plus),
                        ", so it bakes a size in (a reshape or view to a fixed size?): ", e.what()));
      }
    };
    const size_t corners = size_t(1) << k.symbols.size();
    for (size_t c = 1; c < corners; ++c) trace_at(c, 1);
    trace_at(corners - 1, 2);
    k.graphs.push_back(r.graph.get());
    for (size_t c = 0; c + 1 < more.size(); ++c) k.graphs.push_back(more[c].graph.get());
    k.check = more.back().graph.get();
    unify(*r.graph, k, [](const Graph& g) -> const Graph& { return g; });
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
  const Graph inst = rec.is_dynamic() ? rec.instantiate(graph::symbol_values(rec, inputs)) : rec.clone();
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
