// Plan compilation and execution (plan.h).

#include "amber/loader/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "amber/core/backend_registry.h"
#include "amber/core/hot.h"
#include "amber/core/parallel.h"
#include "amber/core/small_vector.h"
#include "amber/graph/control_flow.h"
#include "amber/graph/passes.h"
#include "amber/loader/step_cost.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/fused_program.h"

namespace amber::loader {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kScratchAlign = 256;  // a kernel's workspace (core/backend.h)
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string describe(const graph::Node& n) {
  std::string s = "node ";
  for (size_t i = 0; i < n.outputs.size(); ++i) s += (i ? ", %" : "%") + n.outputs[i]->name;
  s += " = " + n.op->name;
  if (!n.source.empty() || !n.scope.empty()) {
    s += " (";
    s += n.source;
    if (!n.scope.empty()) s += (n.source.empty() ? "@" : " @") + n.scope;
    s += ")";
  }
  return s;
}

amber_tensor_view view_of(DType dtype, const Layout& l, uint64_t cache_id) {
  amber_tensor_view v{};
  v.dtype = int32_t(dtype);
  v.ndim = l.sizes.size();
  for (int d = 0; d < v.ndim; ++d) {
    v.sizes[d] = l.sizes[d];
    v.strides[d] = l.strides[d];
  }
  v.cache_id = cache_id;
  return v;
}

int64_t numel_of(const amber_tensor_view& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.sizes[d];
  return n;
}

// Bytes from the first to one past the last element a view addresses (views of the plan have
// non-negative strides).
size_t extent_bytes(const amber_tensor_view& v) {
  if (numel_of(v) == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < v.ndim; ++d) last += (v.sizes[d] - 1) * v.strides[d];
  return size_t(last + 1) * itemsize(DType(v.dtype));
}

// A copy of control-flow node n's body k in which each captured operand that is a constant of
// the graph holding n (a weight) is the body's own constant: its kernels then see immutable
// weights (packed once, converted to the load's precision) rather than a per-call input. The
// body's input stays, unused.
graph::Graph body_with_constants(const graph::Node& n, size_t k) {
  graph::Graph body = n.bodies[k]->clone();
  const graph::BodyOperands b = graph::body_operands(n, k);
  for (size_t c = 0; c < b.num_captures; ++c) {
    const graph::Value* operand = n.inputs[b.first_capture + c];
    if (!operand->is_constant() || !operand->data.defined()) continue;
    std::string name = operand->name;
    for (int i = 1; body.find(name); ++i) name = str(operand->name, "_", i);
    body.replace_uses(body.inputs()[b.num_prefix + c], body.add_constant(name, operand->data, operand->source));
  }
  return body;
}

}  // namespace

constexpr size_t kHostStagingMaxBytes = size_t(128) << 10;  // see the constructor
// Host inputs of at least kUploadMinBytes go to the device through the workspace's page-locked
// block (Plan::upload), and outputs asked on the host of that size come back through one
// (Plan::output_tensors), where the block takes at most kUploadMaxPinnedBytes; others are
// copied from or to the caller's memory.
constexpr size_t kUploadMinBytes = size_t(1) << 20;
constexpr size_t kUploadMaxPinnedBytes = size_t(256) << 20;
constexpr size_t kUploadChunkBytes = size_t(4) << 20;    // one copy to the device each
constexpr size_t kUploadGrainBytes = size_t(256) << 10;  // one thread's share of a copy, at least

// memcpy by the calling thread's intra-op threads, kUploadGrainBytes a thread at least.
void parallel_copy(char* dst, const char* src, size_t bytes) {
  parallel_for(int64_t((bytes + kUploadGrainBytes - 1) / kUploadGrainBytes), 1, [&](int64_t b, int64_t e) {
    const size_t from = size_t(b) * kUploadGrainBytes, to = std::min(size_t(e) * kUploadGrainBytes, bytes);
    std::memcpy(dst + from, src + from, to - from);
  });
}

struct Plan::Workspace {
  Device device;
  const amber_backend* backend = nullptr;
  void* stream = nullptr;  // this workspace's own stream (NULL on backends without streams)
  ArenaPool::Arena arena;  // borrowed from the model's pool while the workspace is out
  std::vector<amber_tensor_view> args;
  std::vector<char*> data;
  // Graph mode: the arena (kept while the workspace lives), sets of output buffers, each with
  // its recordings, and how recording went. The first two sets' buffers go to the caller as
  // the call's outputs: a call uses one of them that no caller holds any more (so a loop that
  // keeps its last result alternates between the two), or, when the caller holds both (it
  // collects results), the third, whose buffers it copies the outputs out of. Calls whose
  // inputs are all on the host are copied into the page-locked block and have recordings of
  // their own, which begin with the copies from it to the arena.
  struct Recording {
    void* graph = nullptr;
    int calls = 0;  // the first runs the steps, the second records them
  };
  struct OutputSet {
    std::vector<Storage> outputs;
    Recording device, host;  // inputs anywhere, and all on the host
  };
  std::shared_ptr<ArenaPool> kept_arena_of;  // set while the workspace keeps its arena
  OutputSet sets[3];                         // two handed out, one copied out of
  bool graph_refused = false, host_graph_refused = false;
  // host_alloc refused `pinned` (calls from the host then go without staging their small inputs,
  // and large ones go up from the caller's memory) or `pinned_out` (outputs on the host then come
  // back into their own memory). One flag a block: the staging and the upload share `pinned`.
  bool pinned_refused = false, download_refused = false;
  void* pinned_out = nullptr;  // page-locked, each output buffer at its download_offset_
  // Page-locked, each input's place at its staging offset: the small inputs' staging, the large
  // ones' bounce buffer (Plan::upload).
  void* pinned = nullptr;
  // A set to hand out whose buffers only this workspace holds, or nullptr.
  OutputSet* free_set() {
    for (int k = 0; k < 2; ++k) {
      bool held = false;
      for (const Storage& b : sets[k].outputs) held = held || b.use_count() > 1;
      if (!held) return &sets[k];
    }
    return nullptr;
  }
  // Destroys the recordings (graphs hold the kernels they launch: they go before the states that
  // own those kernels, ~Plan).
  void drop_recordings() {
    for (OutputSet& s : sets)
      for (Recording* r : {&s.device, &s.host})
        if (r->graph) backend->graph_destroy(device.index, std::exchange(r->graph, nullptr));
  }
  ~Workspace() {
    drop_recordings();
    if (pinned) backend->host_free(device.index, pinned);
    if (pinned_out) backend->host_free(device.index, pinned_out);
    if (kept_arena_of) kept_arena_of->give(arena);
    if (stream) backend->stream_destroy(device.index, stream);
  }
};

std::shared_ptr<void> Plan::make_scope(Device device) {
  const amber_backend* b = &backend(device);
  if (!b->scope_create || !b->scope_destroy) return nullptr;
  void* scope = b->scope_create(device.index);
  if (!scope) return nullptr;  // setups then share nothing
  const int32_t index = device.index;
  return std::shared_ptr<void>(scope, [b, index](void* s) { b->scope_destroy(index, s); });
}

Plan::Plan(graph::Graph g, Device device, int setup_threads, std::shared_ptr<ArenaPool> arenas,
           std::shared_ptr<BufferCache> outputs, std::shared_ptr<void> scope, amber_precision precision,
           int64_t max_loop_trips)
    : graph_(std::move(g)),
      device_(device),
      arenas_(std::move(arenas)),
      output_cache_(std::move(outputs)),
      scope_(std::move(scope)) {
  using graph::Value;
  precision_ = precision;
  max_loop_trips_ = max_loop_trips;
  backend_ = &backend(device);
  host_memory_ = (backend_->flags & AMBER_BACKEND_HOST_MEMORY) != 0;
  graphs_ = !host_memory_ && backend_->capture_begin && backend_->capture_end && backend_->graph_launch &&
            backend_->graph_destroy;
  host_staging_ = graphs_ && backend_->host_alloc && backend_->host_free;
  graph::materialize_casts(graph_);
  const graph::MemoryPlan mp = graph::plan_memory(graph_);

  std::map<const Value*, int> index;
  std::map<const Value*, size_t> arena_offset;
  for (const graph::BufferAssignment& b : mp.buffers) arena_offset[b.value] = b.offset;
  std::map<const Value*, int> output_buffer;  // escaped owner -> per-call buffer index
  auto add_value = [&](const Value* v, Home home, int idx, int64_t offset, uint64_t cache_id) {
    index[v] = int(values_.size());
    values_.push_back({home, idx, offset, view_of(v->type.dtype, mp.layouts.at(v), cache_id)});
  };
  for (size_t i = 0; i < graph_.inputs().size(); ++i) add_value(graph_.inputs()[i], Home::input, int(i), 0, 0);
  for (size_t i = 0; i < graph_.constants().size(); ++i) {
    const Value* c = graph_.constants()[i];
    AMBER_CHECK(c->data.defined() && c->data.device() == device, "load: constant %", c->name, " has no data on ",
                device);
    constant_data_.push_back(static_cast<char*>(const_cast<void*>(c->data.data())));
    add_value(c, Home::constant, int(i), 0, c->data.is_read_only() ? c->data.storage().id() : 0);
  }
  const std::vector<graph::Node*> nodes = graph_.nodes();
  for (const graph::Node* n : nodes)
    for (const Value* out : n->outputs) {
      auto v = mp.views.find(out);
      const Value* owner = v == mp.views.end() ? out : v->second;
      const int64_t offset = mp.layouts.at(out).offset * int64_t(itemsize(out->type.dtype));
      const PlanValue& o = owner == out ? PlanValue{} : values_[size_t(index.at(owner))];
      if (owner != out && (o.home == Home::input || o.home == Home::constant)) {
        add_value(out, o.home, o.index, o.byte_offset + offset, o.view.cache_id);
      } else if (auto a = arena_offset.find(owner); a != arena_offset.end()) {
        add_value(out, Home::arena, 0, int64_t(a->second) + offset, 0);
      } else {
        auto [it, fresh] = output_buffer.emplace(owner, int(output_buffer_bytes_.size()));
        if (fresh) {
          const Layout& l = mp.layouts.at(owner);
          output_buffer_bytes_.push_back(size_t(checked_numel(l.sizes)) * itemsize(owner->type.dtype));
        }
        add_value(out, Home::output, it->second, offset, 0);
      }
    }

  static const OpSchema& clone_op = op_schema("clone");
  auto add_arg = [&](const amber_tensor_view& v, int value) {
    arg_templates_.push_back(v);
    arg_values_.push_back(value);
  };
  // Steps are built first and set up after: the argument arrays stop moving then.
  for (const graph::Node* n : nodes) {
    if (n->op->is_view()) continue;
    if (n->op->is_maybe_view() && mp.views.count(n->outputs[0])) continue;
    Step s;
    s.node = n;
    s.first_arg = int(arg_templates_.size());
    s.n_outputs = int(n->outputs.size());
    s.label = describe(*n);
    try {
      if (n->op->is_control_flow()) {
        for (size_t k = 0; k < n->bodies.size(); ++k)
          s.bodies.push_back(std::make_unique<Plan>(body_with_constants(*n, k), device, setup_threads, arenas_,
                                                    output_cache_, scope_, precision, max_loop_trips));
        s.n_inputs = int(n->inputs.size());
        for (const Value* in : n->inputs) add_arg(values_[size_t(index.at(in))].view, index.at(in));
        for (const Value* out : n->outputs) {
          add_arg(values_[size_t(index.at(out))].view, index.at(out));
          s.copy_kernels.push_back(&resolve_kernel(clone_op, device, out->type.dtype));
        }
      } else if (n->op->is_maybe_view()) {
        // The layout cannot be a view of the input: copy the input to contiguous memory,
        // which the output then views with its own shape.
        const Value* in = n->inputs[0];
        s.kernel = &resolve_kernel(clone_op, device, in->type.dtype);
        s.n_inputs = 1;
        add_arg(values_[size_t(index.at(in))].view, index.at(in));
        const Layout& il = mp.layouts.at(in);
        add_arg(view_of(in->type.dtype, {il.sizes, contiguous_strides(il.sizes), 0}, 0), index.at(n->outputs[0]));
      } else {
        std::vector<TensorMeta> metas(n->inputs.size());
        std::vector<const TensorMeta*> ptrs;
        for (size_t i = 0; i < n->inputs.size(); ++i) {
          const Value* in = n->inputs[i];
          if (in) {
            const Layout& l = mp.layouts.at(in);
            metas[i] = {in->type.dtype, l.sizes,
                        is_channels_last(l.sizes, l.strides) ? MemoryFormat::channels_last : MemoryFormat::contiguous};
          }
          ptrs.push_back(in ? &metas[i] : nullptr);
        }
        InferCtx ctx(*n->op, ptrs.data(), int(ptrs.size()), n->attrs.data(), int(n->attrs.size()));
        n->op->infer(ctx);
        s.kernel = &resolve_kernel(*n->op, device, ctx.compute_dtype);
        s.n_inputs = int(n->inputs.size());
        for (const Value* in : n->inputs) {
          if (in) {
            add_arg(values_[size_t(index.at(in))].view, index.at(in));
          } else {
            amber_tensor_view absent{};
            absent.ndim = -1;
            add_arg(absent, -1);
          }
        }
        for (const Value* out : n->outputs) add_arg(values_[size_t(index.at(out))].view, index.at(out));
        if (n->op->flags & op_flags::program) {
          const int pi = n->op->attr_index("program");
          AMBER_ASSERT(pi >= 0, n->op->name, " has no program attribute");
          s.program = std::make_unique<CFusedProgram>(
              parse_fused_program(n->attrs[size_t(pi)].s(), int(n->inputs.size())), int(n->inputs.size()));
        }
      }
    } catch (const Error& e) {
      throw Error(str(s.label, ": ", e.what()));
    }
    s.attrs.resize(n->attrs.size());
    for (size_t i = 0; i < n->attrs.size(); ++i) fill_c_attr(s.attrs[i], n->attrs[i], n->op->attr_spec(int(i)));
    for (const Value* out : n->outputs)
      s.out_bytes += uint64_t(checked_numel(static_shape(out->type.shape))) * itemsize(out->type.dtype);
    const amber_tensor_view* args = &arg_templates_[size_t(s.first_arg)];
    const OpCost cost = n->op->is_maybe_view() ? OpCost::memory : n->op->cost;  // a maybe_view's step is a copy
    const double window = window_elements(*n->op, s.attrs.data(), int(s.attrs.size()));
    s.single_thread = s.bodies.empty() &&
                      estimate_step_ns(cost, args, s.n_inputs, args + s.n_inputs, s.n_outputs, window) < kParallelMinNs;
    if (!s.bodies.empty()) graphs_ = false;  // counts and predicates are read on the host mid-call
    steps_.push_back(std::move(s));
  }
  // Every output leaves in a buffer of its own: one that lives in an input or a constant is
  // copied into one by a clone step at the end.
  for (const auto& [name, v] : graph_.outputs()) {
    const int vi = index.at(v);
    if (values_[size_t(vi)].home != Home::input && values_[size_t(vi)].home != Home::constant) {
      outputs_.push_back(vi);
      continue;
    }
    const Layout& l = mp.layouts.at(v);
    const int buffer = int(output_buffer_bytes_.size());
    output_buffer_bytes_.push_back(size_t(checked_numel(l.sizes)) * itemsize(v->type.dtype));
    const int copy = int(values_.size());
    values_.push_back({Home::output, buffer, 0, view_of(v->type.dtype, {l.sizes, contiguous_strides(l.sizes), 0}, 0)});
    Step s;
    s.node = nullptr;  // not a node of the graph
    s.kernel = &resolve_kernel(clone_op, device, v->type.dtype);
    s.label = str("output ", name, " (a copy of %", v->name, ")");
    s.first_arg = int(arg_templates_.size());
    s.n_inputs = 1;
    s.n_outputs = 1;
    add_arg(values_[size_t(vi)].view, vi);
    add_arg(values_[size_t(copy)].view, copy);
    s.out_bytes = output_buffer_bytes_.back();
    s.single_thread = true;
    steps_.push_back(std::move(s));
    outputs_.push_back(copy);
  }

  // The arena: intermediates, then (on devices whose memory the host cannot use directly) a
  // staging copy of each input given on the host, then kernel scratch.
  size_t bytes = align_up(mp.arena_bytes);
  if (!host_memory_)
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      input_staging_.push_back(bytes);
      input_bytes_.push_back(extent_bytes(values_[i].view));
      bytes += align_up(input_bytes_.back());
    }
  // Kernel scratch starts a multiple of 256 bytes into the arena (core/backend.h's promise).
  bytes = (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  scratch_offset_ = bytes;
  // Staging through page-locked memory saves a call its separate copy (one graph launch does
  // all) but copies the inputs twice, the second time unpipelined, where a copy from the
  // caller's memory lets the driver overlap its own staging with the transfer: worth it for
  // small inputs only, where a call's fixed costs dominate. 128 KiB is a reasoned bound, not
  // yet a measured one (bench/README.md, GPU).
  if (host_staging_ && (graph_.inputs().empty() || input_block_bytes() > kHostStagingMaxBytes)) host_staging_ = false;
  // Inputs read in place: where the backend's kernels can read page-locked memory and every step
  // reading an input is a fused program as large as the input (each element read once, as the
  // staging copy would read it), such calls' kernels read the inputs from the page-locked block
  // itself, and the recording holds no copy: one kernel fewer a call (ten_mul: the fused node's).
  host_in_place_ = host_staging_ && (backend_->flags & AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED);
  for (const Step& s : steps_)
    for (int k = s.first_arg; k < s.first_arg + s.n_inputs; ++k) {
      const int v = arg_values_[size_t(k)];
      if (v < 0 || values_[size_t(v)].home != Home::input) continue;
      const amber_tensor_view& in = arg_templates_[size_t(k)];
      const amber_tensor_view* out = s.n_outputs == 1 ? &arg_templates_[size_t(s.first_arg + s.n_inputs)] : nullptr;
      const bool read_once =
          s.kernel && s.program && out &&
          checked_numel({in.sizes, size_t(in.ndim)}) == checked_numel({out->sizes, size_t(out->ndim)});
      host_in_place_ = host_in_place_ && read_once;
    }

  // Kernel setup: each step's state, made once for the plan's life.
  std::vector<amber_tensor_view> setup_args = arg_templates_;
  for (size_t k = 0; k < setup_args.size(); ++k) {
    const int v = arg_values_[k];
    const PlanValue* pv = v >= 0 ? &values_[size_t(v)] : nullptr;
    setup_args[k].data =
        pv && pv->home == Home::constant ? constant_data_[size_t(pv->index)] + pv->byte_offset : nullptr;
  }
  char error[512];
  // A throw from here leaves the destructor unrun: the states set up so far are freed first.
  struct FreeStatesOnThrow {
    std::vector<Step>& steps;
    bool armed = true;
    ~FreeStatesOnThrow() {
      if (armed)
        for (Step& s : steps)
          if (s.state && s.kernel && s.kernel->destroy_state) s.kernel->destroy_state(std::exchange(s.state, nullptr));
    }
  } free_on_throw{steps_};
  for (Step& s : steps_) {
    if (!s.kernel || !s.kernel->setup) continue;
    error[0] = '\0';
    amber_kernel_args a{};
    a.inputs = &setup_args[size_t(s.first_arg)];
    a.n_inputs = s.n_inputs;
    a.n_outputs = s.n_outputs;
    a.outputs = &setup_args[size_t(s.first_arg + s.n_inputs)];
    a.attrs = s.attrs.data();
    a.n_attrs = int32_t(s.attrs.size());
    a.num_threads = s.single_thread ? 1 : std::max(1, setup_threads);
    a.device = device_.index;
    a.error = error;
    a.error_capacity = sizeof error;
    a.program = s.program ? s.program->get() : nullptr;
    a.context = s.kernel->context;
    a.label = s.label.c_str();
    a.precision = precision_;
    a.scope = scope_.get();
    if (s.kernel->setup(&a, &s.state, &s.workspace_bytes) != 0) {
      error[sizeof error - 1] = '\0';
      throw Error(str(s.label, ": ", s.node ? s.node->op->name : "clone", " (setup): ", error[0] ? error : "failed"));
    }
    scratch_bytes_ = std::max(scratch_bytes_, s.workspace_bytes);
  }
  free_on_throw.armed = false;
  arena_bytes_ = scratch_offset_ + align_up(scratch_bytes_);
  for (size_t out_bytes : output_buffer_bytes_) {
    download_offset_.push_back(download_bytes_);
    download_bytes_ += align_up(out_bytes);
  }
  stats_ = std::make_unique<StepStats[]>(steps_.size());
}

Plan::~Plan() {
  // No call is in flight. First the workspaces' recordings (a graph launches kernels that the
  // states own: compiled programs, a cuDNN plan's own kernels); then the states, and the bodies'
  // plans (whose calls run on this plan's streams), while the workspaces' streams still exist: a
  // state may hold a library handle that still refers to the stream it last ran on (a cuDNN
  // handle does); then the workspaces and their streams.
  std::unique_ptr<Workspace> spare(spare_.exchange(nullptr));
  if (spare) spare->drop_recordings();
  for (const std::unique_ptr<Workspace>& ws : pool_) ws->drop_recordings();
  for (Step& s : steps_) {
    if (s.state && s.kernel && s.kernel->destroy_state) s.kernel->destroy_state(std::exchange(s.state, nullptr));
    s.bodies.clear();
  }
  spare.reset();
  pool_.clear();
}

void Plan::reset_stats() const {
  for (size_t i = 0; i < steps_.size(); ++i) {
    stats_[i].calls = 0;
    stats_[i].nanoseconds = 0;
    stats_[i].bytes = 0;
    stats_[i].device_nanoseconds = 0;
  }
}

void Plan::device_failure(const char* what) const {
  throw Error(str(what, " on ", device_, " failed: ", backend_->last_error()));
}

std::unique_ptr<Plan::Workspace> Plan::acquire() const {
  std::unique_ptr<Workspace> ws(spare_.exchange(nullptr, std::memory_order_acquire));
  if (!ws) {
    std::lock_guard lock(pool_mutex_);
    if (!pool_.empty()) {
      ws = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!ws) {
    ws = std::make_unique<Workspace>();
    ws->device = device_;
    ws->backend = backend_;
    if (backend_->stream_create(device_.index, &ws->stream) != 0) device_failure("creating a stream");
    ws->args = arg_templates_;
    ws->data.resize(values_.size());
  }
  try {
    if (!ws->kept_arena_of) ws->arena = arenas_->take(arena_bytes_);
  } catch (...) {
    release(std::move(ws));
    throw;
  }
  return ws;
}

void Plan::release(std::unique_ptr<Workspace> ws) const {
  if (!ws->kept_arena_of) {
    arenas_->give(ws->arena);
    ws->arena = {};
  }
  Workspace* expected = nullptr;
  if (spare_.compare_exchange_strong(expected, ws.get(), std::memory_order_release)) {
    (void)ws.release();
    return;
  }
  std::lock_guard lock(pool_mutex_);
  pool_.push_back(std::move(ws));
}

void Plan::check_anomaly(const Step& s, const amber_tensor_view* outs, void* stream) const {
  for (int o = 0; o < s.n_outputs; ++o) {
    const amber_tensor_view& v = outs[o];
    if (v.dtype != int32_t(DType::f32) && v.dtype != int32_t(DType::f64)) continue;
    const size_t bytes = extent_bytes(v);
    if (bytes == 0) continue;
    // The output's bytes on the host: read in place when the device's memory is host memory.
    std::unique_ptr<char[]> copy;
    const char* base = static_cast<const char*>(v.data);
    if (!host_memory_) {
      copy.reset(new char[bytes]);
      if (backend_->copy(copy.get(), int32_t(DeviceType::cpu), 0, v.data, int32_t(device_.type), device_.index, bytes,
                         stream) != 0 ||
          backend_->synchronize(device_.index, stream) != 0)
        device_failure(str("anomaly mode: reading the output of ", s.label).c_str());
      base = copy.get();
    }
    // Walk the view's elements in memory order of its layout.
    const int64_t n = numel_of(v);
    int64_t bad = -1;
    double x = 0;
    std::vector<int64_t> idx(size_t(std::max(v.ndim, 1)), 0);
    for (int64_t e = 0; e < n && bad < 0; ++e) {
      int64_t off = 0;
      for (int d = 0; d < v.ndim; ++d) off += idx[size_t(d)] * v.strides[d];
      x = v.dtype == int32_t(DType::f32) ? double(reinterpret_cast<const float*>(base)[off])
                                         : reinterpret_cast<const double*>(base)[off];
      if (!std::isfinite(x)) bad = e;
      for (int d = v.ndim - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < v.sizes[d]) break;
        idx[size_t(d)] = 0;
      }
    }
    if (bad < 0) continue;
    const graph::Value* out = s.node ? s.node->outputs[size_t(o)] : nullptr;
    throw Error(str("anomaly: ", s.label, " produced ", std::isnan(x) ? "NaN" : "Inf", out ? " in %" : "",
                    out ? out->name : std::string(), out ? " : " : "", out ? str(out->type) : std::string(),
                    " (element ", bad, " in index order); its inputs were finite"));
  }
}

AMBER_HOT void Plan::bind(Workspace& ws, std::span<const void* const> inputs, std::span<const Storage> buffers) const {
  for (size_t v = 0; v < values_.size(); ++v) {
    const PlanValue& pv = values_[v];
    char* base = nullptr;
    switch (pv.home) {
      case Home::input:
        base = static_cast<char*>(const_cast<void*>(inputs[size_t(pv.index)]));
        break;
      case Home::constant:
        base = constant_data_[size_t(pv.index)];
        break;
      case Home::arena:
        base = static_cast<char*>(ws.arena.data);
        break;
      case Home::output:
        base = static_cast<char*>(buffers[size_t(pv.index)].data());
        break;
    }
    ws.data[v] = base ? base + pv.byte_offset : nullptr;
  }
  for (size_t k = 0; k < ws.args.size(); ++k)
    if (arg_values_[k] >= 0) ws.args[k].data = ws.data[size_t(arg_values_[k])];
}

void Plan::prepare(int num_threads) const {
  release(acquire());  // one workspace with its stream, ready for the first call
  // Start the intra-op threads now rather than in the first call, when some step will use
  // them (starting them costs up to milliseconds here: the other core may be idle in the
  // hypervisor).
  ThreadLimit limit(num_threads);
  if (std::any_of(steps_.begin(), steps_.end(), [](const Step& s) { return !s.single_thread; }))
    parallel_for(num_threads, 1, [](int64_t, int64_t) {});
}

void Plan::run_control_flow_step(const Step& s, const amber_kernel_args& a, void* stream, const RunOptions& options,
                                 int64_t& trips_left) const {
  const graph::Node& n = *s.node;
  // The operands as tensors over this call's memory.
  auto wrap = [&](const amber_tensor_view& v) {
    const DimVec sizes(std::span<const int64_t>(v.sizes, size_t(v.ndim)));
    const DimVec strides(std::span<const int64_t>(v.strides, size_t(v.ndim)));
    return Tensor::make(Storage::wrap(const_cast<void*>(v.data), extent_bytes(v), device_, nullptr, true), sizes,
                        strides, 0, DType(v.dtype));
  };
  std::vector<Tensor> operands;
  for (int k = 0; k < a.n_inputs; ++k) operands.push_back(wrap(a.inputs[k]));
  // A count or predicate, on the host.
  auto read_scalar = [&](const Tensor& t) -> int64_t {
    alignas(8) unsigned char raw[8] = {};
    const size_t bytes = itemsize(t.dtype());
    if (t.device().is_cpu() || host_memory_) {
      std::memcpy(raw, t.data(), bytes);
    } else if (backend_->copy(raw, int32_t(DeviceType::cpu), 0, t.data(), int32_t(device_.type), device_.index, bytes,
                              stream) != 0 ||
               backend_->synchronize(device_.index, stream) != 0) {
      device_failure(str(s.label, ": reading a trip count or predicate").c_str());
    }
    switch (t.dtype()) {
      case DType::b8:
        return raw[0] != 0;
      case DType::i32: {
        int32_t v;
        std::memcpy(&v, raw, 4);
        return v;
      }
      default: {
        int64_t v;
        std::memcpy(&v, raw, 8);
        return v;
      }
    }
  };
  RunOptions body_options = options;
  body_options.stream = stream;
  body_options.graphs = false;
  body_options.profile = false;
  body_options.outputs_on_host = false;
  std::vector<Tensor> state = graph::run_control_flow(
      n, operands,
      [&](size_t k, const std::vector<Tensor>& in) { return s.bodies[k]->run(in, body_options, trips_left); },
      read_scalar, trips_left, trip_limit(options),
      trip_limit(options) < max_loop_trips_ ? "CallOptions::max_loop_trips" : "LoadOptions::max_loop_trips",
      Device::cpu());
  // The final state into the step's outputs.
  char error[512];
  for (int64_t k = 0; k < int64_t(a.n_outputs); ++k) {
    const Tensor& t = state[size_t(k)];
    amber_tensor_view src = a.outputs[k];
    src.data = const_cast<void*>(t.data());
    src.ndim = int32_t(t.dim());
    for (int d = 0; d < t.dim(); ++d) {
      src.sizes[d] = t.size(d);
      src.strides[d] = t.stride(d);
    }
    src.cache_id = 0;
    error[0] = '\0';
    amber_kernel_args c{};
    c.inputs = &src;
    c.n_inputs = 1;
    c.outputs = &a.outputs[k];
    c.n_outputs = 1;
    c.num_threads = 1;
    c.device = device_.index;
    c.stream = stream;
    c.error = error;
    c.error_capacity = sizeof error;
    c.context = s.copy_kernels[size_t(k)]->context;
    c.label = s.label.c_str();
    c.precision = precision_;
    c.scope = scope_.get();
    if (s.copy_kernels[size_t(k)]->run(&c) != 0) {
      error[sizeof error - 1] = '\0';
      throw Error(str(s.label, ": copying state ", k, " out: ", error[0] ? error : "kernel failed"));
    }
  }
  // The bodies' buffers go back to the pool when `state` goes: what was copied must be done.
  if (!host_memory_ && backend_->synchronize(device_.index, stream) != 0)
    device_failure(str(s.label, ": finishing the loop").c_str());
}

AMBER_HOT void Plan::run_steps(Workspace& ws, void* stream, const RunOptions& options, int64_t& trips_left) const {
  ThreadLimit limit(options.num_threads);
  char* scratch = static_cast<char*>(ws.arena.data) + scratch_offset_;
  const bool timed = options.profile;
  const bool sync_each = timed && stream != nullptr;
  // Profiled on a device with timing marks: one before and one after each step, so its time on
  // the device is known apart from the launch and the synchronisation the host time includes.
  struct Marks {
    const amber_backend* b;
    int32_t device;
    void* m[2] = {nullptr, nullptr};
    ~Marks() {
      for (void* e : m)
        if (e) b->event_destroy(device, e);
    }
  } marks{backend_, device_.index};
  if (sync_each && backend_->event_create && backend_->event_record && backend_->event_elapsed &&
      backend_->event_destroy)
    for (void*& e : marks.m)
      if (!(e = backend_->event_create(device_.index))) device_failure("creating a timing mark");
  const bool marked = marks.m[1] != nullptr;
  char error[512];
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    const int threads = s.single_thread ? 1 : options.num_threads;
    std::optional<ThreadLimit> alone;
    if (threads != options.num_threads) alone.emplace(threads);
    error[0] = '\0';
    amber_kernel_args a{};
    a.inputs = &ws.args[size_t(s.first_arg)];
    a.n_inputs = s.n_inputs;
    a.n_outputs = s.n_outputs;
    a.outputs = &ws.args[size_t(s.first_arg + s.n_inputs)];
    a.attrs = s.attrs.data();
    a.n_attrs = int32_t(s.attrs.size());
    a.num_threads = threads;
    a.device = device_.index;
    a.stream = stream;
    a.error = error;
    a.error_capacity = sizeof error;
    a.state = s.state;
    a.workspace = s.workspace_bytes ? scratch : nullptr;
    a.workspace_bytes = s.workspace_bytes;
    a.program = s.program ? s.program->get() : nullptr;
    a.context = s.kernel ? s.kernel->context : nullptr;
    a.label = s.label.c_str();
    a.precision = precision_;
    a.scope = scope_.get();
    const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (marked && backend_->event_record(device_.index, marks.m[0], stream) != 0) device_failure(s.label.c_str());
    int rc = 0;
    if (!s.bodies.empty())
      run_control_flow_step(s, a, stream, options, trips_left);
    else
      rc = s.kernel->run(&a);
    if (rc == 0 && marked && backend_->event_record(device_.index, marks.m[1], stream) != 0)
      device_failure(s.label.c_str());
    if (rc == 0 && sync_each && backend_->synchronize(device_.index, stream) != 0) device_failure(s.label.c_str());
    if (timed) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
      StepStats& st = stats_[i];
      st.calls.fetch_add(1, std::memory_order_relaxed);
      st.nanoseconds.fetch_add(uint64_t(ns.count()), std::memory_order_relaxed);
      st.bytes.fetch_add(s.out_bytes, std::memory_order_relaxed);
      float ms = 0;
      if (rc == 0 && marked) {
        if (backend_->event_elapsed(device_.index, marks.m[0], marks.m[1], &ms) != 0) device_failure(s.label.c_str());
        st.device_nanoseconds.fetch_add(uint64_t(double(ms) * 1e6), std::memory_order_relaxed);
      }
    }
    if (rc != 0) {
      error[sizeof error - 1] = '\0';
      throw Error(str(s.label, ": ", s.node ? s.node->op->name : "clone", ": ", error[0] ? error : "kernel failed"));
    }
    if (options.anomaly) check_anomaly(s, a.outputs, stream);
  }
}

void Plan::copy_staged_inputs(Workspace& ws, void* stream) const {
  if (host_in_place_) return;  // the kernels read the block itself
  // The block mirrors the arena's staging area: one copy of its span takes every input (and the
  // alignment gaps between them, which nothing reads).
  const size_t span = input_staging_.back() + input_bytes_.back() - input_staging_[0];
  if (span && backend_->copy(static_cast<char*>(ws.arena.data) + input_staging_[0], int32_t(device_.type),
                             device_.index, ws.pinned, int32_t(DeviceType::cpu), 0, span, stream) != 0)
    device_failure(str("copying the ", input_bytes_.size(), " staged inputs (", span, " bytes) to the arena").c_str());
}

bool Plan::capture(Workspace& ws, const RunOptions& options, bool from_host, void** graph) const {
  void* recording = nullptr;
  if (backend_->capture_begin(device_.index, &recording) != 0) return false;
  auto drop = [&] {  // ends the recording (which holds the backend's capture locks) and discards it
    void* g = nullptr;
    if (backend_->capture_end(device_.index, recording, &g) == 0 && g) backend_->graph_destroy(device_.index, g);
  };
  try {
    if (from_host) copy_staged_inputs(ws, recording);
    int64_t no_loops = 0;  // plans with loops never record a graph
    run_steps(ws, recording, options, no_loops);
  } catch (const Error&) {
    // A kernel that cannot be recorded (or failed): the capture is dropped, and the call runs
    // the steps directly, where a real failure reports itself.
    drop();
    return false;
  } catch (...) {  // out of host memory, say: the recording ends before it goes on up
    drop();
    throw;
  }
  void* g = nullptr;
  if (backend_->capture_end(device_.index, recording, &g) != 0 || !g) return false;
  *graph = g;
  return true;
}

char* Plan::page_locked(void*& block, bool& refused, size_t bytes) const {
  if (!block && !refused && backend_->host_alloc && backend_->host_free)
    block = backend_->host_alloc(device_.index, bytes);
  if (!block) refused = true;  // page-locked memory is scarce: the caller goes without
  return static_cast<char*>(block);
}

char* Plan::download_bounce(Workspace& ws, size_t buffer) const {
  if (output_buffer_bytes_[buffer] < kUploadMinBytes || download_bytes_ > kUploadMaxPinnedBytes) return nullptr;
  char* block = page_locked(ws.pinned_out, ws.download_refused, download_bytes_);
  return block ? block + download_offset_[buffer] : nullptr;
}

AMBER_HOT std::vector<Tensor> Plan::output_tensors(std::span<const Storage> buffers, bool to_host, void* stream,
                                                   Workspace* ws, std::vector<Download>* downloads) const {
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (int o : outputs_) {
    const PlanValue& pv = values_[size_t(o)];
    const amber_tensor_view& v = pv.view;
    const DimVec sizes(std::span<const int64_t>(v.sizes, size_t(v.ndim)));
    const DimVec strides(std::span<const int64_t>(v.strides, size_t(v.ndim)));
    const DType dtype = DType(v.dtype);
    const int64_t offset = pv.byte_offset / int64_t(itemsize(dtype));
    const Storage& buf = buffers[size_t(pv.index)];
    if (to_host && !host_memory_) {
      Storage host = Storage::allocate(buf.nbytes(), Device::cpu());
      char* bounce = ws && downloads ? download_bounce(*ws, size_t(pv.index)) : nullptr;
      if (buf.nbytes() && backend_->copy(bounce ? bounce : host.data(), int32_t(DeviceType::cpu), 0, buf.data(),
                                         int32_t(device_.type), device_.index, buf.nbytes(), stream) != 0)
        device_failure("copying an output to the host");
      if (bounce) downloads->push_back({static_cast<char*>(host.data()), bounce, buf.nbytes()});
      out.push_back(Tensor::make(std::move(host), sizes, strides, offset, dtype));
    } else {
      out.push_back(Tensor::make(buf, sizes, strides, offset, dtype));
    }
  }
  return out;
}

bool Plan::upload(Workspace& ws, size_t i, const Tensor& input, char* staging, void* stream, int threads) const {
  const size_t bytes = input.nbytes();
  if (bytes < kUploadMinBytes || input_block_bytes() > kUploadMaxPinnedBytes) return false;
  char* block = page_locked(ws.pinned, ws.pinned_refused, input_block_bytes());
  if (!block) return false;  // copied from the caller's memory
  AMBER_ASSERT(bytes <= input_bytes_[i], "input ", i, ": ", bytes, " bytes, planned for ", input_bytes_[i]);
  char* bounce = block + (input_staging_[i] - input_staging_[0]);
  const char* src = static_cast<const char*>(input.data());
  ThreadLimit limit(std::max(1, threads));
  for (size_t at = 0; at < bytes; at += kUploadChunkBytes) {
    const size_t n = std::min(kUploadChunkBytes, bytes - at);
    parallel_copy(bounce + at, src + at, n);
    if (backend_->copy(staging + at, int32_t(device_.type), device_.index, bounce + at, int32_t(DeviceType::cpu), 0, n,
                       stream) != 0)
      device_failure(str("copying input ", i, " (", bytes, " bytes) to the arena").c_str());
  }
  return true;
}

std::vector<Tensor> Plan::run(const std::vector<Tensor>& inputs, const RunOptions& options) const {
  int64_t trips_left = trip_limit(options);
  return run(inputs, options, trips_left);
}

AMBER_HOT std::vector<Tensor> Plan::run(const std::vector<Tensor>& inputs, const RunOptions& options,
                                        int64_t& trips_left) const {
  struct Lease {
    const Plan* plan;
    std::unique_ptr<Workspace> ws;
    ~Lease() {
      if (ws) plan->release(std::move(ws));
    }
  } lease{this, acquire()};
  Workspace& ws = *lease.ws;
  void* stream = options.stream ? options.stream : ws.stream;
  const bool streams = stream != nullptr;  // work may be queued: wait before anything is released
  // Graph mode: everything the steps touch stays at the same addresses from call to call.
  const bool graph_mode =
      graphs_ && options.graphs && !options.profile && !options.anomaly && ws.stream && !ws.graph_refused;

  // Inputs: on the host (copied to the arena's staging area on other devices) or on the
  // device (used in place; copied to the staging area in graph mode); dense either way. (Held
  // inline, as the outputs' buffers: no allocation a call for a few of each.)
  SmallVector<Tensor, 4> dense;
  SmallVector<const void*, 4> input_data;
  SmallVector<Storage, 4> buffers;
  const auto span_of = [](const auto& v) { return std::span(v.data(), v.size()); };
  std::vector<Tensor> out;
  std::vector<Download> downloads;  // outputs on the host through the page-locked block, after the sync
  // Every input on the host: they go through the workspace's page-locked block (allocated on
  // the first such call; without it, as other calls), copied from there by the recordings
  // from the host.
  bool from_host = graph_mode && host_staging_ && !ws.host_graph_refused && !inputs.empty();
  for (const Tensor& t : inputs) from_host = from_host && t.device().is_cpu();
  if (from_host && !page_locked(ws.pinned, ws.pinned_refused, input_block_bytes()))
    from_host = false;  // page-locked memory is scarce: go without
  try {
    for (size_t i = 0; i < inputs.size(); ++i) {
      dense.emplace_back(inputs[i].is_contiguous() ? inputs[i] : inputs[i].contiguous(SrcLoc::none()));
      input_data.emplace_back(dense[i].data());
      if (from_host) {
        AMBER_ASSERT(dense[i].nbytes() == input_bytes_[i], "input ", i, ": ", dense[i].nbytes(), " bytes, planned for ",
                     input_bytes_[i]);
        if (input_bytes_[i])
          std::memcpy(static_cast<char*>(ws.pinned) + (input_staging_[i] - input_staging_[0]), dense[i].data(),
                      input_bytes_[i]);
        input_data[i] = host_in_place_ ? static_cast<char*>(ws.pinned) + (input_staging_[i] - input_staging_[0])
                                       : static_cast<char*>(ws.arena.data) + input_staging_[i];
        continue;
      }
      const bool on_device = dense[i].device() == device_;
      if (on_device) {
        // An eager contiguous() ran on the default stream: order it before this call's work.
        if (!inputs[i].is_contiguous() && !host_memory_ && backend_->synchronize(device_.index, nullptr) != 0)
          device_failure("preparing an input");
        if (!graph_mode) continue;
      }
      AMBER_ASSERT(on_device || (dense[i].device().is_cpu() && !host_memory_), "input on ", dense[i].device());
      char* staging = static_cast<char*>(ws.arena.data) + input_staging_[i];
      if (!on_device && upload(ws, i, dense[i], staging, stream, options.num_threads)) {
        input_data[i] = staging;
        continue;
      }
      if (dense[i].nbytes() && backend_->copy(staging, int32_t(device_.type), device_.index, dense[i].data(),
                                              int32_t(on_device ? device_.type : DeviceType::cpu),
                                              on_device ? device_.index : 0, dense[i].nbytes(), stream) != 0)
        device_failure(str("copying input ", i, " (", dense[i].nbytes(), " bytes) to the arena").c_str());
      input_data[i] = staging;
    }
    if (graph_mode) {
      Workspace::OutputSet* set = ws.free_set();
      const bool hand_out = set != nullptr;
      if (!hand_out) set = &ws.sets[2];
      if (!ws.kept_arena_of) ws.kept_arena_of = arenas_;  // from now on the workspace keeps its memory
      if (set->outputs.empty())
        for (size_t bytes : output_buffer_bytes_) set->outputs.push_back(output_cache_->take(bytes));
      bind(ws, span_of(input_data), set->outputs);
      // The first call runs the steps directly (kernels and libraries finish their lazy
      // set-up), the second records them, later ones replay the recording.
      Workspace::Recording& r = from_host ? set->host : set->device;
      if (!r.graph && r.calls > 0 && !capture(ws, options, from_host, &r.graph))
        (from_host ? ws.host_graph_refused : ws.graph_refused) = true;
      ++r.calls;
      if (r.graph) {
        if (backend_->graph_launch(device_.index, r.graph, stream) != 0) device_failure("launching the graph");
      } else {
        if (from_host) copy_staged_inputs(ws, stream);
        run_steps(ws, stream, options, trips_left);
      }
      if (hand_out || options.outputs_on_host) {
        out = output_tensors(set->outputs, options.outputs_on_host, stream, &ws, &downloads);  // or host copies
      } else {  // the third set's buffers are overwritten by the next such call: the caller gets copies
        for (size_t i = 0; i < output_buffer_bytes_.size(); ++i) {
          buffers.emplace_back(output_cache_->take(output_buffer_bytes_[i]));
          if (output_buffer_bytes_[i] &&
              backend_->copy(buffers[i].data(), int32_t(device_.type), device_.index, set->outputs[i].data(),
                             int32_t(device_.type), device_.index, output_buffer_bytes_[i], stream) != 0)
            device_failure("copying an output");
        }
        out = output_tensors(span_of(buffers), false, stream);
      }
    } else {
      for (size_t bytes : output_buffer_bytes_) buffers.emplace_back(output_cache_->take(bytes));
      bind(ws, span_of(input_data), span_of(buffers));
      run_steps(ws, stream, options, trips_left);
      out = output_tensors(span_of(buffers), options.outputs_on_host, stream, &ws, &downloads);
    }
    if (streams && backend_->synchronize(device_.index, stream) != 0) device_failure("running the call");
    if (!downloads.empty()) {  // large outputs asked on the host, in the page-locked block now
      ThreadLimit limit(std::max(1, options.num_threads));
      for (const Download& d : downloads) parallel_copy(d.dst, d.src, d.bytes);
    }
  } catch (...) {
    // Nothing this call queued may outlive it: its arena and buffers go back to the pools.
    if (streams) (void)backend_->synchronize(device_.index, stream);
    throw;
  }
  return out;
}

}  // namespace amber::loader
