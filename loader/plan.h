// The execution plan of one static graph on one device: type promotion made explicit,
// every kernel pointer resolved, every intermediate placed in one arena by liveness, every
// view's layout fixed. A call takes a workspace (kernel arguments) from the plan's pool and
// an arena from the model's ArenaPool, patches the data pointers of the inputs, the arena and
// the per-call output buffers (from the model's BufferCache), and runs the kernels in order. Plans are immutable; run()
// is safe from many threads at once.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "amber/core/backend.h"
#include "amber/graph/graph.h"
#include "amber/loader/arena_pool.h"
#include "amber/loader/buffer_cache.h"

namespace amber::loader {

// Per node counters of a plan's calls (profiling).
struct StepStats {
  std::atomic<uint64_t> calls{0}, nanoseconds{0}, bytes{0};
};

struct RunOptions {
  int num_threads = 1;   // intra-op threads the kernels may use
  bool anomaly = false;  // check float outputs of every node for NaN/Inf
  bool profile = false;  // time every node (StepStats)
};

class Plan {
 public:
  // Compiles g (static; consumed) for device; calls borrow their arenas from `arenas` and take
  // their output buffers from `outputs` (both shared by the model's plans). Throws
  // amber::Error naming the node when a kernel is missing or inference fails.
  Plan(graph::Graph g, Device device, std::shared_ptr<ArenaPool> arenas = std::make_shared<ArenaPool>(),
       std::shared_ptr<BufferCache> outputs = std::make_shared<BufferCache>());
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // Runs the graph. inputs must already be checked against the graph's inputs (dtype and
  // sizes); non-contiguous ones are copied. Returns tensors the caller owns.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) const;

  // Runs the kernels' one-time setup (amber_backend::lookup_prepare) for num_threads
  // intra-op threads and readies one workspace, so that a call with that many threads does
  // no setup of its own.
  void prepare(int num_threads) const;

  const graph::Graph& graph() const { return graph_; }
  size_t arena_bytes() const { return arena_bytes_; }
  size_t num_steps() const { return steps_.size(); }
  // The node step i runs, and its counters.
  const graph::Node& step_node(size_t i) const { return *steps_[i].node; }
  const StepStats& step_stats(size_t i) const { return stats_[i]; }
  void reset_stats() const;

 private:
  enum class Home : uint8_t { input, constant, arena, output };
  struct PlanValue {
    Home home;
    int index;               // input, constant or per-call output buffer index
    int64_t byte_offset;     // from the home's start
    amber_tensor_view view;  // everything but data
  };
  struct Step {
    const graph::Node* node;
    amber_kernel_fn kernel;
    amber_kernel_fn prepare;             // may be null
    int first_arg, n_inputs, n_outputs;  // into the flat argument arrays
    std::vector<amber_attr> attrs;       // pointing into node->attrs
    uint64_t out_bytes;
    bool single_thread;  // too little work for the thread pool (step_cost.h)
  };
  struct Output {
    int value;
    bool copy;  // it lives in an input or a constant: the caller gets a copy
  };
  struct Workspace;

  std::unique_ptr<Workspace> acquire() const;
  void release(std::unique_ptr<Workspace> ws) const;
  void check_anomaly(const Step& s, const amber_tensor_view* outs) const;
  // Points the workspace's arguments at this call's memory (null where none is given).
  void bind(Workspace& ws, const std::vector<Tensor>* inputs, const std::vector<Storage>* buffers) const;

  graph::Graph graph_;
  Device device_;
  std::vector<PlanValue> values_;
  std::vector<Step> steps_;
  std::vector<amber_tensor_view> arg_templates_;  // inputs then outputs of each step
  std::vector<int> arg_values_;                   // the value each argument shows
  std::vector<char*> constant_data_;
  std::vector<size_t> output_buffer_bytes_;  // buffers allocated per call (they escape)
  std::vector<Output> outputs_;
  size_t arena_bytes_ = 0;
  std::shared_ptr<ArenaPool> arenas_;
  std::shared_ptr<BufferCache> output_cache_;
  std::unique_ptr<StepStats[]> stats_;

  // Idle workspaces (at most the peak concurrency): one in a lock-free slot, the rest in pool_.
  mutable std::atomic<Workspace*> spare_{nullptr};
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> pool_;
};

}  // namespace amber::loader
