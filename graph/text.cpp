// Graph text printer and recursive-descent parser (text.h).

#include "amber/graph/text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "amber/schema/control_flow.h"

namespace amber::graph {
namespace {

// ---------------------------------------------------------------- printing

// A symbolic part (value 0) with value v added.
SymInt with_value(SymInt part, int64_t v) {
  part.value = v;
  return part;
}

void print_attr(std::ostream& os, const Attr& a, const std::vector<SymInt>& syms) {
  if (syms.empty()) {
    os << a;
    return;
  }
  if (a.kind() == AttrKind::i) {
    os << with_value(syms[0], a.i());
    return;
  }
  os << '[';
  for (size_t k = 0; k < a.ints().size(); ++k)
    os << (k ? ", " : "") << with_value(k < syms.size() ? syms[k] : SymInt(), a.ints()[k]);
  os << ']';
}

void print_inline_data(std::ostream& os, const Tensor& t) {
  os << " = [";
  if (t.dtype() == DType::f32) {  // shortest text that reads back as the same float
    const auto v = t.to_vector<float>(SrcLoc::none());
    for (size_t i = 0; i < v.size(); ++i) {
      char buf[32];
      auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v[i]);
      std::string s(buf, p);
      if (std::isfinite(v[i]) && s.find_first_of(".e") == std::string::npos) s += ".0";
      os << (i ? ", " : "") << (std::isnan(v[i]) ? "nan" : s);
    }
  } else if (is_floating(t.dtype())) {
    const auto v = t.to_vector<double>(SrcLoc::none());
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << format_double(v[i]);
  } else if (t.dtype() == DType::b8) {
    const auto v = t.to_vector<int64_t>(SrcLoc::none());
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << (v[i] ? "true" : "false");
  } else {
    const auto v = t.to_vector<int64_t>(SrcLoc::none());
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  }
  os << ']';
}

void print_trailer(std::ostream& os, const std::string& source, const std::string& scope) {
  if (source.empty() && scope.empty()) return;
  os << "  #";
  if (!source.empty()) os << ' ' << source;
  if (!scope.empty()) os << " @" << scope;
}

}  // namespace

std::string to_text(const Graph& g) {
  std::ostringstream os;
  os << "graph(";
  for (size_t i = 0; i < g.inputs().size(); ++i)
    os << (i ? ", " : "") << '%' << g.inputs()[i]->name << " : " << g.inputs()[i]->type;
  os << ") {\n";
  for (const Value* c : g.constants()) {
    os << "  const %" << c->name << " : " << c->type;
    if (c->data.defined() && c->data.numel() <= kInlineConstant) print_inline_data(os, c->data);
    print_trailer(os, c->source, "");
    os << '\n';
  }
  for (const Node* n : g.nodes()) {
    os << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i)
      os << (i ? ", " : "") << '%' << n->outputs[i]->name << " : " << n->outputs[i]->type;
    os << " = " << n->op->name;
    if (n->op->version != 1) os << "[v" << n->op->version << ']';
    os << '(';
    bool first = true;
    auto sep = [&] {
      if (!first) os << ", ";
      first = false;
    };
    if (n->op->has_tensor_list) {
      sep();
      os << '[';
      for (size_t i = 0; i < n->inputs.size(); ++i) os << (i ? ", " : "") << '%' << n->inputs[i]->name;
      os << ']';
    } else {
      for (const Value* in : n->inputs) {
        sep();
        if (in)
          os << '%' << in->name;
        else
          os << "None";
      }
    }
    for (int i = 0; i < n->op->num_attrs(); ++i) {
      sep();
      os << n->op->attr_spec(i).name << '=';
      static const std::vector<SymInt> none;
      print_attr(os, n->attrs[size_t(i)], size_t(i) < n->attr_syms.size() ? n->attr_syms[size_t(i)] : none);
    }
    os << ')';
    print_trailer(os, n->source, n->scope);
    os << '\n';
    for (const auto& body : n->bodies) {  // each body's text, indented under its node
      std::istringstream lines(to_text(*body));
      for (std::string line; std::getline(lines, line);) os << "    " << line << '\n';
    }
  }
  os << "  return (";
  for (size_t i = 0; i < g.outputs().size(); ++i)
    os << (i ? ", " : "") << g.outputs()[i].first << " = %" << g.outputs()[i].second->name;
  os << ")\n}\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << to_text(g); }

// ---------------------------------------------------------------- parsing

namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Graph parse() {
    Graph g = block(0);
    while (pos_ < s_.size() && std::isspace(uint8_t(s_[pos_]))) ++pos_;
    if (pos_ < s_.size()) fail("text after the closing '}'");
    return g;
  }

 private:
  // One graph from "graph(" to its closing '}'; depth counts the bodies it is inside.
  Graph block(int depth) {
    if (depth > kMaxBodyDepth) fail(str("bodies nested more than ", kMaxBodyDepth, " deep"));
    Graph g;
    Node* last = nullptr;
    skip_space();
    word("graph");
    expect('(');
    if (!accept(')')) {
      do {
        std::string name = value_name();
        expect(':');
        g.add_input(name, type());
      } while (accept(','));
      expect(')');
    }
    expect('{');
    end_of_line();
    while (true) {
      skip_space();
      if (accept('}')) break;
      if (at_word("const")) {
        constant(g);
      } else if (at_word("return")) {
        word("return");
        expect('(');
        if (!accept(')')) {
          do {
            std::string name = ident(false);
            expect('=');
            std::string v = value_name();
            Value* val = g.find(v);
            if (!val) fail("return names unknown value %" + v);
            g.add_output(name, val);
          } while (accept(','));
          expect(')');
        }
      } else if (at_word("graph")) {  // a body of the node above
        if (!last) fail("a body must follow the node it belongs to");
        last->bodies.push_back(std::make_shared<Graph>(block(depth + 1)));
      } else {
        last = node(g);
      }
      end_of_line();
    }
    return g;
  }

  void constant(Graph& g) {
    word("const");
    std::string name = value_name();
    expect(':');
    ValueType t = type();
    Tensor data;
    if (accept('=')) data = inline_data(t);
    std::string source, scope;
    trailer(source, scope);
    Value* c = g.add_constant_type(name, t, source);
    c->data = data;
  }

  Tensor inline_data(const ValueType& t) {
    if (!is_static(t.shape)) fail("an inline constant needs a static shape");
    const DimVec shape = static_shape(t.shape);
    std::vector<double> fvals;
    std::vector<int64_t> ivals;  // integers and bools keep every bit
    expect('[');
    if (!accept(']')) {
      do {
        skip_space();
        if (at_word("true") || at_word("false")) {
          ivals.push_back(ident(false) == "true" ? 1 : 0);
        } else if (t.dtype == DType::f32) {  // read as float: exactly the printed value
          const size_t start = pos_;
          const Attr a = number();
          float f;
          auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, f);
          fvals.push_back(ec == std::errc() && p == s_.data() + pos_ ? double(f) : a.f());
        } else {
          const Attr a = number();
          if (is_floating(t.dtype))
            fvals.push_back(a.f());
          else if (a.kind() == AttrKind::i)
            ivals.push_back(a.i());
          else
            fail("a non-integer value in an integer constant");
        }
      } while (accept(','));
      expect(']');
    }
    const bool floating = is_floating(t.dtype);
    const int64_t count = int64_t(floating ? fvals.size() : ivals.size());
    if (count != checked_numel(shape)) fail("inline constant holds the wrong number of values");
    Tensor raw =
        floating ? tensor_from_raw(fvals.data(), DType::f64, shape) : tensor_from_raw(ivals.data(), DType::i64, shape);
    return raw.to(t.dtype, SrcLoc::none());
  }

  Node* node(Graph& g) {
    std::vector<std::pair<std::string, ValueType>> outs;
    do {
      std::string name = value_name();
      expect(':');
      outs.emplace_back(name, type());
    } while (accept(','));
    expect('=');
    std::string opname = ident(true);
    if (s_.substr(pos_, 2) == "::") {  // an op library's op
      pos_ += 2;
      opname += "::" + ident(true);
    }
    int version = 1;
    if (accept('[')) {
      skip_space();
      if (peek() != 'v') fail("expected [vN] after the op name");
      ++pos_;
      version = int(integer());
      expect(']');
    }
    const OpSchema* op = find_op(opname);
    if (!op && opname.find("::") != std::string::npos)
      fail(str("unknown op '", opname, "': namespace ", opname.substr(0, opname.find("::")),
               " is an op library's, and no loaded op library provides the op (amber::load_op_library)"));
    if (!op) fail("unknown op '" + opname + "'");
    if (op->version != version)
      fail(str("op ", opname, " version ", version, " is not known (this build has version ", op->version, ")"));
    expect('(');
    std::vector<Value*> inputs;
    std::vector<std::optional<Attr>> attrs(size_t(op->num_attrs()));
    std::vector<std::vector<SymInt>> syms(size_t(op->num_attrs()));
    if (!accept(')')) {
      do {
        skip_space();
        if (peek() == '%') {
          inputs.push_back(lookup(g, value_name()));
        } else if (peek() == '[') {
          ++pos_;
          if (!accept(']')) {
            do inputs.push_back(lookup(g, value_name()));
            while (accept(','));
            expect(']');
          }
        } else if (at_word("None") && !next_is_assignment()) {
          word("None");
          inputs.push_back(nullptr);
        } else {
          std::string name = ident(false);
          expect('=');
          const int idx = op->attr_index(name);
          if (idx < 0) fail("op " + opname + " has no attribute '" + name + "'");
          if (attrs[size_t(idx)]) fail("attribute '" + name + "' given twice");
          attrs[size_t(idx)] = attr_value(op->attr_spec(idx), syms[size_t(idx)]);
        }
      } while (accept(','));
      expect(')');
    }
    std::vector<Attr> full;
    for (int i = 0; i < op->num_attrs(); ++i) {
      if (attrs[size_t(i)])
        full.push_back(*attrs[size_t(i)]);
      else if (op->attr_spec(i).default_value)
        full.push_back(*op->attr_spec(i).default_value);
      else
        fail("op " + opname + " is missing attribute '" + op->attr_spec(i).name + "'");
    }
    std::string source, scope;
    trailer(source, scope);
    Node* n = g.add_node(op, std::move(inputs), std::move(full), outs);
    bool any = false;
    for (const auto& c : syms) any |= !c.empty();
    if (any) n->attr_syms = std::move(syms);
    n->source = source;
    n->scope = scope;
    return n;
  }

  Value* lookup(Graph& g, const std::string& name) {
    Value* v = g.find(name);
    if (!v) fail("value %" + name + " is used before it is defined");
    return v;
  }

  // Parses one attribute; symbolic ints record their symbolic parts in `syms`.
  Attr attr_value(const ArgSpec& spec, std::vector<SymInt>& syms) {
    skip_space();
    if (at_word("None") && spec.optional) {
      word("None");
      return Attr::none();
    }
    switch (spec.kind) {
      case ArgKind::bool_: {
        std::string w = ident(false);
        if (w != "true" && w != "false") fail("expected true or false for '" + spec.name + "'");
        return Attr(w == "true");
      }
      case ArgKind::string:
        return Attr(quoted());
      case ArgKind::dtype: {
        auto t = dtype_from_name(ident(false));
        if (!t) fail("unknown dtype for '" + spec.name + "'");
        return Attr(*t);
      }
      case ArgKind::floats: {
        std::vector<double> v;
        expect('[');
        if (!accept(']')) {
          do v.push_back(number().f());
          while (accept(','));
          expect(']');
        }
        return Attr(v);
      }
      case ArgKind::ints: {
        std::vector<int64_t> v;
        bool sym = false;
        expect('[');
        if (!accept(']')) {
          do {
            SymInt s = sym_int();
            v.push_back(s.value);
            syms.push_back(s.symbolic_part());
            sym |= !s.is_static();
          } while (accept(','));
          expect(']');
        }
        if (!sym) syms.clear();
        return Attr(v);
      }
      case ArgKind::int_: {
        SymInt s = sym_int();
        if (!s.is_static()) syms = {s.symbolic_part()};
        return Attr(s.value);
      }
      case ArgKind::float_:
        return Attr(number().f());
      case ArgKind::scalar: {
        skip_space();
        if (at_word("true") || at_word("false")) return Attr(ident(false) == "true");
        if (is_symbol(pos_) || (peek() == '-' && is_symbol(pos_ + 1))) {
          SymInt s = sym_int();
          syms = {s.symbolic_part()};
          return Attr(s.value);
        }
        const size_t save = pos_;
        Attr a = number();
        if (a.kind() == AttrKind::i && peek() == '*') {  // "2*N"
          pos_ = save;
          SymInt s = sym_int();
          syms = {s.symbolic_part()};
          return Attr(s.value);
        }
        return a;
      }
      default:
        fail("attribute '" + spec.name + "' has a tensor kind");
    }
    return Attr();
  }

  // A symbol at i: one upper-case letter not followed by a letter, digit or '_'.
  bool is_symbol(size_t i) const {
    return i < s_.size() && std::isupper(uint8_t(s_[i])) &&
           (i + 1 == s_.size() || !(std::isalnum(uint8_t(s_[i + 1])) || s_[i + 1] == '_'));
  }

  // A sum of terms, each [-][int*]S[*S...] or [-]int: "7", "N", "-N", "128*N*T+1", "N+T-1".
  SymInt sym_int() {
    SymInt out;
    bool first = true;
    for (;;) {
      skip_space();
      bool neg = false;
      if (first) {
        neg = accept('-');
      } else if (peek() == '+' || peek() == '-') {
        neg = s_[pos_++] == '-';
      } else {
        break;
      }
      first = false;
      skip_space();
      int64_t coef = 1;
      bool has_int = false;
      if (!is_symbol(pos_)) {
        coef = integer();
        has_int = true;
        skip_space();
        if (!accept('*')) {
          out.add(0, neg ? -coef : coef);
          continue;
        }
        skip_space();
      }
      SymMask m = 0;
      do {
        skip_space();
        if (!is_symbol(pos_)) fail(has_int ? "expected a symbol (N, T, ...) after '*'" : "expected a symbol");
        const SymMask bit = symbol_bit(s_[pos_++]);
        if (m & bit) fail("a symbolic size multiplies a symbol by itself");
        m |= bit;
        skip_space();
      } while (accept('*'));
      try {
        out.add(m, neg ? -coef : coef);
      } catch (const Error& e) {
        fail(e.what());
      }
    }
    return out;
  }

  ValueType type() {
    skip_space();
    std::string d = ident(false);
    auto t = dtype_from_name(d);
    if (!t) fail("unknown dtype '" + d + "'");
    ValueType vt{*t, {}};
    expect('[');
    if (!accept(']')) {
      do vt.shape.push_back(sym_int());
      while (accept(','));
      expect(']');
    }
    if (vt.shape.size() > size_t(kMaxDims)) fail(str("rank ", vt.shape.size(), " exceeds the maximum of ", kMaxDims));
    return vt;
  }

  // Number: int64 when integral text, else double (inf, -inf, nan too).
  Attr number() {
    skip_space();
    const size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '.' ||
                                ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E'))))
      ++pos_;
    std::string tok(s_.substr(start, pos_ - start));
    if (tok == "inf" || tok == "+inf") return Attr(double(INFINITY));
    if (tok == "-inf") return Attr(-double(INFINITY));
    if (tok == "nan") return Attr(double(NAN));
    int64_t iv;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), iv);
    if (ec == std::errc() && p == tok.data() + tok.size()) return Attr(iv);
    double dv;
    auto [p2, ec2] = std::from_chars(tok.data(), tok.data() + tok.size(), dv);
    if (ec2 != std::errc() || p2 != tok.data() + tok.size() || tok.empty())
      fail("expected a number, got '" + tok + "'");
    return Attr(dv);
  }

  int64_t integer() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(uint8_t(s_[pos_]))) ++pos_;
    int64_t v;
    auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, v);
    if (ec != std::errc() || pos_ == start) fail("expected an integer");
    return v;
  }

  std::string quoted() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\n') fail("unterminated string");
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        if (e == 'n')
          out += '\n';
        else if (e == 'x' && pos_ + 2 <= s_.size()) {
          out += char(std::stoi(std::string(s_.substr(pos_, 2)), nullptr, 16));
          pos_ += 2;
        } else
          out += e;
      } else {
        out += c;
      }
    }
    expect('"');
    return out;
  }

  std::string value_name() {
    expect('%');
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.')) ++pos_;
    if (pos_ == start) fail("expected a value name after '%'");
    return std::string(s_.substr(start, pos_ - start));
  }

  std::string ident(bool allow_dot) {
    skip_space();
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '_' || (allow_dot && s_[pos_] == '.')))
      ++pos_;
    if (pos_ == start) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }

  // "# source @scope" up to the end of the line.
  void trailer(std::string& source, std::string& scope) {
    skip_space();
    if (!accept('#')) return;
    const size_t end = s_.find('\n', pos_);
    std::istringstream words(
        std::string(s_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_)));
    pos_ = end == std::string_view::npos ? s_.size() : end;
    std::string w;
    while (words >> w) {
      if (w[0] == '@')
        scope = w.substr(1);
      else
        source = w;
    }
  }

  bool next_is_assignment() {  // "None=..." would be an attribute named None (none exist)
    size_t p = pos_ + 4;
    while (p < s_.size() && s_[p] == ' ') ++p;
    return p < s_.size() && s_[p] == '=';
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  void end_of_line() {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '#') {  // a comment line end
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '\r') ++pos_;
    if (pos_ < s_.size() && s_[pos_] != '\n') fail("expected the end of the line");
    while (pos_ < s_.size() && (s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == ' ' || s_[pos_] == '\t')) {
      if (s_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool at_word(const char* w) {
    skip_space();
    const size_t n = std::strlen(w);
    return s_.substr(pos_, n) == w &&
           (pos_ + n == s_.size() || !(std::isalnum(uint8_t(s_[pos_ + n])) || s_[pos_ + n] == '_'));
  }
  void word(const char* w) {
    if (!at_word(w)) fail(std::string("expected '") + w + "'");
    pos_ += std::strlen(w);
  }
  [[noreturn]] void fail(const std::string& why) {
    const size_t eol = s_.find('\n', pos_);
    throw Error(str("graph text line ", line_, ": ", why, " (at '",
                    s_.substr(pos_, std::min<size_t>(40, (eol == std::string_view::npos ? s_.size() : eol) - pos_)),
                    "')"));
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

Graph parse_graph(std::string_view text) { return Parser(text).parse(); }

}  // namespace amber::graph
