// Eager dispatch (see dispatcher.h). The hot path for a small op is: one inference call,
// one output allocation, one cached kernel pointer, one C call; no heap use besides the
// output tensor itself when attributes are already canonical.

#include "amber/schema/dispatcher.h"

#include "amber/schema/op_library.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "amber/core/backend_registry.h"
#include "amber/core/parallel.h"
#include "amber/core/small_vector.h"
#include "amber/schema/fused_program.h"
#include "amber/schema/op_cost.h"
#include "amber/schema/via_f32.h"

namespace amber {
namespace {

thread_local DispatchHook* t_hook = nullptr;
thread_local int t_depth = 0;  // dispatch nesting on this thread

struct DepthGuard {
  DepthGuard() { ++t_depth; }
  ~DepthGuard() { --t_depth; }
};

constexpr int kMaxCachedOps = kMaxOps;
std::atomic<const amber_kernel*> g_kernel_cache[kMaxCachedOps][kNumDeviceTypes][kNumDTypes];

void fill_view(amber_tensor_view& v, const Tensor* t, bool writable) {
  if (!t || !t->defined()) {
    v.data = nullptr;
    v.ndim = -1;
    v.dtype = 0;
    v.cache_id = 0;
    return;
  }
  v.data = writable ? t->mutable_data() : const_cast<void*>(t->data());
  v.dtype = int32_t(t->dtype());
  v.ndim = t->dim();
  v.cache_id = t->is_read_only() ? t->storage().id() : 0;
  std::memcpy(v.sizes, t->sizes().data(), sizeof(int64_t) * size_t(v.ndim));
  std::memcpy(v.strides, t->strides().data(), sizeof(int64_t) * size_t(v.ndim));
}

}  // namespace

void fill_c_attr(amber_attr& c, const Attr& a, const ArgSpec& spec) {
  c = amber_attr{};
  switch (a.kind()) {
    case AttrKind::none:
      c.kind = AMBER_ATTR_NONE;
      break;
    case AttrKind::i:
      c.kind = AMBER_ATTR_INT;
      c.i = a.i();
      c.f = double(a.i());
      break;
    case AttrKind::f:
      c.kind = AMBER_ATTR_FLOAT;
      c.f = a.f();
      // The integer view of a float attribute (kernels of integer dtypes read it): truncated,
      // saturating at the int64 range (an -inf mask fill is common), 0 for NaN. A plain cast
      // of an out-of-range double is undefined behaviour.
      c.i = std::isnan(a.f())                 ? 0
            : a.f() >= 9.2233720368547758e18  ? std::numeric_limits<int64_t>::max()
            : a.f() <= -9.2233720368547758e18 ? std::numeric_limits<int64_t>::min()
                                              : int64_t(a.f());
      break;
    case AttrKind::b:
      c.kind = AMBER_ATTR_BOOL;
      c.i = a.i();
      c.f = double(a.i());
      break;
    case AttrKind::ints:
      c.kind = AMBER_ATTR_INTS;
      c.ints = a.ints().data();
      c.count = int32_t(a.ints().size());
      break;
    case AttrKind::floats:
      c.kind = AMBER_ATTR_FLOATS;
      c.floats = a.floats().data();
      c.count = int32_t(a.floats().size());
      break;
    case AttrKind::s:
      c.kind = AMBER_ATTR_STRING;
      c.str = a.s().c_str();
      c.count = int32_t(a.s().size());
      c.i = spec.choice_index(a.s());
      break;
    case AttrKind::dtype:
      c.kind = AMBER_ATTR_DTYPE;
      c.i = a.i();
      break;
  }
}

namespace {

// Converts t to dtype with the `to` op's kernel (not recorded: we are inside an op).
Tensor cast_for_compute(const Tensor& t, DType dtype) {
  static const OpSchema& to_op = op_schema("to");
  return call(to_op, {&t}, {Attr(dtype)}, SrcLoc::none());
}

}  // namespace

DispatchHookGuard::DispatchHookGuard(DispatchHook* hook) : previous_(t_hook), previous_host_(tls_host_access_hook()) {
  t_hook = hook;
  tls_host_access_hook() = hook;
}

DispatchHookGuard::~DispatchHookGuard() {
  t_hook = previous_;
  tls_host_access_hook() = previous_host_;
}

DispatchHook* current_dispatch_hook() { return t_hook; }

namespace {
thread_local double t_work_left = std::numeric_limits<double>::infinity();
thread_local const char* t_work_source = nullptr;
std::atomic<int> g_work_limits{0};  // limits alive on any thread: the unlimited path reads only this

void charge_work(const OpSchema& op, const amber_tensor_view* in, int n_in, const amber_tensor_view* out, int n_out,
                 const amber_attr* attrs, int n_attrs) {
  if (g_work_limits.load(std::memory_order_relaxed) == 0 || t_work_source == nullptr) return;
  // A call costs its dispatch too, whatever its sizes: a model of many tiny calls (a
  // recurrent layer unrolled over a long sequence, at import) is bounded like a large one.
  constexpr double kCallWork = 1024;
  const double work =
      kCallWork + estimate_work(op.cost, in, n_in, out, n_out, window_elements(op, attrs, n_attrs)).total();
  auto count = [](double v) { return v < 1.8e19 ? uint64_t(std::max(v, 0.0)) : UINT64_MAX; };
  AMBER_CHECK(work <= t_work_left, op.name, ": this call's work (about ", count(work),
              " operations: schema/op_cost.h) is more than the ", count(t_work_left),
              " left of this thread's work limit (", t_work_source, ")");
  t_work_left -= work;
}
}  // namespace

WorkLimit::WorkLimit(double max_work, const char* source)
    : previous_left_(t_work_left), previous_source_(t_work_source) {
  if (t_work_source == nullptr || max_work < t_work_left) {  // the smaller budget binds
    t_work_left = max_work;
    t_work_source = source;
  }
  start_left_ = t_work_left;
  g_work_limits.fetch_add(1, std::memory_order_relaxed);
}

WorkLimit::~WorkLimit() {
  // What ran inside counts against the enclosing limit too.
  const double spent = std::isinf(start_left_) ? 0 : start_left_ - t_work_left;
  t_work_left = previous_left_ - spent;
  t_work_source = previous_source_;
  g_work_limits.fetch_sub(1, std::memory_order_relaxed);
}

const amber_kernel& resolve_kernel(const OpSchema& op, Device device, DType dtype) {
  AMBER_ASSERT(op.index >= 0 && op.index < kMaxCachedOps, "op table larger than the kernel cache");
  auto& slot = g_kernel_cache[op.index][int(device.type)][int(dtype)];
  const amber_kernel* k = slot.load(std::memory_order_acquire);
  if (k) [[likely]]
    return *k;
  const amber_backend& b = backend(device);
  const std::string_view ns = op_namespace(op.name);  // non-empty: an op library's op
  auto lookup = [&](DType t) {
    return ns.empty() ? b.lookup_kernel(op.name.c_str(), op.version, int32_t(t)) : library_kernel(op, device.type, t);
  };
  k = lookup(dtype);
  if (!k && dtypes::half.contains(dtype) && op.dtypes.contains(dtype))  // 16 bits through the f32 kernel
    if (const amber_kernel* f = lookup(DType::f32); f && f->run) k = &kernel_via_f32(op, device, dtype, *f);
  if (!ns.empty())
    AMBER_CHECK(k, op.name, ": op library ", ns, " (", op_library_origin(ns), ") has no ",
                device_type_name(device.type), " kernel for dtype ", dtype, " (its op lists ", op.dtypes, ")");
  AMBER_CHECK(k && k->run, op.name, ": no ", b.name, " kernel for dtype ", dtype, " (the op table lists ", op.dtypes,
              ")");
  slot.store(k, std::memory_order_release);
  return *k;
}

namespace {

// Kernel states of eager calls (kernels with a setup: convolution, linear, attention on the
// CPU), by everything the setup saw. Bounded: the least recently used entry goes when full;
// entries in use by a running call live on until it ends.
class EagerStates {
 public:
  struct Entry {
    const amber_kernel* kernel = nullptr;
    Device device;
    void* state = nullptr;
    size_t workspace_bytes = 0;
    Entry() = default;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() {
      if (!state || !kernel->destroy_state) return;
      // Work queued on the default stream may still use the state.
      if (!device.is_cpu())
        if (const amber_backend* b = backend_if_loaded(device.type)) (void)b->synchronize(device.index, nullptr);
      kernel->destroy_state(state);
    }
  };

  std::shared_ptr<Entry> get(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);
    return it->second.first;
  }
  void put(const std::string& key, std::shared_ptr<Entry> e) {
    std::shared_ptr<Entry> evicted;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    auto [it, fresh] = map_.try_emplace(key, std::move(e), order_.end());
    if (!fresh) return;
    order_.push_front(key);
    it->second.second = order_.begin();
    if (map_.size() > kCapacity) {
      auto last = map_.find(order_.back());
      evicted = std::move(last->second.first);
      map_.erase(last);
      order_.pop_back();
    }
  }
  size_t size() {
    std::lock_guard lock(mutex_);
    return map_.size();
  }

 private:
  static constexpr size_t kCapacity = 64;
  std::mutex mutex_;
  std::list<std::string> order_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<Entry>, std::list<std::string>::iterator>> map_;
};

EagerStates& eager_states() {
  static EagerStates* s = new EagerStates();  // never destroyed: states may outlive static destruction order
  return *s;
}

template <typename T>
void append(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Everything a kernel's setup may depend on: the arguments' layouts (and the identity of
// immutable inputs, whose contents a setup may pack), the attributes and the thread count.
std::string state_key(const amber_kernel& k, Device device, const amber_kernel_args& a) {
  std::string key;
  key.reserve(256);
  append(key, &k);
  append(key, device.index);
  append(key, a.num_threads);
  for (int i = 0; i < a.n_inputs + a.n_outputs; ++i) {
    const amber_tensor_view& v = i < a.n_inputs ? a.inputs[i] : a.outputs[i - a.n_inputs];
    append(key, v.dtype);
    append(key, v.ndim);
    for (int d = 0; d < v.ndim; ++d) {
      append(key, v.sizes[d]);
      append(key, v.strides[d]);
    }
    append(key, v.cache_id);
    append(key, v.cache_id ? v.data : nullptr);
  }
  for (int i = 0; i < a.n_attrs; ++i) {
    const amber_attr& at = a.attrs[i];
    append(key, at.kind);
    append(key, at.i);
    append(key, at.f);
    append(key, at.count);
    if (at.kind == AMBER_ATTR_INTS)
      key.append(reinterpret_cast<const char*>(at.ints), sizeof(int64_t) * size_t(at.count));
    if (at.kind == AMBER_ATTR_FLOATS)
      key.append(reinterpret_cast<const char*>(at.floats), sizeof(double) * size_t(at.count));
    if (at.kind == AMBER_ATTR_STRING) key.append(at.str, size_t(at.count));
  }
  return key;
}

}  // namespace

size_t eager_kernel_states() { return eager_states().size(); }

void launch_kernel(const OpSchema& op, const amber_kernel& kernel, std::span<const Tensor* const> inputs,
                   std::span<const Tensor> outputs, std::span<const Attr> attrs, Device device) {
  constexpr size_t kInline = 8;
  std::array<amber_tensor_view, kInline> in_inline, out_inline;
  std::array<amber_attr, kInline> attr_inline;
  std::vector<amber_tensor_view> in_heap, out_heap;
  std::vector<amber_attr> attr_heap;
  amber_tensor_view* in = in_inline.data();
  amber_tensor_view* out = out_inline.data();
  amber_attr* at = attr_inline.data();
  if (inputs.size() > kInline) in = (in_heap.resize(inputs.size()), in_heap.data());
  if (outputs.size() > kInline) out = (out_heap.resize(outputs.size()), out_heap.data());
  if (attrs.size() > kInline) at = (attr_heap.resize(attrs.size()), attr_heap.data());
  for (size_t i = 0; i < inputs.size(); ++i) fill_view(in[i], inputs[i], false);
  for (size_t i = 0; i < outputs.size(); ++i) fill_view(out[i], &outputs[i], true);
  for (size_t i = 0; i < attrs.size(); ++i) fill_c_attr(at[i], attrs[i], op.attr_spec(int(i)));
  charge_work(op, in, int(inputs.size()), out, int(outputs.size()), at, int(attrs.size()));
  char error[512];
  error[0] = '\0';
  amber_kernel_args args{};
  args.inputs = in;
  args.n_inputs = int32_t(inputs.size());
  args.n_outputs = int32_t(outputs.size());
  args.outputs = out;
  args.attrs = at;
  args.n_attrs = int32_t(attrs.size());
  args.num_threads = get_num_threads();
  args.device = device.index;
  args.error = error;
  args.error_capacity = sizeof error;
  args.context = kernel.context;
  args.label = op.name.c_str();
  auto failed = [&](const char* what) {
    error[sizeof error - 1] = '\0';
    throw Error(str(op.name, what, ": ", error[0] ? error : "kernel failed"));
  };
  // A fused program as C data, built once for this call.
  std::unique_ptr<CFusedProgram> program;
  if (op.flags & op_flags::program) {
    const int pi = op.attr_index("program");
    AMBER_ASSERT(pi >= 0 && size_t(pi) < attrs.size(), op.name, " has no program attribute");
    program = std::make_unique<CFusedProgram>(parse_fused_program(attrs[size_t(pi)].s(), int(inputs.size())),
                                              int(inputs.size()));
    args.program = program->get();
  }
  std::shared_ptr<EagerStates::Entry> entry;
  Storage workspace;
  if (kernel.setup) {
    const std::string key = state_key(kernel, device, args);
    entry = eager_states().get(key);
    if (!entry) {
      entry = std::make_shared<EagerStates::Entry>();
      entry->kernel = &kernel;
      entry->device = device;
      if (kernel.setup(&args, &entry->state, &entry->workspace_bytes) != 0) failed(" (setup)");
      eager_states().put(key, entry);
    }
    args.state = entry->state;
    if (entry->workspace_bytes) {
      workspace = Storage::allocate(entry->workspace_bytes, device);
      args.workspace = workspace.data();
      args.workspace_bytes = entry->workspace_bytes;
    }
  }
  if (kernel.run(&args) != 0) failed("");
}

std::vector<Tensor> apply_view(const OpSchema& op, const InferCtx& ctx, const Tensor& in, bool allow_copy) {
  std::vector<Tensor> out;
  const Layout src{in.sizes(), in.strides(), in.storage_offset()};
  Tensor copy;  // the contiguous copy, made at most once
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Layout dst;
    if (op.view(ctx, src, i, dst)) {
      out.push_back(Tensor::make(in.storage(), dst.sizes, dst.strides, dst.offset, in.dtype()));
      continue;
    }
    AMBER_CHECK(allow_copy, op.name, ": view size ", ctx.outputs()[size_t(i)].sizes,
                " is not compatible with the input's size ", in.sizes(), " and strides ", in.strides(),
                " (at least one dimension spans two non-contiguous subspaces); use reshape() instead");
    if (!copy.defined()) {
      static const OpSchema& clone_op = op_schema("clone");
      copy = call(clone_op, {&in}, {}, SrcLoc::none());
    }
    const Layout csrc{copy.sizes(), copy.strides(), 0};
    AMBER_ASSERT(op.view(ctx, csrc, i, dst), op.name, ": view of a contiguous tensor failed");
    out.push_back(Tensor::make(copy.storage(), dst.sizes, dst.strides, dst.offset, copy.dtype()));
  }
  return out;
}

std::vector<Tensor> dispatch(const OpSchema& op, std::span<const Tensor* const> inputs, std::span<const Attr> attrs,
                             SrcLoc loc, Device device) {
  if (op.is_control_flow()) [[unlikely]]
    throw Error(str(op.name, ": a control-flow op has no kernel; it runs through amber::", op.name,
                    " (schema/control_flow.h), the graph interpreter or the loader"));
  DepthGuard depth;
  // Tensor arguments: count, presence and device.
  if (op.has_tensor_list) {
    AMBER_CHECK(!inputs.empty(), op.name, ": expected a non-empty list of tensors");
  } else {
    AMBER_CHECK(int(inputs.size()) == op.num_tensor_args, op.name, ": expected ", op.num_tensor_args,
                " tensor arguments, got ", inputs.size());
  }
  constexpr size_t kMaxInputs = 32;  // cast_mask has one bit per input
  SmallVector<const TensorMeta*, 6> metas;
  bool have_device = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    const ArgKind kind = op.has_tensor_list ? ArgKind::tensor : op.args[i].kind;
    if (!t || !t->defined()) {
      AMBER_CHECK(kind == ArgKind::optional_tensor, op.name, ": tensor argument '",
                  op.args[op.has_tensor_list ? 0 : i].name, "' is undefined");
      metas.push_back(nullptr);
      continue;
    }
    if (!have_device) {
      device = t->device();
      have_device = true;
    } else {
      AMBER_CHECK(t->device() == device, op.name, ": expected all tensors on the same device, got ", device, " and ",
                  t->device());
    }
    metas.push_back(&t->meta());
  }
  // Attributes: complete and canonical.
  std::vector<Attr> normalized;
  if (!attrs_are_canonical(op, attrs)) {
    normalized = normalize_attrs(op, attrs);
    attrs = normalized;
  }

  InferCtx ctx(op, metas.data(), int(inputs.size()), attrs.data(), int(attrs.size()));
  op.infer(ctx);

  std::vector<Tensor> outputs;
  if (op.is_view() || op.is_maybe_view()) {
    outputs = apply_view(op, ctx, *inputs[0], op.is_maybe_view());
  } else {
    const DType cdt = ctx.compute_dtype;
    AMBER_CHECK(op.dtypes.contains(cdt), op.name, ": dtype ", cdt, " is not supported (supported: ", op.dtypes, ")");
    // Type promotion: cast the marked inputs to the compute dtype. Only the first
    // kMaxInputs inputs can be marked (lists of tensors are never promoted).
    SmallVector<Tensor, 2> casted;
    SmallVector<const Tensor*, 6> ready;
    for (size_t i = 0; i < inputs.size(); ++i) ready.push_back(inputs[i]);
    if (ctx.cast_mask) {
      const size_t n = std::min(inputs.size(), kMaxInputs);
      for (size_t i = 0; i < n; ++i)
        if (ctx.cast_mask & (1u << i)) casted.push_back(cast_for_compute(*inputs[i], cdt));
      size_t k = 0;  // pointers taken only after casted stops growing
      for (size_t i = 0; i < n; ++i)
        if (ctx.cast_mask & (1u << i)) ready[i] = &casted[k++];
    }
    outputs.reserve(size_t(ctx.num_outputs()));
    for (const TensorMeta& m : ctx.outputs()) outputs.push_back(empty(m.sizes, {m.dtype, device}, m.format));
    const amber_kernel& kernel = resolve_kernel(op, device, cdt);
    launch_kernel(op, kernel, std::span(ready.data(), ready.size()), outputs, attrs, device);
  }

  if (t_hook && t_depth == 1) t_hook->on_op(op, inputs, attrs, outputs, loc);
  return outputs;
}

Tensor call(const OpSchema& op, std::initializer_list<const Tensor*> inputs, std::initializer_list<Attr> attrs,
            SrcLoc loc, Device device) {
  auto outs =
      dispatch(op, std::span(inputs.begin(), inputs.size()), std::span(attrs.begin(), attrs.size()), loc, device);
  AMBER_ASSERT(outs.size() == 1, op.name, " returned ", outs.size(), " outputs where one was expected");
  return std::move(outs[0]);
}

}  // namespace amber
