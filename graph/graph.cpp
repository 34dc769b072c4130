// Graph construction, editing (use lists kept exact), instantiation at a batch size, and
// symbolic-int arithmetic (graph.h).

#include "amber/graph/graph.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "amber/core/hot.h"

namespace amber::graph {

int64_t SymInt::at(int64_t n) const { return checked_add(checked_mul(coef, n, "symbolic dim"), value, "symbolic dim"); }

std::ostream& operator<<(std::ostream& os, const SymInt& s) {
  if (s.coef == 0) return os << s.value;
  if (s.coef == 1)
    os << "N";
  else if (s.coef == -1)
    os << "-N";
  else
    os << s.coef << "*N";
  if (s.value > 0) os << "+" << s.value;
  if (s.value < 0) os << s.value;
  return os;
}

std::ostream& operator<<(std::ostream& os, const SymShape& s) {
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << ']';
}

std::ostream& operator<<(std::ostream& os, const ValueType& t) { return os << dtype_name(t.dtype) << t.shape; }

SymShape sym_shape(const DimVec& d) { return SymShape(d.begin(), d.end()); }

AMBER_HOT DimVec concrete_shape(const SymShape& s, int64_t n) {
  DimVec d;
  for (const SymInt& x : s) d.push_back(x.at(n));
  return d;
}

bool is_static(const SymShape& s) {
  return std::all_of(s.begin(), s.end(), [](const SymInt& x) { return x.is_static(); });
}

const Attr& Node::attr(std::string_view name) const {
  const int i = op->attr_index(name);
  AMBER_CHECK(i >= 0 && size_t(i) < attrs.size(), op->name, ": internal error: a pass reads attribute '", name,
              "', which the signature ", op->signature, " does not have");
  return attrs[size_t(i)];
}

bool Node::has_symbolic_attrs() const {
  for (const auto& c : attr_coefs)
    for (int64_t k : c)
      if (k != 0) return true;
  return false;
}

std::vector<Attr> Node::attrs_at(int64_t n) const {
  std::vector<Attr> out = attrs;
  for (size_t i = 0; i < attr_coefs.size() && i < out.size(); ++i) {
    const auto& c = attr_coefs[i];
    if (c.empty()) continue;
    Attr& a = out[i];
    if (a.kind() == AttrKind::ints) {
      std::vector<int64_t> v = a.ints();
      for (size_t k = 0; k < v.size() && k < c.size(); ++k) v[k] = SymInt(c[k], v[k]).at(n);
      a = Attr(std::move(v));
    } else if (a.kind() == AttrKind::i) {
      a = Attr(SymInt(c[0], a.i()).at(n));
    }
  }
  return out;
}

namespace {
// Numeric names ("12") advance the fresh-name counter past them.
void note_name(const std::string& name, int64_t& next) {
  int64_t v;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec == std::errc() && p == name.data() + name.size() && v >= next) next = v + 1;
}
}  // namespace

std::string Graph::fresh_name() { return std::to_string(next_name_++); }

Value* Graph::find(const std::string& name) const {
  for (const auto& v : values_)
    if (v->name == name) return v.get();
  return nullptr;
}

Value* Graph::add_input(std::string name, ValueType type) {
  AMBER_CHECK(!find(name), "graph: value %", name, " is defined twice");
  auto v = std::make_unique<Value>();
  v->name = std::move(name);
  v->type = std::move(type);
  v->kind = Value::Kind::input;
  note_name(v->name, next_name_);
  inputs_.push_back(v.get());
  values_.push_back(std::move(v));
  return inputs_.back();
}

Value* Graph::add_constant_type(std::string name, ValueType type, std::string source) {
  AMBER_CHECK(!find(name), "graph: value %", name, " is defined twice");
  auto v = std::make_unique<Value>();
  v->name = std::move(name);
  v->type = std::move(type);
  v->kind = Value::Kind::constant;
  v->source = std::move(source);
  note_name(v->name, next_name_);
  constants_.push_back(v.get());
  values_.push_back(std::move(v));
  return constants_.back();
}

Value* Graph::add_constant(std::string name, Tensor data, std::string source) {
  Value* v = add_constant_type(std::move(name), ValueType{data.dtype(), sym_shape(data.sizes())}, std::move(source));
  v->data = std::move(data);
  return v;
}

Node* Graph::insert_node(Node* before, const OpSchema* op, std::vector<Value*> inputs, std::vector<Attr> attrs,
                         const std::vector<std::pair<std::string, ValueType>>& outputs) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
  for (Value* in : n->inputs)
    if (in) in->uses.push_back(n.get());
  for (size_t i = 0; i < outputs.size(); ++i) {
    AMBER_CHECK(!find(outputs[i].first), "graph: value %", outputs[i].first, " is defined twice");
    auto v = std::make_unique<Value>();
    v->name = outputs[i].first;
    v->type = outputs[i].second;
    v->producer = n.get();
    v->output_index = int(i);
    note_name(v->name, next_name_);
    n->outputs.push_back(v.get());
    values_.push_back(std::move(v));
  }
  Node* raw = n.get();
  auto it = nodes_.end();
  if (before) it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == before; });
  nodes_.insert(it, std::move(n));
  return raw;
}

Node* Graph::add_node(const OpSchema* op, std::vector<Value*> inputs, std::vector<Attr> attrs,
                      const std::vector<std::pair<std::string, ValueType>>& outputs) {
  return insert_node(nullptr, op, std::move(inputs), std::move(attrs), outputs);
}

void Graph::add_output(std::string name, Value* v) { outputs_.emplace_back(std::move(name), v); }

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

void Graph::replace_uses(Value* from, Value* to) {
  std::vector<Node*> users = from->uses;  // one entry per use: visit each node once
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  for (Node* u : users)
    for (Value*& in : u->inputs)
      if (in == from) {
        in = to;
        to->uses.push_back(u);
      }
  from->uses.clear();
  for (auto& [name, v] : outputs_)
    if (v == from) v = to;
}

void Graph::set_input(Node* n, size_t i, Value* v) {
  Value* old = n->inputs[i];
  if (old) {
    auto it = std::find(old->uses.begin(), old->uses.end(), n);
    if (it != old->uses.end()) old->uses.erase(it);
  }
  n->inputs[i] = v;
  if (v) v->uses.push_back(n);
}

void Graph::remove_node(Node* n) {
  for (Value* out : n->outputs) {
    AMBER_ASSERT(out->uses.empty(), "removing node whose output %", out->name, " is still used");
    for (const auto& [name, v] : outputs_) AMBER_ASSERT(v != out, "removing node producing graph output ", name);
  }
  for (Value* in : n->inputs)
    if (in) {
      auto it = std::find(in->uses.begin(), in->uses.end(), n);
      if (it != in->uses.end()) in->uses.erase(it);
    }
  for (Value* out : n->outputs)
    values_.erase(std::find_if(values_.begin(), values_.end(), [&](const auto& p) { return p.get() == out; }));
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == n; }));
}

void Graph::remove_unused_constants() {
  std::vector<Value*> keep;
  for (Value* c : constants_) {
    bool is_output = false;
    for (const auto& [name, v] : outputs_) is_output |= v == c;
    if (!c->uses.empty() || is_output) {
      keep.push_back(c);
    } else {
      values_.erase(std::find_if(values_.begin(), values_.end(), [&](const auto& p) { return p.get() == c; }));
    }
  }
  constants_ = std::move(keep);
}

AMBER_HOT bool Graph::is_dynamic() const {
  for (const auto& v : values_)
    if (!is_static(v->type.shape)) return true;
  for (const auto& n : nodes_) {
    if (n->has_symbolic_attrs()) return true;
    for (const auto& b : n->bodies)
      if (b->is_dynamic()) return true;
  }
  return false;
}

namespace {
Graph copy_graph(const Graph& g, const int64_t* n) {
  Graph out;
  out.traced_batch = n ? *n : g.traced_batch;
  std::map<const Value*, Value*> map;
  auto type_of = [&](const ValueType& t) {
    if (!n) return t;
    return ValueType{t.dtype, sym_shape(concrete_shape(t.shape, *n))};
  };
  for (Value* v : g.inputs()) map[v] = out.add_input(v->name, type_of(v->type));
  for (Value* c : g.constants()) {
    Value* nc = out.add_constant_type(c->name, c->type, c->source);
    nc->data = c->data;
    map[c] = nc;
  }
  for (Node* node : g.nodes()) {
    std::vector<Value*> ins;
    for (Value* v : node->inputs) ins.push_back(v ? map.at(v) : nullptr);
    std::vector<std::pair<std::string, ValueType>> outs;
    for (Value* v : node->outputs) outs.emplace_back(v->name, type_of(v->type));
    Node* nn = out.add_node(node->op, std::move(ins), n ? node->attrs_at(*n) : node->attrs, outs);
    if (!n) nn->attr_coefs = node->attr_coefs;
    nn->source = node->source;
    nn->scope = node->scope;
    for (const auto& b : node->bodies) nn->bodies.push_back(std::make_shared<Graph>(copy_graph(*b, n)));
    for (size_t i = 0; i < outs.size(); ++i) map[node->outputs[i]] = nn->outputs[i];
  }
  for (const auto& [name, v] : g.outputs()) out.add_output(name, map.at(v));
  return out;
}
}  // namespace

Graph Graph::instantiate(int64_t n) const {
  AMBER_CHECK(n >= 0, "graph: batch size must be non-negative, got ", n);
  return copy_graph(*this, &n);
}

Graph Graph::clone() const { return copy_graph(*this, nullptr); }

AMBER_HOT int64_t batch_size_of(const Graph& g, const std::vector<Tensor>& inputs) {
  int64_t n = -1;
  std::string from;
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    for (size_t d = 0; d < v->type.shape.size(); ++d) {
      const SymInt& s = v->type.shape[d];
      if (s.is_static() || !inputs[i].defined() || int(d) >= inputs[i].dim()) continue;
      const int64_t size = inputs[i].size(int64_t(d));
      const int64_t diff = size - s.value;
      AMBER_CHECK(diff % s.coef == 0 && diff / s.coef >= 0, "input ", v->name, ": dim ", d, " is ", size,
                  ", which is not ", s, " for any batch size N");
      const int64_t this_n = diff / s.coef;
      AMBER_CHECK(n < 0 || this_n == n, "input ", v->name, " implies batch size ", this_n, " but ", from, " implies ",
                  n);
      n = this_n;
      from = "input " + v->name;
    }
  }
  return n < 0 ? 0 : n;
}

AMBER_HOT void check_inputs(const Graph& g, const std::vector<Tensor>& inputs, int64_t n) {
  AMBER_CHECK(
      inputs.size() == g.inputs().size(), "expected ", g.inputs().size(), " inputs (",
      [&] {
        std::string s;
        for (const Value* v : g.inputs()) s += (s.empty() ? "" : ", ") + v->name;
        return s;
      }(),
      "), got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = *g.inputs()[i];
    const Tensor& t = inputs[i];
    AMBER_CHECK(t.defined(), "input ", v.name, ": the tensor is undefined");
    const DimVec want = concrete_shape(v.type.shape, n);
    AMBER_CHECK(t.dtype() == v.type.dtype && t.sizes() == want, "input ", v.name, ": expected ", v.type,
                is_static(v.type.shape) ? std::string() : str(" (", dtype_name(v.type.dtype), want, " at N=", n, ")"),
                ", got ", dtype_name(t.dtype()), t.sizes());
  }
}

}  // namespace amber::graph
