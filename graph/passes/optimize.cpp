// The pass pipeline run on traced graphs before they are saved (passes.h).

#include "amber/graph/passes.h"

namespace amber::graph {

void optimize(Graph& g) {
  remove_identities(g);
  fold_constants(g);
  fold_batch_norm(g);
  eliminate_common_subexpressions(g);
  fuse_attention(g);
  fuse_layer_norm(g);
  fuse_pointwise(g);
  eliminate_dead_code(g);
}

}  // namespace amber::graph
