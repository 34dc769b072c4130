// Product-activation fusion: a conv2d or linear whose f32 output is read only by an activation —
// relu, relu6, hardtanh or clamp (bounds in order, either may be infinite), silu (or
// sigmoid(x) * x), hardswish, as a single op or as a one-input `fused` program spelling one of
// them — becomes one fused_conv2d or fused_linear, whose kernel applies the activation as it
// writes the output (oneDNN's post-ops on the CPU, when no NaN can be lost: see
// kernels/cpu/conv.cpp) or over the product while it is fresh, instead of a node of its own.
// Runs after pointwise fusion, which is where ONNX's Clip (ReLU6) and Sigmoid-Mul (SiLU) chains
// become programs. ReLU is clamp to [0, inf] (the same result, NaN and -0.0 included).

#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "amber/graph/passes.h"
#include "amber/schema/fused_program.h"

namespace amber::graph {
namespace {

struct Activation {
  const char* name;
  double lo = 0, hi = 6;  // clamp's bounds (the op's defaults otherwise)
};

constexpr double kInf = std::numeric_limits<double>::infinity();

// Bounds in order, either may be infinite; NaN bounds or lo > hi (clamp's rule: gives hi)
// stay unfused.
std::optional<Activation> clamp_of(double lo, double hi) {
  if (!(lo <= hi)) return std::nullopt;
  return Activation{"clamp", lo, hi};
}

// A Scalar attribute as the kernels read it, or +-inf when None.
double bound(const Attr& a, double none) { return a.is_none() ? none : a.f(); }

// The activation a one-input program computes, when it is one of fused_conv2d's (and
// fused_linear's).
std::optional<Activation> program_activation(const FusedProgram& p) {
  using K = FusedOperand::Kind;
  const auto& in = p.instrs;
  auto is_input = [](const FusedOperand& o) { return o.kind == K::input && o.index == 0; };
  auto is_temp = [](const FusedOperand& o, int t) { return o.kind == K::temp && o.index == t; };
  auto imm = [](const FusedOperand& o) { return o.kind == K::imm ? std::optional<double>(o.imm) : std::nullopt; };
  if (in.size() == 1 && is_input(in[0].a)) {
    switch (in[0].op) {
      case FusedOp::relu:
        return Activation{"clamp", 0, kInf};
      case FusedOp::relu6:
        return Activation{"clamp", 0, 6};
      case FusedOp::silu:
        return Activation{"silu"};
      case FusedOp::hardswish:
        return Activation{"hardswish"};
      case FusedOp::clamp:
        if (imm(in[0].b) && imm(in[0].c)) return clamp_of(*imm(in[0].b), *imm(in[0].c));
        return std::nullopt;
      case FusedOp::clamp_min:
        if (imm(in[0].b)) return clamp_of(*imm(in[0].b), kInf);
        return std::nullopt;
      case FusedOp::clamp_max:
        if (imm(in[0].b)) return clamp_of(-kInf, *imm(in[0].b));
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }
  if (in.size() != 2) return std::nullopt;
  // clamp_min(i0, lo); clamp_max(t0, hi)
  if (in[0].op == FusedOp::clamp_min && in[1].op == FusedOp::clamp_max && is_input(in[0].a) && is_temp(in[1].a, 0) &&
      imm(in[0].b) && imm(in[1].b))
    return clamp_of(*imm(in[0].b), *imm(in[1].b));
  // sigmoid(i0); mul(i0, t0) or mul(t0, i0)
  if (in[0].op == FusedOp::sigmoid && is_input(in[0].a) && in[1].op == FusedOp::mul &&
      ((is_input(in[1].a) && is_temp(in[1].b, 0)) || (is_temp(in[1].a, 0) && is_input(in[1].b))))
    return Activation{"silu"};
  return std::nullopt;
}

// The activation node n applies to its input 0, when it is one of fused_conv2d's.
std::optional<Activation> activation_of(const Node& n) {
  const std::string& op = n.op->name;
  if (op == "relu") return Activation{"clamp", 0, kInf};
  if (op == "relu6") return Activation{"clamp", 0, 6};
  if (op == "silu") return Activation{"silu"};
  if (op == "hardswish") return Activation{"hardswish"};
  if (op == "hardtanh") return clamp_of(n.attr("min_val").f(), n.attr("max_val").f());
  if (op == "clamp") return clamp_of(bound(n.attr("min"), -kInf), bound(n.attr("max"), kInf));
  if (op == "fused" && n.inputs.size() == 1) {
    try {
      return program_activation(parse_fused_program(n.attr("program").s(), 1));
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

void fuse_product_activation(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  const OpSchema &fused_conv = op_schema("fused_conv2d"), &fused_linear = op_schema("fused_linear");
  struct Match {
    Node *product, *act_node;
    Activation act;
  };
  std::vector<Match> matches;  // found first: rewriting frees nodes the walk would visit
  for (Node* product : g.nodes()) {
    if (product->op->name != "conv2d" && product->op->name != "linear") continue;
    Value* y = product->outputs[0];
    if (y->type.dtype != DType::f32 || !sole_reader(y, outputs)) continue;
    Node* act_node = y->uses[0];
    if (act_node->inputs.empty() || act_node->inputs[0] != y || act_node->outputs.size() != 1) continue;
    if (!(act_node->outputs[0]->type == y->type)) continue;
    if (const std::optional<Activation> act = activation_of(*act_node)) matches.push_back({product, act_node, *act});
  }
  for (const Match& m : matches) {
    const bool conv = m.product->op->name == "conv2d";
    std::vector<Attr> attrs;
    if (conv)
      attrs = {m.product->attr("stride"), m.product->attr("padding"), m.product->attr("dilation"),
               m.product->attr("groups")};
    attrs.insert(attrs.end(), {Attr(m.act.name), Attr(m.act.lo), Attr(m.act.hi)});
    Node* f = g.insert_node(m.act_node, conv ? &fused_conv : &fused_linear, m.product->inputs, std::move(attrs),
                            {{g.fresh_name(), m.act_node->outputs[0]->type}});
    f->source = m.product->source;
    f->scope = m.product->scope;
    g.replace_uses(m.act_node->outputs[0], f->outputs[0]);
    g.remove_node(m.act_node);
    g.remove_node(m.product);
  }
}

}  // namespace amber::graph
