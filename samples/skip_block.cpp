// A residual block skipped by a tensor predicate with amber::cond: applied when the input's
// mean magnitude exceeds 1. The trace records both branches in one `cond` node, so the
// loaded archive decides per input, as the eager code does.
#include "models/control.h"

int main() {
  using namespace amber;
  const models::SkipBlock block = models::random_skip_block();
  manual_seed(6);
  const Tensor small = randn({4, 6}) * 0.5, large = randn({4, 6}) * 3;
  TracedModule traced = trace([&](const Tensor& x) { return block.forward(x); }, {small});
  std::cout << traced.graph();
  const Model loaded = load(traced.save_to_bytes());
  int bad = 0;
  for (const auto& [name, x] : {std::pair<const char*, Tensor>{"small", small}, {"large", large}}) {
    const Tensor eager = block.forward(x), got = loaded.forward({x})[0];
    const float diff = (eager - got).abs().amax().item<float>();
    const bool applied = (got - x).abs().amax().item<float>() > 0;
    std::cout << name << " input: block " << (applied ? "applied" : "skipped") << ", max |eager - loaded| " << diff
              << " \n";
    bad += !(diff <= 1e-5f);
  }
  return bad;
}
