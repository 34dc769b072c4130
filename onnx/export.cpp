// ONNX export (export.h): one emitter per Amber op, writing standard ONNX ops of opset 17.
// Attributes are read by name (<amber/op_attrs.h>); sizes that follow the batch are computed
// in the model from Shape of the input that carries N; fused nodes are expanded through the
// same pointwise emitters as the ops they came from; control flow becomes Loop and If with
// subgraphs. Nodes that cannot be written are collected and refused together.

#include "amber/onnx/export.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "amber/core/shape.h"
#include "amber/graph/control_flow.h"
#include "amber/kernels/resample.h"
#include "amber/kernels/scatter_reduce.h"
#include "amber/onnx/tensor_proto.h"
#include "amber/op_attrs.h"
#include "amber/schema/eager.h"
#include "amber/schema/fused_program.h"
#include "amber/schema/op_library.h"
#include "amber/serialize/archive.h"
#include "amber/serialize/file_io.h"

namespace amber {
namespace {

namespace oa = op_attrs;
using graph::Node;
using graph::SymInt;
using graph::SymShape;
using graph::Value;
using onnx::TensorProto;

constexpr int kOpset = 17;

// Thrown by an emitter for a node it cannot write; collected with the node.
struct Refuse {
  std::string reason;
};

// An operand of a pointwise emitter: a value, or a number known at export (a fused
// immediate or a Scalar attribute).
struct Opd {
  std::string name;
  std::optional<double> imm;
};

// upsample_*_aa's weights along one dim of `in` positions resampled to `out`, as a matrix: row i
// (column i when transposed) holds output i's normalised weights at its window (kernels/resample.h,
// the kernels' own numbers), under bicubic's filter where cubic, else bilinear's. A: ATen's
// scalar_t (float, or double for f64).
template <typename A>
Tensor aa_weight_matrix(bool cubic, int64_t in, int64_t out, bool corners, double scale_attr, bool transposed) {
  std::vector<A> m(size_t(in * out), A(0));
  const A scale = resample::linear_scale<A>(in, out, corners, scale_attr);
  auto fill = [&](auto filter) {
    constexpr bool kCubic = decltype(filter)::value;
    for (int64_t i = 0; i < out; ++i) {
      const resample::AaWindow<A> w = resample::aa_window<kCubic, A>(i, in, scale);
      for (int64_t j = 0; j < w.n; ++j)
        m[size_t(transposed ? (w.lo + j) * out + i : i * in + w.lo + j)] = resample::aa_weight<kCubic, A>(w, j);
    }
  };
  cubic ? fill(std::true_type{}) : fill(std::false_type{});
  return tensor(m, transposed ? DimVec{in, out} : DimVec{out, in});
}

class Exporter {
 public:
  Exporter(const graph::Graph& g, onnx::ModelProto& m) : g_(g), gp_(m.mutable_graph()) {
    for (const Value* v : g.inputs()) used_.insert(v->name);
    for (const Value* v : g.constants()) used_.insert(v->name);
    for (const Node* n : g.nodes())
      for (const Value* v : n->outputs) used_.insert(v->name);
    for (const auto& [name, v] : g.outputs()) used_.insert(name);
  }

  // ---- Names, nodes and constants ----

  std::string fresh(const std::string& hint) {
    for (;;) {
      std::string n = str("amber.", hint, ".", next_++);
      if (used_.insert(n).second) return n;
    }
  }

  onnx::NodeProto* add(const std::string& type, const std::vector<std::string>& ins,
                       const std::vector<std::string>& outs) {
    onnx::NodeProto* n = gp_->add_node();
    n->set_op_type(type);
    n->set_name(outs.empty() ? fresh(type) : outs[0]);
    for (const std::string& i : ins) n->add_input(i);
    for (const std::string& o : outs) n->add_output(o);
    return n;
  }
  // A node with one fresh output; returns its name.
  std::string op(const std::string& type, const std::vector<std::string>& ins,
                 const std::function<void(onnx::NodeProto*)>& attrs = {}, std::string out = "") {
    if (out.empty()) out = fresh(type);
    onnx::NodeProto* n = add(type, ins, {out});
    if (attrs) attrs(n);
    return out;
  }

  static void attr_i(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(onnx::NodeProto* n, const std::string& name, double v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(float(v));
  }
  static void attr_s(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  std::string initializer(const Tensor& t, std::string name = "") {
    if (name.empty()) name = fresh("const");
    TensorProto* p = gp_->add_initializer();
    onnx_in::tensor_to_proto(t, p);
    p->set_name(name);
    return name;
  }
  std::string ints(const std::vector<int64_t>& v) { return initializer(tensor(v).reshape({int64_t(v.size())})); }
  std::string int_scalar(int64_t v) { return initializer(full({}, v, DType::i64)); }
  // A 0-d constant of dtype t.
  std::string scalar(double v, DType t) { return initializer(full({}, number(v, t), t)); }
  // scatter's src cut to its index's shape (index_shape, of `rank` dims): ScatterElements takes
  // updates of the index's shape, where Amber and PyTorch take any src at least as large.
  std::string scatter_updates(const std::string& src, const std::string& index_shape, int rank) {
    if (rank == 0) return src;
    return op("Slice", {src, ints(std::vector<int64_t>(size_t(rank), 0)), index_shape});
  }
  // scatter_reduce's amax or amin (ScatterElements has max and min from opset 18 only): with
  // the index and src unsqueezed after dim, Equal against a range of self's size there gives
  // the one-hot mask [.., n, size, ..]; src where it is set (the reduction's identity elsewhere)
  // reduced over the index's dim gives each target's extreme and the mask's own reduction
  // whether it was hit; self's part of the index's extent takes them (folded with its own
  // elements with include_self) and is scattered back along dim. O(n size) elements per line.
  void scatter_extreme(const Node& n, int d, bool max, bool with_self, DType t) {
    const int r = rank(n.inputs[0]);
    if (r == 0) throw Refuse{"a 0-d scatter_reduce amax or amin"};
    const std::string src = scatter_updates(in(n, 2, t), op("Shape", {in(n, 1)}), r);
    const std::string idx = op("Unsqueeze", {in(n, 1, DType::i64), ints({d + 1})});
    const std::string size = op("Squeeze", {op("Gather", {op("Shape", {in(n, 0)}), ints({d})})});
    std::vector<int64_t> along(size_t(r) + 1, 1);
    along[size_t(d) + 1] = -1;
    const std::string range = op("Range", {int_scalar(0), size, int_scalar(1)});
    const std::string mask = op("Equal", {idx, op("Reshape", {range, ints(along)})});
    const scatter_fold::Reduce fold = max ? scatter_fold::kAmax : scatter_fold::kAmin;
    const Scalar start = is_floating(t)    ? Scalar(scatter_fold::identity<double>(fold))
                         : t == DType::i32 ? Scalar(int64_t(scatter_fold::identity<int32_t>(fold)))
                                           : Scalar(scatter_fold::identity<int64_t>(fold));
    const std::string identity = initializer(full({}, start, t));
    auto reduce_dim = [&](const std::string& type, const std::string& x) {
      return op(type, {x}, [&](onnx::NodeProto* p) {
        attr_ints(p, "axes", {d});
        attr_i(p, "keepdims", 0);
      });
    };
    const std::string picked = reduce_dim(max ? "ReduceMax" : "ReduceMin",
                                          op("Where", {mask, op("Unsqueeze", {src, ints({d + 1})}), identity}));
    const std::string hit =
        op("Cast",
           {reduce_dim("ReduceMax",
                       op("Cast", {mask}, [&](onnx::NodeProto* p) { attr_i(p, "to", onnx::TensorProto::INT32); }))},
           [&](onnx::NodeProto* p) { attr_i(p, "to", onnx::TensorProto::BOOL); });
    const std::string extent = op("Shape", {picked});
    const std::string self = op("Slice", {in(n, 0, t), ints(std::vector<int64_t>(size_t(r), 0)), extent});
    const std::string folded = with_self ? op(max ? "Max" : "Min", {self, picked}) : picked;
    std::vector<int64_t> at_d(size_t(r), 1);
    at_d[size_t(d)] = -1;
    const std::string positions = op("Expand", {op("Reshape", {range, ints(at_d)}), extent});
    scatter_elements(in(n, 0, t), positions, op("Where", {hit, folded, self}), d, nullptr, out(n));
  }
  // ScatterElements of updates into data at idx along axis, with reduction (add or mul) or none.
  std::string scatter_elements(const std::string& data, const std::string& idx, const std::string& updates, int axis,
                               const char* reduction, std::string dst = "") {
    return op(
        "ScatterElements", {data, idx, updates},
        [&](onnx::NodeProto* p) {
          attr_i(p, "axis", axis);
          if (reduction) attr_s(p, "reduction", reduction);
        },
        std::move(dst));
  }
  static Scalar number(double v, DType t) {
    if (t == DType::b8) return Scalar(v != 0);
    return is_floating(t) ? Scalar(v) : Scalar(int64_t(v));
  }
  std::string value(const Opd& o, DType t) { return o.imm ? scalar(*o.imm, t) : o.name; }

  // y through fused_conv2d's, fused_linear's or a quantized op's activation (clamp to [lo, hi] of dtype t,
  // Relu for [0, inf]; silu, hardswish), written to dst.
  void activation(const std::string& y, const std::string& act, double lo, double hi, DType t, const std::string& dst) {
    if (act == "clamp" && lo == 0 && hi == std::numeric_limits<double>::infinity())  // the fused ReLU
      op("Relu", {y}, {}, dst);
    else if (act == "clamp")
      op("Clip", {y, scalar(lo, t), scalar(hi, t)}, {}, dst);
    else if (act == "silu")
      op("Mul", {y, op("Sigmoid", {y})}, {}, dst);
    else
      op("HardSwish", {y}, {}, dst);
  }

  std::string cast(const std::string& x, DType from, DType to) {
    if (from == to) return x;
    return op("Cast", {x}, [&](onnx::NodeProto* n) { attr_i(n, "to", onnx_in::dtype_to_onnx(to)); });
  }

  // ---- The symbols (the batch N, a length T) and sizes in them ----

  // Symbol c's size as int64[1], from Shape of the first input whose dim is c.
  std::string symbol(char c) {
    std::string& known = symbols_[c];
    if (!known.empty()) return known;
    for (const Value* v : g_.inputs())
      for (size_t d = 0; d < v->type.shape.size(); ++d)
        if (v->type.shape[d] == SymInt::symbol(c)) {
          known = op("Shape", {v->name}, [&](onnx::NodeProto* n) {
            attr_i(n, "start", int64_t(d));
            attr_i(n, "end", int64_t(d) + 1);
          });
          return known;
        }
    throw Refuse{str("a size depends on ", c, ", but no input has a dim equal to ", c)};
  }
  // An int64[1] tensor of d's value at the model's sizes.
  std::string size(const SymInt& d) {
    std::string sum;
    for (int k = 0; k < d.n_terms; ++k) {
      const SymInt::Term& t = d.terms[size_t(k)];
      std::string p;
      graph::for_each_symbol(t.symbols, [&](char c) { p = p.empty() ? symbol(c) : op("Mul", {p, symbol(c)}); });
      if (t.coef != 1) p = op("Mul", {p, ints({t.coef})});
      sum = sum.empty() ? p : op("Add", {sum, p});
    }
    if (sum.empty()) return ints({d.value});
    return d.value == 0 ? sum : op("Add", {sum, ints({d.value})});
  }
  // An int64[rank] tensor of s's values at the model's sizes.
  std::string sizes(const SymShape& s) {
    if (graph::is_static(s)) {
      const DimVec d = graph::static_shape(s);
      return ints(std::vector<int64_t>(d.begin(), d.end()));
    }
    std::vector<std::string> parts;
    for (const SymInt& d : s) parts.push_back(d.is_static() ? ints({d.value}) : size(d));
    return op("Concat", parts, [](onnx::NodeProto* n) { attr_i(n, "axis", 0); });
  }
  static int64_t static_dim(const Value* v, int d, const char* what) {
    const SymShape& s = v->type.shape;
    const int w = d < 0 ? d + int(s.size()) : d;
    if (w < 0 || w >= int(s.size()) || !s[size_t(w)].is_static())
      throw Refuse{str(what, " needs dim ", d, " of %", v->name, " to be static; it is ", v->type)};
    return s[size_t(w)].value;
  }

  // ---- Pointwise: one emitter per name, shared by ops and fused instructions ----

  // Writes pointwise `name` over operands of dtype t (already cast) into out ("" for fresh).
  std::string pointwise(const std::string& name, const std::vector<Opd>& a, DType t, const std::string& out = "");

  // ---- Nodes ----

  // Writes node n as standard ONNX ops; `as` names the op to write it as (a .u8 overload as its
  // base op, whose attributes lead its own).
  void node(const Node& n, const std::string* as = nullptr);
  void fused(const Node& n);
  // ---- Control flow: loop and while_loop as ONNX Loop, cond as If; a body is a subgraph
  // that reads the values it captures from the enclosing graph by name ----
  void control_flow(const Node& n);
  // A copy of n's body k whose values carry fresh names; body input i in `outer` is named
  // after that enclosing value instead (a captured tensor, or cond's operands).
  std::unique_ptr<graph::Graph> renamed_body(const Node& n, size_t k, const std::map<size_t, std::string>& outer);
  // Runs f with nodes written into sub (a value of N computed there stays there).
  void within(onnx::GraphProto* sub, const std::function<void()>& f);
  // Writes body's nodes into the current graph and each of its outputs as an output of sub
  // (through Identity, so every subgraph output has a name of its own).
  void body_nodes_and_outputs(const graph::Graph& body, onnx::GraphProto* sub);
  void custom(const Node& n, const std::string& domain);
  // The domains of op libraries' ops written, with the highest op version of each.
  std::map<std::string, int> custom_domains;

  // A node's input i (cast to dtype t when given), output i.
  std::string in(const Node& n, size_t i) const { return n.inputs[i] ? n.inputs[i]->name : ""; }
  std::string in(const Node& n, size_t i, DType t) { return cast(n.inputs[i]->name, n.inputs[i]->type.dtype, t); }
  static DType in_type(const Node& n, size_t i) { return n.inputs[i]->type.dtype; }
  static DType out_type(const Node& n, size_t i = 0) { return n.outputs[i]->type.dtype; }
  // A node's output i: its name, or where an emitter redirected it (renamed_).
  std::string out(const Node& n, size_t i = 0) const {
    const auto it = renamed_.find(n.outputs[i]);
    return it == renamed_.end() ? n.outputs[i]->name : it->second;
  }
  static int rank(const Value* v) { return int(v->type.shape.size()); }
  static int wrap(int64_t d, int r) { return int(d < 0 ? d + std::max(r, 1) : d); }
  // The identity permutation of rank r with dims a and b exchanged (Transpose's perm).
  static std::vector<int64_t> swapping(int r, int a, int b) {
    std::vector<int64_t> perm(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i) perm[size_t(i)] = i;
    if (a >= 0 && b >= 0 && a < r && b < r) std::swap(perm[size_t(a)], perm[size_t(b)]);
    return perm;
  }
  // x of a 0-d value as [1], for ONNX ops that need a dim to work along.
  std::string lift0(const std::string& x, const Value* v) { return rank(v) == 0 ? op("Reshape", {x, ints({1})}) : x; }
  // y written to out, reshaped back to 0-d when the op was lifted.
  void land0(const std::string& y, const Value* v, const std::string& out) {
    if (rank(v) == 0)
      op("Reshape", {y, ints({})}, {}, out);
    else
      op("Identity", {y}, {}, out);
  }
  // x of a 3-d (unbatched) image as a batch of one, for Conv and the pools; their result is
  // written to unbatched_out(n) and unbatch() squeezes it back into the node's output.
  std::string batch1(const std::string& x, const Value* v) {
    return rank(v) == 3 ? op("Unsqueeze", {x, ints({0})}) : x;
  }
  std::string unbatched_out(const Node& n) { return rank(n.inputs[0]) == 3 ? fresh("batch1") : out(n); }
  void unbatch(const std::string& y, const Node& n) {
    if (rank(n.inputs[0]) == 3) op("Squeeze", {y, ints({0})}, {}, out(n));
  }

  const graph::Graph& g_;
  onnx::GraphProto* gp_;
  std::set<std::string> used_;
  std::map<const Value*, std::string> renamed_;  // outputs written elsewhere first (quantized .u8 ops)
  int64_t next_ = 0;
  std::map<char, std::string> symbols_;  // each symbol's int64[1] size, once made
};

double kInf = std::numeric_limits<double>::infinity();

void set_type(onnx::ValueInfoProto* vi, const std::string& name, const graph::ValueType& t);

std::string Exporter::pointwise(const std::string& name, const std::vector<Opd>& a, DType t, const std::string& out) {
  auto v = [&](size_t i) { return value(a.at(i), t); };
  auto imm = [&](size_t i, const char* what) {
    if (!a.at(i).imm) throw Refuse{str(name, "'s ", what, " must be a number known at export")};
    return *a.at(i).imm;
  };
  auto one = [&](const std::string& type) { return op(type, {v(0)}, {}, out); };
  auto two = [&](const std::string& type) { return op(type, {v(0), v(1)}, {}, out); };
  static const std::unordered_map<std::string, std::string> kUnary = {{"neg", "Neg"},
                                                                      {"abs", "Abs"},
                                                                      {"exp", "Exp"},
                                                                      {"log", "Log"},
                                                                      {"sqrt", "Sqrt"},
                                                                      {"tanh", "Tanh"},
                                                                      {"sigmoid", "Sigmoid"},
                                                                      {"relu", "Relu"},
                                                                      {"erf", "Erf"},
                                                                      {"sin", "Sin"},
                                                                      {"cos", "Cos"},
                                                                      {"tan", "Tan"},
                                                                      {"asin", "Asin"},
                                                                      {"acos", "Acos"},
                                                                      {"atan", "Atan"},
                                                                      {"sinh", "Sinh"},
                                                                      {"cosh", "Cosh"},
                                                                      {"asinh", "Asinh"},
                                                                      {"acosh", "Acosh"},
                                                                      {"atanh", "Atanh"},
                                                                      {"floor", "Floor"},
                                                                      {"ceil", "Ceil"},
                                                                      {"round", "Round"},
                                                                      {"sign", "Sign"},
                                                                      {"reciprocal", "Reciprocal"},
                                                                      {"selu", "Selu"},
                                                                      {"softsign", "Softsign"},
                                                                      {"hardswish", "HardSwish"}};
  static const std::unordered_map<std::string, std::string> kBinary = {
      {"add", "Add"},     {"sub", "Sub"},     {"mul", "Mul"},       {"div", "Div"},      {"pow", "Pow"},
      {"maximum", "Max"}, {"minimum", "Min"}, {"clamp_min", "Max"}, {"clamp_max", "Min"}};
  if (auto it = kUnary.find(name); it != kUnary.end()) return one(it->second);
  if (auto it = kBinary.find(name); it != kBinary.end()) {
    return two(it->second);
  }
  const std::string x = v(0);
  if (name == "rsqrt") return op("Reciprocal", {op("Sqrt", {x})}, {}, out);
  if (name == "log1p") return op("Log", {op("Add", {x, scalar(1, t)})}, {}, out);
  if (name == "expm1") return op("Sub", {op("Exp", {x}), scalar(1, t)}, {}, out);
  if (name == "silu") return op("Mul", {x, op("Sigmoid", {x})}, {}, out);
  if (name == "mish") return op("Mul", {x, op("Tanh", {op("Softplus", {x})})}, {}, out);
  if (name == "gelu") {  // x * 0.5 * (1 + erf(x / sqrt(2)))
    const std::string e = op("Erf", {op("Mul", {x, scalar(M_SQRT1_2, t)})});
    return op("Mul", {op("Mul", {x, scalar(0.5, t)}), op("Add", {e, scalar(1, t)})}, {}, out);
  }
  if (name == "gelu_tanh") {  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    const std::string x3 = op("Mul", {op("Mul", {x, x}), x});
    const std::string inner =
        op("Mul", {op("Add", {x, op("Mul", {x3, scalar(0.044715, t)})}), scalar(std::sqrt(2.0 / M_PI), t)});
    return op("Mul", {op("Mul", {x, scalar(0.5, t)}), op("Add", {op("Tanh", {inner}), scalar(1, t)})}, {}, out);
  }
  if (name == "clamp") return op("Min", {op("Max", {x, v(1)}), v(2)}, {}, out);
  if (name == "relu6") return op("Clip", {x, scalar(0, t), scalar(6, t)}, {}, out);
  if (name == "hardsigmoid")
    return op(
        "HardSigmoid", {x}, [](onnx::NodeProto* n) { attr_f(n, "alpha", 1.0 / 6), attr_f(n, "beta", 0.5); }, out);
  if (name == "leaky_relu") {
    const double s = imm(1, "negative_slope");
    return op(
        "LeakyRelu", {x}, [&](onnx::NodeProto* n) { attr_f(n, "alpha", s); }, out);
  }
  if (name == "elu") {
    const double al = imm(1, "alpha");
    return op(
        "Elu", {x}, [&](onnx::NodeProto* n) { attr_f(n, "alpha", al); }, out);
  }
  if (name == "softplus") {  // x * beta > threshold ? x : softplus(x * beta) / beta
    const double beta = imm(1, "beta"), th = imm(2, "threshold");
    const std::string bx = op("Mul", {x, scalar(beta, t)});
    return op("Where", {op("Greater", {bx, scalar(th, t)}), x, op("Div", {op("Softplus", {bx}), scalar(beta, t)})}, {},
              out);
  }
  if (name == "hardshrink" || name == "softshrink") {
    const double l = imm(1, "lambd");
    const bool soft = name == "softshrink";
    return op(
        "Shrink", {x}, [&](onnx::NodeProto* n) { attr_f(n, "lambd", l), attr_f(n, "bias", soft ? l : 0); }, out);
  }
  if (name == "threshold") return op("Where", {op("Greater", {x, v(1)}), x, v(2)}, {}, out);
  throw Refuse{str("no ONNX form of pointwise ", name)};
}

void Exporter::fused(const Node& n) {
  const FusedProgram p = parse_fused_program(n.attrs[oa::fused::program].s(), int(n.inputs.size()));
  std::vector<std::string> temps;
  for (size_t k = 0; k < p.instrs.size(); ++k) {
    const FusedInstr& ins = p.instrs[k];
    std::vector<Opd> a;
    for (const FusedOperand* o : {&ins.a, &ins.b, &ins.c}) {
      if (int(a.size()) == ins.arity) break;
      if (o->kind == FusedOperand::Kind::input)
        a.push_back({in(n, size_t(o->index), DType::f32), {}});
      else if (o->kind == FusedOperand::Kind::temp)
        a.push_back({temps.at(size_t(o->index)), {}});
      else
        a.push_back({"", double(o->imm)});
    }
    // The program computes in f32; a node of 16-bit inputs rounds its result once, at the end.
    const bool last = k + 1 == p.instrs.size() && out_type(n) == DType::f32;
    temps.push_back(pointwise(fused_op_name(ins.op), a, DType::f32, last ? out(n) : ""));
  }
  if (const DType t = out_type(n); t != DType::f32) {
    auto to = [&](onnx::NodeProto* c) { attr_i(c, "to", onnx_in::dtype_to_onnx(t)); };
    op("Cast", {temps.back()}, to, out(n));
  }
}

// An op library's op (docs/OPS.md, "Custom ops"), "ns::op": node op_type op of domain ns,
// with its attributes by name and its outputs' types as value_info (ONNX knows no schema).
void Exporter::custom(const Node& n, const std::string& domain) {
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in(n, i));
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  for (size_t i = 0; i < n.outputs.size(); ++i) outs.push_back(out(n, i));
  onnx::NodeProto* p = add(n.op->name.substr(domain.size() + 2), ins, outs);
  p->set_domain(domain);
  for (int i = 0; i < n.op->num_attrs(); ++i) {
    const Attr& a = n.attrs[size_t(i)];
    const std::string& an = n.op->attr_spec(i).name;
    switch (a.kind()) {
      case AttrKind::none:
        break;
      case AttrKind::i:
      case AttrKind::b:
      case AttrKind::dtype:
        attr_i(p, an, a.i());
        break;
      case AttrKind::f:
        attr_f(p, an, a.f());
        break;
      case AttrKind::ints:
        attr_ints(p, an, a.ints());
        break;
      case AttrKind::floats: {
        auto* fa = p->add_attribute();
        fa->set_name(an);
        fa->set_type(onnx::AttributeProto::FLOATS);
        for (double f : a.floats()) fa->add_floats(float(f));
        break;
      }
      case AttrKind::s:
        attr_s(p, an, a.s());
        break;
    }
  }
  for (const Value* v : n.outputs) set_type(gp_->add_value_info(), v->name, v->type);
  int& version = custom_domains[domain];
  version = std::max(version, n.op->version);
}

void Exporter::node(const Node& n, const std::string* as) {
  const std::string& name = as ? *as : n.op->name;
  if (const std::string_view ns = op_namespace(name); !ns.empty()) return custom(n, std::string(ns));
  if (n.op->is_control_flow()) return control_flow(n);
  const auto& at = n.attrs;
  const auto any_symbolic = [&](std::initializer_list<int> idx) {
    for (int i : idx)
      if (size_t(i) < n.attr_syms.size() && !n.attr_syms[size_t(i)].empty())
        throw Refuse{str("attribute ", n.op->attr_spec(i).name, " depends on a dynamic size")};
  };
  const Value* x0 = n.inputs.empty() ? nullptr : n.inputs[0];
  const DType ot = out_type(n);

  if (name == "fused") return fused(n);

  static const std::unordered_map<std::string, std::pair<std::string, bool>> kArith = {
      {"add", {"Add", false}}, {"sub", {"Sub", false}}, {"add.Scalar", {"Add", true}}, {"sub.Scalar", {"Sub", true}}};
  if (auto it = kArith.find(name); it != kArith.end()) {  // self op alpha * other
    const bool scalar_form = it->second.second;
    const double alpha = at[scalar_form ? oa::add_Scalar::alpha : oa::add::alpha].scalar().to_double();
    std::string b;
    if (scalar_form)
      b = scalar(at[oa::add_Scalar::other].scalar().to_double() * alpha, ot);
    else
      b = alpha == 1 ? in(n, 1, ot) : op("Mul", {in(n, 1, ot), scalar(alpha, ot)});
    op(it->second.first, {in(n, 0, ot), b}, {}, out(n));
    return;
  }
  if (name == "rsub.Scalar") {  // other - alpha * self
    const double alpha = at[oa::rsub_Scalar::alpha].scalar().to_double();
    std::string s = in(n, 0, ot);
    if (alpha != 1) s = op("Mul", {s, scalar(alpha, ot)});
    op("Sub", {scalar(at[oa::rsub_Scalar::other].scalar().to_double(), ot), s}, {}, out(n));
    return;
  }
  if (name == "mul.Scalar" || name == "pow.Scalar") {
    static_assert(oa::mul_Scalar::other == 0 && oa::pow_Scalar::exponent == 0);
    pointwise(name == "mul.Scalar" ? "mul" : "pow", {{in(n, 0, ot), {}}, {"", at[0].scalar().to_double()}}, ot, out(n));
    return;
  }
  if (name == "div" || name == "div.Scalar") {
    const Attr& mode = at[name == "div" ? oa::div::rounding_mode : oa::div_Scalar::rounding_mode];
    const std::string a = in(n, 0, ot),
                      b = name == "div" ? in(n, 1, ot) : scalar(at[oa::div_Scalar::other].scalar().to_double(), ot);
    if (mode.is_none()) {
      op("Div", {a, b}, {}, out(n));
    } else if (is_floating(ot)) {  // floor(a / b), or trunc(a / b) = sign * floor(|a / b|)
      const std::string q = op("Div", {a, b});
      if (mode.s() == "floor")
        op("Floor", {q}, {}, out(n));
      else
        op("Mul", {op("Sign", {q}), op("Floor", {op("Abs", {q})})}, {}, out(n));
    } else if (mode.s() == "floor") {  // ONNX's integer Div truncates; Mod (fmod 0) takes b's sign
      op("Div", {op("Sub", {a, op("Mod", {a, b})}), b}, {}, out(n));
    } else {
      op("Div", {a, b}, {}, out(n));
    }
    return;
  }
  if (name == "gelu") {
    const bool tanh_form = at[oa::gelu::approximate].s() == "tanh";
    pointwise(tanh_form ? "gelu_tanh" : "gelu", {{in(n, 0, ot), {}}}, ot, out(n));
    return;
  }
  if (!is_floating(ot) && (name == "floor" || name == "ceil" || name == "round")) {  // integers stay
    op("Identity", {in(n, 0)}, {}, out(n));
    return;
  }
  // Pointwise ops whose name is a fused instruction's (Scalar attributes are its further
  // operands): operands cast to the output dtype.
  FusedOp fop;
  if (fused_op_from_name(name, fop) && name != "clamp") {
    std::vector<Opd> a;
    for (size_t i = 0; i < n.inputs.size(); ++i) a.push_back({in(n, i, ot), {}});
    for (const Attr& x : at) a.push_back({"", x.scalar().to_double()});
    if (int(a.size()) != fused_op_arity(fop)) throw Refuse{"operand count differs from the instruction's"};
    pointwise(name, a, ot, out(n));
    return;
  }
  if (name == "hardtanh") {
    pointwise("clamp",
              {{in(n, 0, ot), {}},
               {"", at[oa::hardtanh::min_val].scalar().to_double()},
               {"", at[oa::hardtanh::max_val].scalar().to_double()}},
              ot, out(n));
    return;
  }
  if (name == "clamp") {
    std::string y = in(n, 0, ot);
    const Attr &lo = at[oa::clamp::min], &hi = at[oa::clamp::max];
    if (!lo.is_none()) y = op("Max", {y, scalar(lo.scalar().to_double(), ot)});
    if (!hi.is_none()) y = op("Min", {y, scalar(hi.scalar().to_double(), ot)});
    op("Identity", {y}, {}, out(n));
    return;
  }
  // Comparisons and logic.
  static const std::unordered_map<std::string, std::string> kCompare = {{"eq", "Equal"},   {"ne", "Equal"},
                                                                        {"lt", "Less"},    {"le", "LessOrEqual"},
                                                                        {"gt", "Greater"}, {"ge", "GreaterOrEqual"}};
  const std::string base = name.substr(0, name.find('.'));
  if (auto it = kCompare.find(base); it != kCompare.end()) {
    std::string a, b;
    if (name.size() > base.size()) {  // .Scalar
      const Scalar s = at[0].scalar();
      DType t = in_type(n, 0);
      if (s.is_floating() && !is_floating(t)) t = DType::f32;
      if (t == DType::b8) t = DType::u8;  // ONNX compares no bools but Equal
      a = in(n, 0, t);
      b = scalar(s.to_double(), t);
    } else {
      DType t = promote_types(in_type(n, 0), in_type(n, 1));
      if (t == DType::b8 && base != "eq" && base != "ne") t = DType::u8;
      a = in(n, 0, t);
      b = in(n, 1, t);
    }
    if (base == "ne")
      op("Not", {op("Equal", {a, b})}, {}, out(n));
    else
      op(it->second, {a, b}, {}, out(n));
    return;
  }
  static const std::unordered_map<std::string, std::string> kLogic = {
      {"logical_and", "And"}, {"logical_or", "Or"}, {"logical_xor", "Xor"}};
  if (auto it = kLogic.find(name); it != kLogic.end()) {
    op(it->second, {in(n, 0, DType::b8), in(n, 1, DType::b8)}, {}, out(n));
    return;
  }
  if (name == "logical_not") {
    op("Not", {in(n, 0, DType::b8)}, {}, out(n));
    return;
  }
  if (name == "where") {
    op("Where", {in(n, 0, DType::b8), in(n, 1, ot), in(n, 2, ot)}, {}, out(n));
    return;
  }
  if (name == "masked_fill.Scalar") {
    op("Where", {in(n, 1, DType::b8), scalar(at[oa::masked_fill_Scalar::value].scalar().to_double(), ot), in(n, 0, ot)},
       {}, out(n));
    return;
  }
  if (name == "to") {
    op(
        "Cast", {in(n, 0)}, [&](onnx::NodeProto* p) { attr_i(p, "to", onnx_in::dtype_to_onnx(ot)); }, out(n));
    return;
  }
  if (name == "clone" || name == "contiguous" || name == "dropout") {
    op("Identity", {in(n, 0)}, {}, out(n));
    return;
  }

  // Shapes and views: the output's own shape says what they do.
  if (name == "reshape" || name == "view" || name == "flatten" || name == "squeeze" || name == "squeeze.dim" ||
      name == "unsqueeze") {
    const SymShape& s = n.outputs[0]->type.shape;
    const bool zero = std::find(s.begin(), s.end(), SymInt(0)) != s.end();  // else 0 copies the input's dim
    op(
        "Reshape", {in(n, 0), sizes(s)}, [&](onnx::NodeProto* p) { attr_i(p, "allowzero", zero ? 1 : 0); }, out(n));
    return;
  }
  if (name == "expand") {
    op("Expand", {in(n, 0), sizes(n.outputs[0]->type.shape)}, {}, out(n));
    return;
  }
  if (name == "permute" || name == "transpose") {
    const int r = rank(x0);
    std::vector<int64_t> perm;
    if (name == "permute") {
      for (int64_t d : at[oa::permute::dims].ints()) perm.push_back(wrap(d, r));
    } else {
      perm = swapping(r, wrap(at[oa::transpose::dim0].i(), r), wrap(at[oa::transpose::dim1].i(), r));
    }
    op(
        "Transpose", {in(n, 0)}, [&](onnx::NodeProto* p) { attr_ints(p, "perm", perm); }, out(n));
    return;
  }
  if (name == "select") {
    any_symbolic({oa::select::dim, oa::select::index});
    const int d = wrap(at[oa::select::dim].i(), rank(x0));
    op(
        "Gather", {in(n, 0), int_scalar(at[oa::select::index].i())}, [&](onnx::NodeProto* p) { attr_i(p, "axis", d); },
        out(n));
    return;
  }
  if (name == "slice") {
    any_symbolic({oa::slice::start, oa::slice::end});
    const Attr &s = at[oa::slice::start], &e = at[oa::slice::end];
    op("Slice",
       {in(n, 0), ints({s.is_none() ? 0 : s.i()}), ints({e.is_none() ? std::numeric_limits<int64_t>::max() : e.i()}),
        ints({wrap(at[oa::slice::dim].i(), rank(x0))}), ints({at[oa::slice::step].i()})},
       {}, out(n));
    return;
  }
  if (name == "chunk" || name == "split" || name == "split_with_sizes") {
    static_assert(oa::chunk::dim == 1 && oa::split::dim == 1 && oa::split_with_sizes::dim == 1);
    const int d = wrap(at[1].i(), rank(x0));
    std::vector<int64_t> parts;
    std::vector<std::string> outs;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      parts.push_back(static_dim(n.outputs[i], d, "split"));
      outs.push_back(out(n, i));
    }
    attr_i(add("Split", {in(n, 0), ints(parts)}, outs), "axis", d);
    return;
  }
  if (name == "cat" || name == "stack") {
    static_assert(oa::cat::dim == oa::stack::dim);
    const int r = rank(n.outputs[0]);
    const int d = wrap(at[oa::cat::dim].i(), r);
    std::vector<std::string> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      // cat skips 1-d empty tensors of another rank (legacy PyTorch); Concat would refuse them
      if (name == "cat" && rank(n.inputs[i]) != r && n.inputs[i]->type.shape == SymShape{SymInt(0)}) continue;
      std::string v = in(n, i, ot);
      if (name == "stack") v = op("Unsqueeze", {v, ints({d})});
      ins.push_back(v);
    }
    op(
        "Concat", ins, [&](onnx::NodeProto* p) { attr_i(p, "axis", d); }, out(n));
    return;
  }
  if (name == "index_select" || name == "gather" || name == "embedding") {
    if (name == "embedding") {
      op(
          "Gather", {in(n, 0), in(n, 1)}, [](onnx::NodeProto* p) { attr_i(p, "axis", 0); }, out(n));
      return;
    }
    static_assert(oa::index_select::dim == oa::gather::dim);
    const int d = wrap(at[oa::gather::dim].i(), rank(x0));
    std::string idx = in(n, 1);
    if (rank(n.inputs[1]) == 0) idx = op("Reshape", {idx, ints({1})});  // a 0-d index acts as [1]
    op(
        name == "gather" ? "GatherElements" : "Gather", {in(n, 0), idx},
        [&](onnx::NodeProto* p) { attr_i(p, "axis", d); }, out(n));
    return;
  }
  if (name == "scatter" || name == "scatter_add" || name == "scatter.value") {
    static_assert(oa::scatter::dim == oa::scatter_add::dim && oa::scatter_value::dim == 0);
    const int d = wrap(at[0].i(), rank(x0));
    std::string src =
        name == "scatter.value"
            ? op("Expand", {scalar(at[oa::scatter_value::value].scalar().to_double(), ot), op("Shape", {in(n, 1)})})
            : scatter_updates(in(n, 2, ot), op("Shape", {in(n, 1)}), rank(n.inputs[1]));
    scatter_elements(in(n, 0), in(n, 1), src, d, name == "scatter_add" ? "add" : nullptr, out(n));
    return;
  }
  if (name == "scatter_reduce") {
    // ScatterElements' add and mul: without include_self the elements scattered to are first
    // set to the identity; mean divides the sum by a count scattered alike (at least one;
    // integers floor, as Amber's and PyTorch's). amax and amin: scatter_extreme.
    const std::string& reduce = at[oa::scatter_reduce::reduce].s();
    const bool with_self = at[oa::scatter_reduce::include_self].i() != 0, prod = reduce == "prod";
    const int d = wrap(at[oa::scatter_reduce::dim].i(), rank(x0));
    if (reduce == "amax" || reduce == "amin") {
      scatter_extreme(n, d, reduce == "amax", with_self, ot);
      return;
    }
    const std::string idx = in(n, 1), index_shape = op("Shape", {idx});
    auto scatter = [&](const std::string& data, const std::string& updates, const char* reduction,
                       std::string dst = "") {
      return scatter_elements(data, idx, updates, d, reduction, std::move(dst));
    };
    const std::string src = scatter_updates(in(n, 2, ot), index_shape, rank(n.inputs[1]));
    std::string data = in(n, 0, ot);
    if (!with_self) data = scatter(data, op("Expand", {scalar(prod ? 1 : 0, ot), index_shape}), nullptr);
    if (reduce != "mean") {
      scatter(data, src, prod ? "mul" : "add", out(n));
      return;
    }
    const std::string sum = scatter(data, src, "add");
    const std::string ones = op("Expand", {scalar(1, ot), index_shape});
    const std::string count = op(
        "Max",
        {scatter(op("Expand", {scalar(with_self ? 1 : 0, ot), op("Shape", {in(n, 0)})}), ones, "add"), scalar(1, ot)});
    if (is_floating(ot))
      op("Div", {sum, count}, {}, out(n));
    else  // ONNX's integer Div truncates; Mod (fmod 0) takes the divisor's sign, positive here
      op("Div", {op("Sub", {sum, op("Mod", {sum, count})}), count}, {}, out(n));
    return;
  }
  if (name == "flip") {
    std::vector<int64_t> axes;
    for (int64_t d : at[oa::flip::dims].ints()) axes.push_back(wrap(d, rank(x0)));
    if (axes.empty() || rank(x0) == 0) {
      op("Identity", {in(n, 0)}, {}, out(n));
      return;
    }
    const std::vector<int64_t> starts(axes.size(), -1), ends(axes.size(), std::numeric_limits<int64_t>::min()),
        steps(axes.size(), -1);
    op("Slice", {in(n, 0), ints(starts), ints(ends), ints(axes), ints(steps)}, {}, out(n));
    return;
  }
  if (name == "roll") {
    std::string y = in(n, 0);
    const auto &shifts = at[oa::roll::shifts].ints(), &dims = at[oa::roll::dims].ints();
    for (size_t i = 0; i < dims.size(); ++i) {
      const int d = wrap(dims[i], rank(x0));
      const int64_t size = static_dim(x0, d, "roll");
      const int64_t s = size == 0 ? 0 : ((shifts[i] % size) + size) % size;
      if (s == 0) continue;
      const std::string tail = op("Slice", {y, ints({size - s}), ints({size}), ints({d})});
      const std::string head = op("Slice", {y, ints({0}), ints({size - s}), ints({d})});
      y = op("Concat", {tail, head}, [&](onnx::NodeProto* p) { attr_i(p, "axis", d); });
    }
    op("Identity", {y}, {}, out(n));
    return;
  }
  if (name == "repeat") {
    const auto& r = at[oa::repeat::repeats].ints();
    std::string y = in(n, 0);
    if (int(r.size()) > rank(x0)) {
      SymShape s(r.size() - size_t(rank(x0)), SymInt(1));
      s.insert(s.end(), x0->type.shape.begin(), x0->type.shape.end());
      y = op("Reshape", {y, sizes(s)});
    }
    op("Tile", {y, ints(r)}, {}, out(n));
    return;
  }
  if (name == "tril" || name == "triu") {
    static_assert(oa::tril::diagonal == oa::triu::diagonal);
    const bool upper = name == "triu";
    op(
        "Trilu", {in(n, 0), int_scalar(at[oa::tril::diagonal].i())},
        [&](onnx::NodeProto* p) { attr_i(p, "upper", upper ? 1 : 0); }, out(n));
    return;
  }
  if (name == "pad") {
    const auto& pad = at[oa::pad::pad].ints();
    const std::string& mode = at[oa::pad::mode].s();
    const int r = rank(x0);
    std::vector<int64_t> pads(size_t(2 * r), 0);
    for (size_t k = 0; k + 1 < pad.size() && k / 2 < size_t(r); k += 2) {  // (before, after) from the last dim
      const size_t d = size_t(r) - 1 - k / 2;
      pads[d] = pad[k];
      pads[d + size_t(r)] = pad[k + 1];
    }
    if (mode == "circular") {
      // ONNX 17 has no wrap mode: per padded dim, its last `before` and first `after`
      // elements concatenated around it (dim by dim, so corners wrap as PyTorch's).
      std::string y = in(n, 0);
      std::vector<int> padded;
      for (int d = 0; d < r; ++d)
        if (pads[size_t(d)] != 0 || pads[size_t(d + r)] != 0) padded.push_back(d);
      if (padded.empty()) {
        op("Identity", {y}, {}, out(n));
        return;
      }
      for (int d : padded) {
        const int64_t before = pads[size_t(d)], after = pads[size_t(d + r)];
        if (before < 0 || after < 0) throw Refuse{"negative circular pads"};
        std::vector<std::string> parts;
        if (before > 0)
          parts.push_back(op("Slice", {y, ints({-before}), ints({std::numeric_limits<int64_t>::max()}), ints({d})}));
        parts.push_back(y);
        if (after > 0) parts.push_back(op("Slice", {y, ints({0}), ints({after}), ints({d})}));
        y = op(
            "Concat", parts, [&](onnx::NodeProto* p) { attr_i(p, "axis", d); }, d == padded.back() ? out(n) : "");
      }
      return;
    }
    std::string m = mode == "constant" ? "constant" : mode == "reflect" ? "reflect" : mode == "replicate" ? "edge" : "";
    if (m.empty()) throw Refuse{str("pad mode '", mode, "' (ONNX 17 has constant, reflect, edge; circular as slices)")};
    std::vector<std::string> ins{in(n, 0), ints(pads)};
    if (m == "constant") ins.push_back(scalar(at[oa::pad::value].scalar().to_double(), ot));
    op(
        "Pad", ins, [&](onnx::NodeProto* p) { attr_s(p, "mode", m); }, out(n));
    return;
  }
  if (name == "full") {
    // Sized by the batch: the fill value expanded to Shape-computed sizes, which importers
    // (Amber's included) keep following the batch; ConstantOfShape of such sizes would be
    // computed once at import by one that folds it.
    if (!graph::is_static(n.outputs[0]->type.shape)) {
      op("Expand", {scalar(at[oa::full::fill_value].scalar().to_double(), ot), sizes(n.outputs[0]->type.shape)}, {},
         out(n));
      return;
    }
    onnx::NodeProto* p = add("ConstantOfShape", {sizes(n.outputs[0]->type.shape)}, {out(n)});
    auto* a = p->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    onnx_in::tensor_to_proto(full({1}, at[oa::full::fill_value].scalar().to_double(), ot), a->mutable_t());
    return;
  }
  if (name == "arange") {
    any_symbolic({oa::arange::start, oa::arange::end, oa::arange::step});
    op("Range",
       {scalar(at[oa::arange::start].scalar().to_double(), ot), scalar(at[oa::arange::end].scalar().to_double(), ot),
        scalar(at[oa::arange::step].scalar().to_double(), ot)},
       {}, out(n));
    return;
  }

  // Reductions.
  if (name == "sum" || name == "prod" || name == "mean" || name == "amax" || name == "amin" || name == "any" ||
      name == "all") {
    static_assert(oa::sum::dim == 0 && oa::prod::dim == 0 && oa::mean::dim == 0 && oa::amax::dim == 0 &&
                  oa::amin::dim == 0 && oa::any::dim == 0 && oa::all::dim == 0);
    static_assert(oa::sum::keepdim == 1 && oa::prod::keepdim == 1 && oa::mean::keepdim == 1 && oa::amax::keepdim == 1 &&
                  oa::amin::keepdim == 1 && oa::any::keepdim == 1 && oa::all::keepdim == 1);
    std::vector<int64_t> axes;
    if (!at[0].is_none())
      for (int64_t d : at[0].ints()) axes.push_back(wrap(d, rank(x0)));
    const bool keep = at[1].b();
    // any and all count: the elements that are true (any) or false (all), summed as int64,
    // compared with 0 (an empty reduction gives false and true, as PyTorch's).
    const bool logic = name == "any" || name == "all";
    std::string x = in(n, 0, logic ? DType::b8 : ot);
    if (name == "all") x = op("Not", {x});
    if (logic) x = cast(x, DType::b8, DType::i64);
    if (rank(x0) == 0 && !logic) {  // nothing to reduce
      op("Identity", {x}, {}, out(n));
      return;
    }
    const std::string type = name == "sum" || logic ? "ReduceSum"
                             : name == "prod"       ? "ReduceProd"
                             : name == "mean"       ? "ReduceMean"
                             : name == "amax"       ? "ReduceMax"
                                                    : "ReduceMin";
    std::vector<std::string> ins{x};
    if (type == "ReduceSum" && !axes.empty()) ins.push_back(ints(axes));
    std::string y = op(type, ins, [&](onnx::NodeProto* p) {
      attr_i(p, "keepdims", keep ? 1 : 0);
      if (type != "ReduceSum" && !axes.empty()) attr_ints(p, "axes", axes);
    });
    if (logic)
      op(name == "any" ? "Greater" : "Equal", {y, int_scalar(0)}, {}, out(n));
    else
      op("Identity", {y}, {}, out(n));
    return;
  }
  if (name == "argmax" || name == "argmin") {
    static_assert(oa::argmax::dim == oa::argmin::dim && oa::argmax::keepdim == oa::argmin::keepdim);
    const Attr& dim = at[oa::argmax::dim];
    std::string x = in(n, 0);
    int d = 0;
    if (dim.is_none() || rank(x0) == 0)
      x = op("Reshape", {x, ints({-1})});
    else
      d = wrap(dim.i(), rank(x0));
    const std::string y = op(name == "argmax" ? "ArgMax" : "ArgMin", {x}, [&](onnx::NodeProto* p) {
      attr_i(p, "axis", d);
      attr_i(p, "keepdims", 1);
    });
    op("Reshape", {y, sizes(n.outputs[0]->type.shape)}, {}, out(n));
    return;
  }
  if (name == "softmax" || name == "log_softmax") {
    static_assert(oa::softmax::dim == oa::log_softmax::dim);
    const int d = wrap(at[oa::softmax::dim].i(), rank(x0));
    land0(op(name == "softmax" ? "Softmax" : "LogSoftmax", {lift0(in(n, 0, ot), x0)},
             [&](onnx::NodeProto* p) { attr_i(p, "axis", d); }),
          x0, out(n));
    return;
  }
  if (name == "cumsum") {
    land0(op("CumSum", {lift0(in(n, 0, ot), x0), int_scalar(wrap(at[oa::cumsum::dim].i(), rank(x0)))}), x0, out(n));
    return;
  }
  if (name == "topk") {
    const bool zero_d = rank(x0) == 0;
    const std::string v = zero_d ? fresh("TopK") : out(n, 0), i = zero_d ? fresh("TopK") : out(n, 1);
    onnx::NodeProto* p = add("TopK", {lift0(in(n, 0), x0), ints({at[oa::topk::k].i()})}, {v, i});
    attr_i(p, "axis", wrap(at[oa::topk::dim].i(), rank(x0)));
    attr_i(p, "largest", at[oa::topk::largest].b() ? 1 : 0);
    attr_i(p, "sorted", at[oa::topk::sorted].b() ? 1 : 0);
    if (zero_d) land0(v, x0, out(n, 0)), land0(i, x0, out(n, 1));
    return;
  }

  // Neural-network ops. quantized_linear and quantized_conv2d in QDQ form (as ONNX Runtime's
  // static quantization writes models): an f32 input through QuantizeLinear and
  // DequantizeLinear with input_scale and a uint8 input_zero_point (a u8 input, already
  // quantized, through DequantizeLinear alone), the int8 weight through DequantizeLinear along
  // axis 0 with weight_scale; then linear's and conv2d's nodes, and for the .u8 overloads
  // their activation and a QuantizeLinear with output_scale and output_zero_point.
  if (name == "quantized_add") {  // DequantizeLinear of each, Add, the activation, QuantizeLinear
    namespace qa = oa::quantized_add;
    auto dq = [&](size_t i, size_t scale, size_t zero_point) {
      return op("DequantizeLinear",
                {in(n, i), scalar(at[scale].f(), DType::f32), initializer(full({}, at[zero_point].i(), DType::u8))});
    };
    std::string y =
        op("Add", {dq(0, qa::self_scale, qa::self_zero_point), dq(1, qa::other_scale, qa::other_zero_point)});
    if (at[qa::activation].s() != std::string("none")) {
      const std::string act = fresh("quantized_add");
      activation(y, at[qa::activation].s(), at[qa::min_val].f(), at[qa::max_val].f(), DType::f32, act);
      y = act;
    }
    op("QuantizeLinear",
       {y, scalar(at[qa::output_scale].f(), DType::f32),
        initializer(full({}, at[qa::output_zero_point].i(), DType::u8))},
       {}, out(n));
    return;
  }
  const bool requantized = name == "quantized_linear.u8" || name == "quantized_conv2d.u8";
  if (requantized) {
    static_assert(oa::quantized_linear_u8::output_scale == oa::quantized_linear_u8::max_val + 1 &&
                  oa::quantized_linear_u8::output_zero_point == oa::quantized_linear_u8::output_scale + 1 &&
                  oa::quantized_conv2d_u8::output_scale == oa::quantized_conv2d_u8::max_val + 1 &&
                  oa::quantized_conv2d_u8::output_zero_point == oa::quantized_conv2d_u8::output_scale + 1);
    const bool lin = name == "quantized_linear.u8";
    const std::string y = fresh("requantize");
    renamed_[n.outputs[0]] = y;
    const std::string base_op = lin ? "quantized_linear" : "quantized_conv2d";
    node(n, &base_op);
    renamed_.erase(n.outputs[0]);
    const int s = lin ? oa::quantized_linear_u8::output_scale : oa::quantized_conv2d_u8::output_scale;
    op("QuantizeLinear",
       {y, scalar(at[size_t(s)].f(), DType::f32), initializer(full({}, at[size_t(s + 1)].i(), DType::u8))}, {}, out(n));
    return;
  }
  const bool quantized = name == "quantized_linear" || name == "quantized_conv2d";
  const size_t bias_in = quantized ? 3 : 2;
  std::string x_in = in(n, 0), w_in = n.inputs.size() > 1 ? in(n, 1) : "";
  if (quantized) {
    static_assert(oa::quantized_linear_u8::input_scale == oa::quantized_linear::input_scale &&
                  oa::quantized_linear_u8::input_zero_point == oa::quantized_linear::input_zero_point &&
                  oa::quantized_conv2d_u8::input_scale == oa::quantized_conv2d::input_scale &&
                  oa::quantized_conv2d_u8::input_zero_point == oa::quantized_conv2d::input_zero_point);
    const bool lin = name == "quantized_linear";
    const std::string sc =
        scalar(at[lin ? oa::quantized_linear::input_scale : oa::quantized_conv2d::input_scale].f(), DType::f32);
    const std::string zp = initializer(full(
        {}, at[lin ? oa::quantized_linear::input_zero_point : oa::quantized_conv2d::input_zero_point].i(), DType::u8));
    x_in = in_type(n, 0) == DType::u8 ? op("DequantizeLinear", {x_in, sc, zp})
                                      : op("DequantizeLinear", {op("QuantizeLinear", {x_in, sc, zp}), sc, zp});
    w_in = op("DequantizeLinear", {w_in, in(n, 2)}, [](onnx::NodeProto* p) { attr_i(p, "axis", 0); });
  }
  if (name == "linear" || name == "fused_linear" || name == "quantized_linear") {
    // fused_linear's activation, or quantized_linear.u8's (emitted as quantized_linear, its
    // attributes beyond): Gemm or MatMul, then the activation (Relu or Clip, x * Sigmoid(x),
    // HardSwish).
    static_assert(oa::quantized_linear_u8::activation == oa::quantized_linear_u8::input_zero_point + 1 &&
                  oa::quantized_linear_u8::min_val == oa::quantized_linear_u8::activation + 1 &&
                  oa::quantized_linear_u8::max_val == oa::quantized_linear_u8::min_val + 1);
    const bool fused = name == "fused_linear";
    const size_t act_at = fused ? oa::fused_linear::activation : oa::quantized_linear_u8::activation,
                 lo_at = fused ? oa::fused_linear::min_val : oa::quantized_linear_u8::min_val,
                 hi_at = fused ? oa::fused_linear::max_val : oa::quantized_linear_u8::max_val;
    const bool act = at.size() > act_at && at[act_at].s() != std::string("none");
    const std::string y = act ? fresh("linear") : out(n);
    if (rank(x0) == 2) {
      std::vector<std::string> ins{x_in, w_in};
      if (n.inputs[bias_in]) ins.push_back(in(n, bias_in));
      op(
          "Gemm", ins, [](onnx::NodeProto* p) { attr_i(p, "transB", 1); }, y);
    } else {
      const std::string w = op("Transpose", {w_in}, [](onnx::NodeProto* p) { attr_ints(p, "perm", {1, 0}); });
      if (n.inputs[bias_in])
        op("Add", {op("MatMul", {x_in, w}), in(n, bias_in)}, {}, y);
      else
        op("MatMul", {x_in, w}, {}, y);
    }
    if (act) activation(y, at[act_at].s(), at[lo_at].f(), at[hi_at].f(), fused ? out_type(n) : DType::f32, out(n));
    return;
  }
  if (name == "matmul" || name == "mm" || name == "bmm") {
    op("MatMul", {in(n, 0), in(n, 1)}, {}, out(n));
    return;
  }
  if (name == "conv2d" || name == "conv_transpose2d" || name == "fused_conv2d" || name == "quantized_conv2d") {
    // fused_conv2d (and quantized_conv2d unless "none"): Conv, then its activation (Relu
    // or Clip, x * Sigmoid(x), HardSwish).
    static_assert(oa::fused_conv2d::stride == oa::conv2d::stride && oa::fused_conv2d::padding == oa::conv2d::padding &&
                  oa::fused_conv2d::dilation == oa::conv2d::dilation && oa::fused_conv2d::groups == oa::conv2d::groups);
    static_assert(
        oa::quantized_conv2d::stride == oa::conv2d::stride && oa::quantized_conv2d::padding == oa::conv2d::padding &&
        oa::quantized_conv2d::dilation == oa::conv2d::dilation && oa::quantized_conv2d::groups == oa::conv2d::groups);
    static_assert(oa::quantized_conv2d::activation == oa::fused_conv2d::activation + 2 &&
                  oa::quantized_conv2d::min_val == oa::fused_conv2d::min_val + 2 &&
                  oa::quantized_conv2d::max_val == oa::fused_conv2d::max_val + 2);
    const size_t act_shift = quantized ? 2 : 0;  // quantized_conv2d's input_scale and zero point come first
    const bool tr = name == "conv_transpose2d",
               fused = name == "fused_conv2d" ||
                       (quantized && at[oa::quantized_conv2d::activation].s() != std::string("none"));
    auto pair = [](const std::vector<int64_t>& v, int64_t dflt) {
      return v.empty() ? std::vector<int64_t>{dflt, dflt} : v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
    };
    const auto stride = pair(at[tr ? oa::conv_transpose2d::stride : oa::conv2d::stride].ints(), 1);
    const auto padding = pair(at[tr ? oa::conv_transpose2d::padding : oa::conv2d::padding].ints(), 0);
    const auto dilation = pair(at[tr ? oa::conv_transpose2d::dilation : oa::conv2d::dilation].ints(), 1);
    const int64_t groups = at[tr ? oa::conv_transpose2d::groups : oa::conv2d::groups].i();
    std::vector<std::string> ins{batch1(x_in, x0), w_in};
    if (n.inputs[bias_in]) ins.push_back(in(n, bias_in));
    const std::string y = op(
        tr ? "ConvTranspose" : "Conv", ins,
        [&](onnx::NodeProto* p) {
          attr_ints(p, "strides", stride);
          attr_ints(p, "pads", {padding[0], padding[1], padding[0], padding[1]});
          attr_ints(p, "dilations", dilation);
          attr_i(p, "group", groups);
          if (tr) attr_ints(p, "output_padding", pair(at[oa::conv_transpose2d::output_padding].ints(), 0));
        },
        fused ? fresh("conv") : unbatched_out(n));
    if (fused) {
      const std::string yo = unbatched_out(n);
      activation(y, at[oa::fused_conv2d::activation + act_shift].s(), at[oa::fused_conv2d::min_val + act_shift].f(),
                 at[oa::fused_conv2d::max_val + act_shift].f(), quantized ? DType::f32 : out_type(n), yo);
      unbatch(yo, n);
    } else {
      unbatch(y, n);
    }
    return;
  }
  if (name == "max_pool2d" || name == "avg_pool2d" || name == "max_pool2d_with_indices") {
    static_assert(oa::max_pool2d::kernel_size == oa::max_pool2d_with_indices::kernel_size &&
                  oa::max_pool2d::stride == oa::max_pool2d_with_indices::stride &&
                  oa::max_pool2d::padding == oa::max_pool2d_with_indices::padding &&
                  oa::max_pool2d::dilation == oa::max_pool2d_with_indices::dilation &&
                  oa::max_pool2d::ceil_mode == oa::max_pool2d_with_indices::ceil_mode);
    const bool indices = name == "max_pool2d_with_indices", mx = name == "max_pool2d" || indices;
    auto pair = [](const std::vector<int64_t>& v, const std::vector<int64_t>& dflt) {
      return v.empty() ? dflt : v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
    };
    const auto kernel = pair(at[mx ? oa::max_pool2d::kernel_size : oa::avg_pool2d::kernel_size].ints(), {1, 1});
    const auto stride = pair(at[mx ? oa::max_pool2d::stride : oa::avg_pool2d::stride].ints(), kernel);
    const auto padding = pair(at[mx ? oa::max_pool2d::padding : oa::avg_pool2d::padding].ints(), {0, 0});
    const bool ceil = at[mx ? oa::max_pool2d::ceil_mode : oa::avg_pool2d::ceil_mode].b();
    // divisor_override d: the window's sum over d, which is the average counting padding
    // times kh * kw / d where no window runs past the padding (no ceil_mode)
    const Attr none;
    const Attr& divisor = mx ? none : at[oa::avg_pool2d::divisor_override];
    const bool divided = !mx && !divisor.is_none();
    if (divided && ceil) throw Refuse{"divisor_override with ceil_mode (ONNX's AveragePool has no divisor)"};
    auto window = [&](onnx::NodeProto* p) {
      attr_ints(p, "kernel_shape", kernel);
      attr_ints(p, "strides", stride);
      attr_ints(p, "pads", {padding[0], padding[1], padding[0], padding[1]});
      attr_i(p, "ceil_mode", ceil ? 1 : 0);
      if (mx) attr_ints(p, "dilations", pair(at[oa::max_pool2d::dilation].ints(), {1, 1}));
      if (!mx) attr_i(p, "count_include_pad", divided || at[oa::avg_pool2d::count_include_pad].b() ? 1 : 0);
    };
    if (indices) {
      // ONNX numbers each maximum over the whole tensor, (n * C + c) * H * W + h * W + w;
      // PyTorch's index is within its plane: the remainder by H * W.
      const int64_t hw = static_dim(x0, -2, name.c_str()) * static_dim(x0, -1, name.c_str());
      const bool lifted = rank(x0) == 3;  // batch1 added a batch dim: squeeze it off both outputs
      const std::string y = lifted ? fresh("batch1") : out(n, 0), flat = fresh("indices");
      const std::string plane = lifted ? fresh("batch1") : out(n, 1);
      window(add("MaxPool", {batch1(in(n, 0), x0)}, {y, flat}));
      op("Mod", {flat, int_scalar(hw)}, {}, plane);
      if (lifted) {
        op("Squeeze", {y, ints({0})}, {}, out(n, 0));
        op("Squeeze", {plane, ints({0})}, {}, out(n, 1));
      }
      return;
    }
    const std::string y = op(mx ? "MaxPool" : "AveragePool", {batch1(in(n, 0), x0)}, window);
    unbatch(divided
                ? op("Mul", {y, scalar(double(kernel[0] * kernel[1]) / double(divisor.i()), ot)}, {}, unbatched_out(n))
                : op("Identity", {y}, {}, unbatched_out(n)),
            n);
    return;
  }
  if (name == "roi_align") {  // boxes [K, 5] split into RoiAlign's rois and int64 batch_indices
    namespace ra = oa::roi_align;
    const auto size = at[ra::output_size].ints();
    const std::string rois = op("Slice", {in(n, 1), ints({1}), ints({5}), ints({1})});
    const std::string batch = cast(op("Squeeze", {op("Slice", {in(n, 1), ints({0}), ints({1}), ints({1})}), ints({1})}),
                                   in_type(n, 1), DType::i64);
    op(
        "RoiAlign", {in(n, 0), rois, batch},
        [&](onnx::NodeProto* p) {
          attr_i(p, "output_height", size[0]);
          attr_i(p, "output_width", size.size() > 1 ? size[1] : size[0]);
          attr_i(p, "sampling_ratio", std::max<int64_t>(at[ra::sampling_ratio].i(), 0));  // ONNX: 0 is adaptive
          attr_f(p, "spatial_scale", at[ra::spatial_scale].f());
          attr_s(p, "coordinate_transformation_mode", at[ra::aligned].b() ? "half_pixel" : "output_half_pixel");
        },
        out(n));
    return;
  }
  if (name == "max_unpool2d") {
    // Zeros of the output's shape with each plane flattened, self's elements scattered into
    // them at their in-plane indices (ScatterElements along the last dim), reshaped back.
    // (ONNX's MaxUnpool numbers indices over the whole tensor and needs a window.)
    const std::vector<int64_t> flat = rank(x0) == 4 ? std::vector<int64_t>{0, 0, -1} : std::vector<int64_t>{0, -1};
    const std::string shape = sizes(n.outputs[0]->type.shape);
    const std::string zeros = op("Reshape", {op("Expand", {scalar(0, out_type(n)), shape}), ints(flat)});
    const std::string y =
        op("ScatterElements", {zeros, op("Reshape", {in(n, 1), ints(flat)}), op("Reshape", {in(n, 0), ints(flat)})},
           [](onnx::NodeProto* p) { attr_i(p, "axis", -1); });
    op("Reshape", {y, shape}, {}, out(n));
    return;
  }
  if (name == "adaptive_avg_pool2d") {
    const int64_t h = static_dim(x0, -2, "adaptive_avg_pool2d"), w = static_dim(x0, -1, "adaptive_avg_pool2d");
    const int64_t oh = static_dim(n.outputs[0], -2, "adaptive_avg_pool2d"),
                  ow = static_dim(n.outputs[0], -1, "adaptive_avg_pool2d");
    if (oh == 1 && ow == 1) {
      unbatch(op("GlobalAveragePool", {batch1(in(n, 0), x0)}, {}, unbatched_out(n)), n);
      return;
    }
    if (oh == 0 || ow == 0) throw Refuse{str("an empty output (", oh, "x", ow, ")")};
    if (h % oh != 0 || w % ow != 0) {
      // Uneven windows [floor(i * in / out), ceil((i + 1) * in / out)): averaging matrices,
      // P_h [oh, h] @ x @ P_w^T [w, ow].
      auto averaging = [&](int64_t out_size, int64_t in_size, bool transposed) {
        Tensor m = zeros(transposed ? DimVec{in_size, out_size} : DimVec{out_size, in_size}, DType::f64);
        double* p = m.data_ptr<double>();
        for (int64_t i = 0; i < out_size; ++i) {
          const int64_t lo = i * in_size / out_size, hi = ((i + 1) * in_size + out_size - 1) / out_size;
          for (int64_t j = lo; j < hi; ++j) p[transposed ? j * out_size + i : i * in_size + j] = 1.0 / double(hi - lo);
        }
        return initializer(m.to(ot));
      };
      op("MatMul", {op("MatMul", {averaging(oh, h, false), in(n, 0)}), averaging(ow, w, true)}, {}, out(n));
      return;
    }
    unbatch(op(
                "AveragePool", {batch1(in(n, 0), x0)},
                [&](onnx::NodeProto* p) {
                  attr_ints(p, "kernel_shape", {h / oh, w / ow});
                  attr_ints(p, "strides", {h / oh, w / ow});
                },
                unbatched_out(n)),
            n);
    return;
  }
  if (name == "batch_norm") {
    if (at[oa::batch_norm::training].b()) throw Refuse{"training-mode batch norm"};
    if (!n.inputs[3] || !n.inputs[4]) throw Refuse{"batch norm without running statistics"};
    const int64_t c = static_dim(x0, 1, "batch_norm");
    const std::string w = n.inputs[1] ? in(n, 1) : initializer(full({c}, 1.0, ot));
    const std::string b = n.inputs[2] ? in(n, 2) : initializer(full({c}, 0.0, ot));
    op(
        "BatchNormalization", {in(n, 0), w, b, in(n, 3), in(n, 4)},
        [&](onnx::NodeProto* p) { attr_f(p, "epsilon", at[oa::batch_norm::eps].f()); }, out(n));
    return;
  }
  if (name == "layer_norm" || name == "add_layer_norm") {  // add_layer_norm: Add, then the norm
    static_assert(oa::add_layer_norm::normalized_shape == oa::layer_norm::normalized_shape &&
                  oa::add_layer_norm::eps == oa::layer_norm::eps);
    const size_t wi = name == "add_layer_norm" ? 2 : 1;  // weight's input
    const auto& shape = at[oa::layer_norm::normalized_shape].ints();
    const std::string w = n.inputs[wi] ? in(n, wi) : initializer(full(DimVec(shape), 1.0, ot));
    std::vector<std::string> ins{wi == 2 ? op("Add", {in(n, 0), in(n, 1)}) : in(n, 0), w};
    if (n.inputs[wi + 1]) ins.push_back(in(n, wi + 1));
    op(
        "LayerNormalization", ins,
        [&](onnx::NodeProto* p) {
          attr_i(p, "axis", -int64_t(shape.size()));
          attr_f(p, "epsilon", at[oa::layer_norm::eps].f());
        },
        out(n));
    return;
  }
  if (name == "scaled_dot_product_attention" || name == "attention_merge_heads") {  // softmax(q k^T / sqrt(E) + mask) v
    static_assert(oa::scaled_dot_product_attention::is_causal == oa::attention_merge_heads::is_causal);
    const bool merged = name == "attention_merge_heads";  // then transposed and reshaped to [*, L, H * Ev]
    const int r = rank(x0);
    const int64_t e = static_dim(x0, -1, "scaled_dot_product_attention");
    const std::string kt =
        op("Transpose", {in(n, 1)}, [&](onnx::NodeProto* p) { attr_ints(p, "perm", swapping(r, r - 1, r - 2)); });
    std::string s = op("Mul", {op("MatMul", {in(n, 0), kt}), scalar(1.0 / std::sqrt(double(e)), ot)});
    if (n.inputs[3]) {
      if (in_type(n, 3) == DType::b8)
        s = op("Where", {in(n, 3), s, scalar(-kInf, ot)});
      else
        s = op("Add", {s, in(n, 3, ot)});
    }
    if (at[oa::scaled_dot_product_attention::is_causal].b()) {
      const int64_t l = static_dim(x0, -2, "causal attention"), sl = static_dim(n.inputs[1], -2, "causal attention");
      const Tensor mask = tril(ones({l, sl}, DType::b8));  // query i sees keys 0..i
      s = op("Where", {initializer(mask), s, scalar(-kInf, ot)});
    }
    const std::string attn =
        op("MatMul", {op("Softmax", {s}, [](onnx::NodeProto* p) { attr_i(p, "axis", -1); }), in(n, 2)}, {},
           merged ? "" : out(n));
    if (merged) {
      const std::string t =  // heads and rows swapped
          op("Transpose", {attn}, [&](onnx::NodeProto* p) { attr_ints(p, "perm", swapping(r, r - 3, r - 2)); });
      op("Reshape", {t, sizes(n.outputs[0]->type.shape)}, {}, out(n));
    }
    return;
  }
  if (name == "upsample_nearest2d" || name == "upsample_bilinear2d" || name == "upsample_bicubic2d" ||
      name == "upsample_nearest3d" || name == "upsample_trilinear3d") {
    const bool nearest = name == "upsample_nearest2d" || name == "upsample_nearest3d";
    const bool volumetric = name == "upsample_nearest3d" || name == "upsample_trilinear3d";
    namespace ra = resample::resize_attrs;
    const resample::ResizeAttrs& where = nearest      ? ra::nearest(volumetric ? 5 : 4)
                                         : volumetric ? ra::trilinear3d
                                                      : ra::interp2d;
    const bool corners = where.align_corners >= 0 && at[where.align_corners].b();
    // The scale attributes of the spatial dims, in order.
    std::vector<int> scale_at;
    for (int k = volumetric ? 0 : 1; k < 3; ++k) scale_at.push_back(where.scales[k]);
    // Given scales (interpolate's scale_factor) set the coordinates' ratio, so they go as
    // Resize's scales (its output size is then floor(size * scale), as PyTorch's); else sizes.
    std::vector<std::string> ins{in(n, 0), "", "", sizes(n.outputs[0]->type.shape)};
    bool scaled = false;
    for (int i : scale_at) scaled = scaled || !at[i].is_none();
    if (scaled) {
      std::vector<float> ratios{1.f, 1.f};
      for (size_t k = 0; k < scale_at.size(); ++k) {
        const Attr& given = at[scale_at[k]];
        const int d = 2 + int(k);
        ratios.push_back(float(given.is_none() ? double(static_dim(n.outputs[0], d, "upsample")) /
                                                     double(static_dim(x0, d, "upsample"))
                                               : given.f()));
      }
      ins = {in(n, 0), "", initializer(tensor(ratios))};
    }
    op(
        "Resize", ins,
        [&](onnx::NodeProto* p) {
          if (nearest) {
            attr_s(p, "mode", "nearest");
            attr_s(p, "coordinate_transformation_mode", "asymmetric");
            attr_s(p, "nearest_mode", "floor");
          } else {
            attr_s(p, "mode", name == "upsample_bicubic2d" ? "cubic" : "linear");
            attr_s(p, "coordinate_transformation_mode", corners ? "align_corners" : "half_pixel");
            if (name == "upsample_bicubic2d") attr_f(p, "cubic_coeff_a", -0.75);
          }
        },
        out(n));
    return;
  }
  if (name == "upsample_bilinear2d_aa" || name == "upsample_bicubic2d_aa") {
    // Resize antialiases from opset 18 only; the resampling is linear and separable, so it is
    // two products by constant weight matrices: [N, C, H, W] by [W, W_out], then [H_out, H] by it.
    const resample::ResizeAttrs& where = resample::resize_attrs::interp2d;  // (both ops')
    const bool corners = at[where.align_corners].b();
    auto given = [&](int i) { return at[i].is_none() ? 0.0 : at[i].f(); };
    const double sh = given(where.scales[1]), sw = given(where.scales[2]);
    const int64_t h = static_dim(x0, 2, "upsample"), w = static_dim(x0, 3, "upsample"),
                  oh = static_dim(n.outputs[0], 2, "upsample"), ow = static_dim(n.outputs[0], 3, "upsample");
    const bool cubic = name == "upsample_bicubic2d_aa", wide = ot == DType::f64;  // ATen's scalar_t: double or float
    auto matrix = [&](int64_t from, int64_t to, double scale, bool transposed, const DimVec& shape) {
      const Tensor m = wide ? aa_weight_matrix<double>(cubic, from, to, corners, scale, transposed)
                            : aa_weight_matrix<float>(cubic, from, to, corners, scale, transposed);
      return initializer(m.to(ot).reshape(shape));
    };
    if (!wide) {
      op("MatMul", {matrix(h, oh, sh, false, {oh, h}), op("MatMul", {in(n, 0), matrix(w, ow, sw, true, {w, ow})})}, {},
         out(n));
      return;
    }
    // f64, which Amber's matmul (and so its importer's MatMul) lacks: each product a broadcast Mul
    // summed over the contracted dim, [N, C, H, W, 1] by [W, W_out], then [N, C, 1, H, W_out] by
    // [H_out, H, 1].
    auto sum_dim3 = [&](const std::string& x, std::string dst = "") {
      return op(
          "ReduceSum", {x, ints({3})}, [&](onnx::NodeProto* p) { attr_i(p, "keepdims", 0); }, std::move(dst));
    };
    const std::string across =
        sum_dim3(op("Mul", {op("Unsqueeze", {in(n, 0), ints({4})}), matrix(w, ow, sw, true, {w, ow})}));
    sum_dim3(op("Mul", {op("Unsqueeze", {across, ints({2})}), matrix(h, oh, sh, false, {oh, h, 1})}), out(n));
    return;
  }
  if (name == "grid_sample") {
    op(
        "GridSample", {in(n, 0), in(n, 1)},
        [&](onnx::NodeProto* p) {
          attr_s(p, "mode", at[oa::grid_sample::mode].s());
          attr_s(p, "padding_mode", at[oa::grid_sample::padding_mode].s());
          attr_i(p, "align_corners", at[oa::grid_sample::align_corners].b() ? 1 : 0);
        },
        out(n));
    return;
  }
  throw Refuse{"no ONNX mapping"};
}

std::unique_ptr<graph::Graph> Exporter::renamed_body(const Node& n, size_t k,
                                                     const std::map<size_t, std::string>& outer) {
  auto body = std::make_unique<graph::Graph>(n.bodies[k]->clone());
  const std::string prefix = fresh(str(n.op->name, "_body")) + ".";
  for (size_t i = 0; i < body->inputs().size(); ++i) {
    Value* v = body->inputs()[i];
    auto it = outer.find(i);
    v->name = it != outer.end() ? it->second : prefix + v->name;
    used_.insert(v->name);
  }
  for (Node* bn : body->nodes())
    for (Value* v : bn->outputs) {
      v->name = prefix + v->name;
      used_.insert(v->name);
    }
  return body;
}

void Exporter::within(onnx::GraphProto* sub, const std::function<void()>& f) {
  struct Restore {  // the enclosing graph and its symbols again, however f ends
    Exporter& e;
    onnx::GraphProto* gp;
    std::map<char, std::string> symbols;
    ~Restore() {
      e.gp_ = gp;
      e.symbols_ = std::move(symbols);
    }
  } restore{*this, gp_, std::move(symbols_)};
  gp_ = sub;
  symbols_.clear();
  f();
}

void Exporter::body_nodes_and_outputs(const graph::Graph& body, onnx::GraphProto* sub) {
  for (const Node* bn : body.nodes()) node(*bn);
  for (const auto& [name, v] : body.outputs()) set_type(sub->add_output(), op("Identity", {v->name}), v->type);
}

void Exporter::control_flow(const Node& n) {
  const size_t ns = graph::num_state(n), lead = graph::leading_operands(n);
  // Body k's inputs that stand for enclosing values: its captured tensors, and with
  // state_outside its state (If's branches take no inputs).
  auto outer_of = [&](size_t k, bool state_outside) {
    const graph::BodyOperands b = graph::body_operands(n, k);
    std::map<size_t, std::string> m;
    for (size_t c = 0; c < b.num_captures; ++c) m[b.num_prefix + c] = in(n, b.first_capture + c);
    if (state_outside)
      for (size_t i = 0; i < ns; ++i) m[b.num_index + i] = in(n, lead + i);
    return m;
  };
  auto subgraph = [&](onnx::NodeProto* p, const char* attr) {
    auto* a = p->add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* g = a->mutable_g();
    g->set_name(fresh(attr));
    return g;
  };
  std::vector<std::string> outs;
  for (size_t k = 0; k < n.outputs.size(); ++k) outs.push_back(out(n, k));
  const graph::ValueType index{DType::i64, {}}, predicate{DType::b8, {}};
  if (n.op->name == "cond") {
    onnx::NodeProto* p = add("If", {in(n, 0)}, outs);
    for (size_t k = 0; k < 2; ++k) {
      onnx::GraphProto* sub = subgraph(p, k == 0 ? "then_branch" : "else_branch");
      const auto body = renamed_body(n, k, outer_of(k, true));
      within(sub, [&] { body_nodes_and_outputs(*body, sub); });
    }
    return;
  }
  std::vector<std::string> ins;
  std::unique_ptr<graph::Graph> body;
  if (n.op->name == "loop") {
    // Loop(M = the count, no condition): the body's index is Loop's iteration number.
    ins = {cast(in(n, 0), in_type(n, 0), DType::i64), ""};
    body = renamed_body(n, 0, outer_of(0, false));
  } else {
    // while_loop: the condition on the initial state, here; then Loop(no M, that condition),
    // whose body runs the body and the condition on the new state.
    const auto first = renamed_body(n, 0, outer_of(0, true));
    for (const Node* bn : first->nodes()) node(*bn);
    ins = {"", first->outputs()[0].second->name};
    body = renamed_body(n, 1, outer_of(1, false));
  }
  for (size_t i = 0; i < ns; ++i) ins.push_back(in(n, lead + i));
  onnx::NodeProto* p = add("Loop", ins, outs);
  onnx::GraphProto* sub = subgraph(p, "body");
  within(sub, [&] {
    const bool is_loop = n.op->name == "loop";
    set_type(sub->add_input(), is_loop ? body->inputs()[0]->name : fresh("iteration"), index);
    const std::string cond_in = fresh("cond_in");
    set_type(sub->add_input(), cond_in, predicate);
    const size_t first_state = is_loop ? 1 : 0;
    for (size_t i = 0; i < ns; ++i)
      set_type(sub->add_input(), body->inputs()[first_state + i]->name, body->inputs()[first_state + i]->type);
    for (const Node* bn : body->nodes()) node(*bn);
    std::string cond_out;
    if (is_loop) {
      cond_out = op("Identity", {cond_in});
    } else {
      std::map<size_t, std::string> m = outer_of(0, false);
      for (size_t i = 0; i < ns; ++i) m[i] = body->outputs()[i].second->name;
      const auto again = renamed_body(n, 0, m);
      for (const Node* bn : again->nodes()) node(*bn);
      cond_out = op("Identity", {again->outputs()[0].second->name});
    }
    set_type(sub->add_output(), cond_out, predicate);
    for (const auto& [name, v] : body->outputs()) set_type(sub->add_output(), op("Identity", {v->name}), v->type);
  });
}

// ONNX's type of an Amber value: dtype and dims, a symbolic one as its text ("N", "T",
// "2*N*T+1").
void set_type(onnx::ValueInfoProto* vi, const std::string& name, const graph::ValueType& t) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_in::dtype_to_onnx(t.dtype));
  auto* shape = tt->mutable_shape();
  for (const SymInt& d : t.shape) {
    auto* dim = shape->add_dim();
    if (d.is_static())
      dim->set_dim_value(d.value);
    else
      dim->set_dim_param(str(d));
  }
}

}  // namespace

namespace {

// What one ONNX file can hold of weights: protobuf's 2 GiB, less room for the graph.
constexpr uint64_t kInlineWeightBytes = (uint64_t(1) << 31) - (uint64_t(64) << 20);

uint64_t weight_bytes(const graph::Graph& g) {
  uint64_t n = 0;
  for (const Value* v : g.constants())
    if (v->data.defined()) n += uint64_t(v->data.numel()) * itemsize(v->data.dtype());
  return n;
}

// g as a checked ONNX model, every weight inline (in memory, a model may pass 2 GiB).
onnx::ModelProto build_model(const graph::Graph& g, const OnnxExportOptions& options) {
  onnx::ModelProto m;
  m.set_ir_version(8);  // opset 17's
  m.set_producer_name(options.producer_name);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  Exporter e(g, m);
  onnx::GraphProto* gp = m.mutable_graph();
  gp->set_name("amber");
  for (const Value* v : g.inputs()) set_type(gp->add_input(), v->name, v->type);
  for (const Value* v : g.constants()) {
    if (!v->data.defined()) throw Error(str("ONNX export: constant %", v->name, " has no data"));
    e.initializer(v->data, v->name);
  }
  std::vector<OnnxExportRefusal> refused;
  for (const Node* n : g.nodes()) {
    try {
      e.node(*n);
    } catch (const Refuse& r) {
      refused.push_back({n->outputs.empty() ? "" : "%" + n->outputs[0]->name, n->op->name, n->source, r.reason});
    }
  }
  if (!refused.empty()) {
    std::string msg = str("ONNX export: ", refused.size(), " node(s) cannot be exported:");
    for (const auto& r : refused)
      msg += str("\n  ", r.value, " (", r.op, r.source.empty() ? "" : ", " + r.source, "): ", r.reason);
    throw OnnxExportError(msg, std::move(refused));
  }
  for (const auto& [name, v] : g.outputs()) {
    if (name != v->name) e.op("Identity", {v->name}, {}, name);
    set_type(gp->add_output(), name, v->type);
  }
  for (const auto& [domain, version] : e.custom_domains) {
    auto* o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  if (options.check) {
    try {
      onnx::checker::check_model(m);
      onnx::ShapeInferenceOptions so{true, 1, false};  // check types, fail on errors
      onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), so);
    } catch (const std::exception& ex) {
      throw Error(str("ONNX export: ONNX's checker refuses the exported model: ", ex.what()));
    }
  }
  return m;
}

// write_file_atomically, its failures as OnnxWriteError.
void write_atomically(const std::string& path, const std::function<void(const WriteChunk&)>& produce) {
  try {
    write_file_atomically(path, produce);
  } catch (const Error& e) {
    throw OnnxWriteError(e.what());
  }
}

std::string serialize(const onnx::ModelProto& m) {
  std::string bytes;
  if (!m.SerializeToString(&bytes)) throw Error("ONNX export: the model does not serialize (over 2 GiB?)");
  return bytes;
}

}  // namespace

std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options) {
  if (options.external_data == OnnxExportOptions::ExternalData::always)
    throw Error("ONNX export: external data needs a file beside the model: export_onnx to a path");
  if (const uint64_t n = weight_bytes(g); n > kInlineWeightBytes)
    throw Error(str("ONNX export: the weights (", n, " bytes) exceed what one ONNX file can hold (2 GiB, protobuf's ",
                    "limit): export_onnx to a path writes them as external data"));
  return serialize(build_model(g, options));
}

OnnxWritten export_onnx(const graph::Graph& g, const std::string& onnx_path, const OnnxExportOptions& options) {
  using X = OnnxExportOptions::ExternalData;
  const uint64_t weights = weight_bytes(g);
  const bool external =
      options.external_data == X::always || (options.external_data == X::automatic && weights > kInlineWeightBytes);
  if (!external && weights > kInlineWeightBytes)
    throw Error(str("ONNX export: the weights (", weights, " bytes) exceed what one ONNX file can hold (2 GiB, ",
                    "protobuf's limit) and external data is off (OnnxExportOptions::external_data)"));
  onnx::ModelProto m = build_model(g, options);
  OnnxWritten written;
  if (external) {
    // Each large initializer's bytes move to the data file; the model keeps its name, type
    // and dims, and where the bytes are (ONNX's external data keys location, offset, length).
    const std::string location = std::filesystem::path(onnx_path).filename().string() + ".data";
    const std::string data_path = onnx_path + ".data";
    write_atomically(data_path, [&](const WriteChunk& write) {
      uint64_t offset = 0;
      static const char kZeros[64] = {};
      for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
        if (t.raw_data().size() < options.external_min_bytes) continue;
        const uint64_t pad = (64 - offset % 64) % 64;
        if ((pad && !write(kZeros, size_t(pad))) || !write(t.raw_data().data(), t.raw_data().size()))
          throw Error(str(data_path, ": write failed"));
        offset += pad;
        auto entry = [&](const char* key, const std::string& value) {
          auto* e = t.add_external_data();
          e->set_key(key);
          e->set_value(value);
        };
        entry("location", location);
        entry("offset", std::to_string(offset));
        entry("length", std::to_string(t.raw_data().size()));
        offset += t.raw_data().size();
        written.external_bytes = offset;
        t.clear_raw_data();
        t.set_data_location(onnx::TensorProto::EXTERNAL);
      }
    });
  }
  const std::string bytes = serialize(m);
  write_atomically(onnx_path, [&](const WriteChunk& write) {
    if (!write(bytes.data(), bytes.size())) throw Error(str(onnx_path, ": write failed"));
  });
  written.model_bytes = bytes.size();
  return written;
}

OnnxWritten export_onnx(const TracedModule& m, const std::string& onnx_path, const OnnxExportOptions& options) {
  return export_onnx(m.graph(), onnx_path, options);
}

OnnxWritten export_onnx(const std::string& archive_path, const std::string& onnx_path,
                        const OnnxExportOptions& options) {
  const LoadedArchive a = read_archive(archive_path);
  return export_onnx(a.graph, onnx_path, options);
}

}  // namespace amber
