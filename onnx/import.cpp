// ONNX import (import.h): parses and checks the model with libonnx, refuses what it cannot
// take (every such node listed at once), then traces a function that runs the graph's nodes
// in order through the op table (ops.h), Loop and If as amber::while_loop and cond. Nodes
// whose inputs are all known at import run untraced (constant folding, shapes from Shape).

#include "amber/onnx/import.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "amber/core/storage.h"
#include "amber/onnx/ops.h"
#include "amber/onnx/tensor_proto.h"
#include "amber/schema/control_flow.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber {

using onnx_in::NodeCtx;
using onnx_in::OnnxOp;
using onnx_in::Val;

namespace {

constexpr int kMinOpset = 7, kMaxOpset = 17;
constexpr int64_t kDynamicDimSize = 8;  // a named dynamic dim's traced size unless dims gives one

std::string node_label(const onnx::NodeProto& n, int index) { return n.name().empty() ? str("#", index) : n.name(); }

// The values a graph's nodes see by name: its own, then its enclosing graphs' (a Loop body or
// an If branch reads outer values without copying them).
struct Scope {
  std::unordered_map<std::string, Val> own;
  const Scope* outer = nullptr;

  const Val* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->outer)
      if (auto it = s->own.find(name); it != s->own.end()) return &it->second;
    return nullptr;
  }
};

std::string read_file(const std::string& path, uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str("import_onnx: cannot open '", path, "'"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error(str("import_onnx: cannot read '", path, "'"));
  if (uint64_t(size) > max_bytes)
    throw Error(str("import_onnx: '", path, "' is ", size, " bytes; the limit is ", max_bytes,
                    " (OnnxImportOptions::max_file_bytes; weights past it belong in external data)"));
  std::string bytes(size_t(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (!in) throw Error(str("import_onnx: reading '", path, "' failed"));
  return bytes;
}

// One declared input's example tensor: its dims, the batch for a leading symbol; dims named
// in o.dynamic_dims are appended to `named` (input index 0: the caller's to set).
Tensor example_input(const onnx::ValueInfoProto& vi, const OnnxImportOptions& o, bool* leading_symbol,
                     std::string* batch_symbol, std::vector<TraceOptions::DynamicDim>* named) {
  const std::string what = str("input '", vi.name(), "'");
  if (!vi.type().has_tensor_type()) throw OnnxImportError(str("import_onnx: ", what, " is not a tensor"));
  const auto& tt = vi.type().tensor_type();
  const DType dtype = onnx_in::dtype_from_onnx(tt.elem_type(), str("import_onnx: ", what));
  if (!tt.has_shape()) throw OnnxImportError(str("import_onnx: ", what, " has no shape"));
  DimVec sizes;
  *leading_symbol = false;
  if (tt.shape().dim_size() > kMaxDims)
    throw OnnxImportError(str("import_onnx: ", what, " has ", tt.shape().dim_size(), " dims (at most ", kMaxDims, ")"));
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > (int64_t(1) << 40))
        throw OnnxImportError(str("import_onnx: ", what, " dim ", i, " is ", d.dim_value()));
      sizes.push_back(d.dim_value());
      continue;
    }
    const std::string sym = d.has_dim_param() ? d.dim_param() : "";
    auto it = sym.empty() ? o.dims.end() : o.dims.find(sym);
    if (!sym.empty() && o.dynamic_dims.count(sym)) {
      sizes.push_back(it != o.dims.end() ? it->second : kDynamicDimSize);
      named->push_back({0, i, o.dynamic_dims.at(sym)});  // the caller sets the input index
    } else if (it != o.dims.end()) {
      sizes.push_back(it->second);
    } else if (i == 0) {
      *leading_symbol = true;
      *batch_symbol = sym;
      sizes.push_back(o.batch);
    } else {
      throw OnnxImportError(str("import_onnx: ", what, " dim ", i, " is symbolic ('", sym.empty() ? "?" : sym,
                                "'): give its size (OnnxImportOptions::dims, amber import --dim ",
                                sym.empty() ? "NAME" : sym, "=N)"));
    }
  }
  return zeros(sizes, dtype);
}

// A model of an opset before 7 imports when each op's definition there is the one in force
// at opset 7 (most ops' last change is older): then the node reads as an opset-7 node.
bool same_as_opset_7(const std::string& op, int opset) {
  const onnx::OpSchema* at = onnx::OpSchemaRegistry::Schema(op, opset);
  const onnx::OpSchema* at7 = onnx::OpSchemaRegistry::Schema(op, kMinOpset);
  return at && at7 && at->since_version() == at7->since_version();
}

struct Model {
  onnx::ModelProto proto;
  int opset = 0;
  std::string base_dir;
};

Model parse(const std::string& bytes, const OnnxImportOptions& o, const std::string& base_dir,
            const std::string& path) {
  Model m;
  m.base_dir = base_dir;
  if (bytes.size() > o.max_file_bytes)
    throw OnnxImportError(str("import_onnx: the model is ", bytes.size(), " bytes; the limit is ", o.max_file_bytes));
  if (!m.proto.ParseFromString(bytes))
    throw OnnxImportError("import_onnx: the file is not an ONNX model (its protobuf does not parse)");
  for (const auto& op : m.proto.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") m.opset = int(op.version());
  if (m.opset < 1 || m.opset > kMaxOpset)
    throw OnnxImportError(m.opset == 0 ? std::string("import_onnx: the model imports no opset of the default domain")
                                       : str("import_onnx: the model imports opset ", m.opset,
                                             " of the default domain; Amber reads ", kMinOpset, " to ", kMaxOpset));
  const onnx::GraphProto& g = m.proto.graph();
  if (g.node_size() > o.max_nodes)
    throw OnnxImportError(
        str("import_onnx: ", g.node_size(), " nodes; the limit is ", o.max_nodes, " (OnnxImportOptions::max_nodes)"));
  // Every node Amber cannot take, listed together (a Loop's body's nodes too, named after it).
  std::vector<OnnxRefusal> refused;
  int64_t nodes = 0;
  auto check_nodes = [&](auto& self, const onnx::GraphProto& graph, const std::string& where, int depth) -> void {
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& n = graph.node(i);
      const std::string label = where + node_label(n, i);
      ++nodes;
      const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
      if (!default_domain) {
        refused.push_back({label, str(n.domain(), "::", n.op_type()), "an op outside the default domain"});
      } else if (!onnx_in::find_onnx_op(n.op_type())) {
        refused.push_back({label, n.op_type(), "no Amber mapping for this op type"});
      } else if (m.opset < kMinOpset && !same_as_opset_7(n.op_type(), m.opset)) {
        refused.push_back({label, n.op_type(),
                           str("its definition in opset ", m.opset, " changed before opset ", kMinOpset,
                               " (Amber reads the definitions of opsets ", kMinOpset, " to ", kMaxOpset, ")")});
      } else if (n.op_type() == "Loop" || n.op_type() == "If") {
        const bool is_loop = n.op_type() == "Loop";
        std::vector<const onnx::GraphProto*> bodies;
        for (const char* name :
             is_loop ? std::vector<const char*>{"body"} : std::vector<const char*>{"then_branch", "else_branch"})
          for (const auto& a : n.attribute())
            if (a.name() == name && a.type() == onnx::AttributeProto::GRAPH) bodies.push_back(&a.g());
        if (bodies.size() != (is_loop ? 1u : 2u))
          refused.push_back({label, n.op_type(), "a subgraph attribute is missing"});
        else if (depth >= kMaxBodyDepth)
          refused.push_back({label, n.op_type(), str("control flow nested more than ", kMaxBodyDepth, " deep")});
        else if (is_loop && bodies[0]->output_size() + 1 != n.input_size())  // cond_out and the carried values
          refused.push_back({label, n.op_type(),
                             "scan outputs (per-iteration outputs stacked to a length the count decides) are not "
                             "supported; only loop-carried values"});
        else
          for (const onnx::GraphProto* b : bodies) self(self, *b, label + "/", depth + 1);
      } else {
        for (const auto& a : n.attribute())
          if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
            refused.push_back({label, n.op_type(), "subgraph attributes (control flow other than Loop and If)"});
      }
    }
  };
  check_nodes(check_nodes, g, "", 0);
  if (nodes > o.max_nodes)
    throw OnnxImportError(str("import_onnx: ", nodes, " nodes (Loop bodies included); the limit is ", o.max_nodes,
                              " (OnnxImportOptions::max_nodes)"));
  if (!refused.empty()) {
    std::string msg = str("import_onnx: ", refused.size(), " node(s) cannot be imported:");
    for (const auto& r : refused) msg += str("\n  ", r.node, " (", r.op_type, "): ", r.reason);
    throw OnnxImportError(msg, refused);
  }
  // The checker reads external data files relative to the model's folder: given the path, it
  // is told that folder.
  bool external = false;
  for (const auto& t : g.initializer()) external = external || t.data_location() == onnx::TensorProto::EXTERNAL;
  try {
    if (path.empty() || !external)
      onnx::checker::check_model(m.proto);
    else
      onnx::checker::check_model(path);  // parses it again: libonnx 1.12 takes the folder no other way
  } catch (const std::exception& e) {
    throw OnnxImportError(str("import_onnx: the ONNX checker refuses the model: ", e.what()));
  }
  return m;
}

TracedModule import(const Model& m, const OnnxImportOptions& o) {
  const AllocationLimit limit(size_t(std::min<uint64_t>(o.max_tensor_bytes, SIZE_MAX)));
  const WorkLimit work_limit(o.max_work, "OnnxImportOptions::max_work");
  const onnx::GraphProto& g = m.proto.graph();
  // Initializers, converted once (both runs of a dynamic-batch trace capture the same tensors).
  std::unordered_map<std::string, Tensor> initializers;
  for (const auto& t : g.initializer())
    initializers[t.name()] =
        onnx_in::tensor_from_proto(t, m.base_dir, o.max_tensor_bytes, str("import_onnx: initializer '", t.name(), "'"));
  std::vector<std::string> input_names;
  std::vector<Tensor> examples;
  std::unordered_map<std::string, Tensor> constants;
  bool all_leading = true;
  std::set<std::string> symbols;
  std::vector<TraceOptions::DynamicDim> dynamic_dims;  // OnnxImportOptions::dynamic_dims' dims
  for (const auto& [name, letter] : o.dynamic_dims) {  // each must name a dim of an input
    bool found = false;
    for (const auto& vi : g.input())
      if (!initializers.count(vi.name()) && vi.type().has_tensor_type())
        for (const auto& d : vi.type().tensor_type().shape().dim()) found |= d.dim_param() == name;
    if (!found)
      throw OnnxImportError(str("import_onnx: dynamic_dims names '", name, "' (as ", std::string(1, letter),
                                "), which is no input's symbolic dim (dim_param)"));
  }
  for (const auto& vi : g.input()) {
    if (initializers.count(vi.name())) continue;  // an initializer listed as an input (IR < 4)
    if (auto c = o.constant_inputs.find(vi.name()); c != o.constant_inputs.end()) {
      constants[vi.name()] = c->second;
      continue;
    }
    bool leading = false;
    std::string sym;
    std::vector<TraceOptions::DynamicDim> named;
    Tensor example = example_input(vi, o, &leading, &sym, &named);
    for (TraceOptions::DynamicDim& d : named) {
      d.input = input_names.size();
      dynamic_dims.push_back(d);
    }
    if (auto e = o.example_inputs.find(vi.name()); e != o.example_inputs.end()) {
      example = e->second;
      leading = false;
    }
    all_leading = all_leading && leading;
    symbols.insert(sym);
    input_names.push_back(vi.name());
    examples.push_back(example);
  }
  std::vector<std::string> output_names;
  for (const auto& vi : g.output()) output_names.push_back(vi.name());
  if (output_names.empty()) throw OnnxImportError("import_onnx: the graph has no outputs");

  const int opset = std::max(m.opset, kMinOpset);  // older models hold only opset-7 definitions
  // Runs graph's nodes in order in scope (a Loop's body or an If's branch in a scope of its own
  // over the enclosing one).
  std::function<void(const onnx::GraphProto&, Scope&)> run_nodes;
  // Subgraph `attr` of node n (Loop's body, If's branches; parse() checked it is there) with
  // its own initializers, converted once per run of the node.
  struct Subgraph {
    const onnx::GraphProto* graph = nullptr;
    std::vector<std::pair<std::string, Tensor>> initializers;
  };
  auto subgraph = [&](const onnx::NodeProto& n, const char* attr) {
    auto sub = std::make_shared<Subgraph>();
    for (const auto& a : n.attribute())
      if (a.name() == attr) sub->graph = &a.g();
    for (const auto& t : sub->graph->initializer())
      sub->initializers.emplace_back(
          t.name(), onnx_in::tensor_from_proto(t, m.base_dir, o.max_tensor_bytes,
                                               str("import_onnx: initializer '", t.name(), "' of ", attr)));
    return sub;
  };
  // Runs sub in a scope of its own over env, its inputs bound to `inputs` in order; returns
  // its outputs.
  auto run_subgraph = [&](const Subgraph& sub, const Scope& env, const std::vector<Tensor>& inputs, const char* what) {
    Scope inner{{}, &env};
    for (const auto& [name, t] : sub.initializers) inner.own[name] = Val{t, true, ""};
    for (int k = 0; k < sub.graph->input_size() && size_t(k) < inputs.size(); ++k)
      inner.own[sub.graph->input(k).name()] = Val{inputs[size_t(k)], false, ""};
    run_nodes(*sub.graph, inner);
    std::vector<Tensor> outs;
    for (const auto& vi : sub.graph->output()) {
      const Val* v = inner.find(vi.name());
      if (!v) throw OnnxImportError(str("import_onnx: ", what, " output '", vi.name(), "' is never defined"));
      outs.push_back(v->t);
    }
    return outs;
  };
  // ONNX Loop(M, cond, carried...) as amber::while_loop over (i, cond, carried...): while
  // (no M or i < M) and cond, run the body on (i, cond, carried) giving (cond, carried).
  auto run_loop = [&](const onnx::NodeProto& n, const std::vector<const Val*>& vals, const Scope& env) {
    const auto body = subgraph(n, "body");
    const Val* max_trips = vals.size() > 0 ? vals[0] : nullptr;
    const Val* first_cond = vals.size() > 1 ? vals[1] : nullptr;
    std::vector<Tensor> state{zeros({}, {DType::i64}),
                              first_cond ? first_cond->t.reshape({}).to(DType::b8) : full({}, true, {DType::b8})};
    for (size_t k = 2; k < vals.size(); ++k) {
      if (!vals[k]) throw onnx_in::Unsupported("an absent loop-carried value");
      state.push_back(vals[k]->t);
    }
    // Running the model at import is bounded like any other work, and the iterations too: a
    // body of no ops would cost nothing per iteration.
    int64_t iterations = 0;
    const std::vector<Tensor> out = while_loop(
        [&](const std::vector<Tensor>& s) {
          if (++iterations > o.max_loop_trips)
            throw OnnxImportError(str("import_onnx: a Loop ran more than ", o.max_loop_trips,
                                      " iterations while the model ran at import (OnnxImportOptions::max_loop_trips)"));
          return max_trips ? logical_and(s[1], lt(s[0], max_trips->t.reshape({}).to(DType::i64))) : s[1];
        },
        [&](const std::vector<Tensor>& s) {
          std::vector<Tensor> next = run_subgraph(*body, env, s, "Loop body");  // (cond, carried...)
          next[0] = next[0].reshape({}).to(DType::b8);
          next.insert(next.begin(), s[0] + 1);
          return next;
        },
        state);
    return std::vector<Tensor>(out.begin() + 2, out.end());
  };
  // ONNX If as amber::cond: no operands (the branches read what they need by name); both
  // branches are traced and must give the same dtypes and shapes.
  auto run_if = [&](const onnx::NodeProto& n, const std::vector<const Val*>& vals, const Scope& env) {
    auto branch = [&](const char* name) -> StateFn {
      return
          [&, sub = subgraph(n, name)](const std::vector<Tensor>&) { return run_subgraph(*sub, env, {}, "If branch"); };
    };
    if (vals.empty() || !vals[0] || vals[0]->t.numel() != 1)
      throw onnx_in::Unsupported("the condition must hold one element");
    return cond(vals[0]->t.reshape({}).to(DType::b8), branch("then_branch"), branch("else_branch"), {});
  };
  run_nodes = [&](const onnx::GraphProto& graph, Scope& env) {
    for (int k = 0; k < graph.node_size(); ++k) {
      const onnx::NodeProto& n = graph.node(k);
      const OnnxOp* op = onnx_in::find_onnx_op(n.op_type());
      std::vector<const Val*> vals;
      bool known = true;
      for (const std::string& name : n.input()) {
        if (name.empty()) {
          vals.push_back(nullptr);
          continue;
        }
        const Val* v = env.find(name);
        if (!v)
          throw OnnxImportError(str("import_onnx: node ", node_label(n, k), " (", n.op_type(), ") reads '", name,
                                    "', which no earlier node, input or initializer defines"));
        vals.push_back(v);
        known = known && v->known;
      }
      bool from_shape = false, data_from_shape = false;
      for (size_t i = 0; i < vals.size(); ++i)
        if (vals[i] && vals[i]->from_shape) (i == 0 ? data_from_shape : from_shape) = true;
      if (op->sizes == OnnxOp::by_operands) from_shape = from_shape || data_from_shape;
      // Sized by the batch and filled from constants: recorded, so the sizes follow the batch.
      if (known && op->sizes != OnnxOp::fixed && from_shape && !data_from_shape) known = false;
      const bool outs_from_shape =
          from_shape || data_from_shape ||
          (op->host && std::any_of(vals.begin(), vals.end(), [](const Val* v) { return v && !v->known; }));
      known = known || op->host;
      std::vector<Tensor> outs;
      try {
        std::optional<DispatchHookGuard> untraced;
        if (known) untraced.emplace(nullptr);
        if (n.op_type() == "Loop") {
          outs = run_loop(n, vals, env);
        } else if (n.op_type() == "If") {
          outs = run_if(n, vals, env);
        } else {
          const NodeCtx ctx(n, opset, std::move(vals), o.max_tensor_bytes);
          outs = op->fn(ctx);
        }
      } catch (const onnx_in::NeedsConstant& e) {
        throw OnnxImportError(str("import_onnx: node ", node_label(n, k), " (", n.op_type(), "): ", e.what()), {},
                              {e.input()});
      } catch (const onnx_in::Unsupported& e) {
        throw OnnxImportError(
            str("import_onnx: node ", node_label(n, k), " (", n.op_type(), "): not supported: ", e.what()),
            {{node_label(n, k), n.op_type(), e.what()}});
      } catch (const std::exception& e) {
        throw OnnxImportError(str("import_onnx: node ", node_label(n, k), " (", n.op_type(), "): ", e.what()));
      }
      // The one graph input whose value the outputs derive from, when there is one: an op
      // that needs them known at import names it (NeedsConstant), as it names a graph input.
      std::string source;
      bool one_source = true;
      for (const std::string& name : n.input()) {
        if (name.empty() || !one_source) continue;
        const Val& v = *env.find(name);
        if (v.known) continue;
        if (v.input.empty() || (!source.empty() && v.input != source)) one_source = false;
        source = v.input;
      }
      if (known || !one_source) source.clear();
      for (int j = 0; j < n.output_size(); ++j) {
        if (n.output(j).empty()) continue;
        if (size_t(j) >= outs.size())
          throw OnnxImportError(
              str("import_onnx: node ", node_label(n, k), " (", n.op_type(), ") output ", j, " is not supported"),
              {{node_label(n, k), n.op_type(), str("output ", j)}});
        env.own[n.output(j)] = Val{outs[size_t(j)], known, source, known && outs_from_shape};
      }
    }
  };
  TraceFn fn = [&](const std::vector<Tensor>& ins) {
    Scope env;
    for (const auto& [name, t] : initializers) env.own[name] = Val{t, true, ""};
    for (const auto& [name, t] : constants) env.own[name] = Val{t, true, ""};
    for (size_t i = 0; i < ins.size(); ++i) env.own[input_names[i]] = Val{ins[i], false, input_names[i]};
    run_nodes(g, env);
    std::vector<Tensor> outs;
    for (const std::string& name : output_names) {
      const Val* v = env.find(name);
      if (!v) throw OnnxImportError(str("import_onnx: graph output '", name, "' is never defined"));
      outs.push_back(v->t);
    }
    return outs;
  };

  TraceOptions to;
  to.input_names = input_names;
  to.output_names = output_names;
  to.strict = true;
  to.print_warnings = false;
  to.optimize = o.optimize;
  to.dynamic_batch = !examples.empty() && all_leading && symbols.size() == 1;
  to.dynamic_dims = dynamic_dims;
  return trace_function(fn, examples, to);
}

}  // namespace

TracedModule import_onnx_bytes(const std::string& bytes, const OnnxImportOptions& options,
                               const std::string& base_dir) {
  return import(parse(bytes, options, base_dir, ""), options);
}

TracedModule import_onnx(const std::string& path, const OnnxImportOptions& options) {
  const std::string bytes = read_file(path, options.max_file_bytes);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return import(parse(bytes, options, dir, path), options);
}

Tensor read_onnx_tensor(const std::string& path) {
  const std::string bytes = read_file(path, uint64_t(1) << 31);
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) throw Error(str("read_onnx_tensor: '", path, "' is not an ONNX TensorProto"));
  return onnx_in::tensor_from_proto(p, "", uint64_t(16) << 30, str("read_onnx_tensor: '", path, "'"));
}

std::vector<std::string> onnx_supported_ops() { return onnx_in::onnx_op_types(); }

}  // namespace amber
