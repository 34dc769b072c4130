// libFuzzer target over amber::load of a whole archive and one call of the model it gives:
// any bytes must give a model that runs (or fails the call with an amber::Error) or a load
// error, never a crash, a leak or undefined behaviour. Calls whose values would exceed 2^20
// elements, or whose kernels would do more than 2e8 of work (schema/op_cost.h; loops capped at
// 64 iterations), are skipped so that a valid but huge graph does not read as a hang.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "amber/graph/graph.h"
#include "amber/loader/model.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"
#include "amber/schema/op_cost.h"

namespace {

// Value v's view at the sizes n (sizes and dtype only), or false when it has more than
// 2^20 elements.
bool view_at(const amber::graph::Value* v, const amber::graph::SymValues& n, amber_tensor_view& view) {
  view = {};
  view.ndim = int32_t(v->type.shape.size());
  view.dtype = int32_t(v->type.dtype);
  if (view.ndim > AMBER_MAX_DIMS) return false;
  int64_t numel = 1;
  for (int i = 0; i < view.ndim; ++i) {
    const int64_t s = v->type.shape[size_t(i)].at(n);
    if (s < 0 || (s > 0 && numel > (int64_t(1) << 20) / s)) return false;
    numel *= s;
    view.sizes[i] = s;
  }
  return true;
}

// The most loop iterations a call may run here (LoadOptions::max_loop_trips).
constexpr int64_t kMaxTrips = 64;

// The work of g's kernels at the sizes n (a control-flow body's counted kMaxTrips times), or
// -1 when a value has more than 2^20 elements or the graph more than 2000 nodes.
double work_of(const amber::graph::Graph& g, const amber::graph::SymValues& n) {
  if (g.nodes().size() > 2000) return -1;
  amber_tensor_view view;
  for (const amber::graph::Value* v : g.inputs())
    if (!view_at(v, n, view)) return -1;
  double work = 0;
  for (const amber::graph::Node* node : g.nodes()) {
    for (const auto& body : node->bodies) {
      const double w = work_of(*body, n);
      if (w < 0) return -1;
      work += double(kMaxTrips) * w;
    }
    std::vector<amber_tensor_view> ins(node->inputs.size()), outs(node->outputs.size());
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!node->inputs[i])
        ins[i].ndim = -1;  // an absent optional input
      else if (!view_at(node->inputs[i], n, ins[i]))
        return -1;
    }
    for (size_t i = 0; i < outs.size(); ++i)
      if (!view_at(node->outputs[i], n, outs[i])) return -1;
    const std::vector<amber::Attr> attrs = node->attrs_at(n);
    std::vector<amber_attr> c_attrs(attrs.size());
    for (size_t i = 0; i < attrs.size(); ++i) amber::fill_c_attr(c_attrs[i], attrs[i], node->op->attr_spec(int(i)));
    work += amber::estimate_work(node->op->cost, ins.data(), int(ins.size()), outs.data(), int(outs.size()),
                                 amber::window_elements(*node->op, c_attrs.data(), int(c_attrs.size())))
                .total();
  }
  return work;
}

// Whether every value has at most 2^20 elements at the sizes n and the kernels of a call
// together at most 2e8 of work.
bool small_enough(const amber::graph::Graph& g, const amber::graph::SymValues& n) {
  const double work = work_of(g, n);
  return work >= 0 && work <= 2e8;
}

}  // namespace

// checklist case: res.fuzz
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  amber::LoadOptions options;
  options.verify_checksums = (size & 1) != 0;  // both paths: mutated weights reach the kernels
  options.num_threads = 1;
  options.max_workspace_bytes = 64 << 20;  // what a hostile graph may make load allocate
  options.max_loop_trips = kMaxTrips;      // a loop's count comes from the (fuzzed) data
  try {
    const amber::Model model = amber::load(std::span<const uint8_t>(data, size), options);
    const amber::graph::SymValues& n = model.traced_sizes();
    if (!small_enough(model.graph(), n)) return 0;
    std::vector<amber::Tensor> inputs;
    for (const amber::IOInfo& io : model.inputs()) inputs.push_back(amber::zeros(io.sizes_at(n), io.dtype));
    (void)model.forward(inputs);
  } catch (const amber::Error&) {
  }
  return 0;
}
