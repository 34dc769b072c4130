// libFuzzer target over amber::load of a whole archive and one call of the model it gives:
// any bytes must give a model that runs (or fails the call with an amber::Error) or a load
// error, never a crash, a leak or undefined behaviour. Calls whose values would exceed 2^20
// elements are skipped so that a valid but huge graph does not read as a hang.

#include <cstddef>
#include <cstdint>
#include <span>

#include "amber/graph/graph.h"
#include "amber/loader/model.h"
#include "amber/schema/eager.h"

namespace {

// Whether every value of the graph has at most 2^20 elements at batch size n.
bool small_enough(const amber::graph::Graph& g, int64_t n) {
  if (g.nodes().size() > 2000) return false;
  auto ok = [n](const amber::graph::Value* v) {
    int64_t numel = 1;
    for (const amber::graph::SymInt& d : v->type.shape) {
      const int64_t s = d.at(n);
      if (s < 0 || (s > 0 && numel > (int64_t(1) << 20) / s)) return false;
      numel *= s;
    }
    return true;
  };
  for (const amber::graph::Value* v : g.inputs())
    if (!ok(v)) return false;
  for (const amber::graph::Node* node : g.nodes())
    for (const amber::graph::Value* v : node->outputs)
      if (!ok(v)) return false;
  return true;
}

}  // namespace

// checklist case: res.fuzz
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  amber::LoadOptions options;
  options.verify_checksums = (size & 1) != 0;  // both paths: mutated weights reach the kernels
  options.num_threads = 1;
  options.max_workspace_bytes = 64 << 20;  // what a hostile graph may make load allocate
  try {
    const amber::Model model = amber::load(std::span<const uint8_t>(data, size), options);
    const int64_t n = model.traced_batch() > 0 ? model.traced_batch() : 1;
    if (!small_enough(model.graph(), n)) return 0;
    std::vector<amber::Tensor> inputs;
    for (const amber::IOInfo& io : model.inputs()) inputs.push_back(amber::zeros(io.sizes_at(n), io.dtype));
    (void)model.forward(inputs);
  } catch (const amber::Error&) {
  }
  return 0;
}
