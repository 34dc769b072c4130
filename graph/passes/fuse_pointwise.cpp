// Pointwise fusion: f32 elementwise nodes whose intermediate results have a single
// consumer are merged into one `fused` node whose program (schema/fused_program.h) lists
// their arithmetic, exactly as each op's kernel computes it (alpha and scalar operands
// included), so fused arithmetic equals unfused arithmetic bit for bit (transcendental
// functions within libmvec's few-ulp accuracy). A group grows from a node to
// the groups of the producers it is the only consumer of, within kMaxFusedInputs inputs
// and kMaxFusedInstructions instructions. A producer whose result the node broadcasts (a
// squeeze-excitation's sigmoid over [N, C, 1, 1] scaling [N, C, H, W]) stays apart: fused,
// its arithmetic would run once per element of the larger output, not once per its own
// (EfficientNet-B0's first such block: 362 us fused against a few for the sigmoid alone).

#include <algorithm>
#include <map>
#include <set>

#include "amber/core/dtype_cast.h"
#include "amber/graph/passes.h"
#include "amber/schema/fused_program.h"

namespace amber::graph {
namespace {

float scalar_of(const Attr& a) {  // as the kernels' attr_scalar<float>
  if (a.kind() == AttrKind::f) return cast_value<float>(a.f());
  if (a.kind() == AttrKind::b) return a.b() ? 1.0f : 0.0f;
  return cast_value<float>(a.i());
}

FusedOperand imm(float v) {
  FusedOperand o;
  o.kind = FusedOperand::Kind::imm;
  o.imm = v;
  return o;
}

bool is_f32(const Value* v) { return v && v->type.dtype == DType::f32; }

// Appends the instructions computing node n, whose tensor operands are `x`; false when the
// node cannot be fused.
bool translate(const Node& n, const std::vector<FusedOperand>& x, std::vector<FusedInstr>& out) {
  const std::string& op = n.op->name;
  // Appends one instruction; returns the temp holding its result.
  auto emit = [&](FusedOp f, FusedOperand a, FusedOperand b = {}, FusedOperand c = {}) {
    out.push_back(FusedInstr{f, fused_op_arity(f), a, b, c});
    FusedOperand t;
    t.kind = FusedOperand::Kind::temp;
    t.index = int(out.size()) - 1;
    return t;
  };
  // Ops that are an instruction of the same name (core/fused_ops.h).
  static const std::map<std::string, FusedOp> unary = [] {
    std::map<std::string, FusedOp> m;
    for (const FusedOpInfo& o : kFusedOps)
      if (o.kind != FusedOpKind::none) m.emplace(o.name, o.op);
    return m;
  }();
  if (auto it = unary.find(op); it != unary.end()) {
    const FusedOpInfo& info = kFusedOps[size_t(it->second)];
    if (info.kind == FusedOpKind::binary) {
      emit(it->second, x[0], x[1]);
    } else {  // the tensor, then the op's Scalar attributes
      emit(it->second, x[0], info.arity > 1 ? imm(scalar_of(n.attrs[0])) : FusedOperand{},
           info.arity > 2 ? imm(scalar_of(n.attrs[1])) : FusedOperand{});
    }
    return true;
  }
  if (op == "gelu") {
    emit(n.attr("approximate").s() == "tanh" ? FusedOp::gelu_tanh : FusedOp::gelu, x[0]);
    return true;
  }
  if (op == "add" || op == "sub") {
    const float alpha = scalar_of(n.attr("alpha"));
    const FusedOp f = op == "add" ? FusedOp::add : FusedOp::sub;
    if (alpha == 1.0f)
      emit(f, x[0], x[1]);
    else
      emit(f, x[0], emit(FusedOp::mul, x[1], imm(alpha)));
    return true;
  }
  if (op == "add.Scalar" || op == "sub.Scalar") {  // kernel: self op (alpha * other)
    const float s = scalar_of(n.attr("alpha")) * scalar_of(n.attr("other"));
    emit(op == "add.Scalar" ? FusedOp::add : FusedOp::sub, x[0], imm(s));
    return true;
  }
  if (op == "rsub.Scalar") {  // kernel: other - alpha * self
    const float other = scalar_of(n.attr("other")), alpha = scalar_of(n.attr("alpha"));
    if (alpha == 1.0f)
      emit(FusedOp::sub, imm(other), x[0]);
    else
      emit(FusedOp::sub, imm(other), emit(FusedOp::mul, x[0], imm(alpha)));
    return true;
  }
  if (op == "mul") return emit(FusedOp::mul, x[0], x[1]), true;
  if (op == "mul.Scalar") return emit(FusedOp::mul, x[0], imm(scalar_of(n.attr("other")))), true;
  if (op == "div") {
    if (!n.attr("rounding_mode").is_none()) return false;
    emit(FusedOp::div, x[0], x[1]);
    return true;
  }
  if (op == "div.Scalar") {
    if (!n.attr("rounding_mode").is_none()) return false;
    emit(FusedOp::div, x[0], imm(scalar_of(n.attr("other"))));
    return true;
  }
  if (op == "pow") return emit(FusedOp::pow, x[0], x[1]), true;
  if (op == "pow.Scalar") return emit(FusedOp::pow, x[0], imm(scalar_of(n.attr("exponent")))), true;
  if (op == "clamp" || op == "hardtanh") {
    const bool c = op == "clamp";
    const Attr &min = n.attr(c ? "min" : "min_val"), &max = n.attr(c ? "max" : "max_val");
    const bool lo = !min.is_none(), hi = !max.is_none();
    if (lo && hi)
      emit(FusedOp::clamp, x[0], imm(scalar_of(min)), imm(scalar_of(max)));
    else if (lo)
      emit(FusedOp::clamp_min, x[0], imm(scalar_of(min)));
    else
      emit(FusedOp::clamp_max, x[0], imm(scalar_of(max)));
    return true;
  }
  return false;
}

bool fusible(const Node& n) {
  if (!(n.op->flags & op_flags::pointwise) || n.op->name == "fused" || n.op->name == "to" || n.outputs.size() != 1)
    return false;
  if (n.has_symbolic_attrs() || !is_f32(n.outputs[0])) return false;
  for (const Value* in : n.inputs)
    if (!is_f32(in)) return false;
  std::vector<FusedOperand> dummy(n.inputs.size());
  std::vector<FusedInstr> probe;
  return translate(n, dummy, probe);
}

// Groups of at least min_nodes nodes become `fused` nodes.
void fuse_groups(Graph& g, size_t min_nodes) {
  const std::set<const Value*> graph_outputs = output_values(g);
  std::vector<Node*> nodes = g.nodes();
  std::map<const Node*, int> order;
  for (size_t i = 0; i < nodes.size(); ++i) order[nodes[i]] = int(i);

  std::map<const Node*, int> group_of;
  std::vector<std::vector<Node*>> groups;
  auto external_inputs = [&](const std::vector<Node*>& members) {
    std::set<const Node*> in_group(members.begin(), members.end());
    std::vector<Value*> ext;
    for (const Node* m : members)
      for (Value* in : m->inputs)
        if (!(in->producer && in_group.count(in->producer)) && std::find(ext.begin(), ext.end(), in) == ext.end())
          ext.push_back(in);
    return ext;
  };
  auto instruction_count = [&](const std::vector<Node*>& members) {
    size_t count = 0;
    for (const Node* m : members) {
      std::vector<FusedOperand> dummy(m->inputs.size());
      std::vector<FusedInstr> probe;
      translate(*m, dummy, probe);
      count += probe.size();
    }
    return count;
  };
  for (Node* n : nodes) {
    if (!fusible(*n)) continue;
    std::set<int> merge;
    for (const Value* in : n->inputs) {
      if (!in->producer || !group_of.count(in->producer) || graph_outputs.count(in)) continue;
      if (!(in->type.shape == n->outputs[0]->type.shape)) continue;  // broadcast into n
      std::set<const Node*> users(in->uses.begin(), in->uses.end());
      if (users.size() == 1) merge.insert(group_of[in->producer]);
    }
    std::vector<Node*> members{n};
    for (int gi : merge) members.insert(members.end(), groups[size_t(gi)].begin(), groups[size_t(gi)].end());
    if (members.size() > 1 && (external_inputs(members).size() > size_t(kMaxFusedInputs) ||
                               instruction_count(members) > size_t(kMaxFusedInstructions))) {
      members = {n};
      merge.clear();
    }
    for (int gi : merge) groups[size_t(gi)].clear();
    const int id = int(groups.size());
    for (Node* m : members) group_of[m] = id;
    groups.push_back(std::move(members));
  }

  const OpSchema& fused_op = op_schema("fused");
  for (std::vector<Node*>& members : groups) {
    if (members.size() < min_nodes) continue;
    std::sort(members.begin(), members.end(), [&](const Node* a, const Node* b) { return order[a] < order[b]; });
    const std::vector<Value*> ext = external_inputs(members);
    std::map<const Value*, FusedOperand> operand;
    for (size_t i = 0; i < ext.size(); ++i) {
      FusedOperand o;
      o.kind = FusedOperand::Kind::input;
      o.index = int(i);
      operand[ext[i]] = o;
    }
    FusedProgram program;
    for (const Node* m : members) {
      std::vector<FusedOperand> x;
      for (const Value* in : m->inputs) x.push_back(operand.at(in));
      translate(*m, x, program.instrs);
      FusedOperand t;
      t.kind = FusedOperand::Kind::temp;
      t.index = int(program.instrs.size()) - 1;
      operand[m->outputs[0]] = t;
    }
    Node* last = members.back();
    Node* f = g.insert_node(last, &fused_op, ext, {Attr(format_fused_program(program))},
                            {{g.fresh_name(), last->outputs[0]->type}});
    f->source = last->source;
    f->scope = last->scope;
    g.replace_uses(last->outputs[0], f->outputs[0]);
    for (auto it = members.rbegin(); it != members.rend(); ++it) g.remove_node(*it);
  }
}

}  // namespace

void fuse_pointwise(Graph& g) { fuse_groups(g, 2); }
void fuse_pointwise_all(Graph& g) { fuse_groups(g, 1); }

}  // namespace amber::graph
