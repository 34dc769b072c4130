// Plan compilation and execution (plan.h).

#include "amber/loader/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <optional>

#include "amber/core/backend_registry.h"
#include "amber/core/parallel.h"
#include "amber/graph/passes.h"
#include "amber/loader/step_cost.h"
#include "amber/schema/dispatcher.h"

namespace amber::loader {
namespace {

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

}  // namespace

struct Plan::Workspace {
  ArenaPool::Arena arena;  // borrowed from the model's pool while the workspace is out
  std::vector<amber_tensor_view> args;
  std::vector<char*> data;
};

Plan::Plan(graph::Graph g, Device device, std::shared_ptr<ArenaPool> arenas, std::shared_ptr<BufferCache> outputs)
    : graph_(std::move(g)), device_(device), arenas_(std::move(arenas)), output_cache_(std::move(outputs)) {
  using graph::Value;
  AMBER_CHECK(device.is_cpu(), "load: executing on ", device, " is not supported by this build (CPU only)");
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
  for (const graph::Node* n : nodes) {
    if (n->op->is_view()) continue;
    if (n->op->is_maybe_view() && mp.views.count(n->outputs[0])) continue;
    Step s{n, nullptr, nullptr, int(arg_templates_.size()), 0, int(n->outputs.size()), {}, 0, false};
    try {
      if (n->op->is_maybe_view()) {
        // The layout cannot be a view of the input: copy the input to contiguous memory,
        // which the output then views with its own shape.
        const Value* in = n->inputs[0];
        s.kernel = resolve_kernel(clone_op, device, in->type.dtype);
        s.n_inputs = 1;
        arg_templates_.push_back(values_[size_t(index.at(in))].view);
        arg_values_.push_back(index.at(in));
        const Layout& il = mp.layouts.at(in);
        arg_templates_.push_back(view_of(in->type.dtype, {il.sizes, contiguous_strides(il.sizes), 0}, 0));
        arg_values_.push_back(index.at(n->outputs[0]));
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
        s.kernel = resolve_kernel(*n->op, device, ctx.compute_dtype);
        const amber_backend& b = backend(device);
        if (b.struct_size >= offsetof(amber_backend, lookup_prepare) + sizeof b.lookup_prepare && b.lookup_prepare)
          s.prepare = b.lookup_prepare(n->op->name.c_str(), n->op->version, int32_t(ctx.compute_dtype));
        s.n_inputs = int(n->inputs.size());
        for (const Value* in : n->inputs) {
          if (in) {
            arg_templates_.push_back(values_[size_t(index.at(in))].view);
            arg_values_.push_back(index.at(in));
          } else {
            amber_tensor_view absent{};
            absent.ndim = -1;
            arg_templates_.push_back(absent);
            arg_values_.push_back(-1);
          }
        }
        for (const Value* out : n->outputs) {
          arg_templates_.push_back(values_[size_t(index.at(out))].view);
          arg_values_.push_back(index.at(out));
        }
      }
    } catch (const Error& e) {
      throw Error(str(describe(*n), ": ", e.what()));
    }
    s.attrs.resize(n->attrs.size());
    for (size_t i = 0; i < n->attrs.size(); ++i) fill_c_attr(s.attrs[i], n->attrs[i]);
    for (const Value* out : n->outputs)
      s.out_bytes += uint64_t(checked_numel(concrete_shape(out->type.shape, 0))) * itemsize(out->type.dtype);
    const amber_tensor_view* args = &arg_templates_[size_t(s.first_arg)];
    const std::string_view op = n->op->is_maybe_view() ? "clone" : std::string_view(n->op->name);
    s.single_thread = estimate_step_ns(op, args, s.n_inputs, args + s.n_inputs, s.n_outputs) < kParallelMinNs;
    steps_.push_back(std::move(s));
  }
  for (const auto& [name, v] : graph_.outputs()) {
    const PlanValue& pv = values_[size_t(index.at(v))];
    outputs_.push_back({index.at(v), pv.home == Home::input || pv.home == Home::constant});
  }
  arena_bytes_ = mp.arena_bytes;
  stats_ = std::make_unique<StepStats[]>(steps_.size());
}

Plan::~Plan() { delete spare_.load(); }

void Plan::reset_stats() const {
  for (size_t i = 0; i < steps_.size(); ++i) {
    stats_[i].calls = 0;
    stats_[i].nanoseconds = 0;
    stats_[i].bytes = 0;
  }
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
    ws->args = arg_templates_;
    ws->data.resize(values_.size());
  }
  try {
    ws->arena = arenas_->take(arena_bytes_);
  } catch (...) {
    release(std::move(ws));
    throw;
  }
  return ws;
}

void Plan::release(std::unique_ptr<Workspace> ws) const {
  arenas_->give(ws->arena);
  ws->arena = {};
  Workspace* expected = nullptr;
  if (spare_.compare_exchange_strong(expected, ws.get(), std::memory_order_release)) {
    (void)ws.release();
    return;
  }
  std::lock_guard lock(pool_mutex_);
  pool_.push_back(std::move(ws));
}

void Plan::check_anomaly(const Step& s, const amber_tensor_view* outs) const {
  for (int o = 0; o < s.n_outputs; ++o) {
    const amber_tensor_view& v = outs[o];
    const int64_t n = numel_of(v);
    int64_t bad = -1;
    if (v.dtype == int32_t(DType::f32)) {
      const float* p = static_cast<const float*>(v.data);
      for (int64_t i = 0; i < n && bad < 0; ++i) bad = std::isfinite(p[i]) ? -1 : i;
    } else if (v.dtype == int32_t(DType::f64)) {
      const double* p = static_cast<const double*>(v.data);
      for (int64_t i = 0; i < n && bad < 0; ++i) bad = std::isfinite(p[i]) ? -1 : i;
    }
    if (bad < 0) continue;
    const double x = v.dtype == int32_t(DType::f32) ? double(static_cast<const float*>(v.data)[bad])
                                                    : static_cast<const double*>(v.data)[bad];
    const graph::Value* out = s.node->outputs[size_t(o)];
    throw Error(str("anomaly: ", describe(*s.node), " produced ", std::isnan(x) ? "NaN" : "Inf", " in %", out->name,
                    " : ", out->type, " (element ", bad, " in memory order); its inputs were finite"));
  }
}

void Plan::bind(Workspace& ws, const std::vector<Tensor>* inputs, const std::vector<Storage>* buffers) const {
  for (size_t v = 0; v < values_.size(); ++v) {
    const PlanValue& pv = values_[v];
    char* base = nullptr;
    switch (pv.home) {
      case Home::input:
        if (inputs) base = static_cast<char*>(const_cast<void*>((*inputs)[size_t(pv.index)].data()));
        break;
      case Home::constant:
        base = constant_data_[size_t(pv.index)];
        break;
      case Home::arena:
        base = static_cast<char*>(ws.arena.data);
        break;
      case Home::output:
        if (buffers) base = static_cast<char*>((*buffers)[size_t(pv.index)].data());
        break;
    }
    ws.data[v] = base ? base + pv.byte_offset : nullptr;
  }
  for (size_t k = 0; k < ws.args.size(); ++k)
    if (arg_values_[k] >= 0) ws.args[k].data = ws.data[size_t(arg_values_[k])];
}

void Plan::prepare(int num_threads) const {
  std::unique_ptr<Workspace> ws = acquire();
  bind(*ws, nullptr, nullptr);
  ThreadLimit limit(num_threads);
  // Start the intra-op threads now rather than in the first call, when some step will use
  // them (starting them costs up to milliseconds here: the other core may be idle in the
  // hypervisor). The arena is faulted in when allocated (cpu_allocate_long_lived).
  if (std::any_of(steps_.begin(), steps_.end(), [](const Step& s) { return !s.single_thread; }))
    parallel_for(num_threads, 1, [](int64_t, int64_t) {});
  char error[512];
  for (const Step& s : steps_) {
    if (!s.prepare) continue;
    error[0] = '\0';
    amber_kernel_args a{&ws->args[size_t(s.first_arg)],
                        s.n_inputs,
                        s.n_outputs,
                        &ws->args[size_t(s.first_arg + s.n_inputs)],
                        s.attrs.data(),
                        int32_t(s.attrs.size()),
                        s.single_thread ? 1 : num_threads,
                        nullptr,
                        error,
                        sizeof error};
    if (s.prepare(&a) != 0) {
      error[sizeof error - 1] = '\0';
      throw Error(str(describe(*s.node), ": ", s.node->op->name, " (setup): ", error[0] ? error : "failed"));
    }
  }
  release(std::move(ws));
}

std::vector<Tensor> Plan::run(const std::vector<Tensor>& inputs, const RunOptions& options) const {
  struct Lease {
    const Plan* plan;
    std::unique_ptr<Workspace> ws;
    ~Lease() {
      if (ws) plan->release(std::move(ws));
    }
  } lease{this, acquire()};
  Workspace& ws = *lease.ws;

  std::vector<Tensor> dense(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) dense[i] = inputs[i].is_contiguous() ? inputs[i] : inputs[i].contiguous();
  std::vector<Storage> buffers(output_buffer_bytes_.size());
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i] = output_cache_->take(output_buffer_bytes_[i]);
  bind(ws, &dense, &buffers);

  ThreadLimit limit(options.num_threads);
  char error[512];
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    const int threads = s.single_thread ? 1 : options.num_threads;
    std::optional<ThreadLimit> alone;
    if (threads != options.num_threads) alone.emplace(threads);
    error[0] = '\0';
    amber_kernel_args a{&ws.args[size_t(s.first_arg)],
                        s.n_inputs,
                        s.n_outputs,
                        &ws.args[size_t(s.first_arg + s.n_inputs)],
                        s.attrs.data(),
                        int32_t(s.attrs.size()),
                        threads,
                        nullptr,
                        error,
                        sizeof error};
    const auto t0 = options.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const int rc = s.kernel(&a);
    if (options.profile) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
      StepStats& st = stats_[i];
      st.calls.fetch_add(1, std::memory_order_relaxed);
      st.nanoseconds.fetch_add(uint64_t(ns.count()), std::memory_order_relaxed);
      st.bytes.fetch_add(s.out_bytes, std::memory_order_relaxed);
    }
    if (rc != 0) {
      error[sizeof error - 1] = '\0';
      throw Error(str(describe(*s.node), ": ", s.node->op->name, ": ", error[0] ? error : "kernel failed"));
    }
    if (options.anomaly) check_anomaly(s, a.outputs);
  }

  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (const Output& o : outputs_) {
    const PlanValue& pv = values_[size_t(o.value)];
    const amber_tensor_view& v = pv.view;
    const DimVec sizes(std::span<const int64_t>(v.sizes, size_t(v.ndim)));
    const DimVec strides(std::span<const int64_t>(v.strides, size_t(v.ndim)));
    const size_t item = itemsize(DType(v.dtype));
    if (o.copy) {
      const Tensor& home =
          pv.home == Home::input ? dense[size_t(pv.index)] : graph_.constants()[size_t(pv.index)]->data;
      const int64_t offset = home.storage_offset() + pv.byte_offset / int64_t(item);
      out.push_back(Tensor::make(home.storage(), sizes, strides, offset, DType(v.dtype)).clone());
    } else {
      out.push_back(
          Tensor::make(buffers[size_t(pv.index)], sizes, strides, pv.byte_offset / int64_t(item), DType(v.dtype)));
    }
  }
  return out;
}

}  // namespace amber::loader
