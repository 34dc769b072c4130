// An op's f16/bf16 kernel made of its f32 one (see via_f32.h): widen the 16-bit inputs into
// the call's scratch, run the f32 kernel there, round its 16-bit outputs back. Weights
// (immutable inputs) are widened once, at setup, into memory the state holds.

#include "amber/schema/via_f32.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>
#include <vector>

#include "amber/core/backend_registry.h"
#include "amber/schema/dispatcher.h"

namespace amber {
namespace {

constexpr size_t kAlign = 256;  // every f32 copy starts on a 256-byte boundary of the scratch
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Adapter {
  amber_kernel entry{};  // what resolve_kernel hands out; context points back here
  const amber_kernel* f32 = nullptr;
  const amber_kernel* widen = nullptr;   // `to` at the 16-bit dtype: 16 bits to f32
  const amber_kernel* narrow = nullptr;  // `to` at f32: f32 to 16 bits
  DType half = DType::bf16;
  const amber_backend* backend = nullptr;
};

struct State {
  const Adapter* adapter = nullptr;
  int32_t device = 0;
  void* f32_state = nullptr;
  size_t f32_workspace = 0;
  std::vector<void*> weights;  // per input: its f32 copy made at setup, or null
  std::vector<size_t> weight_bytes;
};

void free_state(State* st) {
  if (!st) return;
  const Adapter& ad = *st->adapter;
  if (st->f32_state && ad.f32->destroy_state) ad.f32->destroy_state(st->f32_state);
  for (size_t i = 0; i < st->weights.size(); ++i)
    if (st->weights[i]) ad.backend->deallocate(st->device, st->weights[i], st->weight_bytes[i], AMBER_ALLOC_LONG_LIVED);
  delete st;
}

int fail(const amber_kernel_args* a, const char* message) {
  if (a->error && a->error_capacity) std::snprintf(a->error, a->error_capacity, "%s", message);
  return 1;
}

int64_t numel(const amber_tensor_view& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.sizes[d];
  return n;
}

// Dense strides in the order of v's own (outermost first), so a channels-last or transposed
// input stays so in f32.
void dense_strides(const amber_tensor_view& v, int64_t* out) {
  int order[AMBER_MAX_DIMS];
  std::iota(order, order + v.ndim, 0);
  std::stable_sort(order, order + v.ndim,
                   [&](int x, int y) { return std::llabs(v.strides[x]) > std::llabs(v.strides[y]); });
  int64_t s = 1;
  for (int k = v.ndim - 1; k >= 0; --k) {
    out[order[k]] = s;
    s *= std::max<int64_t>(v.sizes[order[k]], 1);
  }
}

// Elements from an output's first to its last, with its own strides (outputs have none
// negative).
int64_t span(const amber_tensor_view& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.sizes[d] == 0) return 0;
    n += (v.sizes[d] - 1) * v.strides[d];
  }
  return n;
}

// The f32 stand-ins of a call's views, laid out in the scratch after the f32 kernel's own.
struct Layout {
  std::vector<amber_tensor_view> inputs, outputs;
  std::vector<size_t> in_offset, out_offset;  // SIZE_MAX: the view is passed as it is
  size_t bytes = 0;
};

Layout plan(const Adapter& ad, const amber_kernel_args* a, const State& st) {
  Layout l;
  l.bytes = align_up(st.f32_workspace);
  l.inputs.assign(a->inputs, a->inputs + a->n_inputs);
  l.outputs.assign(a->outputs, a->outputs + a->n_outputs);
  l.in_offset.assign(size_t(a->n_inputs), SIZE_MAX);
  l.out_offset.assign(size_t(a->n_outputs), SIZE_MAX);
  for (int i = 0; i < a->n_inputs; ++i) {
    amber_tensor_view& v = l.inputs[size_t(i)];
    if (v.ndim < 0 || DType(v.dtype) != ad.half) continue;
    v.dtype = int32_t(DType::f32);
    dense_strides(a->inputs[i], v.strides);
    if (st.weights[size_t(i)]) {  // widened at setup; stays immutable
      v.data = st.weights[size_t(i)];
      continue;
    }
    v.cache_id = 0;
    v.data = nullptr;
    l.in_offset[size_t(i)] = l.bytes;
    l.bytes += align_up(size_t(numel(v)) * sizeof(float));
  }
  for (int o = 0; o < a->n_outputs; ++o) {
    amber_tensor_view& v = l.outputs[size_t(o)];
    if (v.ndim < 0 || DType(v.dtype) != ad.half) continue;
    v.dtype = int32_t(DType::f32);
    v.cache_id = 0;
    v.data = nullptr;
    l.out_offset[size_t(o)] = l.bytes;
    l.bytes += align_up(size_t(span(v)) * sizeof(float));
  }
  return l;
}

// Runs a `to` kernel: src into dst (dst's dtype is the target).
int convert(const amber_kernel& k, const amber_tensor_view& dst, const amber_tensor_view& src,
            const amber_kernel_args* a, void* stream) {
  amber_attr dtype{};
  dtype.kind = AMBER_ATTR_DTYPE;
  dtype.i = dst.dtype;
  amber_kernel_args c{};
  c.inputs = &src;
  c.n_inputs = 1;
  c.outputs = &dst;
  c.n_outputs = 1;
  c.attrs = &dtype;
  c.n_attrs = 1;
  c.num_threads = a->num_threads;
  c.device = a->device;
  c.stream = stream;
  c.error = a->error;
  c.error_capacity = a->error_capacity;
  c.context = k.context;
  c.label = a->label;
  c.precision = a->precision;
  return k.run(&c);
}

// The f32 kernel's arguments: a's, with the f32 views and the f32 kernel's state and scratch.
amber_kernel_args f32_args(const Adapter& ad, const amber_kernel_args* a, const Layout& l, const State* st) {
  amber_kernel_args f = *a;
  f.inputs = l.inputs.data();
  f.outputs = l.outputs.data();
  f.context = ad.f32->context;
  f.state = st ? st->f32_state : nullptr;
  f.workspace = st && st->f32_workspace ? a->workspace : nullptr;
  f.workspace_bytes = st ? st->f32_workspace : 0;
  return f;
}

int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  const Adapter& ad = *static_cast<const Adapter*>(a->context);
  std::unique_ptr<State, void (*)(State*)> st(new State, free_state);
  st->adapter = &ad;
  st->device = a->device;
  st->weights.assign(size_t(a->n_inputs), nullptr);
  st->weight_bytes.assign(size_t(a->n_inputs), 0);
  // Weights: widened once, on a stream of their own.
  void* stream = nullptr;
  bool have_stream = false;
  for (int i = 0; i < a->n_inputs; ++i) {
    const amber_tensor_view& v = a->inputs[i];
    if (v.ndim < 0 || DType(v.dtype) != ad.half || !v.cache_id || !v.data || numel(v) == 0) continue;
    if (!have_stream) {
      if (ad.backend->stream_create(a->device, &stream) != 0) return fail(a, ad.backend->last_error());
      have_stream = true;
    }
    const size_t bytes = size_t(numel(v)) * sizeof(float);
    void* p = ad.backend->allocate(a->device, bytes, AMBER_ALLOC_LONG_LIVED);
    if (!p) {
      std::snprintf(a->error, a->error_capacity, "widening a %s weight (input %d) to f32: %s",
                    std::string(dtype_name(ad.half)).c_str(), i, ad.backend->last_error());
      ad.backend->stream_destroy(a->device, stream);
      return 1;
    }
    st->weights[size_t(i)] = p;
    st->weight_bytes[size_t(i)] = bytes;
    amber_tensor_view dst = v;
    dst.dtype = int32_t(DType::f32);
    dst.data = p;
    dense_strides(v, dst.strides);
    if (convert(*ad.widen, dst, v, a, stream) != 0) {
      (void)ad.backend->synchronize(a->device, stream);
      ad.backend->stream_destroy(a->device, stream);
      return 1;
    }
  }
  if (have_stream) {
    const int rc = ad.backend->synchronize(a->device, stream);
    ad.backend->stream_destroy(a->device, stream);
    if (rc != 0) return fail(a, ad.backend->last_error());
  }
  if (ad.f32->setup) {
    const Layout l = plan(ad, a, *st);  // f32_workspace is still 0: only the views are used
    amber_kernel_args f = f32_args(ad, a, l, nullptr);
    if (ad.f32->setup(&f, &st->f32_state, &st->f32_workspace) != 0) return 1;
  }
  *workspace_bytes = plan(ad, a, *st).bytes;
  *state = st.release();
  return 0;
}

void destroy_state(void* state) { free_state(static_cast<State*>(state)); }

int run(const amber_kernel_args* a) {
  const Adapter& ad = *static_cast<const Adapter*>(a->context);
  const State* st = static_cast<const State*>(a->state);
  if (!st) return fail(a, "internal error: the 16-bit kernel ran without its setup");
  Layout l = plan(ad, a, *st);
  if (l.bytes > a->workspace_bytes) return fail(a, "internal error: the scratch is smaller than setup asked for");
  char* scratch = static_cast<char*>(a->workspace);
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    if (l.in_offset[i] == SIZE_MAX) continue;
    l.inputs[i].data = scratch + l.in_offset[i];
    if (numel(l.inputs[i]) && convert(*ad.widen, l.inputs[i], a->inputs[i], a, a->stream) != 0) return 1;
  }
  for (size_t o = 0; o < l.outputs.size(); ++o)
    if (l.out_offset[o] != SIZE_MAX) l.outputs[o].data = scratch + l.out_offset[o];
  const amber_kernel_args f = f32_args(ad, a, l, st);
  if (ad.f32->run(&f) != 0) return 1;
  for (size_t o = 0; o < l.outputs.size(); ++o)
    if (l.out_offset[o] != SIZE_MAX && numel(l.outputs[o]) &&
        convert(*ad.narrow, a->outputs[o], l.outputs[o], a, a->stream) != 0)
      return 1;
  return 0;
}

}  // namespace

const amber_kernel& kernel_via_f32(const OpSchema& op, Device device, DType dtype, const amber_kernel& f32) {
  AMBER_ASSERT(dtypes::half.contains(dtype), op.name, ": no f32 route for dtype ", dtype);
  static std::mutex mutex;
  static std::map<std::tuple<const amber_kernel*, int, int>, std::unique_ptr<Adapter>> adapters;
  std::lock_guard lock(mutex);
  std::unique_ptr<Adapter>& ad = adapters[{&f32, int(device.type), int(dtype)}];
  if (!ad) {
    static const OpSchema& to = op_schema("to");
    auto made = std::make_unique<Adapter>();
    made->f32 = &f32;
    made->widen = &resolve_kernel(to, device, dtype);
    made->narrow = &resolve_kernel(to, device, DType::f32);
    AMBER_ASSERT(!made->widen->setup && !made->narrow->setup, "to: a conversion kernel with a setup");
    made->half = dtype;
    made->backend = &backend(device);
    made->entry.run = run;
    made->entry.setup = setup;
    made->entry.destroy_state = destroy_state;
    made->entry.context = made.get();
    ad = std::move(made);
  }
  return ad->entry;
}

}  // namespace amber
