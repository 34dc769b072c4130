// Pooling before concatenation: max_pool2d of a channel cat (the cat read by nothing else,
// no input a constant) becomes a cat of each input's max_pool2d. Pooling works per channel,
// so the values are the same, NaN included, and the cat then copies a quarter of the bytes
// after a 2 x 2 or 3 x 3 stride-2 pool (SqueezeNet's fire modules before each pool: their
// expand outputs).

#include <set>

#include "amber/graph/passes.h"

namespace amber::graph {

void pool_before_cat(Graph& g) {
  const std::set<const Value*> outputs = output_values(g);
  std::vector<Node*> pools;  // found first: rewriting frees nodes the walk would visit
  for (Node* pool : g.nodes()) {
    if (pool->op->name != "max_pool2d" || pool->has_symbolic_attrs()) continue;
    const Value* in = pool->inputs[0];
    const Node* cat = in->producer;
    if (!cat || cat->op->name != "cat" || !sole_reader(in, outputs)) continue;
    const int64_t rank = int64_t(in->type.shape.size());
    int64_t dim = cat->attr("dim").i();
    if (dim < 0) dim += rank;
    if ((rank != 3 && rank != 4) || dim != rank - 3) continue;  // the channels of (N,) C, H, W
    // Not when an input is a constant: constant folding has run, so its pool would run on
    // every call.
    bool same = cat->inputs.size() > 1;
    for (const Value* x : cat->inputs)
      same = same && !x->is_constant() && x->type.dtype == in->type.dtype && int64_t(x->type.shape.size()) == rank;
    if (same) pools.push_back(pool);
  }
  for (Node* pool : pools) {
    Node* cat = pool->inputs[0]->producer;
    const int64_t rank = int64_t(pool->outputs[0]->type.shape.size());
    std::vector<Value*> pooled;
    for (Value* x : cat->inputs) {
      ValueType t = pool->outputs[0]->type;
      t.shape[size_t(rank - 3)] = x->type.shape[size_t(rank - 3)];
      Node* p = g.insert_node(pool, pool->op, {x}, pool->attrs, {{g.fresh_name(), t}});
      p->source = pool->source;
      p->scope = pool->scope;
      pooled.push_back(p->outputs[0]);
    }
    Node* joined = g.insert_node(pool, cat->op, pooled, cat->attrs, {{g.fresh_name(), pool->outputs[0]->type}});
    joined->source = cat->source;
    joined->scope = cat->scope;
    g.replace_uses(pool->outputs[0], joined->outputs[0]);
    g.remove_node(pool);
    g.remove_node(cat);
  }
}

}  // namespace amber::graph
