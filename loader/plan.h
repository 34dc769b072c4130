// The execution plan of one static graph on one device: every kernel resolved and set up once,
// every intermediate placed in one arena by liveness, every view's layout fixed; a control-flow
// node's step runs plans of its bodies. A call borrows a workspace (arguments, stream) and an
// arena, brings host inputs to the device, runs the steps on its stream (or replays them as a
// recorded device graph) and synchronises; all device access goes through the backend table.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "amber/core/backend.h"
#include "amber/graph/graph.h"
#include "amber/loader/arena_pool.h"
#include "amber/loader/buffer_cache.h"
#include "amber/schema/control_flow.h"

namespace amber {
class CFusedProgram;
}

namespace amber::loader {

// Per node counters of a plan's calls (profiling).
struct StepStats {
  std::atomic<uint64_t> calls{0}, nanoseconds{0}, bytes{0};
  std::atomic<uint64_t> device_nanoseconds{0};  // between timing marks around the step (devices with them)
};

struct RunOptions {
  int num_threads = 1;           // intra-op threads the kernels may use
  bool anomaly = false;          // check float outputs of every node for NaN/Inf
  bool profile = false;          // time every node (StepStats; synchronises after each on devices with streams)
  void* stream = nullptr;        // the caller's stream, else the workspace's own
  bool outputs_on_host = false;  // copy the outputs to host memory before returning
  bool graphs = true;            // replay a recorded device graph where the backend has them
  int64_t max_loop_trips = 0;    // a tighter bound on the call's loop iterations than the plan's; 0: the plan's
};

class Plan {
 public:
  // Compiles g (static; its constants already on device; consumed) for device and runs every
  // kernel's setup for calls of setup_threads intra-op threads. Calls borrow their arenas
  // from `arenas` and take their output buffers from `outputs` (both shared by the model's
  // plans). Throws amber::Error naming the node when a kernel is missing, inference fails or
  // a setup fails. precision is every kernel's amber_kernel_args::precision; scope (from
  // make_scope, shared by the model's plans; may be null) is every setup's and call's
  // amber_kernel_args::scope, kept until the plan's states are destroyed.
  // A control-flow node's body gets a plan of its own, run as many times as the node's count
  // says; max_loop_trips bounds the body runs of one call (every loop, nested ones included).
  Plan(graph::Graph g, Device device, int setup_threads, std::shared_ptr<ArenaPool> arenas,
       std::shared_ptr<BufferCache> outputs, std::shared_ptr<void> scope,
       amber_precision precision = AMBER_PRECISION_F32, int64_t max_loop_trips = kDefaultMaxLoopTrips);
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // The backend's setup scope for one model on device (amber_backend::scope_create), destroyed
  // with its last holder; null where the backend makes none.
  static std::shared_ptr<void> make_scope(Device device);

  // Runs the graph. inputs must already be checked against the graph's inputs (dtype and
  // sizes); each is on the host or on the plan's device, with any strides. Returns tensors
  // the caller owns, on the device (or the host with outputs_on_host), after synchronising.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) const;

  // Readies one workspace (its stream) and, when some step uses them, starts the intra-op
  // threads, so that the first call does neither.
  void prepare(int num_threads) const;

  const graph::Graph& graph() const { return graph_; }
  Device device() const { return device_; }
  // Bytes of one call's arena: intermediates, host-input staging and kernel scratch.
  size_t arena_bytes() const { return arena_bytes_; }
  // Whether calls whose inputs are all on the host copy them into page-locked memory and
  // replay a device graph of their own that begins with the uploads (small inputs, graphs on).
  bool stages_host_inputs() const { return host_staging_; }
  size_t num_steps() const { return steps_.size(); }
  // The node step i runs (null for the copy of an output that is an input or a constant), and
  // its counters.
  const graph::Node* step_node(size_t i) const { return steps_[i].node; }
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
    const graph::Node* node = nullptr;
    const amber_kernel* kernel = nullptr;
    void* state = nullptr;  // from kernel->setup, destroyed with the plan
    size_t workspace_bytes = 0;
    std::unique_ptr<CFusedProgram> program;
    std::string label;                               // "node %3 = conv2d (model.cpp:21 @conv1)"
    int first_arg = 0, n_inputs = 0, n_outputs = 0;  // into the flat argument arrays
    std::vector<amber_attr> attrs;                   // pointing into node->attrs
    uint64_t out_bytes = 0;
    bool single_thread = false;  // too little work for the thread pool (step_cost.h)
    // A control-flow step (kernel null): a plan per body, and the clone kernel that copies
    // each final state tensor into the step's output.
    std::vector<std::unique_ptr<Plan>> bodies;
    std::vector<const amber_kernel*> copy_kernels;
  };
  struct Workspace;

  std::unique_ptr<Workspace> acquire() const;
  void release(std::unique_ptr<Workspace> ws) const;
  // The call's bound on loop iterations: the plan's, or options' when smaller.
  int64_t trip_limit(const RunOptions& options) const {
    return options.max_loop_trips > 0 && options.max_loop_trips < max_loop_trips_ ? options.max_loop_trips
                                                                                  : max_loop_trips_;
  }
  // run() with the call's remaining budget of loop body runs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options, int64_t& trips_left) const;
  // Queues every step's kernel on stream; throws naming the step that failed.
  void run_steps(Workspace& ws, void* stream, const RunOptions& options, int64_t& trips_left) const;
  // A control-flow step: runs graph::run_control_flow with the bodies' plans (reading counts
  // and predicates synchronises the stream) and copies the final state into the step's outputs.
  void run_control_flow_step(const Step& s, const amber_kernel_args& a, void* stream, const RunOptions& options,
                             int64_t& trips_left) const;
  // Graph mode: records the steps (with from_host, the input copies from the workspace's
  // page-locked block first) into *graph; false when the device refused.
  bool capture(Workspace& ws, const RunOptions& options, bool from_host, void** graph) const;
  // Queues the copy of the inputs from the workspace's page-locked block to the arena (one copy).
  void copy_staged_inputs(Workspace& ws, void* stream) const;
  // Host input i (dense, large; false, doing nothing, when small or when page-locked memory is
  // refused) to its staging place in the arena through the workspace's page-locked block, in
  // chunks: each copied in by `threads` threads, then queued to the device while the next is
  // copied in. A pageable copy is staged by the driver's one thread; this one by many, and the
  // transfers run from page-locked memory at the link's full rate.
  bool upload(Workspace& ws, size_t i, const Tensor& input, char* staging, void* stream, int threads) const;
  // A large output's way to the host: queued into the workspace's page-locked block, copied out
  // by the call's threads once the call has synchronised.
  struct Download {
    char* dst;
    const char* src;
    size_t bytes;
  };
  // The graph outputs as tensors over buffers (copied to the host with to_host; with ws and
  // downloads, those of 1 MiB or more through ws's page-locked block: their copies out, left
  // for after the synchronisation, added to downloads).
  std::vector<Tensor> output_tensors(std::span<const Storage> buffers, bool to_host, void* stream,
                                     Workspace* ws = nullptr, std::vector<Download>* downloads = nullptr) const;
  // Output buffer `buffer`'s place in ws's page-locked block for downloads, allocated on first
  // use; null where the buffer is small, the block would pass its cap, or memory is refused.
  char* download_bounce(Workspace& ws, size_t buffer) const;
  // A workspace's page-locked block of `bytes` (ws.pinned, ws.pinned_out), allocated on first
  // use; null, with `refused` set, where the backend has none or refuses (and after that).
  char* page_locked(void*& block, bool& refused, size_t bytes) const;
  // Bytes of every input's place in the arena's staging area (and in ws.pinned: same offsets).
  size_t input_block_bytes() const { return scratch_offset_ - input_staging_[0]; }
  void check_anomaly(const Step& s, const amber_tensor_view* outs, void* stream) const;
  // Points the workspace's arguments at this call's memory.
  void bind(Workspace& ws, std::span<const void* const> inputs, std::span<const Storage> buffers) const;
  [[noreturn]] void device_failure(const char* what) const;

  graph::Graph graph_;
  Device device_;
  amber_precision precision_ = AMBER_PRECISION_F32;
  int64_t max_loop_trips_ = kDefaultMaxLoopTrips;
  const amber_backend* backend_ = nullptr;
  bool host_memory_ = true;  // the device's memory is host memory (AMBER_BACKEND_HOST_MEMORY)
  bool graphs_ = false;      // the backend records and replays graphs
  // Graph mode from host inputs: each input copied into the workspace's page-locked block and
  // from there to the arena by copies recorded in the graph (the backend has host_alloc).
  bool host_staging_ = false;
  // With host_staging_: the kernels read the page-locked block in place, nothing copies it.
  bool host_in_place_ = false;
  std::vector<PlanValue> values_;
  std::vector<Step> steps_;
  std::vector<amber_tensor_view> arg_templates_;  // inputs then outputs of each step
  std::vector<int> arg_values_;                   // the value each argument shows
  std::vector<char*> constant_data_;
  std::vector<size_t> output_buffer_bytes_;        // buffers allocated per call (they escape)
  std::vector<size_t> download_offset_;            // each buffer's place in a page-locked download block
  size_t download_bytes_ = 0;                      // that block's size
  std::vector<int> outputs_;                       // the value of each graph output (in an output buffer)
  std::vector<size_t> input_staging_;              // arena offset of each input's copy from the host
  std::vector<size_t> input_bytes_;                // each input's bytes (on devices)
  size_t scratch_offset_ = 0, scratch_bytes_ = 0;  // kernel workspace, in the arena
  size_t arena_bytes_ = 0;
  std::shared_ptr<ArenaPool> arenas_;
  std::shared_ptr<BufferCache> output_cache_;
  std::shared_ptr<void> scope_;  // amber_kernel_args::scope (released after the states, ~Plan)
  std::unique_ptr<StepStats[]> stats_;

  // Idle workspaces (at most the peak concurrency): one in a lock-free slot, the rest in pool_.
  mutable std::atomic<Workspace*> spare_{nullptr};
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> pool_;
};

}  // namespace amber::loader
