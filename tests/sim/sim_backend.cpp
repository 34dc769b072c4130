// The simulated device (libamber_sim.so, Device::sim), loaded like any backend library: memory the
// host cannot touch (PROT_NONE, opened only inside its own operations), streams that defer work
// until synchronize, the CPU's kernels on its memory alone (inputs may be read in place from its
// page-locked blocks), graphs refusing copies from other host memory as CUDA does, timing marks,
// setup scopes, counters and faults (sim_control.h). AMBER_SIM_DEVICES: device count (default 2).

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "amber/core/backend.h"
#include "amber/core/backend_registry.h"
#include "amber/core/dtype.h"
#include "amber/core/parallel.h"
#include "sim_control.h"

namespace {

constexpr int kMaxDevices = 16;

struct Alloc {
  char* base;
  size_t bytes, mapped;
  int device;
};

using Op = std::function<bool(std::string& error)>;  // false: failed, error says why

struct Stream {
  int device;
  std::deque<Op> queue;
  std::string pending_error;  // from work run by another thread's flush; reported at the next sync
  bool recording = false;     // a capture stream: work goes to `recorded`, not run
  bool spoiled = false;       // something could not be recorded: the capture fails
  std::vector<Op> recorded;
  std::vector<const void*> recorded_states;  // the kernel states the recorded calls use
};

struct Graph {
  int device;
  std::vector<Op> ops;
  std::vector<const void*> states;  // its calls' kernel states (a graph must go before them)
};

std::mutex g_mutex;                   // guards everything below; the simulated devices run one operation at a time
std::map<uintptr_t, Alloc> g_allocs;  // by base address
std::set<Stream*> g_streams;
std::set<Graph*> g_graphs;
Stream g_default[kMaxDevices];
amber_sim_counters g_counters{};
uint64_t g_held[kMaxDevices], g_peak[kMaxDevices];  // bytes allocated on each device, now and at most
uint64_t g_fail_at[3] = {0, 0, 0};                  // countdown to the failing operation of each kind, 0: none
thread_local std::string t_error;

int device_count_from_env() {
  const char* env = std::getenv("AMBER_SIM_DEVICES");
  const int n = env ? std::atoi(env) : 2;
  return n < 0 ? 0 : n > kMaxDevices ? kMaxDevices : n;
}
const int g_device_count = device_count_from_env();

const amber_backend& cpu() { return amber::backend(amber::Device::cpu()); }

bool injected(amber_sim_fault kind) {
  uint64_t& c = g_fail_at[kind];
  if (c == 0) return false;
  return --c == 0;
}

// The allocation containing [p, p + n), or nullptr. Caller holds g_mutex.
Alloc* find(const void* p, size_t n) {
  const auto a = uintptr_t(p);
  auto it = g_allocs.upper_bound(a);
  if (it == g_allocs.begin()) return nullptr;
  --it;
  Alloc& al = it->second;
  if (a < uintptr_t(al.base) || a + n > uintptr_t(al.base) + al.bytes || a + n < a) return nullptr;
  return &al;
}

// host_alloc's blocks: base -> bytes. Caller holds g_mutex.
std::map<uintptr_t, size_t> g_host_blocks;
bool in_host_block(const void* p, size_t n) {
  const auto a = uintptr_t(p);
  auto it = g_host_blocks.upper_bound(a);
  if (it == g_host_blocks.begin()) return false;
  --it;
  return a >= it->first && a + n <= it->first + it->second && a + n >= a;
}

// The allocations an operation may touch, opened (read-write) while it runs.
class Opened {
 public:
  Opened() = default;
  Opened(const Opened&) = delete;
  Opened& operator=(const Opened&) = delete;
  ~Opened() {
    for (Alloc* a : open_) mprotect(a->base, a->mapped, PROT_NONE);
  }
  void add(Alloc* a) {
    for (Alloc* o : open_)
      if (o == a) return;
    mprotect(a->base, a->mapped, PROT_READ | PROT_WRITE);
    open_.push_back(a);
  }

 private:
  std::vector<Alloc*> open_;
};

// Bytes from the lowest to one past the highest element of a view.
bool view_span(const amber_tensor_view& v, const char*& lo, size_t& n) {
  if (!v.data || v.ndim < 0) return false;
  int64_t low = 0, high = 0;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.sizes[d] == 0) return false;
    const int64_t span = (v.sizes[d] - 1) * v.strides[d];
    (span < 0 ? low : high) += span;
  }
  const int64_t item = int64_t(amber::itemsize(amber::DType(v.dtype)));
  lo = static_cast<const char*>(v.data) + low * item;
  n = size_t((high - low + 1) * item);
  return true;
}

// Runs the queued work of s in order; the first failure drops the rest. Caller holds g_mutex.
void run_queue(Stream& s) {
  while (!s.queue.empty()) {
    Op op = std::move(s.queue.front());
    s.queue.pop_front();
    std::string error;
    if (!op(error)) {
      if (s.pending_error.empty()) s.pending_error = error;
      s.queue.clear();
    }
  }
}

void flush_all() {
  for (int d = 0; d < g_device_count; ++d) run_queue(g_default[d]);
  for (Stream* s : g_streams) run_queue(*s);
}

Stream* stream_of(int device, void* stream) { return stream ? static_cast<Stream*>(stream) : &g_default[device]; }

// Queues op on s, or records it when s is a capture stream. Caller holds g_mutex.
void enqueue(Stream* s, Op op) {
  if (s->recording) {
    s->recorded.push_back(std::move(op));
    return;
  }
  const bool legacy = s >= g_default && s < g_default + kMaxDevices;
  g_counters.legacy_tail = legacy ? g_counters.legacy_tail + 1 : 0;
  s->queue.push_back(std::move(op));
}

bool valid_device(int32_t d) {
  if (d >= 0 && d < g_device_count) return true;
  t_error = "sim: no device " + std::to_string(d) + " (" + std::to_string(g_device_count) + " configured)";
  return false;
}

// ---- The backend table ----

int32_t sim_device_count() {
  if (g_device_count == 0) t_error = "sim: AMBER_SIM_DEVICES is 0";
  return g_device_count;
}

void* sim_allocate(int32_t device, size_t nbytes, uint32_t) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return nullptr;
  if (injected(AMBER_SIM_FAIL_ALLOCATION)) {
    t_error = "sim: out of memory (injected failure): asked for " + std::to_string(nbytes) + " bytes";
    return nullptr;
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t mapped = (std::max<size_t>(nbytes, 1) + page - 1) / page * page;
  void* p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    t_error = "sim: out of memory: asked for " + std::to_string(nbytes) + " bytes";
    return nullptr;
  }
  g_allocs[uintptr_t(p)] = Alloc{static_cast<char*>(p), nbytes, mapped, device};
  ++g_counters.allocations;
  ++g_counters.legacy_tail;
  ++g_counters.live_allocations;
  g_counters.live_bytes += nbytes;
  g_held[device] += nbytes;
  g_peak[device] = std::max(g_peak[device], g_held[device]);
  return p;
}

void sim_deallocate(int32_t, void* ptr, size_t, uint32_t) {
  if (!ptr) return;
  std::lock_guard lock(g_mutex);
  flush_all();  // queued work may still use it (like cudaFree, this waits for the device)
  auto it = g_allocs.find(uintptr_t(ptr));
  if (it == g_allocs.end()) std::abort();  // freeing what was never allocated here: a bug in the caller
  munmap(it->second.base, it->second.mapped);
  ++g_counters.frees;
  ++g_counters.legacy_tail;
  --g_counters.live_allocations;
  g_counters.live_bytes -= it->second.bytes;
  g_held[it->second.device] -= it->second.bytes;
  g_allocs.erase(it);
}

int sim_copy(void* dst, int32_t dst_type, int32_t dst_device, const void* src, int32_t src_type, int32_t src_device,
             size_t nbytes, void* stream) {
  std::lock_guard lock(g_mutex);
  const int32_t sim = int32_t(amber::DeviceType::sim), host = int32_t(amber::DeviceType::cpu);
  const bool dst_sim = dst_type == sim, src_sim = src_type == sim;
  if ((!dst_sim && dst_type != host) || (!src_sim && src_type != host) || (!dst_sim && !src_sim)) {
    t_error = "sim: copies go between host memory and sim devices";
    return 1;
  }
  const int device = src_sim ? src_device : dst_device;
  if (!valid_device(device) || (dst_sim && !valid_device(dst_device))) return 1;
  if (injected(AMBER_SIM_FAIL_COPY)) {
    t_error = "sim: injected failure of a copy of " + std::to_string(nbytes) + " bytes";
    return 1;
  }
  if (nbytes == 0) return 0;
  if (stream_of(device, stream)->recording && !(dst_sim && src_sim) && !in_host_block(dst_sim ? src : dst, nbytes)) {
    stream_of(device, stream)->spoiled = true;
    t_error = "sim: a copy from or to host memory (other than host_alloc's) cannot be recorded in a graph";
    return 1;
  }
  Alloc* d = dst_sim ? find(dst, nbytes) : nullptr;
  Alloc* s = src_sim ? find(src, nbytes) : nullptr;
  if ((dst_sim && (!d || d->device != dst_device)) || (src_sim && (!s || s->device != src_device))) {
    t_error = "sim: copy of " + std::to_string(nbytes) + " bytes names memory that is not on the sim device it claims";
    return 1;
  }
  if (dst_sim && src_sim)
    ++g_counters.device_copies;
  else if (dst_sim)
    ++g_counters.uploads, g_counters.upload_bytes += nbytes;
  else
    ++g_counters.downloads, g_counters.download_bytes += nbytes;
  enqueue(stream_of(device, stream), [=](std::string&) {
    Opened open;
    if (d) open.add(d);
    if (s) open.add(s);
    std::memmove(dst, src, nbytes);
    return true;
  });
  return 0;
}

int sim_fill(int32_t device, void* ptr, int value, size_t nbytes, void* stream) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  if (nbytes == 0) return 0;
  Alloc* a = find(ptr, nbytes);
  if (!a || a->device != device) {
    t_error = "sim: fill of memory that is not on sim:" + std::to_string(device);
    return 1;
  }
  ++g_counters.fills;
  enqueue(stream_of(device, stream), [=](std::string&) {
    Opened open;
    open.add(a);
    std::memset(ptr, value, nbytes);
    return true;
  });
  return 0;
}

int sim_stream_create(int32_t device, void** stream) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  auto* s = new Stream{};
  s->device = device;
  g_streams.insert(s);
  ++g_counters.streams_created;
  ++g_counters.streams_live;
  *stream = s;
  return 0;
}

void sim_stream_destroy(int32_t, void* stream) {
  std::lock_guard lock(g_mutex);
  auto* s = static_cast<Stream*>(stream);
  // Like a GPU, the stream's queued work still runs, later: it moves to the default stream.
  Stream& d = g_default[s->device];
  for (Op& op : s->queue) d.queue.push_back(std::move(op));
  g_streams.erase(s);
  --g_counters.streams_live;
  delete s;
}

int sim_synchronize(int32_t device, void* stream) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  ++g_counters.syncs;
  Stream& s = *stream_of(device, stream);
  if (s.recording) {  // as CUDA: waiting for a stream that is being captured spoils the capture
    s.spoiled = true;
    t_error = "sim: synchronize on a stream that is being captured";
    return 1;
  }
  run_queue(s);
  if (s.pending_error.empty()) return 0;
  t_error = std::move(s.pending_error);
  s.pending_error.clear();
  return 1;
}

// ---- Kernels: the CPU backend's, deferred and run on opened device memory ----

struct SimState {
  const amber_kernel* cpu;
  void* state;
  const void* scope;  // the setup's scope (checked still live when the state goes)
  int32_t device;
  // The stream of its last call (from stream_create; a recording's or the default one: null),
  // checked still live when the state goes, as a GPU library handle's would need.
  const Stream* last_stream = nullptr;
};

// An owned copy of a kernel call's arguments (the caller's arrays may be gone by the time the
// stream runs it, as with a GPU's kernel launch).
struct Launch {
  const amber_kernel* cpu;
  std::vector<amber_tensor_view> views;  // inputs then outputs
  int n_inputs, n_outputs;
  std::vector<amber_attr> attrs;
  std::vector<std::vector<int64_t>> ints;
  std::vector<std::vector<double>> floats;
  std::vector<std::string> strs;
  std::vector<amber_fused_instr> program_instrs;
  amber_fused_program program{};
  bool has_program = false;
  int num_threads;
  void* state;
  void* workspace;
  size_t workspace_bytes;
  std::string label;
};

// Checks that every buffer of a call is memory of `device` (an input may also be in a page-locked
// host block: AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED), and opens it.
bool open_call(Opened& open, const amber_tensor_view* views, int n, int n_inputs, void* workspace,
               size_t workspace_bytes, int device, const std::string& label, std::string& error) {
  for (int i = 0; i < n; ++i) {
    const char* lo;
    size_t bytes;
    if (!view_span(views[i], lo, bytes)) continue;
    Alloc* a = find(lo, bytes);
    if (!a && i < n_inputs && in_host_block(lo, bytes)) continue;  // an input read in place from host_alloc's block
    if (!a || a->device != device) {
      error = "sim:" + std::to_string(device) + ": " + label + ": argument " + std::to_string(i) +
              (a ? " is memory of sim:" + std::to_string(a->device) : " is not device memory (a host pointer?)");
      return false;
    }
    open.add(a);
  }
  if (workspace && workspace_bytes) {
    Alloc* a = find(workspace, workspace_bytes);
    if (!a || a->device != device) {
      error = "sim:" + std::to_string(device) + ": " + label + ": the workspace is not memory of this device";
      return false;
    }
    // The ABI's promise (core/backend.h): a workspace starts a multiple of 256 bytes into its
    // allocation, as cuBLASLt and cuDNN expect of theirs.
    if ((static_cast<char*>(workspace) - a->base) % 256 != 0) {
      error = "sim:" + std::to_string(device) + ": " + label + ": the workspace starts " +
              std::to_string(static_cast<char*>(workspace) - a->base) +
              " bytes into its allocation, not at a multiple of 256";
      return false;
    }
    open.add(a);
  }
  return true;
}

// Live setup scopes (scope_create's), each with its device; guarded by g_mutex.
std::map<const void*, int32_t> g_scopes;

// Counts a scope handed to a setup or call that is not one of device's live scopes.
void check_scope(const void* scope, int32_t device) {
  if (!scope) return;
  const auto it = g_scopes.find(scope);
  if (it == g_scopes.end() || it->second != device) ++g_counters.scope_misuses;
}

void* sim_scope_create(int32_t device) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return nullptr;
  void* scope = new char(0);
  g_scopes[scope] = device;
  ++g_counters.scopes_created;
  ++g_counters.scopes_live;
  return scope;
}

void sim_scope_destroy(int32_t device, void* scope) {
  std::lock_guard lock(g_mutex);
  check_scope(scope, device);
  if (g_scopes.erase(scope)) {
    --g_counters.scopes_live;
    delete static_cast<char*>(scope);
  }
}

int sim_run(const amber_kernel_args* a) {
  const auto* cpu_kernel = static_cast<const amber_kernel*>(a->context);
  auto L = std::make_shared<Launch>();
  L->cpu = cpu_kernel;
  L->n_inputs = a->n_inputs;
  L->n_outputs = a->n_outputs;
  L->views.assign(a->inputs, a->inputs + a->n_inputs);
  L->views.insert(L->views.end(), a->outputs, a->outputs + a->n_outputs);
  L->attrs.assign(a->attrs, a->attrs + a->n_attrs);
  L->ints.resize(size_t(a->n_attrs));
  L->floats.resize(size_t(a->n_attrs));
  L->strs.resize(size_t(a->n_attrs));
  for (size_t i = 0; i < L->attrs.size(); ++i) {
    amber_attr& at = L->attrs[i];
    if (at.kind == AMBER_ATTR_INTS) at.ints = (L->ints[i].assign(at.ints, at.ints + at.count), L->ints[i].data());
    if (at.kind == AMBER_ATTR_FLOATS)
      at.floats = (L->floats[i].assign(at.floats, at.floats + at.count), L->floats[i].data());
    if (at.kind == AMBER_ATTR_STRING) at.str = (L->strs[i] = std::string(at.str, size_t(at.count))).c_str();
  }
  if (a->program) {
    L->program_instrs.assign(a->program->instrs, a->program->instrs + a->program->n_instrs);
    L->program = *a->program;
    L->program.instrs = L->program_instrs.data();
    L->has_program = true;
  }
  L->num_threads = a->num_threads;
  L->state = a->state ? static_cast<SimState*>(a->state)->state : nullptr;
  L->workspace = a->workspace;
  L->workspace_bytes = a->workspace_bytes;
  L->label = a->label ? a->label : "kernel";
  std::lock_guard lock(g_mutex);
  check_scope(a->scope, a->device);
  const int device = a->device;
  if (a->state) {
    auto* stream = static_cast<Stream*>(a->stream);
    static_cast<SimState*>(a->state)->last_stream = g_streams.count(stream) ? stream : nullptr;
    if (stream && stream->recording) stream->recorded_states.push_back(a->state);
  }
  if (!valid_device(device)) {
    std::snprintf(a->error, a->error_capacity, "%s", t_error.c_str());
    return 1;
  }
  enqueue(stream_of(device, a->stream), [L, device](std::string& error) {
    ++g_counters.kernels;  // counted (and failed by injection) when run, so graph replays count too
    if (injected(AMBER_SIM_FAIL_KERNEL)) {
      error = "sim:" + std::to_string(device) + ": " + L->label + ": injected kernel failure";
      return false;
    }
    Opened open;
    if (!open_call(open, L->views.data(), int(L->views.size()), L->n_inputs, L->workspace, L->workspace_bytes, device,
                   L->label, error))
      return false;
    char message[512] = "";
    amber_kernel_args c{};
    c.inputs = L->views.data();
    c.n_inputs = L->n_inputs;
    c.n_outputs = L->n_outputs;
    c.outputs = L->views.data() + L->n_inputs;
    c.attrs = L->attrs.data();
    c.n_attrs = int32_t(L->attrs.size());
    c.num_threads = L->num_threads;
    c.error = message;
    c.error_capacity = sizeof message;
    c.state = L->state;
    c.workspace = L->workspace;
    c.workspace_bytes = L->workspace_bytes;
    c.program = L->has_program ? &L->program : nullptr;
    c.context = L->cpu->context;
    c.label = L->label.c_str();
    amber::ThreadLimit limit(std::max(1, L->num_threads));
    if (L->cpu->run(&c) != 0) {
      error = "sim:" + std::to_string(device) + ": " + L->label + ": " + message;
      return false;
    }
    return true;
  });
  return 0;
}

int sim_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  const auto* cpu_kernel = static_cast<const amber_kernel*>(a->context);
  std::lock_guard lock(g_mutex);
  check_scope(a->scope, a->device);
  if (a->scope) ++g_counters.scoped_setups;
  // Setup reads immutable inputs (weights it packs) now, synchronously: they must already be
  // on the device, which the caller ensures by synchronising after uploading them.
  Opened open;
  std::vector<amber_tensor_view> views(a->inputs, a->inputs + a->n_inputs);
  std::string error;
  const int device = a->device;
  if (!open_call(open, views.data(), int(views.size()), 0, nullptr, 0, device, a->label ? a->label : "setup", error)) {
    std::snprintf(a->error, a->error_capacity, "%s", error.c_str());
    return 1;
  }
  amber_kernel_args c = *a;
  c.context = cpu_kernel->context;
  void* cpu_state = nullptr;
  if (cpu_kernel->setup(&c, &cpu_state, workspace_bytes) != 0) return 1;
  *state = new SimState{cpu_kernel, cpu_state, a->scope, a->device};
  return 0;
}

void sim_destroy(void* state) {
  auto* s = static_cast<SimState*>(state);
  {
    std::lock_guard lock(g_mutex);
    flush_all();                       // queued calls may still use the state
    check_scope(s->scope, s->device);  // a state goes before its scope
    if (s->last_stream && !g_streams.count(const_cast<Stream*>(s->last_stream))) ++g_counters.states_after_their_stream;
    for (const Graph* g : g_graphs)
      if (std::find(g->states.begin(), g->states.end(), state) != g->states.end())
        ++g_counters.states_before_their_graphs;
  }
  if (s->state && s->cpu->destroy_state) s->cpu->destroy_state(s->state);
  delete s;
}

const amber_kernel* sim_lookup(const char* op, int32_t version, int32_t dtype) {
  const amber_kernel* k = cpu().lookup_kernel(op, version, dtype);
  if (!k) return nullptr;
  static std::mutex m;
  static std::map<const amber_kernel*, amber_kernel>* wrapped = new std::map<const amber_kernel*, amber_kernel>();
  std::lock_guard lock(m);
  auto [it, fresh] = wrapped->try_emplace(k);
  if (fresh) it->second = amber_kernel{sim_run, k->setup ? sim_setup : nullptr, k->setup ? sim_destroy : nullptr, k};
  return &it->second;
}

const char* sim_last_error() { return t_error.c_str(); }

int sim_capture_begin(int32_t device, void** stream) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  auto* s = new Stream{};
  s->device = device;
  s->recording = true;
  *stream = s;
  return 0;
}

int sim_capture_end(int32_t device, void* stream, void** graph) {
  std::lock_guard lock(g_mutex);
  std::unique_ptr<Stream> s(static_cast<Stream*>(stream));
  if (!s->recording || s->device != device) {
    t_error = "sim: capture_end on a stream that capture_begin did not return";
    return 1;
  }
  if (s->spoiled) {
    t_error = "sim: the capture recorded work that a graph cannot hold";
    return 1;
  }
  auto* g = new Graph{device, std::move(s->recorded), std::move(s->recorded_states)};
  g_graphs.insert(g);
  *graph = g;
  ++g_counters.graphs_captured;
  ++g_counters.graphs_live;
  return 0;
}

int sim_graph_launch(int32_t device, void* graph, void* stream) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  auto* g = static_cast<Graph*>(graph);
  if (g->device != device) {
    t_error = "sim: a graph of sim:" + std::to_string(g->device) + " launched on sim:" + std::to_string(device);
    return 1;
  }
  Stream* s = stream_of(device, stream);
  for (const Op& op : g->ops) enqueue(s, op);
  ++g_counters.graph_launches;
  return 0;
}

void sim_graph_destroy(int32_t, void* graph) {
  std::lock_guard lock(g_mutex);
  g_graphs.erase(static_cast<Graph*>(graph));
  delete static_cast<Graph*>(graph);
  --g_counters.graphs_live;
}

int sim_memory_stats(int32_t device, int reset_peak, amber_memory_stats* stats) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  if (reset_peak) g_peak[device] = g_held[device];
  *stats = amber_memory_stats{g_held[device], g_peak[device], 0, 0, 0};
  return 0;
}

void* sim_host_alloc(int32_t device, size_t nbytes) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return nullptr;
  void* p = std::malloc(nbytes ? nbytes : 1);
  if (!p) {
    t_error = "sim: host_alloc of " + std::to_string(nbytes) + " bytes failed";
    return nullptr;
  }
  g_host_blocks[uintptr_t(p)] = nbytes;
  ++g_counters.host_allocs_live;
  return p;
}

void sim_host_free(int32_t, void* ptr) {
  if (!ptr) return;
  std::lock_guard lock(g_mutex);
  flush_all();  // queued or recorded-and-launched copies may still read it (cudaFreeHost waits too)
  if (g_host_blocks.erase(uintptr_t(ptr)) != 1) std::abort();  // not host_alloc's: a bug in the caller
  --g_counters.host_allocs_live;
  std::free(ptr);
}

// Timing marks: a mark takes the time when its stream runs it (the work queued before it has
// run then; kernels run at synchronize), so the time between two marks is the host time of the
// work between them. Destroyed marks leave queued records harmless (they look themselves up).
struct Event {
  int device = 0;
  bool done = false;
  std::chrono::steady_clock::time_point at;
};
std::set<Event*> g_events;

void* sim_event_create(int32_t device) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return nullptr;
  auto* e = new Event{};
  e->device = device;
  g_events.insert(e);
  return e;
}

int sim_event_record(int32_t device, void* event, void* stream) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return 1;
  auto* e = static_cast<Event*>(event);
  if (!g_events.count(e) || e->device != device) {
    t_error = "sim: event_record of a mark that event_create of this device did not return";
    return 1;
  }
  e->done = false;
  enqueue(stream_of(device, stream), [e](std::string&) {
    if (g_events.count(e)) e->at = std::chrono::steady_clock::now(), e->done = true;
    return true;
  });
  return 0;
}

int sim_event_elapsed(int32_t, void* start, void* end, float* ms) {
  std::lock_guard lock(g_mutex);
  auto *a = static_cast<Event*>(start), *b = static_cast<Event*>(end);
  if (!g_events.count(a) || !g_events.count(b)) {
    t_error = "sim: event_elapsed of a mark that event_create did not return";
    return 1;
  }
  if (!a->done || !b->done) {
    t_error = "sim: event_elapsed before both marks have run (synchronize their streams first)";
    return 1;
  }
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return 0;
}

void sim_event_destroy(int32_t, void* event) {
  std::lock_guard lock(g_mutex);
  auto* e = static_cast<Event*>(event);
  if (g_events.erase(e)) delete e;
}

const amber_backend kSim = {
    AMBER_BACKEND_ABI_VERSION,
    sizeof(amber_backend),
    "sim",
    AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED,
    sim_device_count,
    sim_allocate,
    sim_deallocate,
    sim_copy,
    sim_fill,
    sim_stream_create,
    sim_stream_destroy,
    sim_synchronize,
    sim_lookup,
    sim_last_error,
    sim_capture_begin,
    sim_capture_end,
    sim_graph_launch,
    sim_graph_destroy,
    sim_memory_stats,
    sim_host_alloc,
    sim_host_free,
    sim_event_create,
    sim_event_record,
    sim_event_elapsed,
    sim_event_destroy,
    sim_scope_create,
    sim_scope_destroy,
};

}  // namespace

extern "C" {
__attribute__((visibility("default"))) const amber_backend* amber_backend_entry() {
  for (int d = 0; d < kMaxDevices; ++d) g_default[d].device = d;
  return &kSim;
}
__attribute__((visibility("default"))) void amber_sim_get_counters(amber_sim_counters* out) {
  std::lock_guard lock(g_mutex);
  *out = g_counters;
}
__attribute__((visibility("default"))) void amber_sim_fail(int kind, uint64_t k) {
  std::lock_guard lock(g_mutex);
  if (kind >= 0 && kind < 3) g_fail_at[kind] = k;
}
}
