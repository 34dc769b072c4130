// Materialising type promotion: the dispatcher converts the inputs an op's inference marks
// (InferCtx::cast_mask) to the compute dtype before the kernel runs. This pass makes those
// conversions explicit `to` nodes, so an executor can run every node's kernel directly.

#include "amber/graph/passes.h"

namespace amber::graph {

void materialize_casts(Graph& g) {
  AMBER_CHECK(!g.is_dynamic(), "materialize_casts: instantiate the graph at its symbols' values first");
  static const OpSchema& to_op = op_schema("to");
  for (Node* n : g.nodes()) {
    if (!n->op->needs_kernel() || n->op->is_maybe_view()) continue;  // views never convert
    std::vector<TensorMeta> metas(n->inputs.size());
    std::vector<const TensorMeta*> ptrs;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->inputs[i];
      if (v) metas[i] = {v->type.dtype, static_shape(v->type.shape)};
      ptrs.push_back(v ? &metas[i] : nullptr);
    }
    InferCtx ctx(*n->op, ptrs.data(), int(ptrs.size()), n->attrs.data(), int(n->attrs.size()));
    n->op->infer(ctx);
    for (size_t i = 0; i < n->inputs.size() && i < 32; ++i) {
      Value* in = n->inputs[i];
      if (!(ctx.cast_mask & (1u << i)) || !in || in->type.dtype == ctx.compute_dtype) continue;
      Node* cast = g.insert_node(n, &to_op, {in}, {Attr(ctx.compute_dtype)},
                                 {{g.fresh_name(), ValueType{ctx.compute_dtype, in->type.shape}}});
      cast->source = n->source;
      cast->scope = n->scope;
      g.set_input(n, i, cast->outputs[0]);
    }
  }
}

}  // namespace amber::graph
