// Eager dispatch (see dispatcher.h). The hot path for a small op is: one inference call,
// one output allocation, one cached kernel pointer, one C call; no heap use besides the
// output tensor itself when attributes are already canonical.

#include "amber/schema/dispatcher.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "amber/core/backend_registry.h"
#include "amber/core/parallel.h"
#include "amber/core/small_vector.h"

namespace amber {
namespace {

thread_local DispatchHook* t_hook = nullptr;
thread_local int t_depth = 0;  // dispatch nesting on this thread

struct DepthGuard {
  DepthGuard() { ++t_depth; }
  ~DepthGuard() { --t_depth; }
};

constexpr int kMaxCachedOps = 1024;
std::atomic<amber_kernel_fn> g_kernel_cache[kMaxCachedOps][kNumDeviceTypes][kNumDTypes];

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

void fill_c_attr(amber_attr& c, const Attr& a) {
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

amber_kernel_fn resolve_kernel(const OpSchema& op, Device device, DType dtype) {
  AMBER_ASSERT(op.index >= 0 && op.index < kMaxCachedOps, "op table larger than the kernel cache");
  auto& slot = g_kernel_cache[op.index][int(device.type)][int(dtype)];
  amber_kernel_fn fn = slot.load(std::memory_order_acquire);
  if (fn) [[likely]]
    return fn;
  const amber_backend& b = backend(device);
  fn = b.lookup_kernel(op.name.c_str(), op.version, int32_t(dtype));
  AMBER_CHECK(fn, op.name, ": no ", b.name, " kernel for dtype ", dtype, " (the op table lists ", op.dtypes, ")");
  slot.store(fn, std::memory_order_release);
  return fn;
}

void launch_kernel(const OpSchema& op, amber_kernel_fn kernel, std::span<const Tensor* const> inputs,
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
  for (size_t i = 0; i < attrs.size(); ++i) fill_c_attr(at[i], attrs[i]);
  char error[512];
  error[0] = '\0';
  amber_kernel_args args{in,
                         int32_t(inputs.size()),
                         int32_t(outputs.size()),
                         out,
                         at,
                         int32_t(attrs.size()),
                         get_num_threads(),
                         nullptr,
                         error,
                         sizeof error};
  (void)device;
  if (kernel(&args) != 0) {
    error[sizeof error - 1] = '\0';
    throw Error(str(op.name, ": ", error[0] ? error : "kernel failed"));
  }
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
    amber_kernel_fn kernel = resolve_kernel(op, device, cdt);
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
