// The op registry, the signature parser and attribute normalisation (see op_schema.h).

#include "amber/schema/op_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>

namespace amber {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<OpSchema>> ops;
  std::map<std::string, const OpSchema*, std::less<>> by_name;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: ops outlive static destructors
  return *r;
}

// A tiny recursive-descent parser for signatures such as
//   "sum(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"
// and, for a str whose values are a fixed set, "pad(..., str{constant,reflect} mode=\"constant\")".
class SigParser {
 public:
  explicit SigParser(std::string_view s) : s_(s) {}

  void parse(OpSchema& op) {
    op.name = ident(/*allow_dot=*/false);
    if (s_.substr(pos_, 2) == "::") {  // an op library's op: namespace::name
      pos_ += 2;
      op.name += "::" + ident(/*allow_dot=*/true);
    } else if (accept('.')) {
      op.name += "." + ident(/*allow_dot=*/true);
    }
    expect('(');
    skip_ws();
    if (peek() != ')') {
      do {
        op.args.push_back(arg());
      } while (accept(','));
    }
    expect(')');
    expect('-');
    expect('>');
    skip_ws();
    if (accept('(')) {
      do {
        std::string t = type_name();
        if (t != "Tensor") fail("outputs must be Tensor");
        skip_ws();
        op.outputs.push_back(peek() == ',' || peek() == ')' ? "out" + std::to_string(op.outputs.size()) : ident(false));
      } while (accept(','));
      expect(')');
    } else {
      std::string t = type_name();
      if (t == "Tensor[]")
        op.list_output = true;
      else if (t != "Tensor")
        fail("outputs must be Tensor or Tensor[]");
      op.outputs.push_back("out");
    }
    skip_ws();
    if (pos_ != s_.size()) fail("trailing text");
  }

 private:
  ArgSpec arg() {
    ArgSpec a;
    std::string t = type_name(&a.choices);
    if (!t.empty() && t.back() == '?') {
      a.optional = true;
      t.pop_back();
    }
    static const std::pair<const char*, ArgKind> kinds[] = {
        {"Tensor", ArgKind::tensor},   {"Tensor[]", ArgKind::tensor_list}, {"int", ArgKind::int_},
        {"float", ArgKind::float_},    {"Scalar", ArgKind::scalar},        {"bool", ArgKind::bool_},
        {"int[]", ArgKind::ints},      {"float[]", ArgKind::floats},       {"str", ArgKind::string},
        {"ScalarType", ArgKind::dtype}};
    bool found = false;
    for (auto& [n, k] : kinds)
      if (t == n) {
        a.kind = k;
        found = true;
      }
    if (!found) fail("unknown type '" + t + "'");
    if (a.kind == ArgKind::tensor && a.optional) a.kind = ArgKind::optional_tensor;
    a.name = ident(false);
    skip_ws();
    if (accept('='))
      a.default_value = value(a);
    else if (a.optional && !is_tensor_kind(a.kind))
      a.default_value = Attr::none();
    return a;
  }

  Attr value(const ArgSpec& a) {
    skip_ws();
    if (accept('[')) {
      std::vector<int64_t> ints;
      std::vector<double> floats;
      skip_ws();
      if (peek() != ']') {
        do {
          double d = number_value(ints);
          floats.push_back(d);
        } while (accept(','));
      }
      expect(']');
      if (a.kind == ArgKind::floats) return Attr(floats);
      return Attr(ints);
    }
    if (accept('"')) {
      std::string v;
      while (pos_ < s_.size() && s_[pos_] != '"') v += s_[pos_++];
      expect('"');
      return Attr(v);
    }
    if (std::isalpha(uint8_t(peek()))) {
      std::string word = ident(false);
      if (word == "None") return Attr::none();
      if (word == "True") return Attr(true);
      if (word == "False") return Attr(false);
      auto t = dtype_from_name(word);
      if (a.kind != ArgKind::dtype || !t) fail("bad default '" + word + "'");
      return Attr(*t);
    }
    std::vector<int64_t> ints;
    const double d = number_value(ints);
    if (a.kind == ArgKind::float_) return Attr(d);
    if (!ints.empty()) return Attr(ints.back());
    if (a.kind == ArgKind::int_) fail("int default must be an integer");
    return Attr(d);
  }

  // Parses a number; appends it to ints when it is an integer. Returns it as a double.
  double number_value(std::vector<int64_t>& ints) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '.' || s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    std::string_view tok = s_.substr(start, pos_ - start);
    int64_t iv;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), iv);
    if (ec == std::errc() && p == tok.data() + tok.size()) {
      ints.push_back(iv);
      return double(iv);
    }
    double dv;
    auto [p2, ec2] = std::from_chars(tok.data(), tok.data() + tok.size(), dv);
    if (ec2 != std::errc() || p2 != tok.data() + tok.size()) fail("bad number '" + std::string(tok) + "'");
    return dv;
  }

  // A type; with choices, a str's set of values {a,b,c} after it (names, '-' allowed).
  std::string type_name(std::vector<std::string>* choices = nullptr) {
    std::string t = ident(false);
    if (choices && t == "str" && accept('{')) {
      do {
        skip_ws();
        const size_t start = pos_;
        while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '-')) ++pos_;
        if (pos_ == start) fail("expected a choice");
        choices->emplace_back(s_.substr(start, pos_ - start));
      } while (accept(','));
      expect('}');
    }
    if (accept('[')) {
      expect(']');
      t += "[]";
    }
    if (peek() == '?') {
      ++pos_;
      t += "?";
    }
    return t;
  }

  std::string ident(bool allow_dot) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(uint8_t(s_[pos_])) || s_[pos_] == '_' || (allow_dot && s_[pos_] == '.')))
      ++pos_;
    if (pos_ == start) fail("expected a name");
    if (std::isdigit(uint8_t(s_[start]))) fail("names cannot start with a digit");
    return std::string(s_.substr(start, pos_ - start));
  }

  void skip_ws() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  char peek() {
    skip_ws();
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
  [[noreturn]] void fail(const std::string& why) {
    throw Error(str("bad op signature '", s_, "' at character ", pos_, ": ", why));
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool kind_accepts(ArgKind k, AttrKind a) {
  switch (k) {
    case ArgKind::int_:
      return a == AttrKind::i;
    case ArgKind::float_:
      return a == AttrKind::f;
    case ArgKind::scalar:
      return a == AttrKind::i || a == AttrKind::f || a == AttrKind::b;
    case ArgKind::bool_:
      return a == AttrKind::b;
    case ArgKind::ints:
      return a == AttrKind::ints;
    case ArgKind::floats:
      return a == AttrKind::floats;
    case ArgKind::string:
      return a == AttrKind::s;
    case ArgKind::dtype:
      return a == AttrKind::dtype;
    default:
      return false;
  }
}

}  // namespace

int ArgSpec::choice_index(std::string_view value) const {
  for (size_t i = 0; i < choices.size(); ++i)
    if (choices[i] == value) return int(i);
  return -1;
}

std::string_view arg_kind_name(ArgKind k) {
  switch (k) {
    case ArgKind::tensor:
      return "Tensor";
    case ArgKind::optional_tensor:
      return "Tensor?";
    case ArgKind::tensor_list:
      return "Tensor[]";
    case ArgKind::int_:
      return "int";
    case ArgKind::float_:
      return "float";
    case ArgKind::scalar:
      return "Scalar";
    case ArgKind::bool_:
      return "bool";
    case ArgKind::ints:
      return "int[]";
    case ArgKind::floats:
      return "float[]";
    case ArgKind::string:
      return "str";
    case ArgKind::dtype:
      return "ScalarType";
  }
  return "?";
}

InferCtx::InferCtx(const OpSchema& op, const TensorMeta* const* inputs, int n_inputs, const Attr* attrs, int n_attrs)
    : op_(op), inputs_(inputs), n_inputs_(n_inputs), attrs_(attrs), n_attrs_(n_attrs) {
  for (int i = 0; i < n_inputs; ++i)
    if (inputs[i]) {
      compute_dtype = inputs[i]->dtype;
      break;
    }
  // A str with declared choices holds one of them: "mode must be a, b or c, got 'd'".
  for (int i = 0; i < std::min(n_attrs, op.num_attrs()); ++i) {
    const ArgSpec& spec = op.attr_spec(i);
    if (spec.choices.empty() || attrs[i].kind() != AttrKind::s || spec.choice_index(attrs[i].s()) >= 0) continue;
    std::string names;
    for (size_t k = 0; k < spec.choices.size(); ++k)
      names += (k == 0 ? "" : k + 1 == spec.choices.size() ? " or " : ", ") + spec.choices[k];
    fail(spec.name, " must be ", names, ", got '", attrs[i].s(), "'");
  }
}

TensorMeta& InferCtx::add_output(DType dtype, DimVec sizes) {
  return outputs_.emplace_back(TensorMeta{dtype, std::move(sizes)});
}

void InferCtx::cast_all_inputs_to(DType t) {
  compute_dtype = t;
  cast_mask = 0;
  for (int i = 0; i < n_inputs_; ++i)
    if (inputs_[i] && inputs_[i]->dtype != t) cast_mask |= 1u << i;
}

const Attr& InferCtx::attr(std::string_view name) const {
  const int i = op_.attr_index(name);
  AMBER_CHECK(i >= 0 && i < n_attrs_, op_.name, ": internal error: inference reads attribute '", name,
              "', which the signature ", op_.signature, " does not have");
  return attrs_[i];
}

int InferCtx::wrap(int64_t dim, int ndim) const { return wrap_dim(op_.name.c_str(), dim, ndim); }

int OpSchema::attr_index(std::string_view n) const {
  for (int i = 0; i < num_attrs(); ++i)
    if (attr_spec(i).name == n) return i;
  return -1;
}

std::unique_ptr<OpSchema> parse_op(const OpDef& def) {
  AMBER_CHECK(def.signature, "an op definition without a signature");
  auto op = std::make_unique<OpSchema>();
  op->signature = def.signature;
  SigParser(def.signature).parse(*op);
  op->version = def.version;
  // An op that computes in f32 computes in f16 and bf16 too: through its f32 kernel where a
  // backend has none of its own at 16 bits (schema/via_f32.h).
  op->dtypes = def.dtypes.contains(DType::f32) ? def.dtypes | dtypes::half : def.dtypes;
  op->flags = def.flags;
  op->infer = def.infer;
  op->view = def.view;
  op->doc = def.doc ? def.doc : "";
  op->cost = def.cost;
  op->format_minor = def.format_minor;
  bool attrs_started = false;
  for (const ArgSpec& a : op->args) {
    if (is_tensor_kind(a.kind)) {
      AMBER_CHECK(!attrs_started, op->name, ": tensor arguments must come before attributes (", op->signature, ")");
      ++op->num_tensor_args;
      if (a.kind == ArgKind::tensor_list) op->has_tensor_list = true;
    } else {
      attrs_started = true;
    }
    if (a.choices.empty()) continue;
    AMBER_CHECK(a.kind == ArgKind::string, op->name, ": ", a.name, " declares choices but is not a str (",
                op->signature, ")");
    for (size_t i = 0; i < a.choices.size(); ++i)
      AMBER_CHECK(a.choice_index(a.choices[i]) == int(i), op->name, ": ", a.name, " lists '", a.choices[i], "' twice (",
                  op->signature, ")");
    const std::optional<Attr>& d = a.default_value;
    AMBER_CHECK(!d || d->is_none() || a.choice_index(d->s()) >= 0, op->name, ": ", a.name, "'s default '", d->s(),
                "' is none of its choices (", op->signature, ")");
  }
  AMBER_CHECK(!op->has_tensor_list || op->num_tensor_args == 1, op->name,
              ": a Tensor[] argument must be the op's only tensor argument");
  AMBER_CHECK(op->infer, op->name, ": no inference function");
  AMBER_CHECK(!(op->is_view() || op->is_maybe_view()) || op->view, op->name, ": view op without a view function");
  AMBER_CHECK(op->num_tensor_args <= 32, op->name, ": ", op->num_tensor_args, " tensor arguments, at most 32");
  AMBER_CHECK(op->version >= 1, op->name, ": version ", op->version, " (versions start at 1)");
  return op;
}

const OpSchema& add_op(std::unique_ptr<OpSchema> op) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  AMBER_CHECK(!r.by_name.count(op->name), "op ", op->name, " registered twice");
  AMBER_CHECK(r.ops.size() < size_t(kMaxOps), "op ", op->name, ": the op table is full (", kMaxOps, " ops)");
  op->index = int(r.ops.size());
  const OpSchema* p = op.get();
  r.by_name.emplace(op->name, p);
  r.ops.push_back(std::move(op));
  return *p;
}

const OpSchema& register_op(const OpDef& def) { return add_op(parse_op(def)); }

const OpSchema* find_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

const OpSchema& op_schema(std::string_view name) {
  const OpSchema* op = find_op(name);
  AMBER_CHECK(op, "unknown op '", name, "'");
  return *op;
}

std::vector<const OpSchema*> all_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const OpSchema*> v;
  for (auto& [n, op] : r.by_name) v.push_back(op);
  return v;
}

bool attrs_are_canonical(const OpSchema& op, std::span<const Attr> attrs) {
  if (int(attrs.size()) != op.num_attrs()) return false;
  for (int i = 0; i < op.num_attrs(); ++i) {
    const ArgSpec& spec = op.attr_spec(i);
    const AttrKind k = attrs[size_t(i)].kind();
    if (!(kind_accepts(spec.kind, k) || (k == AttrKind::none && spec.optional))) return false;
  }
  return true;
}

std::vector<Attr> normalize_attrs(const OpSchema& op, std::span<const Attr> attrs) {
  AMBER_CHECK(int(attrs.size()) <= op.num_attrs(), op.name, ": expected at most ", op.num_attrs(), " attributes, got ",
              attrs.size());
  std::vector<Attr> out;
  out.reserve(size_t(op.num_attrs()));
  for (int i = 0; i < op.num_attrs(); ++i) {
    const ArgSpec& spec = op.attr_spec(i);
    if (i >= int(attrs.size())) {
      AMBER_CHECK(spec.default_value.has_value(), op.name, ": missing required attribute '", spec.name, "' (",
                  arg_kind_name(spec.kind), ")");
      out.push_back(*spec.default_value);
      continue;
    }
    Attr a = attrs[size_t(i)];
    const AttrKind k = a.kind();
    if (k == AttrKind::none) {
      AMBER_CHECK(spec.optional, op.name, ": attribute '", spec.name, "' (", arg_kind_name(spec.kind),
                  ") cannot be None");
    } else if (spec.kind == ArgKind::float_ && k == AttrKind::i) {
      a = Attr(double(a.i()));
    } else if (spec.kind == ArgKind::floats && k == AttrKind::ints) {
      a = Attr(std::vector<double>(a.ints().begin(), a.ints().end()));
    } else if (spec.kind == ArgKind::ints && k == AttrKind::i) {
      a = Attr(std::vector<int64_t>{a.i()});  // a single int where a list is expected, as PyTorch
    } else {
      AMBER_CHECK(kind_accepts(spec.kind, k), op.name, ": attribute '", spec.name, "' expects ",
                  arg_kind_name(spec.kind), ", got ", attr_kind_name(k), " ", a);
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace amber
