// Liveness-based buffer planning (passes.h). Layouts are simulated with the op table: the
// inference gives each kernel output's memory format, view functions give views' strides,
// so maybe-view ops are known to alias or copy. A pointwise node writes in place of an
// input that dies there when both have one layout. Buffers are placed greedily, largest
// first, at the lowest 64-byte aligned offset that no buffer live at the same time uses.

#include <algorithm>
#include <set>
#include <sstream>

#include "amber/graph/passes.h"

namespace amber::graph {
namespace {

size_t round_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

bool same_layout(const Layout& a, const Layout& b) {
  return a.sizes == b.sizes && a.strides == b.strides && a.offset == b.offset;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g) {
  AMBER_CHECK(!g.is_dynamic(), "plan_memory: instantiate the graph at its symbols' values first");
  MemoryPlan plan;
  std::map<const Value*, Layout> layout;
  std::map<const Value*, const Value*> owner;  // value -> value owning its memory (itself for buffers)
  std::map<const Value*, int> first, last;
  auto contiguous = [](const ValueType& t) {
    Layout l;
    l.sizes = static_shape(t.shape);
    l.strides = contiguous_strides(l.sizes);
    return l;
  };
  for (const Value* v : g.inputs()) layout[v] = contiguous(v->type), owner[v] = v;
  for (const Value* c : g.constants()) {
    layout[c] = c->data.defined() ? Layout{c->data.sizes(), c->data.strides(), 0} : contiguous(c->type);
    owner[c] = c;
  }
  const std::vector<Node*> nodes = g.nodes();
  for (int idx = 0; idx < int(nodes.size()); ++idx) {
    const Node* n = nodes[size_t(idx)];
    std::vector<TensorMeta> metas(n->inputs.size());
    std::vector<const TensorMeta*> ptrs;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      if (!in) {
        ptrs.push_back(nullptr);
        continue;
      }
      const Layout& l = layout.at(in);
      metas[i] = {in->type.dtype, l.sizes,
                  is_channels_last(l.sizes, l.strides) ? MemoryFormat::channels_last : MemoryFormat::contiguous};
      ptrs.push_back(&metas[i]);
      last[owner.at(in)] = idx;
    }
    InferCtx ctx(*n->op, ptrs.data(), int(ptrs.size()), n->attrs.data(), int(n->attrs.size()));
    n->op->infer(ctx);
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const Value* out = n->outputs[i];
      // cond's outputs are its branches' (graph/control_flow.h): inference gives none, the
      // recorded (static, verified) type is the layout's.
      const TensorMeta m = i < size_t(ctx.num_outputs())
                               ? ctx.outputs()[i]
                               : TensorMeta{out->type.dtype, static_shape(out->type.shape)};
      Layout l;
      bool is_view = false;
      if (n->op->is_view() || n->op->is_maybe_view()) is_view = n->op->view(ctx, layout.at(n->inputs[0]), int(i), l);
      if (is_view) {
        layout[out] = l;
        owner[out] = owner.at(n->inputs[0]);
        plan.views[out] = owner[out];
        continue;
      }
      l.sizes = m.sizes;
      l.strides = m.format == MemoryFormat::channels_last && m.sizes.size() == 4 ? channels_last_strides(m.sizes)
                                                                                 : contiguous_strides(m.sizes);
      layout[out] = l;
      owner[out] = out;
      first[out] = last[out] = idx;
    }
  }
  // Buffers behind graph outputs belong to the caller.
  std::set<const Value*> escaped;
  for (const auto& [name, v] : g.outputs()) escaped.insert(owner.at(v));
  // In place: a pointwise node's output takes the buffer of an input read last by this node,
  // of the same layout and element size (each element is read before the same element is
  // written, by every pointwise kernel), when no other input views that buffer differently.
  // Graph outputs and the caller's inputs and weights are never written this way.
  std::map<const Value*, std::vector<const Value*>> aliases;  // buffer -> the values in it
  for (const auto& [v, o] : owner)
    if (v != o) aliases[o].push_back(v);
  for (int idx = 0; idx < int(nodes.size()); ++idx) {
    const Node* n = nodes[size_t(idx)];
    if (!(n->op->flags & op_flags::pointwise) || (n->op->flags & op_flags::no_in_place) || n->outputs.size() != 1)
      continue;
    const Value* out = n->outputs[0];
    if (owner.at(out) != out || escaped.count(out)) continue;
    for (const Value* in : n->inputs) {
      if (!in) continue;
      const Value* root = owner.at(in);
      if (!first.count(root) || escaped.count(root) || last.at(root) != idx ||
          itemsize(in->type.dtype) != itemsize(out->type.dtype) || !same_layout(layout.at(in), layout.at(out)) ||
          !same_layout(layout.at(root), layout.at(out)))
        continue;
      bool clash = false;
      for (const Value* other : n->inputs)
        clash |= other && owner.at(other) == root && !same_layout(layout.at(other), layout.at(out));
      if (clash) continue;
      std::vector<const Value*>& moved = aliases[root];
      for (const Value* v : aliases[out]) {
        owner[v] = root;
        plan.views[v] = root;
        moved.push_back(v);
      }
      moved.push_back(out);
      aliases.erase(out);
      owner[out] = root;
      plan.views[out] = root;
      plan.in_place.insert(out);
      last[root] = last.at(out);
      first.erase(out);
      last.erase(out);
      break;
    }
  }
  std::vector<BufferAssignment> bufs;
  for (const Node* n : nodes)
    for (const Value* out : n->outputs) {
      if (owner.at(out) != out || escaped.count(out)) continue;
      const size_t bytes = round_up(size_t(checked_numel(layout.at(out).sizes)) * itemsize(out->type.dtype));
      bufs.push_back({out, 0, bytes, first.at(out), last.at(out)});
    }
  // Greedy placement, largest first.
  std::vector<size_t> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    BufferAssignment& b = bufs[i];
    std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping live buffers
    for (size_t j : placed) {
      const BufferAssignment& o = bufs[j];
      if (o.first <= b.last && b.first <= o.last) busy.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto [s, e] : busy) {
      if (offset + b.bytes <= s) break;
      offset = std::max(offset, e);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    plan.naive_bytes += b.bytes;
    placed.push_back(i);
  }
  plan.buffers = std::move(bufs);
  plan.layouts = std::move(layout);
  return plan;
}

std::string to_text(const MemoryPlan& p) {
  std::ostringstream os;
  for (const BufferAssignment& b : p.buffers)
    os << "%" << b.value->name << ": offset " << b.offset << ", " << b.bytes << " bytes, nodes [" << b.first << ", "
       << b.last << "]\n";
  std::vector<std::pair<const Value*, const Value*>> views(p.views.begin(), p.views.end());
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.first->name < b.first->name; });
  for (const auto& [v, base] : views)
    os << "%" << v->name << (p.in_place.count(v) ? ": in place of %" : ": view of %") << base->name << "\n";
  os << "arena " << p.arena_bytes << " bytes for " << p.buffers.size() << " buffers (" << p.naive_bytes
     << " bytes without sharing)\n";
  return os.str();
}

}  // namespace amber::graph
