// load() and Model (model.h): validation through the archive reader, read-only weights
// (uploaded once to a device), plans cached per batch size, concurrent calls sharing the
// cores.

#include "amber/loader/model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include <unistd.h>

#include "amber/core/backend_registry.h"
#include "amber/core/hot.h"
#include "amber/core/parallel.h"
#include "amber/graph/passes.h"
#include "amber/graph/text.h"
#include "amber/loader/plan.h"
#include "amber/schema/op_library.h"

namespace amber {

namespace {
constexpr size_t kMaxCachedPlans = 16;  // sizes with a compiled plan (least recently used go)

IOInfo io_info(const std::string& name, const graph::ValueType& t, const graph::SymValues& traced) {
  IOInfo io;
  io.name = name;
  io.dtype = t.dtype;
  std::ostringstream os;
  os << t.shape;
  io.shape = os.str();
  io.dynamic = !graph::is_static(t.shape);
  io.dims = t.shape;
  io.traced = traced;
  return io;
}
}  // namespace

DimVec IOInfo::sizes_at(const graph::SymValues& v) const { return graph::concrete_shape(dims, v); }

DimVec IOInfo::sizes_at(int64_t n) const {
  graph::SymValues v = traced;
  v.set('N', n);
  return sizes_at(v);
}

struct Model::Impl {
  std::string source;
  graph::Graph graph;  // as validated, weights on the host (inspection)
  // What plans are made from: graph itself on the CPU; on another device a copy whose
  // constants are the uploaded weights.
  graph::Graph device_graph;
  bool uploaded = false;
  ArchiveInfo info;
  LoadOptions options;
  std::vector<IOInfo> inputs, outputs;
  int total_threads = 1;
  graph::SymValues default_sizes;                    // the traced sizes (none bound for a static graph)
  std::shared_ptr<const loader::Plan> default_plan;  // of default_sizes, never evicted
  // Intermediate memory of every plan's calls (one arena per concurrent call, reused).
  std::shared_ptr<loader::ArenaPool> arenas;
  // Output buffers of every plan's calls, recycled when the caller drops them.
  std::shared_ptr<loader::BufferCache> output_buffers;
  // The backend's setup scope, shared by every plan's setups (loader::Plan::make_scope).
  std::shared_ptr<void> scope;
  std::atomic<int> active{0};

  struct CachedPlan {
    std::shared_ptr<const loader::Plan> plan;
    uint64_t last_use = 0;
  };
  std::mutex mutex;
  std::map<graph::SymValues, CachedPlan> plans;  // by the symbols' sizes
  uint64_t tick = 0;
  std::vector<NodeProfile> retired;  // counters of evicted plans

  std::shared_ptr<const loader::Plan> plan(const graph::SymValues& n);
};

namespace {
void add_profile(std::vector<NodeProfile>& into, std::map<std::string, size_t>& where, const loader::Plan& p) {
  for (size_t i = 0; i < p.num_steps(); ++i) {
    if (!p.step_node(i)) continue;
    const graph::Node& n = *p.step_node(i);
    const loader::StepStats& s = p.step_stats(i);
    NodeProfile np;
    np.node = "%" + n.outputs[0]->name + " = " + n.op->name;
    np.op = n.op->name;
    np.source = n.source + (n.scope.empty() ? "" : (n.source.empty() ? "@" : " @") + n.scope);
    auto [it, fresh] = where.emplace(np.node, into.size());
    if (fresh) into.push_back(np);
    NodeProfile& t = into[it->second];
    t.calls += s.calls.load(std::memory_order_relaxed);
    t.total_ms += double(s.nanoseconds.load(std::memory_order_relaxed)) * 1e-6;
    t.device_ms += double(s.device_nanoseconds.load(std::memory_order_relaxed)) * 1e-6;
    t.bytes += s.bytes.load(std::memory_order_relaxed);
  }
}

// The kernels' amber_kernel_args::precision for a load precision on a backend with these flags.
amber_precision abi_precision(Precision p, uint32_t backend_flags) {
  switch (p) {
    case Precision::f32:
      break;
    case Precision::bf16:
      return AMBER_PRECISION_BF16;
    case Precision::dynamic_int8:
      return AMBER_PRECISION_DYNAMIC_INT8;
    case Precision::tf32:
      return AMBER_PRECISION_TF32;
    case Precision::f16:
      return AMBER_PRECISION_F16;
    // The whole model in 16 bits: a convolution or product run by its f32 kernel on widened
    // 16-bit values multiplies them in 16 bits where the backend can, losing nothing more.
    case Precision::bf16_model:
      return backend_flags & AMBER_BACKEND_BF16 ? AMBER_PRECISION_BF16 : AMBER_PRECISION_F32;
    case Precision::f16_model:
      return backend_flags & AMBER_BACKEND_F16 ? AMBER_PRECISION_F16 : AMBER_PRECISION_F32;
  }
  return AMBER_PRECISION_F32;
}
}  // namespace

std::shared_ptr<const loader::Plan> Model::Impl::plan(const graph::SymValues& n) {
  {
    std::lock_guard lock(mutex);
    auto it = plans.find(n);
    if (it != plans.end()) {
      it->second.last_use = ++tick;
      return it->second.plan;
    }
  }
  // Compiled outside the lock: other sizes keep running meanwhile.
  const graph::Graph& g = uploaded ? device_graph : graph;
  auto p = std::make_shared<const loader::Plan>(
      g.is_dynamic() ? g.instantiate(n) : g.clone(), options.device, total_threads, arenas, output_buffers, scope,
      abi_precision(options.precision, backend(options.device).flags), options.max_loop_trips);
  std::lock_guard lock(mutex);
  auto [it, fresh] = plans.emplace(n, CachedPlan{p, 0});
  it->second.last_use = ++tick;
  if (fresh && plans.size() > kMaxCachedPlans) {
    auto oldest = plans.end();  // the least recently used, never the traced sizes'
    for (auto c = plans.begin(); c != plans.end(); ++c)
      if (c->first != default_sizes && (oldest == plans.end() || c->second.last_use < oldest->second.last_use))
        oldest = c;
    std::map<std::string, size_t> where;
    for (size_t i = 0; i < retired.size(); ++i) where[retired[i].node] = i;
    add_profile(retired, where, *oldest->second.plan);
    plans.erase(oldest);  // calls still running hold their plan
  }
  return it->second.plan;
}

namespace {

Model::Impl* check_defined(const std::shared_ptr<Model::Impl>& impl) {
  AMBER_CHECK(impl, "amber::Model: the handle is empty (get one from amber::load)");
  return impl.get();
}

// Uploads every weight of impl->graph to the model's device once, as read-only device
// tensors, into impl->device_graph; the host copies stay mapped for inspection only.
void upload_weights(Model::Impl& impl) {
  const Device device = impl.options.device;
  const amber_backend& b = backend(device);
  impl.device_graph = impl.graph.clone();
  void* stream = nullptr;
  if (b.stream_create(device.index, &stream) != 0)
    throw Error(str("load: creating a stream on ", device, " failed: ", b.last_error()));
  struct StreamGuard {
    const amber_backend& b;
    int32_t device;
    void* stream;
    ~StreamGuard() {
      (void)b.synchronize(device, stream);  // nothing queued may outlive a failed upload
      if (stream) b.stream_destroy(device, stream);
    }
  } guard{b, device.index, stream};
  for (graph::Value* c : impl.device_graph.constants()) {
    const Tensor host = c->data.contiguous(SrcLoc::none());
    Storage s = Storage::allocate(host.nbytes(), device, /*long_lived=*/true);
    if (host.nbytes() && b.copy(s.data(), int32_t(device.type), device.index, host.data(), int32_t(DeviceType::cpu), 0,
                                host.nbytes(), stream) != 0)
      throw Error(str("load: uploading weight ", c->name, " (", host.nbytes(), " bytes) to ", device,
                      " failed: ", b.last_error()));
    c->data = Tensor::make(s.as_read_only(), host.sizes(), host.strides(), 0, host.dtype());
  }
  if (b.synchronize(device.index, stream) != 0)
    throw Error(str("load: uploading the weights to ", device, " failed: ", b.last_error()));
  impl.uploaded = true;
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::f32:
      return "f32";
    case Precision::bf16:
      return "bf16";
    case Precision::dynamic_int8:
      return "dynamic-int8";
    case Precision::tf32:
      return "tf32";
    case Precision::f16:
      return "f16";
    case Precision::bf16_model:
      return "bf16-model";
    case Precision::f16_model:
      return "f16-model";
  }
  return "?";
}

std::optional<Precision> precision_from_name(std::string_view name) {
  for (int i = 0; i <= int(Precision::f16_model); ++i)
    if (name == precision_name(Precision(i))) return Precision(i);
  return std::nullopt;
}

namespace {

// LoadOptions::max_workspace_bytes, or the machine's physical memory when 0.
size_t workspace_limit(const LoadOptions& options) {
  return options.max_workspace_bytes > 0 ? options.max_workspace_bytes
                                         : size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
}

std::shared_ptr<Model::Impl> make_model(LoadedArchive archive, const LoadOptions& options, const std::string& source) {
  AMBER_CHECK(options.num_threads >= 0, "load: num_threads must be >= 0 (0: all cores), got ", options.num_threads);
  const amber_backend& b = backend(options.device);  // names what is missing
  {
    // The backend flag each precision needs, and why a backend without it has none.
    const bool cpu = options.device.type == DeviceType::cpu;
    uint32_t needs = 0;
    const char* why = "";
    switch (options.precision) {
      case Precision::f32:
        break;
      case Precision::bf16:
        needs = AMBER_BACKEND_BF16;
        why = cpu ? " (it needs a processor with AVX512-BF16, which oneDNN uses natively; this one has none)"
              : options.device.type == DeviceType::cuda ? " (it needs a GPU of compute capability 8.0 or later)"
                                                        : " (its kernels have no bf16 path yet)";
        break;
      case Precision::dynamic_int8:
        needs = AMBER_BACKEND_INT8;
        why = cpu ? " (it needs a processor with AVX512-VNNI, which oneDNN uses natively; this one has none)"
                  : " (its kernels have no int8 path yet)";
        break;
      case Precision::tf32:
        needs = AMBER_BACKEND_TF32;
        why = " (TF32 is a format of NVIDIA GPUs' tensor cores: load on Device::cuda)";
        break;
      case Precision::bf16_model:
      case Precision::f16_model:
        break;  // every backend: through the f32 kernels where there is no 16-bit one
      case Precision::f16:
        needs = AMBER_BACKEND_F16;
        why = options.device.type == DeviceType::cuda
                  ? " (it needs a GPU of compute capability 7.0 or later)"
                  : " (f16 products run on NVIDIA GPUs' tensor cores: load on Device::cuda)";
        break;
    }
    AMBER_CHECK((b.flags & needs) == needs, "load: precision ", precision_name(options.precision),
                " is not offered by the ", b.name, " backend on this machine", why, ": load with Precision::f32");
  }
  auto impl = std::make_shared<Model::Impl>();
  impl->source = source;
  impl->graph = std::move(archive.graph);
  impl->info = std::move(archive.info);
  impl->options = options;
  if (options.precision == Precision::bf16_model || options.precision == Precision::f16_model) {
    try {
      graph::half_model(impl->graph, options.precision == Precision::bf16_model ? DType::bf16 : DType::f16);
    } catch (const Error& e) {
      throw Error(str(source, ": ", e.what()));
    }
  }
  impl->total_threads = options.num_threads > 0 ? options.num_threads : available_cores();
  impl->arenas = std::make_shared<loader::ArenaPool>(options.device, workspace_limit(options));
  impl->output_buffers = std::make_shared<loader::BufferCache>(options.device);
  impl->scope = loader::Plan::make_scope(options.device);
  // Weights are immutable: copies made for unaligned records become read-only too, so
  // kernels may pack them at setup and no output can write into them.
  for (graph::Value* c : impl->graph.constants()) {
    const Tensor& t = c->data;
    if (t.is_read_only()) continue;
    auto keep = std::make_shared<Tensor>(t);
    Storage s = Storage::wrap(const_cast<void*>(t.data()), t.nbytes(), t.device(), keep, /*read_only=*/true);
    c->data = Tensor::make(std::move(s), t.sizes(), t.strides(), 0, t.dtype());
  }
  impl->default_sizes = graph::default_sizes(impl->graph.symbols(), impl->graph.traced);
  for (const graph::Value* v : impl->graph.inputs())
    impl->inputs.push_back(io_info(v->name, v->type, impl->default_sizes));
  for (const auto& [name, v] : impl->graph.outputs())
    impl->outputs.push_back(io_info(name, v->type, impl->default_sizes));
  try {
    if (!(b.flags & AMBER_BACKEND_HOST_MEMORY)) upload_weights(*impl);
    // The plan of the traced sizes, every kernel's setup done (for a call alone and for a
    // call sharing the cores), a workspace ready, so no call pays for it.
    std::shared_ptr<const loader::Plan> p = impl->plan(impl->default_sizes);
    p->prepare(impl->total_threads);
    impl->default_plan = p;
  } catch (const Error& e) {
    throw Error(str(source, ": ", e.what()));
  }
  return impl;
}

// Calls m on zeros at its traced sizes through the whole forward path, so that the
// first real call finds code, caches, oneDNN's buffers and the output buffers warm. A model
// whose call takes microseconds runs a few more times: its first calls are dominated by cold
// caches and branch predictors, not by one-time setup; on a device with graphs, at least
// twice (the second call records the graph), then as often with the zeros on the host where
// such calls record a graph of their own (host_staged: the plan stages small host inputs),
// else once from the host; then the same again with the last call's outputs held, for the call
// slot's second set of output buffers (then a quick model of small inputs calls on the first
// again). The last calls are from the host, after the zeros' device memory has gone back. A
// kernel rejecting zeros ends the warm-up quietly (real inputs may still be fine); profile
// counters start from zero after.
void warm_up(const Model& m, bool host_staged) {
  const graph::SymValues& sizes_at = m.traced_sizes();
  const Device device = m.device();
  std::vector<Tensor> zeros;
  try {
    // The zero inputs count against the workspace limit: declared shapes come from the
    // archive, and a hostile one must not make load allocate more than a call could.
    std::vector<std::pair<DimVec, uint64_t>> shapes;  // each input's sizes and bytes
    uint64_t total = 0;
    for (const IOInfo& in : m.inputs()) {
      DimVec sizes = in.sizes_at(sizes_at);
      uint64_t bytes = 0;
      if (__builtin_mul_overflow(uint64_t(checked_numel(sizes)), uint64_t(itemsize(in.dtype)), &bytes) ||
          __builtin_add_overflow(total, bytes, &total))
        return;
      shapes.emplace_back(std::move(sizes), bytes);
    }
    if (total > workspace_limit(m.options())) return;  // no warm-up; a call of that size fails by itself
    const amber_backend& b = backend(device);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto& [sizes, bytes] = shapes[i];
      Storage s = Storage::allocate(size_t(bytes), device);
      if (bytes &&
          (b.fill(device.index, s.data(), 0, size_t(bytes), nullptr) != 0 || b.synchronize(device.index, nullptr) != 0))
        return;  // no warm-up: the first call will do what it would have done
      zeros.push_back(Tensor::make(std::move(s), sizes, contiguous_strides(sizes), 0, m.inputs()[i].dtype));
    }
    // A loop the zeros would keep running (a while_loop whose condition zeros never end)
    // ends the warm-up after a few iterations rather than making load run it to the limit.
    const CallOptions call{.max_loop_trips = 64};
    const auto start = std::chrono::steady_clock::now();
    (void)m.forward(zeros, call);
    const bool quick = std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1);
    if (quick)
      for (int i = 0; i < 3; ++i) (void)m.forward(zeros, call);
    else if (!device.is_cpu() && m.options().device_graphs)
      (void)m.forward(zeros, call);  // the second call records the device graph
    if (!device.is_cpu()) {
      // From the host too, where a service's inputs usually are: calls whose small inputs are
      // all on the host have a graph of their own (recorded by the second, with the uploads);
      // larger ones replay the graph above after their upload, which one call warms.
      std::vector<Tensor> host;
      for (const Tensor& z : zeros) host.push_back(z.to(Device::cpu()));
      const bool graphs = m.options().device_graphs;
      std::vector<Tensor> held;  // the last call's outputs (a held result keeps its set busy)
      const int host_calls = graphs && host_staged ? 2 : 1;
      // The zeros go back to the device before the last calls: CUDA orders a free on its legacy
      // stream, which a call's stream waits for, so freed after them, the caller's first call
      // would wait for it (and no later call).
      if (!graphs) zeros.clear();
      for (int i = 0; i + 1 < host_calls; ++i) (void)m.forward(host, call);
      held = m.forward(host, call);
      // A call slot hands out two sets of output buffers, each with its own recordings: a
      // loop that keeps its last result (y = m.forward(x)) alternates between them. With the
      // first set's outputs held, the same calls again record the second's, so that such a
      // loop's second and fourth calls do not run node by node and record (loader/plan.cpp).
      if (graphs) {
        for (int i = 0; i < 2; ++i) (void)m.forward(zeros, call);
        zeros.clear();
        for (int i = 0; i < (host_staged ? 2 : 1); ++i) (void)m.forward(host, call);
        // A quick model of small inputs: its last call from the host again on the first set,
        // the one a caller's first call takes (on an H200 ten_mul's first call took 16.7 us
        // where its second, on the set last used here, took 12.8 and the steady state 12.1).
        if (quick && host_staged) {
          held.clear();
          (void)m.forward(host, call);
        }
      }
    }
  } catch (const Error&) {
  }
  if (m.options().profile) m.reset_profile();
}

ArchiveReadOptions read_options(const LoadOptions& options) {
  for (const std::string& lib : options.op_libraries) load_op_library(lib);  // before the archive's ops are checked
  ArchiveReadOptions ro;
  ro.verify_checksums = options.verify_checksums;
  ro.num_threads = options.num_threads;
  ro.max_archive_bytes = options.max_archive_bytes;
  ro.max_model_memory = options.max_model_memory;
  return ro;
}

}  // namespace

Model load(const std::string& path, const LoadOptions& options) {
  Model m;
  m.impl_ = make_model(read_archive(path, read_options(options)), options, path);
  if (options.warm_up) warm_up(m, m.impl_->default_plan->stages_host_inputs());
  return m;
}

Model load(std::span<const uint8_t> bytes, const LoadOptions& options) {
  AMBER_CHECK(bytes.size() <= options.max_archive_bytes, "<buffer>: the archive is ", bytes.size(),
              " bytes, over the limit of ", options.max_archive_bytes, " (LoadOptions::max_archive_bytes)");
  void* copy = cpu_allocate(bytes.size());
  AMBER_CHECK(copy, "load: cannot allocate ", bytes.size(), " bytes to hold the archive");
  std::shared_ptr<const void> keep(copy, [](const void* p) { cpu_free(const_cast<void*>(p)); });
  if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
  Model m;
  m.impl_ = make_model(
      read_archive({static_cast<const uint8_t*>(copy), bytes.size()}, keep, read_options(options), "<buffer>"), options,
      "<buffer>");
  if (options.warm_up) warm_up(m, m.impl_->default_plan->stages_host_inputs());
  return m;
}

AMBER_HOT std::vector<Tensor> Model::forward(const std::vector<Tensor>& inputs, const CallOptions& call) const {
  Impl& m = *check_defined(impl_);  // this handle keeps the model alive until the call returns
  graph::SymValues n;
  try {
    for (size_t i = 0; i < inputs.size() && i < m.inputs.size(); ++i)
      AMBER_CHECK(!inputs[i].defined() || inputs[i].device() == m.options.device || inputs[i].device().is_cpu(),
                  "input ", m.inputs[i].name, " is on ", inputs[i].device(), " but the model runs on ",
                  m.options.device, " (inputs may be on the host or on the model's device)");
    n = graph::symbol_values(m.graph, inputs);
    graph::check_inputs(m.graph, inputs, n);
  } catch (const Error& e) {
    throw Error(str("forward: ", e.what()));
  }
  std::shared_ptr<const loader::Plan> other;  // a plan that may be evicted while it runs
  const loader::Plan& plan = n == m.default_sizes ? *m.default_plan : *(other = m.plan(n));
  struct Active {
    std::atomic<int>& a;
    int now;
    explicit Active(std::atomic<int>& x) : a(x), now(x.fetch_add(1) + 1) {}
    ~Active() { a.fetch_sub(1); }
  } active(m.active);
  loader::RunOptions ro;
  ro.num_threads = std::max(1, m.total_threads / active.now);
  ro.anomaly = m.options.anomaly_mode;
  ro.profile = m.options.profile;
  ro.stream = call.stream;
  ro.outputs_on_host = call.outputs_on_host || m.options.outputs_on_host;
  ro.max_loop_trips = call.max_loop_trips;
  ro.graphs = m.options.device_graphs;
  return plan.run(inputs, ro);
}

const std::vector<IOInfo>& Model::inputs() const { return check_defined(impl_)->inputs; }
const std::vector<IOInfo>& Model::outputs() const { return check_defined(impl_)->outputs; }
const ArchiveInfo& Model::metadata() const { return check_defined(impl_)->info; }
const LoadOptions& Model::options() const { return check_defined(impl_)->options; }
Device Model::device() const { return check_defined(impl_)->options.device; }
std::string Model::graph_text() const { return graph::to_text(check_defined(impl_)->graph); }
const graph::Graph& Model::graph() const { return check_defined(impl_)->graph; }
int64_t Model::traced_batch() const { return check_defined(impl_)->graph.traced_batch(); }
const graph::SymValues& Model::traced_sizes() const { return check_defined(impl_)->default_sizes; }

size_t Model::workspace_bytes(int64_t n) const {
  Impl& m = *check_defined(impl_);
  graph::SymValues v = m.default_sizes;
  if (n >= 0 && v.has('N')) v.set('N', n);
  return workspace_bytes(v);
}

size_t Model::workspace_bytes(const graph::SymValues& v) const {
  Impl& m = *check_defined(impl_);
  graph::SymValues key;  // only the graph's symbols key a plan
  graph::for_each_symbol(m.default_sizes.bound,
                         [&](char c) { key.set(c, v.has(c) ? v.get(c) : m.default_sizes.get(c)); });
  return m.plan(key)->arena_bytes();
}

std::vector<NodeProfile> Model::profile() const {
  Impl& m = *check_defined(impl_);
  std::lock_guard lock(m.mutex);
  std::vector<NodeProfile> out = m.retired;
  std::map<std::string, size_t> where;
  for (size_t i = 0; i < out.size(); ++i) where[out[i].node] = i;
  for (const auto& [n, cached] : m.plans) add_profile(out, where, *cached.plan);
  return out;
}

void Model::reset_profile() const {
  Impl& m = *check_defined(impl_);
  std::lock_guard lock(m.mutex);
  m.retired.clear();
  for (const auto& [n, cached] : m.plans) cached.plan->reset_stats();
}

}  // namespace amber
