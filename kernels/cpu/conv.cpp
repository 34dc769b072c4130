// CPU kernel for conv2d, on oneDNN's convolution primitive.
//
// Layout, measured here with 2 threads (ResNet-18's 3x3 shapes at batch 1, oneDNN 2.6):
// plain NCHW runs as im2col+GEMM at 210-290 GFLOP/s, NHWC activations with oneDNN's own
// weight layout run its brgconv kernels at 420-500 GFLOP/s. So the primitive is created for
// NHWC source and destination (conv2d's output is channels-last, see docs/OPS.md) and
// weights in the layout oneDNN chooses. Inputs in another layout are reordered first.
// Reordered weights are cached only when their storage is read-only (cache_id != 0: weights
// mapped from a file never change); otherwise they are reordered on every call. Primitive
// descriptors and primitives are cached by shape, layout and thread count (onednn.h: caches,
// scratchpads, concurrent execution).

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/onednn.h"
#include "amber/kernels/cpu/registry.h"

namespace amber::cpu {
namespace {

using namespace onednn;

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
  memory::desc src, wei, bias, dst, scratch;  // the primitive's layouts
  uint64_t id;                                // onednn::execute's key
};

Lru<ConvKey, ConvPrim>& prim_cache() {
  static Lru<ConvKey, ConvPrim> c(256);
  return c;
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
  dnnl::engine& eng = engine();
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
    return ConvPrim{pd,
                    dnnl::convolution_forward(pd),
                    pd.src_desc(),
                    pd.weights_desc(),
                    pd.bias_desc(),
                    pd.dst_desc(),
                    pd.scratchpad_desc(),
                    next_primitive_id()};
  });

  dnnl::stream strm(eng);  // for the reorders around the primitive (rare: NCHW inputs, mutable weights)
  // Weights: reordered to the primitive's layout (cached when immutable).
  const memory::desc user_wei(wd, memory::data_type::f32, ws);
  const void* wei = w.data;
  std::shared_ptr<PackedWeights> packed;
  std::vector<float> wbuf;
  if (user_wei != prim->wei) {
    if (w.cache_id != 0) {
      packed = packed_weights(w.cache_id, w.data, user_wei, prim->wei);
      wei = packed->data;
    } else if (!prepare_only) {
      wbuf.resize(prim->wei.get_size() / sizeof(float));  // mutable weights: every call
      run_reorder(memory(user_wei, eng, w.data), memory(prim->wei, eng, wbuf.data()), strm);
      wei = wbuf.data();
    }
  }
  if (prepare_only) {
    // Also the reorders a call will need around the primitive (oneDNN caches them).
    const memory::desc user_src(xd, memory::data_type::f32, xs);
    if (strides_usable(xd, xs) && user_src != prim->src) (void)dnnl::reorder(reorder_pd(user_src, prim->src));
    const memory::desc user_dst(yd, memory::data_type::f32, ys);
    if (user_dst != prim->dst) (void)dnnl::reorder(reorder_pd(prim->dst, user_dst));
    return 0;  // the primitive and immutable weights are ready
  }
  // Source: used in place when already NHWC, else reordered.
  std::vector<float> xbuf, ybuf, xcontig;
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
  const memory::desc user_src(xd, memory::data_type::f32, xs);
  if (user_src != prim->src) {
    xbuf.resize(prim->src.get_size() / sizeof(float));
    run_reorder(memory(user_src, eng, const_cast<float*>(xp)), memory(prim->src, eng, xbuf.data()), strm);
    xp = xbuf.data();
  }
  // Destination: written in place when the output is NHWC (conv2d's own output layout).
  const memory::desc user_dst(yd, memory::data_type::f32, ys);
  const bool direct = user_dst == prim->dst;
  if (!direct) ybuf.resize(prim->dst.get_size() / sizeof(float));
  void* yp = direct ? y.data : ybuf.data();
  if (present(b)) {
    const float* bp = static_cast<const float*>(b.data);
    std::vector<float> bbuf;
    if (memory::desc({oc}, memory::data_type::f32, Dims{b.strides[0]}) != prim->bias) {  // strided: copy it
      bbuf.resize(size_t(oc));
      for (int64_t i = 0; i < oc; ++i) bbuf[size_t(i)] = bp[i * b.strides[0]];
      bp = bbuf.data();
    }
    execute(prim->id, prim->prim,
            {{DNNL_ARG_SRC, &prim->src, xp},
             {DNNL_ARG_WEIGHTS, &prim->wei, wei},
             {DNNL_ARG_BIAS, &prim->bias, bp},
             {DNNL_ARG_DST, &prim->dst, yp}},
            prim->scratch);
  } else {
    execute(prim->id, prim->prim,
            {{DNNL_ARG_SRC, &prim->src, xp}, {DNNL_ARG_WEIGHTS, &prim->wei, wei}, {DNNL_ARG_DST, &prim->dst, yp}},
            prim->scratch);
  }
  if (!direct) run_reorder(memory(prim->dst, eng, ybuf.data()), memory(user_dst, eng, y.data), strm);
  return 0;
}

template <typename T>
struct Conv2dKernel {
  static int run(const amber_kernel_args* a) {
    return guarded_onednn(a, "oneDNN convolution failed", [&] { return conv2d(a, false); });
  }
  static int prepare(const amber_kernel_args* a) {
    return guarded_onednn(a, "oneDNN convolution setup failed", [&] { return conv2d(a, true); });
  }
};

AMBER_CPU_KERNELS(conv) {
  register_typed<Conv2dKernel, float>("conv2d");
  register_prepare("conv2d", DType::f32, &Conv2dKernel<float>::prepare);
}

}  // namespace
}  // namespace amber::cpu
