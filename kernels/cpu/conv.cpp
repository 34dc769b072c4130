// CPU kernel for conv2d, on oneDNN's convolution primitive.
//
// Layout, measured here with 2 threads (ResNet-18's 3x3 shapes at batch 1, oneDNN 2.6):
// plain NCHW runs as im2col+GEMM at 210-290 GFLOP/s, NHWC activations with oneDNN's own
// weight layout run its brgconv kernels at 420-500 GFLOP/s. So the primitive is created for
// NHWC source and destination (conv2d's output is channels-last, see docs/OPS.md) and
// weights in the layout oneDNN chooses. Inputs in another layout are reordered first.
// Reordered weights are cached only when their storage is read-only (cache_id != 0: weights
// mapped from a file never change); otherwise they are reordered on every call. Primitive
// descriptors and primitives are cached by shape, layout and thread count. Cached primitives
// run from many threads at once (the loader's concurrent calls): every primitive, reorders
// included, is created with a user-managed scratchpad and each execution passes its own
// thread's scratchpad, as oneDNN requires for concurrent execution of one primitive.

#include <omp.h>

#include <list>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "amber/core/storage.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"

namespace amber::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// The 4-D (N, C, H, W) dims and strides of a view, treating 3-D (C, H, W) as N = 1.
void nchw_of(const amber_tensor_view& v, Dims& dims, Dims& strides) {
  if (v.ndim == 4) {
    dims.assign(v.sizes, v.sizes + 4);
    strides.assign(v.strides, v.strides + 4);
  } else {
    dims = {1, v.sizes[0], v.sizes[1], v.sizes[2]};
    strides = {v.sizes[0] * v.strides[0], v.strides[0], v.strides[1], v.strides[2]};
  }
  // oneDNN wants positive strides; size-1 dims may carry any stride.
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1 && strides[i] <= 0) strides[i] = 1;
}

bool strides_usable(const Dims& dims, const Dims& strides) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] > 1 && strides[i] <= 0) return false;
  return true;
}

struct ConvKey {
  Dims src, wei, dst, stride, pad, dil;
  int64_t groups;
  bool bias;
  int threads;
  auto tie() const { return std::tie(src, wei, dst, stride, pad, dil, groups, bias, threads); }
  bool operator<(const ConvKey& o) const { return tie() < o.tie(); }
};

struct ConvPrim {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

// Small thread-safe LRU caches.
template <typename K, typename V>
class Lru {
 public:
  explicit Lru(size_t cap) : cap_(cap) {}
  template <typename Make>
  std::shared_ptr<V> get(const K& k, Make make) {
    {
      std::lock_guard lock(m_);
      auto it = map_.find(k);
      if (it != map_.end()) {
        order_.splice(order_.begin(), order_, it->second.second);
        return it->second.first;
      }
    }
    auto v = std::make_shared<V>(make());
    std::lock_guard lock(m_);
    auto [it, inserted] = map_.try_emplace(k, v, order_.end());
    if (inserted) {
      order_.push_front(k);
      it->second.second = order_.begin();
      if (map_.size() > cap_) {
        map_.erase(order_.back());
        order_.pop_back();
      }
    }
    return it->second.first;
  }

 private:
  size_t cap_;
  std::mutex m_;
  std::list<K> order_;
  std::map<K, std::pair<std::shared_ptr<V>, typename std::list<K>::iterator>> map_;
};

Lru<ConvKey, ConvPrim>& prim_cache() {
  static Lru<ConvKey, ConvPrim> c(256);
  return c;
}

struct WeightKey {
  uint64_t cache_id;
  const void* data;
  Dims dims, strides;
  std::string target;  // serialised target memory desc
  bool operator<(const WeightKey& o) const {
    return std::tie(cache_id, data, dims, strides, target) < std::tie(o.cache_id, o.data, o.dims, o.strides, o.target);
  }
};
// Weights in the primitive's layout, cached for the life of the immutable weights (not
// zero-filled first; huge pages when large).
struct PackedWeights {
  float* data = nullptr;
  explicit PackedWeights(size_t bytes) : data(static_cast<float*>(cpu_allocate_long_lived(bytes))) {
    if (!data) throw std::bad_alloc();
  }
  PackedWeights(PackedWeights&& o) noexcept : data(std::exchange(o.data, nullptr)) {}
  PackedWeights(const PackedWeights&) = delete;
  ~PackedWeights() { cpu_free(data); }
};
Lru<WeightKey, PackedWeights>& weight_cache() {
  static Lru<WeightKey, PackedWeights> c(512);
  return c;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// This thread's scratchpad, grown to at least `bytes` (one execution per thread at a time).
memory scratchpad(const memory::desc& d, dnnl::engine& eng) {
  thread_local std::vector<char> buf;
  if (buf.size() < d.get_size()) buf.resize(d.get_size());
  return memory(d, eng, buf.data());
}

// A reorder from `from` to `to` (from oneDNN's primitive cache after the first), run with
// this thread's scratchpad.
dnnl::reorder::primitive_desc reorder_pd(const memory::desc& from, const memory::desc& to, dnnl::engine& eng) {
  return dnnl::reorder::primitive_desc(eng, from, eng, to, user_scratchpad());
}
void run_reorder(const memory& from, const memory& to, dnnl::stream& strm, dnnl::engine& eng) {
  auto pd = reorder_pd(from.get_desc(), to.get_desc(), eng);
  dnnl::reorder(pd).execute(
      strm, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc(), eng)}});
}

std::string desc_key(const memory::desc& d) {
  const dnnl_memory_desc_t& c = d.data;
  return std::string(reinterpret_cast<const char*>(&c), sizeof c);
}

// prepare_only: create the primitive and reorder immutable weights, compute nothing.
int conv2d(const amber_kernel_args* a, bool prepare_only) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[2], &y = a->outputs[0];
  const int64_t groups = attr_int(a, 3);
  auto pair_of = [&](int i) {
    auto v = attr_ints(a, i);
    return Dims{v[0], v.size() > 1 ? v[1] : v[0]};
  };
  const Dims stride = pair_of(0), pad = pair_of(1), dil1 = pair_of(2);
  const Dims dil = {dil1[0] - 1, dil1[1] - 1};  // oneDNN counts dilation from 0

  Dims xd, xs, yd, ys;
  nchw_of(x, xd, xs);
  nchw_of(y, yd, ys);
  const int64_t oc = w.sizes[0], icg = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
  Dims wd, ws;  // user weights, grouped form [G, OC/G, IC/G, KH, KW] when groups > 1
  if (groups == 1) {
    wd = {oc, icg, kh, kw};
    ws.assign(w.strides, w.strides + 4);
  } else {
    wd = {groups, oc / groups, icg, kh, kw};
    ws = {oc / groups * w.strides[0], w.strides[0], w.strides[1], w.strides[2], w.strides[3]};
  }
  for (size_t i = 0; i < wd.size(); ++i)
    if (wd[i] == 1 && ws[i] <= 0) ws[i] = 1;

  const int threads = std::max(1, a->num_threads);
  omp_set_num_threads(threads);
  dnnl::engine& eng = cpu_engine();
  const ConvKey key{xd, wd, yd, stride, pad, dil, groups, present(b), threads};
  auto prim = prim_cache().get(key, [&] {
    auto tag4 = memory::format_tag::nhwc;
    memory::desc src_md(xd, memory::data_type::f32, tag4), dst_md(yd, memory::data_type::f32, tag4);
    memory::desc wei_md(wd, memory::data_type::f32, memory::format_tag::any);
    memory::desc bias_md =
        present(b) ? memory::desc({oc}, memory::data_type::f32, memory::format_tag::x) : memory::desc();
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                                      wei_md, bias_md, dst_md, stride, dil, pad, pad);
    dnnl::convolution_forward::primitive_desc pd(d, user_scratchpad(), eng);
    return ConvPrim{pd, dnnl::convolution_forward(pd)};
  });

  dnnl::stream strm(eng);
  // Weights: reordered to the primitive's layout (cached when immutable).
  memory::desc user_wei(wd, memory::data_type::f32, ws);
  memory wei_mem;
  std::shared_ptr<PackedWeights> packed;
  std::vector<float> wbuf;
  auto reorder_weights = [&](float* dst) {
    memory user(user_wei, eng, w.data);
    memory out(prim->pd.weights_desc(), eng, dst);
    run_reorder(user, out, strm, eng);
    strm.wait();
  };
  if (user_wei == prim->pd.weights_desc()) {
    wei_mem = memory(user_wei, eng, w.data);
  } else if (w.cache_id != 0) {
    packed = weight_cache().get(WeightKey{w.cache_id, w.data, wd, ws, desc_key(prim->pd.weights_desc())}, [&] {
      PackedWeights p(prim->pd.weights_desc().get_size());
      reorder_weights(p.data);
      return p;
    });
    wei_mem = memory(prim->pd.weights_desc(), eng, packed->data);
  } else if (!prepare_only) {
    wbuf.resize(prim->pd.weights_desc().get_size() / sizeof(float));  // mutable weights: every call
    reorder_weights(wbuf.data());
    wei_mem = memory(prim->pd.weights_desc(), eng, wbuf.data());
  }
  if (prepare_only) {
    // Also the reorders a call will need around the primitive (oneDNN caches them).
    const memory::desc user_src(xd, memory::data_type::f32, xs);
    if (strides_usable(xd, xs) && user_src != prim->pd.src_desc())
      (void)dnnl::reorder(reorder_pd(user_src, prim->pd.src_desc(), eng));
    const memory::desc user_dst(yd, memory::data_type::f32, ys);
    if (user_dst != prim->pd.dst_desc()) (void)dnnl::reorder(reorder_pd(prim->pd.dst_desc(), user_dst, eng));
    return 0;  // the primitive and immutable weights are ready
  }
  // Source: used in place when already NHWC, else reordered.
  memory src_mem;
  std::vector<float> xbuf, ybuf;
  std::vector<float> xcontig;
  const float* xp = static_cast<const float*>(x.data);
  if (!strides_usable(xd, xs)) {  // broadcast (stride-0) input: materialise it
    xcontig.resize(size_t(xd[0] * xd[1] * xd[2] * xd[3]));
    size_t k = 0;
    for (int64_t n = 0; n < xd[0]; ++n)
      for (int64_t c = 0; c < xd[1]; ++c)
        for (int64_t h = 0; h < xd[2]; ++h)
          for (int64_t ww = 0; ww < xd[3]; ++ww) xcontig[k++] = xp[n * xs[0] + c * xs[1] + h * xs[2] + ww * xs[3]];
    xp = xcontig.data();
    xs = {xd[1] * xd[2] * xd[3], xd[2] * xd[3], xd[3], 1};
  }
  memory::desc user_src(xd, memory::data_type::f32, xs);
  if (user_src == prim->pd.src_desc()) {
    src_mem = memory(user_src, eng, const_cast<float*>(xp));
  } else {
    xbuf.resize(prim->pd.src_desc().get_size() / sizeof(float));
    src_mem = memory(prim->pd.src_desc(), eng, xbuf.data());
    memory user(user_src, eng, const_cast<float*>(xp));
    run_reorder(user, src_mem, strm, eng);
  }
  // Destination: written in place when the output is NHWC (conv2d's own output layout).
  memory::desc user_dst(yd, memory::data_type::f32, ys);
  memory dst_mem;
  const bool direct = user_dst == prim->pd.dst_desc();
  if (direct) {
    dst_mem = memory(user_dst, eng, y.data);
  } else {
    ybuf.resize(prim->pd.dst_desc().get_size() / sizeof(float));
    dst_mem = memory(prim->pd.dst_desc(), eng, ybuf.data());
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}};
  if (present(b)) {
    memory::desc bias_md({oc}, memory::data_type::f32, Dims{b.strides[0]});
    if (bias_md == prim->pd.bias_desc()) {
      args[DNNL_ARG_BIAS] = memory(bias_md, eng, b.data);
    } else {  // a strided bias: copy it
      static thread_local std::vector<float> bbuf;
      bbuf.resize(size_t(oc));
      for (int64_t i = 0; i < oc; ++i) bbuf[size_t(i)] = static_cast<const float*>(b.data)[i * b.strides[0]];
      args[DNNL_ARG_BIAS] = memory(prim->pd.bias_desc(), eng, bbuf.data());
    }
  }
  args[DNNL_ARG_SCRATCHPAD] = scratchpad(prim->pd.scratchpad_desc(), eng);
  prim->prim.execute(strm, args);
  if (!direct) {
    memory user(user_dst, eng, y.data);
    run_reorder(dst_mem, user, strm, eng);
  }
  strm.wait();
  return 0;
}

template <typename T>
struct Conv2dKernel {
  static int run(const amber_kernel_args* a) {
    return guarded(a, [&] {
      try {
        return conv2d(a, false);
      } catch (const dnnl::error& e) {
        return fail(a, "oneDNN convolution failed: %s (status %d)", e.what(), int(e.status));
      }
    });
  }
  static int prepare(const amber_kernel_args* a) {
    return guarded(a, [&] {
      try {
        return conv2d(a, true);
      } catch (const dnnl::error& e) {
        return fail(a, "oneDNN convolution setup failed: %s (status %d)", e.what(), int(e.status));
      }
    });
  }
};

AMBER_CPU_KERNELS(conv) {
  register_typed<Conv2dKernel, float>("conv2d");
  register_prepare("conv2d", DType::f32, &Conv2dKernel<float>::prepare);
}

}  // namespace
}  // namespace amber::cpu
