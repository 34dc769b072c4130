// CPU kernels for conv2d and conv_transpose2d, on oneDNN's convolution and deconvolution
// primitives (one state machinery for both: the transposed geometry differs in its weights'
// dims and strides and its right padding, which output_padding shortens).
//
// Layout, measured here with 2 threads (ResNet-18's 3x3 shapes at batch 1, oneDNN 2.6):
// plain NCHW runs as im2col+GEMM at 210-290 GFLOP/s, NHWC activations with oneDNN's own
// weight layout run its brgconv kernels at 420-500 GFLOP/s. So the primitive is created for
// NHWC source and destination (conv2d's output is channels-last, see docs/OPS.md) and
// weights in the layout oneDNN chooses. Inputs in another layout are reordered first.
// The step's setup makes the primitive (per thread count) and packs the weights into its
// layout when they are immutable (cache_id != 0: a loaded model's weights); mutable weights
// are reordered on every call. All of it is the step's state (onednn.h). With
// AMBER_PRECISION_BF16 and immutable weights the primitive takes bf16 source and weights
// (packed to bf16 once; the source converted by its reorder) and writes f32: measured here
// with 2 threads, ResNet-18's 3x3 convolutions run at 450-550 GFLOP/s against 230-260 in f32.

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/onednn.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/op_attrs.h"

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

// The geometry of one conv2d or conv_transpose2d step, as oneDNN sees it.
struct Geometry {
  Dims xd, xs, wd, ws, yd, ys, stride, pad, pad_r, dil;
  int64_t groups = 1, oc = 0;
  bool bias = false, transposed = false;
  memory::data_type type = memory::data_type::f32;  // of source and weights (product_type)
};

template <bool Transposed>
Geometry geometry_of(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[2], &y = a->outputs[0];
  Geometry g;
  g.transposed = Transposed;
  auto pair_of = [&](int i) {
    auto v = attr_ints(a, i);
    return Dims{v[0], v.size() > 1 ? v[1] : v[0]};
  };
  Dims dil1;
  if constexpr (Transposed) {
    namespace at = op_attrs::conv_transpose2d;
    g.groups = attr_int(a, at::groups);
    g.stride = pair_of(at::stride);
    g.pad = pair_of(at::padding);
    const Dims out_pad = pair_of(at::output_padding);
    g.pad_r = {g.pad[0] - out_pad[0], g.pad[1] - out_pad[1]};  // output_padding: rows past the right padding
    dil1 = pair_of(at::dilation);
  } else {
    namespace at = op_attrs::conv2d;
    g.groups = attr_int(a, at::groups);
    g.stride = pair_of(at::stride);
    g.pad = g.pad_r = pair_of(at::padding);
    dil1 = pair_of(at::dilation);
  }
  g.dil = {dil1[0] - 1, dil1[1] - 1};  // oneDNN counts dilation from 0
  nchw_of(x, g.xd, g.xs);
  nchw_of(y, g.yd, g.ys);
  const int64_t kh = w.sizes[2], kw = w.sizes[3];
  if (!Transposed) {  // weight [OC, IC/G, KH, KW]; oneDNN's grouped form [G, OC/G, IC/G, KH, KW]
    g.oc = w.sizes[0];
    const int64_t icg = w.sizes[1];
    if (g.groups == 1) {
      g.wd = {g.oc, icg, kh, kw};
      g.ws.assign(w.strides, w.strides + 4);
    } else {
      g.wd = {g.groups, g.oc / g.groups, icg, kh, kw};
      g.ws = {g.oc / g.groups * w.strides[0], w.strides[0], w.strides[1], w.strides[2], w.strides[3]};
    }
  } else {  // weight [IC, OC/G, KH, KW]: oneDNN's deconvolution takes [(G,) OC/G, IC/G, KH, KW]
    const int64_t ocg = w.sizes[1], icg = w.sizes[0] / g.groups;
    g.oc = ocg * g.groups;
    if (g.groups == 1) {
      g.wd = {ocg, icg, kh, kw};
      g.ws = {w.strides[1], w.strides[0], w.strides[2], w.strides[3]};
    } else {
      g.wd = {g.groups, ocg, icg, kh, kw};
      g.ws = {icg * w.strides[0], w.strides[1], w.strides[0], w.strides[2], w.strides[3]};
    }
  }
  for (size_t i = 0; i < g.wd.size(); ++i)
    if (g.wd[i] == 1 && g.ws[i] <= 0) g.ws[i] = 1;
  g.bias = present(b);
  // Depthwise convolutions stay f32: a few products per element loaded, bf16 gains nothing
  // there and its source conversion costs a pass (measured: MobileNet-V2 and EfficientNet-B0
  // no faster, the latter slower, with them in bf16).
  const bool depthwise = g.groups > 1 && g.wd[2] == 1;
  g.type = depthwise ? memory::data_type::f32 : product_type(a, w);
  return g;
}

// The state of one conv2d step: its geometry and a primitive per thread count.
struct ConvState {
  Geometry g;
  ByThreads<ProductPrim> prims;
  size_t ws = 0;
  PackedByLayout packs;
  size_t workspace_bytes() const { return ws; }

  // The primitive for `threads`, made (and the weights packed, when immutable) on first use.
  ProductPrim& prim(int threads, const amber_tensor_view& w) {
    return prims.get(threads, [&](int t) {
      omp_set_num_threads(t);
      auto tag4 = memory::format_tag::nhwc;
      memory::desc src_md(g.xd, g.type, tag4), dst_md(g.yd, memory::data_type::f32, tag4);
      memory::desc wei_md(g.wd, g.type, memory::format_tag::any);
      memory::desc bias_md =
          g.bias ? memory::desc({g.oc}, memory::data_type::f32, memory::format_tag::x) : memory::desc();
      auto p = std::make_unique<ProductPrim>();
      if (g.transposed) {
        dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                            src_md, wei_md, bias_md, dst_md, g.stride, g.dil, g.pad, g.pad_r);
        dnnl::deconvolution_forward::primitive_desc pd(d, user_scratchpad(), engine());
        p->keep(dnnl::deconvolution_forward(pd), pd);
      } else {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          src_md, wei_md, bias_md, dst_md, g.stride, g.dil, g.pad, g.pad_r);
        dnnl::convolution_forward::primitive_desc pd(d, user_scratchpad(), engine());
        p->keep(dnnl::convolution_forward(pd), pd);
      }
      const memory::desc user_wei(g.wd, memory::data_type::f32, g.ws);
      if (w.cache_id != 0 && w.data && user_wei != p->wei) p->packed = packs.get(w.data, user_wei, p->wei);
      // The reorders a call may need around the primitive, made now (oneDNN keeps them).
      const memory::desc user_src(g.xd, memory::data_type::f32, g.xs);
      if (strides_usable(g.xd, g.xs) && user_src != p->src)
        (void)dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user_src, engine(), p->src, user_scratchpad()));
      const memory::desc user_dst(g.yd, memory::data_type::f32, g.ys);
      if (user_dst != p->dst)
        (void)dnnl::reorder(dnnl::reorder::primitive_desc(engine(), p->dst, engine(), user_dst, user_scratchpad()));
      return p;
    });
  }
};

// Setup: the primitive for the step's thread count and for one thread (a call that shares
// the cores with others), weights packed when immutable.
template <bool Transposed>
std::unique_ptr<ConvState> make_state(const amber_kernel_args* a) {
  auto s = std::make_unique<ConvState>();
  s->g = geometry_of<Transposed>(a);
  const int threads = std::max(1, a->num_threads);
  if (s->g.type == memory::data_type::bf16) {
    try {
      (void)s->prim(threads, a->inputs[1]);
    } catch (const dnnl::error&) {  // no bf16 implementation of this geometry: f32, as asked by default
      s->g.type = memory::data_type::f32;
    }
  }
  s->ws = s->prim(threads, a->inputs[1]).prim->scratch_bytes();
  if (threads > 1) (void)s->prim(1, a->inputs[1]);
  return s;
}

template <bool Transposed>
int conv(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[2], &y = a->outputs[0];
  std::unique_ptr<ConvState> own;  // a call without setup: a state for this call alone
  ConvState* st = static_cast<ConvState*>(a->state);
  if (!st) st = (own = make_state<Transposed>(a)).get();
  // The state was made for this step's shapes and strides (an eager call's is found by them).
  const Geometry& g = st->g;
  const int threads = std::max(1, a->num_threads);
  omp_set_num_threads(threads);
  ProductPrim& prim = st->prim(threads, w);
  dnnl::engine& eng = engine();

  // Weights: packed at setup when immutable, else reordered on every call.
  const memory::desc user_wei(g.wd, memory::data_type::f32, g.ws);
  const void* wei = w.data;
  std::vector<float> wbuf;
  if (user_wei != prim.wei) {
    if (prim.packed && w.cache_id != 0) {
      wei = prim.packed->data;
    } else {
      wbuf.resize(floats_for(prim.wei));
      run_reorder(memory(user_wei, eng, w.data), memory(prim.wei, eng, wbuf.data()));
      wei = wbuf.data();
    }
  }
  // Source: used in place when already NHWC, else reordered.
  std::vector<float> xbuf, ybuf, xcontig;
  const float* xp = static_cast<const float*>(x.data);
  const Dims& xd = g.xd;
  Dims xs = g.xs;
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
  if (user_src != prim.src) {
    xbuf.resize(floats_for(prim.src));
    run_reorder(memory(user_src, eng, const_cast<float*>(xp)), memory(prim.src, eng, xbuf.data()));
    xp = xbuf.data();
  }
  // Destination: written in place when the output is NHWC (conv2d's own output layout).
  const memory::desc user_dst(g.yd, memory::data_type::f32, g.ys);
  const bool direct = user_dst == prim.dst;
  if (!direct) ybuf.resize(floats_for(prim.dst));
  void* yp = direct ? y.data : ybuf.data();
  if (present(b)) {
    const float* bp = static_cast<const float*>(b.data);
    std::vector<float> bbuf;
    if (memory::desc({g.oc}, memory::data_type::f32, Dims{b.strides[0]}) != prim.bias) {  // strided: copy it
      bbuf.resize(size_t(g.oc));
      for (int64_t i = 0; i < g.oc; ++i) bbuf[size_t(i)] = bp[i * b.strides[0]];
      bp = bbuf.data();
    }
    prim.prim->execute({{DNNL_ARG_SRC, &prim.src, xp},
                        {DNNL_ARG_WEIGHTS, &prim.wei, wei},
                        {DNNL_ARG_BIAS, &prim.bias, bp},
                        {DNNL_ARG_DST, &prim.dst, yp}},
                       a->workspace, a->workspace_bytes);
  } else {
    prim.prim->execute(
        {{DNNL_ARG_SRC, &prim.src, xp}, {DNNL_ARG_WEIGHTS, &prim.wei, wei}, {DNNL_ARG_DST, &prim.dst, yp}},
        a->workspace, a->workspace_bytes);
  }
  if (!direct) run_reorder(memory(prim.dst, eng, ybuf.data()), memory(user_dst, eng, y.data));
  return 0;
}

int conv2d_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN convolution failed", [&] { return conv<false>(a); });
}
int conv_transpose2d_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN deconvolution failed", [&] { return conv<true>(a); });
}

AMBER_CPU_KERNELS(conv) {
  using State = StateOf<ConvState, make_state<false>>;
  using TransposedState = StateOf<ConvState, make_state<true>>;
  register_kernel("conv2d", DType::f32, amber_kernel{conv2d_run, State::setup, State::destroy, nullptr});
  register_kernel("conv_transpose2d", DType::f32,
                  amber_kernel{conv_transpose2d_run, TransposedState::setup, TransposedState::destroy, nullptr});
}

}  // namespace
}  // namespace amber::cpu
