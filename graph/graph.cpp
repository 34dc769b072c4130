// Graph construction, editing (use lists kept exact), instantiation at symbol values, and
// symbolic-int arithmetic (graph.h).

#include "amber/graph/graph.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <map>

#include "amber/core/hot.h"

namespace amber::graph {

SymMask symbol_bit(char symbol) {
  AMBER_CHECK(symbol >= 'A' && symbol <= 'Z', "a dynamic dimension's symbol is one upper-case letter, got '",
              std::string(1, symbol), "'");
  return SymMask(1) << (symbol - 'A');
}

std::string symbol_names(SymMask m) {
  std::string out;
  for_each_symbol(m, [&](char s) { out += (out.empty() ? "" : ", ") + std::string(1, s); });
  return out;
}

void SymValues::set(char symbol, int64_t v) {
  const SymMask bit = symbol_bit(symbol);
  value[size_t(symbol - 'A')] = v;
  bound |= bit;
}

int64_t SymValues::get(char symbol) const {
  AMBER_CHECK(bound & symbol_bit(symbol), "no value for the symbol ", std::string(1, symbol));
  return value[size_t(symbol - 'A')];
}

std::ostream& operator<<(std::ostream& os, const SymValues& v) {
  bool first = true;
  for_each_symbol(v.bound, [&](char s) {
    os << (first ? "" : ", ") << s << "=" << v.value[size_t(s - 'A')];
    first = false;
  });
  return os;
}

SymValues default_sizes(SymMask symbols, const SymValues& traced) {
  SymValues v;
  for_each_symbol(symbols, [&](char s) { v.set(s, traced.has(s) ? std::max<int64_t>(traced.get(s), 1) : 1); });
  return v;
}

SymInt SymInt::symbol(char s, int64_t coef, int64_t value) {
  SymInt out(value);
  out.add(symbol_bit(s), coef);
  return out;
}

SymMask SymInt::symbols() const {
  SymMask m = 0;
  for (int k = 0; k < n_terms; ++k) m |= terms[size_t(k)].symbols;
  return m;
}

int64_t SymInt::coef(SymMask m) const {
  for (int k = 0; k < n_terms; ++k)
    if (terms[size_t(k)].symbols == m) return terms[size_t(k)].coef;
  return 0;
}

void SymInt::add(SymMask m, int64_t c) {
  if (m == 0) {
    value = checked_add(value, c, "symbolic dim");
    return;
  }
  if (c == 0) return;
  int k = 0;
  while (k < n_terms && terms[size_t(k)].symbols < m) ++k;
  if (k < n_terms && terms[size_t(k)].symbols == m) {
    terms[size_t(k)].coef = checked_add(terms[size_t(k)].coef, c, "symbolic dim");
    if (terms[size_t(k)].coef == 0) {  // drop it, keeping the rest canonical
      for (int j = k; j + 1 < n_terms; ++j) terms[size_t(j)] = terms[size_t(j + 1)];
      terms[size_t(--n_terms)] = Term{};
    }
    return;
  }
  AMBER_CHECK(n_terms < kMaxSymTerms, "a symbolic size has more than ", kMaxSymTerms, " terms");
  for (int j = n_terms; j > k; --j) terms[size_t(j)] = terms[size_t(j - 1)];
  terms[size_t(k)] = Term{m, c};
  ++n_terms;
}

SymInt SymInt::symbolic_part() const {
  SymInt out = *this;
  out.value = 0;
  return out;
}

AMBER_HOT int64_t SymInt::at(const SymValues& v) const {
  int64_t out = value;
  for (int k = 0; k < n_terms; ++k) {
    const Term& t = terms[size_t(k)];
    AMBER_CHECK((v.bound & t.symbols) == t.symbols, "the size ", *this, " needs a value for ",
                symbol_names(t.symbols & ~v.bound));
    int64_t p = t.coef;
    for_each_symbol(t.symbols, [&](char s) { p = checked_mul(p, v.value[size_t(s - 'A')], "symbolic dim"); });
    out = checked_add(out, p, "symbolic dim");
  }
  return out;
}

bool SymInt::affine_in(char* s, int64_t* c) const {
  if (n_terms != 1 || std::popcount(terms[0].symbols) != 1) return false;
  *s = char('A' + std::countr_zero(terms[0].symbols));
  *c = terms[0].coef;
  return true;
}

std::ostream& operator<<(std::ostream& os, const SymInt& s) {
  if (s.is_static()) return os << s.value;
  for (int k = 0; k < s.n_terms; ++k) {
    const SymInt::Term& t = s.terms[size_t(k)];
    if (t.coef < 0)
      os << "-";
    else if (k > 0)
      os << "+";
    if (t.coef != 1 && t.coef != -1) os << (t.coef < 0 ? -t.coef : t.coef) << "*";
    bool first = true;
    for_each_symbol(t.symbols, [&](char sym) {
      os << (first ? "" : "*") << sym;
      first = false;
    });
  }
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

AMBER_HOT DimVec concrete_shape(const SymShape& s, const SymValues& v) {
  DimVec d;
  for (const SymInt& x : s) d.push_back(x.at(v));
  return d;
}

DimVec static_shape(const SymShape& s) {
  DimVec d;
  for (const SymInt& x : s) {
    AMBER_ASSERT(x.is_static(), "static_shape of the symbolic shape ", s);
    d.push_back(x.value);
  }
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
  for (const auto& c : attr_syms)
    for (const SymInt& k : c)
      if (!k.is_static()) return true;
  return false;
}

namespace {
int64_t attr_at(const SymInt& part, int64_t value, const SymValues& v) {
  SymInt s = part;
  s.value = value;
  return s.at(v);
}
}  // namespace

std::vector<Attr> Node::attrs_at(const SymValues& v) const {
  std::vector<Attr> out = attrs;
  for (size_t i = 0; i < attr_syms.size() && i < out.size(); ++i) {
    const auto& c = attr_syms[i];
    if (c.empty()) continue;
    Attr& a = out[i];
    if (a.kind() == AttrKind::ints) {
      std::vector<int64_t> x = a.ints();
      for (size_t k = 0; k < x.size() && k < c.size(); ++k) x[k] = attr_at(c[k], x[k], v);
      a = Attr(std::move(x));
    } else if (a.kind() == AttrKind::i) {
      a = Attr(attr_at(c[0], a.i(), v));
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

std::string Graph::unused_name(const std::string& base) const {
  std::string name = base;
  for (int k = 1; find(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

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

void Graph::set_output(size_t i, Value* v) {
  AMBER_ASSERT(i < outputs_.size() && v, "graph: set_output(", i, ") of ", outputs_.size(), " outputs");
  outputs_[i].second = v;
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

SymMask Graph::symbols() const {
  SymMask m = 0;
  for (const auto& v : values_)
    for (const SymInt& d : v->type.shape) m |= d.symbols();
  for (const auto& n : nodes_) {
    for (const auto& c : n->attr_syms)
      for (const SymInt& k : c) m |= k.symbols();
    for (const auto& b : n->bodies) m |= b->symbols();
  }
  return m;
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
Graph copy_graph(const Graph& g, const SymValues* n) {
  Graph out;
  out.traced = n ? *n : g.traced;
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
    if (!n) nn->attr_syms = node->attr_syms;
    nn->source = node->source;
    nn->scope = node->scope;
    for (const auto& b : node->bodies) nn->bodies.push_back(std::make_shared<Graph>(copy_graph(*b, n)));
    for (size_t i = 0; i < outs.size(); ++i) map[node->outputs[i]] = nn->outputs[i];
  }
  for (const auto& [name, v] : g.outputs()) out.add_output(name, map.at(v));
  return out;
}
}  // namespace

Graph Graph::instantiate(const SymValues& v) const {
  for_each_symbol(v.bound, [&](char s) {
    AMBER_CHECK(v.get(s) >= 0, "graph: the size ", s, " must be non-negative, got ", v.get(s));
  });
  return copy_graph(*this, &v);
}

Graph Graph::clone() const { return copy_graph(*this, nullptr); }

AMBER_HOT SymValues symbol_values(const Graph& g, const std::vector<Tensor>& inputs) {
  SymValues out;
  std::array<const Value*, 26> from{};  // the input each symbol's value was read from (named on error)
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    for (size_t d = 0; d < v->type.shape.size(); ++d) {
      const SymInt& s = v->type.shape[d];
      char sym = 0;
      int64_t coef = 0;
      if (!s.affine_in(&sym, &coef) || !inputs[i].defined() || int(d) >= inputs[i].dim()) continue;
      const int64_t size = inputs[i].size(int64_t(d));
      const int64_t diff = size - s.value;
      AMBER_CHECK(diff % coef == 0 && diff / coef >= 0, "input ", v->name, ": dim ", d, " is ", size, ", which is not ",
                  s, " for any ", std::string(1, sym));
      const int64_t x = diff / coef;
      const size_t k = size_t(sym - 'A');
      AMBER_CHECK(!out.has(sym) || out.value[k] == x, "input ", v->name, " implies ", std::string(1, sym), "=", x,
                  " but input ", from[k]->name, " implies ", std::string(1, sym), "=", out.value[k]);
      if (!out.has(sym)) {
        out.set(sym, x);
        from[k] = v;
      }
    }
  }
  return out;
}

AMBER_HOT void check_inputs(const Graph& g, const std::vector<Tensor>& inputs, const SymValues& n) {
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
                is_static(v.type.shape) ? std::string() : str(" (", dtype_name(v.type.dtype), want, " at ", n, ")"),
                ", got ", dtype_name(t.dtype()), t.sizes());
  }
}

}  // namespace amber::graph
