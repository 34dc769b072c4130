// trace(): runs a module or function once on example inputs while recording every op the
// dispatcher executes into a graph (the ops still run, so printing and debugging inside
// forward keep working), freezes parameters and captured tensors as named constants,
// optimises the graph, and returns a TracedModule that runs it. check_trace() re-runs the
// code on other inputs and reports the first node where eager execution and the graph
// disagree. README.md ("Tracing") says what tracing cannot capture and what to do about it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "amber/graph/graph.h"
#include "amber/nn/module.h"
#include "amber/serialize/archive_writer.h"

namespace amber {

struct TraceOptions {
  // Names of inputs and outputs (default input0.., output0..); they key the CLI's files.
  std::vector<std::string> input_names, output_names;
  // Warnings (host reads of traced values, random ops) become errors.
  bool strict = false;
  // Dim `batch_dim` of every input but 0-d ones (a loop's count, a limit) is the batch size
  // N (a dynamic dim, below, named N for each such input): sizes that follow the batch become
  // expressions in N. A structure or constant that depends on the batch size is an error at
  // trace time.
  bool dynamic_batch = false;
  // The inputs' batch dim: 0 ([N, ...], batch-first) unless the model is sequence-first
  // ([T, N, ...]: 1).
  int batch_dim = 0;
  // Dims that vary between calls, each named by a symbol: one upper-case letter ("T" for a
  // sequence length; "N" is the batch dynamic_batch names), at most 3 symbols. Dims with one
  // symbol have one size in the examples. The model is traced at the examples' sizes and at
  // each combination of symbols one larger (2^k traces), the graphs unified into sizes and
  // attributes that are sums of products of the symbols ("N*T", "64*T+1"), and once more with
  // every symbol two larger to check that fit; what does not fit (a division by a size, a
  // size squared, a structure that changes) is an error naming the node and source line.
  struct DynamicDim {
    size_t input = 0;  // index into the inputs
    int dim = 0;
    char symbol = 'T';
  };
  std::vector<DynamicDim> dynamic_dims;
  // Run the optimisation passes (constant and batch-norm folding, CSE, fusion, DCE).
  bool optimize = true;
  // Print warnings to standard error when the trace ends.
  bool print_warnings = true;
};

struct TraceWarning {
  std::string kind;    // "host read", "random"
  std::string source;  // "model.cpp:12" ("?" when unknown)
  std::string message;
};

// A function of tensors, the form every traced callable is adapted to.
using TraceFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

class TracedModule {
 public:
  // The optimised graph (what is saved and run).
  const graph::Graph& graph() const;
  // The graph as recorded, before any pass (check_trace compares against it).
  const graph::Graph& recorded_graph() const;
  const std::vector<TraceWarning>& warnings() const;
  // The example inputs given to trace().
  const std::vector<Tensor>& example_inputs() const;
  // Runs the graph; inputs are checked against the graph's input types.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) const;
  // Saves the optimised graph, its weights and the trace's metadata (example shapes,
  // warnings) as an archive (docs/FORMAT.md), atomically.
  void save(const std::string& path, const SaveOptions& options = {}) const;
  // The archive's bytes, as save() would write them.
  std::vector<uint8_t> save_to_bytes(const SaveOptions& options = {}) const;
  ArchiveInfo archive_info() const;

  struct State;
  explicit TracedModule(std::shared_ptr<const State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<const State> state_;
};

// Traces fn on inputs. module, when given, names parameters and buffers by their
// state_dict paths ("layer1.0.conv1.weight"); other captured tensors become const_N.
TracedModule trace_function(const TraceFn& fn, const std::vector<Tensor>& inputs, const TraceOptions& options = {},
                            const nn::Module* module = nullptr);

struct CheckTraceResult {
  bool ok = true;
  std::string message;  // the first divergence: node, source line, what differs
};
// Runs fn eagerly on `inputs` (default: random inputs shaped like the examples; integer
// inputs reuse the examples) and compares every node of the recorded graph with it.
CheckTraceResult check_trace_function(const TracedModule& traced, const TraceFn& fn, std::vector<Tensor> inputs = {},
                                      double atol = 1e-5, double rtol = 1e-4, const nn::Module* module = nullptr);

namespace detail {
inline void append_outputs(std::vector<Tensor>& out, const Tensor& t) { out.push_back(t); }
inline void append_outputs(std::vector<Tensor>& out, const std::vector<Tensor>& ts) {
  out.insert(out.end(), ts.begin(), ts.end());
}
template <typename... Ts>
void append_outputs(std::vector<Tensor>& out, const std::tuple<Ts...>& t) {
  std::apply([&](const auto&... x) { (append_outputs(out, x), ...); }, t);
}
template <typename A, typename B>
void append_outputs(std::vector<Tensor>& out, const std::pair<A, B>& p) {
  append_outputs(out, p.first);
  append_outputs(out, p.second);
}

// Calls f with the inputs as a vector if it takes one, else as as many tensor arguments as
// there are inputs (1 to 4).
template <typename F>
std::vector<Tensor> call_with(F& f, const std::vector<Tensor>& in) {
  using T = const Tensor&;
  std::vector<Tensor> out;
  if constexpr (std::is_invocable_v<F&, const std::vector<Tensor>&>) {
    append_outputs(out, f(in));
    return out;
  } else {
    const size_t n = in.size();
    if constexpr (std::is_invocable_v<F&, T>)
      if (n == 1) return append_outputs(out, f(in[0])), out;
    if constexpr (std::is_invocable_v<F&, T, T>)
      if (n == 2) return append_outputs(out, f(in[0], in[1])), out;
    if constexpr (std::is_invocable_v<F&, T, T, T>)
      if (n == 3) return append_outputs(out, f(in[0], in[1], in[2])), out;
    if constexpr (std::is_invocable_v<F&, T, T, T, T>)
      if (n == 4) return append_outputs(out, f(in[0], in[1], in[2], in[3])), out;
    throw Error(str("trace: the function cannot be called with ", n, " tensor arguments"));
  }
}

// A module's forward as a TraceFn.
template <typename M>
TraceFn module_fn(M& m) {
  return [&m](const std::vector<Tensor>& in) {
    auto f = [&m](const auto&... a) -> decltype(m.forward(a...)) { return m.forward(a...); };
    return call_with(f, in);
  };
}
}  // namespace detail

// Traces a module (its forward, with parameters named by path) or any callable taking
// tensors and returning a tensor, a std::vector<Tensor>, or a tuple of them.
template <typename M>
TracedModule trace(M&& module_or_fn, const std::vector<Tensor>& inputs, const TraceOptions& options = {}) {
  if constexpr (std::is_base_of_v<nn::Module, std::remove_cvref_t<M>>) {
    return trace_function(detail::module_fn(module_or_fn), inputs, options, &module_or_fn);
  } else {
    TraceFn fn = [&module_or_fn](const std::vector<Tensor>& in) { return detail::call_with(module_or_fn, in); };
    return trace_function(fn, inputs, options);
  }
}

template <typename M>
CheckTraceResult check_trace(const TracedModule& traced, M&& module_or_fn, std::vector<Tensor> inputs = {},
                             double atol = 1e-5, double rtol = 1e-4) {
  if constexpr (std::is_base_of_v<nn::Module, std::remove_cvref_t<M>>) {
    return check_trace_function(traced, detail::module_fn(module_or_fn), std::move(inputs), atol, rtol, &module_or_fn);
  } else {
    TraceFn fn = [&module_or_fn](const std::vector<Tensor>& in) { return detail::call_with(module_or_fn, in); };
    return check_trace_function(traced, fn, std::move(inputs), atol, rtol);
  }
}

}  // namespace amber
