// CPU kernels for conv2d, fused_conv2d, quantized_conv2d and conv_transpose2d, on oneDNN's
// convolution and deconvolution primitives (one state machinery for all: the transposed
// geometry differs in its weights' dims and strides and its right padding, which
// output_padding shortens; fused_conv2d's activation is an eltwise post-op; quantized_conv2d
// is the dynamic int8 path with the weights given and the source's quantization fixed).
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
// With AMBER_PRECISION_DYNAMIC_INT8 and immutable weights (not depthwise, not transposed) the
// weights are quantized once to int8 (quantize.h: a scale per output channel, the primitive's
// constant output scales), each call's source image by image to uint8 with a scale and zero
// point from the image's own range (oneDNN 2.6's binary post-ops broadcast per image only in
// its reference kernels, so a primitive for one image runs once per image, images side by
// side on one thread each when there are as many as threads), and the
// primitive multiplies by the image's scale and adds the bias in post-ops
// (oneDNN 2.6 takes no runtime output scales for convolutions): measured here with 2 threads,
// ResNet-18's 3x3 shapes at batch 1, 1007 / 506 / 254 us (64 x 56 x 56) and 825 / 414 / 210 us
// (512 x 7 x 7) in f32 / bf16 / int8. A non-negative source (after a ReLU) has zero point 0
// and runs on oneDNN's brgconv kernels; a signed one on its jit_int8 kernels with a zero point
// (5-50% slower); one holding an infinity or NaN runs that call in f32.
// quantized_conv2d (made by `amber quantize`) runs the same int8 primitives with its own
// weights (int8, their scales given) and every image quantized with the calibrated
// input_scale and input_zero_point: no range to find, infinities saturate, and an image
// holding a NaN gets NaN outputs (there are no f32 weights to fall back on). Its images share
// that quantization, so the whole batch is one product on all the call's threads (ResNet-18
// calibrated, batch 8, 2 threads: 69.7 ms image by image, 54.3 ms as one batch). A u8 input
// (the previous int8 layer's output) is the quantized source as it is; quantized_conv2d.u8
// writes uint8, the primitive quantizing its result with output_scale and output_zero_point
// in a last post-op (x / output_scale + output_zero_point, then oneDNN's rounding to
// nearest even and saturation as it converts to u8).
// Its input scale is constant, so it is folded into the output scales and the bias, divided
// by input and weight scales, is the primitive's own bias: no binary post-ops (ResNet-50's
// first convolution, 7x7 to uint8, 1 thread: 1.83 -> 1.31 ms).
// fused_conv2d's clamp (ReLU is clamp to [0, inf]) and hardswish are post-ops the primitive
// applies as it writes each output block. oneDNN's clip post-op turns NaN into its lower bound
// where clamp keeps it, so the post-op runs only when no NaN can arise (ParamBound below), found
// by a read of the source; a clamp whose source is over twice the output's size, or whose
// source, weights or bias hold an infinity or NaN, runs the primitive without the post-op and
// clamp's own formula (pointwise_math.h) in a vectorised pass over the output after it
// (measured here with 1 and 2 threads, alternating runs: MobileNet-V2 b1 0.97x against
// reading every source, its stride-2 depthwise sources being 4x their outputs; SqueezeNet 1.1
// b1 0.99x / 0.97x against ReLU as its own op; ResNet-18 and -50 unchanged; earlier, with 2
// threads: MobileNet-V2 b1's 35 checks 0.3 ms, its ReLU6 passes 0.7). silu is silu's own
// formula in a vectorised pass over the output after the primitive (f32 and bf16 paths): oneDNN 2.6's swish post-op
// divides per element and cost more than the pass's extra read and write, measured here with 2 threads on
// EfficientNet-B0's shapes: 1x1 16 -> 96 at 112 x 112 736 -> 549 us, depthwise 144 at 56 x 56 302 -> 240 us, 1x1 192 ->
// 1152 at 7 x 7 106 -> 102 us. The dynamic int8 path keeps the post-op (its primitive writes the final value of each
// block). hardswish's post-op keeps NaN and infinities as the op does.

#include <omp.h>

#include <cmath>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/activation.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/onednn.h"
#include "amber/kernels/cpu/quantize.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/pointwise_math.h"
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

// The geometry of one conv2d, fused_conv2d or conv_transpose2d step, as oneDNN sees it.
struct Geometry {
  Dims xd, xs, wd, ws, yd, ys, stride, pad, pad_r, dil;
  int64_t groups = 1, oc = 0;
  bool bias = false, transposed = false;
  memory::data_type type = memory::data_type::f32;  // of source and weights (product_type)
  bool int8 = false;                                // dynamic int8 (the f32 primitive for non-finite sources)
  bool fixed_quant = false;                         // quantized_conv2d: int8 with input_q for every image
  TensorQuant input_q;
  bool u8_in = false;   // quantized_conv2d's source is u8 already (quantized with input_q)
  bool u8_out = false;  // quantized_conv2d.u8: the output quantized with output_q
  TensorQuant output_q;
  int bias_input = 2;  // quantized_conv2d's bias follows the weights' scales
  Act act = Act::none;
  float lo = 0, hi = 0;  // clamp's bounds
};

enum Kind { kConv, kFused, kTransposed, kQuant, kQuantU8 };

template <Kind K>
Geometry geometry_of(const amber_kernel_args* a) {
  constexpr bool Transposed = K == kTransposed;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
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
  } else {  // fused_conv2d's leading attributes are conv2d's
    namespace at = op_attrs::conv2d;
    static_assert(op_attrs::fused_conv2d::stride == at::stride && op_attrs::fused_conv2d::padding == at::padding &&
                  op_attrs::fused_conv2d::dilation == at::dilation && op_attrs::fused_conv2d::groups == at::groups);
    g.groups = attr_int(a, at::groups);
    g.stride = pair_of(at::stride);
    g.pad = g.pad_r = pair_of(at::padding);
    dil1 = pair_of(at::dilation);
    if constexpr (K == kQuant || K == kQuantU8) {
      namespace qa = op_attrs::quantized_conv2d;
      namespace ua = op_attrs::quantized_conv2d_u8;
      static_assert(qa::stride == at::stride && qa::padding == at::padding && qa::dilation == at::dilation &&
                    qa::groups == at::groups);
      static_assert(ua::stride == qa::stride && ua::padding == qa::padding && ua::dilation == qa::dilation &&
                    ua::groups == qa::groups && ua::input_scale == qa::input_scale &&
                    ua::input_zero_point == qa::input_zero_point && ua::activation == qa::activation &&
                    ua::min_val == qa::min_val && ua::max_val == qa::max_val);
      g.act = act_of(a->attrs[qa::activation]);
      g.lo = float(attr_float(a, qa::min_val));
      g.hi = float(attr_float(a, qa::max_val));
      g.fixed_quant = g.int8 = true;
      g.input_q.scale = float(attr_float(a, qa::input_scale));
      g.input_q.zero_point = int32_t(attr_int(a, qa::input_zero_point));
      g.bias_input = 3;
      g.u8_in = x.dtype == int32_t(DType::u8);
      if constexpr (K == kQuantU8) {
        g.u8_out = true;
        g.output_q.scale = float(attr_float(a, ua::output_scale));
        g.output_q.zero_point = int32_t(attr_int(a, ua::output_zero_point));
      }
    }
    if constexpr (K == kFused) {
      namespace fa = op_attrs::fused_conv2d;
      g.act = act_of(a->attrs[fa::activation]);
      g.lo = float(attr_float(a, fa::min_val));
      g.hi = float(attr_float(a, fa::max_val));
    }
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
  g.bias = present(a->inputs[g.bias_input]);
  if constexpr (K == kQuant || K == kQuantU8) return g;
  // Depthwise convolutions stay f32: a few products per element loaded, bf16 gains nothing
  // there and its source conversion costs a pass (measured: MobileNet-V2 and EfficientNet-B0
  // no faster, the latter slower, with them in bf16).
  const bool depthwise = g.groups > 1 && g.wd[2] == 1;
  g.type = depthwise ? memory::data_type::f32 : product_type(a, w);
  // Dynamic int8 quantizes the weights per output channel from their dense rows.
  const int64_t icg = g.wd[g.wd.size() - 3];
  const bool dense_rows =
      (kw == 1 || w.strides[3] == 1) && (kh == 1 || w.strides[2] == kw) && (w.sizes[1] == 1 || w.strides[1] == kh * kw);
  g.int8 = !Transposed && !depthwise && a->precision == AMBER_PRECISION_DYNAMIC_INT8 && w.cache_id != 0 && w.data &&
           dense_rows && icg * kh * kw <= kMaxInt8Reduction;
  return g;
}

// The primitives of a conv2d step: as typed (g.type), or, for dynamic int8, on a uint8
// source without or with a zero point; and, for fused_conv2d, as typed without its
// activation (a call with a non-finite source or parameters).
enum Variant { kAsTyped, kU8, kU8ZeroPoint, kNoActivation, kVariants };

// fused_conv2d's activation as an eltwise post-op.
void append_activation(dnnl::post_ops& po, const Geometry& g) {
  switch (g.act) {
    case Act::none:
      return;
    case Act::clamp:
      return po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, g.lo, g.hi);
    case Act::silu:
      return po.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
    case Act::hardswish:
      return po.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
  }
}

// Whether a view's strides are a permutation of dense ones (no gaps, no overlaps): then its
// n elements are one run from its data pointer, whatever the order of its dims.
bool dense_run(const int64_t* sizes, const int64_t* strides, size_t ndim, int64_t& n) {
  int64_t span = 1;
  bool positive = true;
  n = 1;
  for (size_t i = 0; i < ndim; ++i) {
    n *= sizes[i];
    if (sizes[i] > 1) {
      positive = positive && strides[i] > 0;
      span += (sizes[i] - 1) * strides[i];
    }
  }
  return positive && span == n;
}

// fused_conv2d's activation by the op's own formula (clamp keeps NaN) over y in place: a
// dense y (any order of dims) in vectorised runs, others element by element.
void activation_output(const amber_tensor_view& y, const Geometry& g) {
  float* p = static_cast<float*>(y.data);
  const Dims &d = g.yd, &st = g.ys;
  int64_t n = 0;
  if (dense_run(d.data(), st.data(), d.size(), n)) {
    activation_dense(p, n, g.act, g.lo, g.hi);
    return;
  }
  const auto apply = [&](float& v) { v = g.act == Act::silu ? pw::op::silu(v) : pw::op::clamp(v, g.lo, g.hi); };
  parallel_for(d[0] * d[1], 1, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc) {
      float* plane = p + (nc / d[1]) * st[0] + (nc % d[1]) * st[1];
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w) apply(plane[h * st[2] + w * st[3]]);
    }
  });
}

// The largest magnitude in a view, or infinity when an element is not finite (a dense view
// of any layout in one vectorised pass, others element by element).
double view_max_abs(const amber_tensor_view& v) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int64_t n = 0;
  const bool dense = dense_run(v.sizes, v.strides, size_t(v.ndim), n);
  const float* p = static_cast<const float*>(v.data);
  if (n == 0) return 0;
  float lo = 0, hi = 0;
  if (dense) return tensor_range(p, n, lo, hi) ? std::max(std::fabs(double(lo)), std::fabs(double(hi))) : kInf;
  double m = 0;
  Dims idx(size_t(v.ndim), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int i = 0; i < v.ndim; ++i) off += idx[size_t(i)] * v.strides[i];
    if (!std::isfinite(p[off])) return kInf;
    m = std::max(m, std::fabs(double(p[off])));
    for (int i = v.ndim - 1; i >= 0 && ++idx[size_t(i)] == v.sizes[i]; --i) idx[size_t(i)] = 0;
  }
  return m;
}

// fused_conv2d's clamp runs as oneDNN's clip post-op only when the product can hold no NaN
// (the post-op would turn it into a bound): finite source, weights and bias, and no sum that
// can overflow (partial sums that overflow with opposite signs, as a reference kernel's
// rounded products or a split reduction's partials can, meet as a NaN; one FMA chain, as
// oneDNN's direct kernels and PyTorch's run, saturates at an infinity). Every output is a bias plus at most
// numel(w) products, so |y| <= max|x| * max|w| * numel(w) + max|b|: `ParamBound` holds
// max|w| * numel(w) and max|b| (infinite when not finite), and the post-op runs when the sum
// stays below a quarter of FLT_MAX (bf16's rounding of x and w moves each by under 1%).
struct ParamBound {
  double per_source = 0, bias = 0;
  ParamBound(const amber_tensor_view& w, const amber_tensor_view& b)
      : per_source(view_max_abs(w) * double(numel(w))), bias(present(b) ? view_max_abs(b) : 0) {}
  bool finite() const { return std::isfinite(per_source) && std::isfinite(bias); }
  bool safe(double source_max_abs) const {
    return source_max_abs * per_source + bias < double(std::numeric_limits<float>::max()) / 4;
  }
};

// The state of one conv2d step: its geometry and a primitive per thread count and variant.
struct ConvState {
  Geometry g;
  ByThreads<ProductPrim> prims;  // keyed by threads * kVariants + variant
  size_t ws = 0;
  PackedByLayout packs;
  // fused_conv2d's clamp: its weights' and bias's bound, found at setup when both are
  // immutable (else on every call).
  std::optional<ParamBound> params;
  // Dynamic int8: the weights quantized ([OC, IC/G * KH * KW] dense), their scale per output
  // channel, and the layouts of the post-ops' operands and the source's zero point.
  std::vector<int8_t> qweights;
  std::vector<float> wscales;
  memory::desc scale_md, bias4_md, zero_md;
  // quantized_conv2d with every input_scale * weight_scale[o] positive: those products as the
  // output scales and the bias divided by them (oneDNN adds the bias to the int32 sums before
  // scaling), so that no binary post-op runs (`folded`); else the post-ops as dynamic int8's.
  bool folded = false;
  std::vector<float> folded_scales, folded_bias;
  // quantized_conv2d where int8_supported() is false: quant_direct.cpp's weights, and no primitive.
  std::vector<int16_t> direct_weights;
  size_t workspace_bytes() const { return ws; }
  void int8_layouts() {
    scale_md = memory::desc({1, 1, 1, 1}, memory::data_type::f32, memory::format_tag::nhwc);
    bias4_md = memory::desc({1, g.oc, 1, 1}, memory::data_type::f32, memory::format_tag::nhwc);
    zero_md = memory::desc({1}, memory::data_type::s32, memory::format_tag::x);
  }
  // Whether a u8 source is NHWC-dense, read by the primitive as it is.
  bool u8_source_in_place() const {
    return g.u8_in && memory::desc(g.xd, memory::data_type::u8, g.xs) ==
                          memory::desc(g.xd, memory::data_type::u8, memory::format_tag::nhwc);
  }
  // Bytes of the quantized (or reordered u8) source at the workspace's start (int8 only).
  size_t source_bytes() const {
    return g.int8 && !u8_source_in_place() ? (size_t(g.xd[0] * g.xd[1] * g.xd[2] * g.xd[3]) + 63) & ~size_t(63) : 0;
  }

  // The primitive for `threads`, made (and the weights packed, when immutable) on first use.
  ProductPrim& prim(int threads, const amber_tensor_view& w, Variant v = kAsTyped) {
    return prims.get(threads * kVariants + v, [&](int key) {
      omp_set_num_threads(key / kVariants);
      const bool q = v == kU8 || v == kU8ZeroPoint;
      auto tag4 = memory::format_tag::nhwc;
      // Dynamic int8 runs image by image (each with its own source range): a batch of one;
      // quantized_conv2d's images share one quantization and run as one batch.
      const bool by_image = q && !g.fixed_quant;
      const Dims xd = by_image ? Dims{1, g.xd[1], g.xd[2], g.xd[3]} : g.xd,
                 yd = by_image ? Dims{1, g.yd[1], g.yd[2], g.yd[3]} : g.yd;
      const memory::data_type yt = q && g.u8_out ? memory::data_type::u8 : memory::data_type::f32;
      memory::desc src_md(xd, q ? memory::data_type::u8 : g.type, tag4), dst_md(yd, yt, tag4);
      memory::desc wei_md(g.wd, q ? memory::data_type::s8 : g.type, memory::format_tag::any);
      // int8 adds the bias after the source's scale, in a post-op (unless folded).
      memory::desc bias_md = g.bias && (!q || folded)
                                 ? memory::desc({g.oc}, memory::data_type::f32, memory::format_tag::x)
                                 : memory::desc();
      dnnl::primitive_attr attr = user_scratchpad();
      dnnl::post_ops po;
      if (q) {
        attr.set_output_scales(1 << 1, folded ? folded_scales : wscales);  // per output channel
        if (v == kU8ZeroPoint) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
        if (!folded) {
          po.append_binary(dnnl::algorithm::binary_mul, scale_md);
          if (g.bias) po.append_binary(dnnl::algorithm::binary_add, bias4_md);
        }
      }
      if (v != kNoActivation) append_activation(po, g);
      if (q && g.u8_out)  // y / output_scale + output_zero_point, rounded and saturated as it becomes u8
        po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f / g.output_q.scale, float(g.output_q.zero_point));
      if (po.len() > 0) attr.set_post_ops(po);
      auto p = std::make_unique<ProductPrim>();
      if (g.transposed) {
        dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                            src_md, wei_md, bias_md, dst_md, g.stride, g.dil, g.pad, g.pad_r);
        dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine());
        p->keep(dnnl::deconvolution_forward(pd), pd);
      } else {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          src_md, wei_md, bias_md, dst_md, g.stride, g.dil, g.pad, g.pad_r);
        // f32 depthwise: oneDNN's jit_dw kernels when it has them for this shape; it lists its
        // brdgmm_dw kernels first, measured slower here with 2 threads on every depthwise
        // shape of EfficientNet-B0 but one (32 x 112 x 112 3x3 148 -> 100 us, 672 x 14 x 14 5x5
        // 91 -> 49 us, 1152 x 7 x 7 3x3 13.4 -> 15.6 us).
        const bool depthwise_f32 = !q && g.type == memory::data_type::f32 && g.groups > 1 && g.wd[2] == 1;
        auto make = [&] { return dnnl::convolution_forward::primitive_desc(d, attr, engine()); };
        const dnnl::convolution_forward::primitive_desc pd = depthwise_f32 ? prefer_impl(make, "jit_dw") : make();
        p->keep(dnnl::convolution_forward(pd), pd);
      }
      if (q) {
        const memory::desc user_q(g.wd, memory::data_type::s8,
                                  g.wd.size() == 4 ? memory::format_tag::oihw : memory::format_tag::goihw);
        if (user_q != p->wei) p->packed = packs.get(qweights.data(), user_q, p->wei);
      } else {
        const memory::desc user_wei(g.wd, memory::data_type::f32, g.ws);
        if (w.cache_id != 0 && w.data && user_wei != p->wei) p->packed = packs.get(w.data, user_wei, p->wei);
      }
      // The reorders a call may need around the primitive, made now (oneDNN keeps them).
      const memory::data_type xt = q && g.u8_in ? memory::data_type::u8 : memory::data_type::f32;
      const memory::desc user_src(g.xd, xt, g.xs);
      const memory::desc f32_src = q ? memory::desc(g.xd, xt, tag4) : p->src;
      if (strides_usable(g.xd, g.xs) && user_src != f32_src)
        (void)dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user_src, engine(), f32_src, user_scratchpad()));
      const memory::desc user_dst(g.yd, yt, g.ys);
      const memory::desc f32_dst = q ? memory::desc(g.yd, yt, tag4) : p->dst;
      if (user_dst != f32_dst)
        (void)dnnl::reorder(dnnl::reorder::primitive_desc(engine(), f32_dst, engine(), user_dst, user_scratchpad()));
      return p;
    });
  }
};

int threads_of(const amber_kernel_args* a) { return std::max(1, a->num_threads); }

// quantized_conv2d's weights as the int8 path keeps them: [OC, IC/G * KH * KW] dense, from
// the weight of any strides, and their scales, each finite and non-negative (as is the bias).
void given_weights(const amber_kernel_args* a, ConvState& s) {
  const amber_tensor_view &w = a->inputs[1], &sc = a->inputs[2], &b = a->inputs[3];
  const int64_t oc = w.sizes[0], icg = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
  const int8_t* wp = static_cast<const int8_t*>(w.data);
  s.qweights.resize(size_t(oc * icg * kh * kw));
  size_t k = 0;
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < icg; ++i)
      for (int64_t h = 0; h < kh; ++h)
        for (int64_t x = 0; x < kw; ++x)
          s.qweights[k++] = wp[o * w.strides[0] + i * w.strides[1] + h * w.strides[2] + x * w.strides[3]];
  s.wscales = given_scales(sc, b, oc, "quantized_conv2d");
  s.int8_layouts();
  // The input's scale folded into the output scales, the bias divided by them (measured with 2
  // threads on the imported ResNet-50's int8 convolutions: no binary post-ops, see conv.cpp's
  // header); a zero product (a channel of zero weights) keeps the post-ops.
  const float sx = s.g.input_q.scale;
  s.folded = true;
  s.folded_scales.resize(size_t(oc));
  for (int64_t o = 0; o < oc; ++o) {
    s.folded_scales[size_t(o)] = s.wscales[size_t(o)] * sx;
    s.folded = s.folded && s.folded_scales[size_t(o)] > 0 && std::isfinite(s.folded_scales[size_t(o)]);
  }
  if (s.folded && present(b)) {
    s.folded_bias.resize(size_t(oc));
    const float* bp = static_cast<const float*>(b.data);
    for (int64_t o = 0; o < oc; ++o) s.folded_bias[size_t(o)] = bp[o * b.strides[0]] / s.folded_scales[size_t(o)];
  }
}

// Setup: the primitive for the step's thread count and for one thread (a call that shares
// the cores with others), weights packed when immutable.
template <Kind K>
std::unique_ptr<ConvState> make_state(const amber_kernel_args* a) {
  auto s = std::make_unique<ConvState>();
  s->g = geometry_of<K>(a);
  const amber_tensor_view &w = a->inputs[1], &b = a->inputs[s->g.bias_input];
  if constexpr (K == kQuant || K == kQuantU8) {
    // Setup sees the contents of constants only: a weight, scale or bias computed in the graph
    // has no data then, and each call makes its own state from what it reads (quantized_conv).
    const auto has = [](const amber_tensor_view& v) { return v.ndim < 0 || v.data; };
    const bool scales = has(a->inputs[2]) && has(a->inputs[3]);
    if (!int8_supported()) {  // quant_direct.cpp's loops: the scales checked, their weights, no primitive
      if (scales) (void)given_scales(a->inputs[2], a->inputs[3], s->g.oc, "quantized_conv2d");
      if (has(w)) s->direct_weights = quantized_conv_direct_weights(w);
      s->ws = quantized_conv_direct_workspace(a);
      return s;
    }
    if (!scales || !has(w)) {  // setup of a step whose calls make their own states: their source
      s->ws = s->source_bytes();
      return s;
    }
    given_weights(a, *s);
    s->ws = s->source_bytes() +
            s->prim(threads_of(a), w, s->g.input_q.zero_point == 0 ? kU8 : kU8ZeroPoint).prim->scratch_bytes();
    return s;
  }
  const auto immutable = [](const amber_tensor_view& v) { return v.cache_id != 0 && v.data; };
  if (s->g.act == Act::clamp && immutable(w) && (!present(b) || immutable(b))) s->params.emplace(w, b);
  const int threads = std::max(1, a->num_threads);
  if (s->g.type == memory::data_type::bf16) {
    try {
      (void)s->prim(threads, w);
    } catch (const dnnl::error&) {  // no bf16 implementation of this geometry: f32, as asked by default
      s->g.type = memory::data_type::f32;
    }
  }
  if (s->g.int8) {
    const int64_t per_oc = w.sizes[1] * w.sizes[2] * w.sizes[3];
    s->qweights.resize(size_t(s->g.oc * per_oc));
    s->wscales.resize(size_t(s->g.oc));
    std::vector<int32_t> sums(size_t(s->g.oc));  // what a zero point multiplies: oneDNN's own business here
    quantize_channels(static_cast<const float*>(w.data), s->g.oc, per_oc, w.strides[0], 1, s->qweights.data(),
                      s->wscales.data(), sums.data());
    s->int8_layouts();
    try {  // the source without a zero point (after a ReLU) now; with one, or in f32, on first use
      s->ws = s->source_bytes() + s->prim(threads, w, kU8).prim->scratch_bytes();
      if (threads > 1) (void)s->prim(1, w, kU8);
      return s;
    } catch (const dnnl::error&) {  // no int8 implementation of this geometry: f32
      s->g.int8 = false;
      s->qweights = {};
      s->wscales = {};
    }
  }
  s->ws = s->prim(threads, w).prim->scratch_bytes();
  if (threads > 1) (void)s->prim(1, w);
  return s;
}

// A broadcast (stride-0) source materialised into `dense` (NCHW; xs becomes its strides), or
// xp itself when oneDNN can read its strides.
template <typename T>
const T* materialised(const T* xp, const Dims& xd, Dims& xs, std::vector<T>& dense) {
  if (strides_usable(xd, xs)) return xp;
  dense.resize(size_t(xd[0] * xd[1] * xd[2] * xd[3]));
  size_t k = 0;
  for (int64_t n = 0; n < xd[0]; ++n)
    for (int64_t c = 0; c < xd[1]; ++c)
      for (int64_t h = 0; h < xd[2]; ++h)
        for (int64_t ww = 0; ww < xd[3]; ++ww) dense[k++] = xp[n * xs[0] + c * xs[1] + h * xs[2] + ww * xs[3]];
  xs = {xd[1] * xd[2] * xd[3], xd[2] * xd[3], xd[3], 1};
  return dense.data();
}

// The source in the layout `target` wants: in place when it has it, else materialised (a
// broadcast, stride-0 input) into `xcontig` and reordered into `xbuf` as needed.
const void* source_as(const amber_tensor_view& x, const Geometry& g, const memory::desc& target,
                      std::vector<float>& xcontig, std::vector<float>& xbuf) {
  const Dims& xd = g.xd;
  Dims xs = g.xs;
  const float* xp = materialised(static_cast<const float*>(x.data), xd, xs, xcontig);
  const memory::desc user_src(xd, memory::data_type::f32, xs);
  if (user_src == target) return xp;
  xbuf.resize(floats_for(target));
  run_reorder(memory(user_src, engine(), const_cast<float*>(xp)), memory(target, engine(), xbuf.data()));
  return xbuf.data();
}

// A dense copy of a bias with a stride, or the bias itself.
const float* dense_bias(const amber_tensor_view& b, int64_t oc, std::vector<float>& bbuf) {
  const float* bp = static_cast<const float*>(b.data);
  if (oc == 1 || b.strides[0] == 1) return bp;
  bbuf.resize(size_t(oc));
  for (int64_t i = 0; i < oc; ++i) bbuf[size_t(i)] = bp[i * b.strides[0]];
  return bbuf.data();
}

// A dynamic int8 call, image by image (an image's outputs never depend on its batchmates):
// each image's range and uint8 quantization (the whole source at the workspace's start), its
// product with its scale and the bias in post-ops. Returns false, having written nothing,
// when the source holds an infinity or NaN. quantized_conv2d's (g.fixed_quant) quantizes
// every image with the op's scale and zero point and gives an image holding a NaN NaN outputs;
// its u8 source (g.u8_in) is used as it is (or reordered to NHWC), and its u8 output
// (g.u8_out) is written by the primitive, a NaN in the source quantized as level 0.
bool conv_int8(const amber_kernel_args* a, ConvState& st, int threads) {
  const Geometry& g = st.g;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[g.bias_input], &y = a->outputs[0];
  std::vector<float> xcontig, xbuf, bbuf;
  const int64_t images = g.xd[0], per_image = g.xd[1] * g.xd[2] * g.xd[3], out_image = g.yd[1] * g.yd[2] * g.yd[3];
  const float* xp =
      g.u8_in ? nullptr
              : static_cast<const float*>(source_as(
                    x, g, memory::desc(g.xd, memory::data_type::f32, memory::format_tag::nhwc), xcontig, xbuf));
  std::vector<TensorQuant> quant(static_cast<size_t>(images));
  std::vector<char> nan_image(static_cast<size_t>(images), 0);
  for (int64_t i = 0; i < images; ++i) {
    if (g.fixed_quant) {  // NaNs are found as the image is quantized
      quant[size_t(i)] = g.input_q;
      continue;
    }
    float lo = 0, hi = 0;
    if (!tensor_range(xp + i * per_image, per_image, lo, hi)) return false;
    quant[size_t(i)] = tensor_quant(lo, hi);
  }
  CallScratch scratch(a);
  uint8_t* xq =
      st.u8_source_in_place() ? static_cast<uint8_t*>(x.data) : scratch.take_array<uint8_t>(st.source_bytes());
  if (g.u8_in && !st.u8_source_in_place()) {  // reordered to NHWC into the source's place
    std::vector<uint8_t> dense;
    Dims xs = g.xs;
    const uint8_t* from = materialised(static_cast<const uint8_t*>(x.data), g.xd, xs, dense);
    run_reorder(memory(memory::desc(g.xd, memory::data_type::u8, xs), engine(), const_cast<uint8_t*>(from)),
                memory(memory::desc(g.xd, memory::data_type::u8, memory::format_tag::nhwc), engine(), xq));
  }
  const memory::data_type yt = g.u8_out ? memory::data_type::u8 : memory::data_type::f32;
  const size_t y_item = g.u8_out ? 1 : sizeof(float);
  const memory::desc user_dst(g.yd, yt, g.ys), nhwc_dst(g.yd, yt, memory::format_tag::nhwc);
  const bool direct = user_dst == nhwc_dst;
  std::vector<char> ybuf;
  if (!direct) ybuf.resize(nhwc_dst.get_size());
  char* yp = direct ? static_cast<char*>(y.data) : ybuf.data();
  const float* bp = g.bias ? dense_bias(b, g.oc, bbuf) : nullptr;
  if (!g.u8_in)
    for (int64_t i = 0; i < images; ++i)
      nan_image[size_t(i)] = quantize_tensor(xp + i * per_image, per_image, quant[size_t(i)], xq + i * per_image);
  // Image i's product on `prim_threads` threads, with the call's workspace or, when images run
  // side by side, each execution's own scratchpad.
  auto run_image = [&](int64_t i, int prim_threads, void* pad, size_t pad_bytes) {
    const TensorQuant& t = quant[size_t(i)];
    const Variant v = t.zero_point == 0 ? kU8 : kU8ZeroPoint;
    ProductPrim& prim = st.prim(prim_threads, w, v);
    std::vector<Arg> args = {
        {DNNL_ARG_SRC, &prim.src, xq + i * per_image},
        {DNNL_ARG_WEIGHTS, &prim.wei, prim.packed ? static_cast<const void*>(prim.packed->data) : st.qweights.data()},
        {DNNL_ARG_DST, &prim.dst, yp + size_t(i * out_image) * y_item}};
    if (st.folded) {
      if (bp) args.push_back({DNNL_ARG_BIAS, &prim.bias, st.folded_bias.data()});
    } else {
      args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, &st.scale_md, &t.scale});
      if (bp) args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, &st.bias4_md, bp});
    }
    if (v == kU8ZeroPoint) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, &st.zero_md, &t.zero_point});
    prim.prim->execute(args, pad, pad_bytes);
  };
  if (g.fixed_quant) {  // one quantization for every image: the batch in one product
    run_image(0, threads, scratch.rest(), scratch.rest_bytes());
  } else if (threads > 1 && images >= threads) {
    // As many images as threads or more: images side by side, one thread each (a one-image
    // product splits poorly over threads: ResNet-18 at batch 8 ran 12% slower image after
    // image than as one batch). The one-thread variants are made first, outside the region.
    for (const TensorQuant& t : quant) (void)st.prim(1, w, t.zero_point == 0 ? kU8 : kU8ZeroPoint);
    ThreadLimit limit(threads);
    parallel_for(images, 1, [&](int64_t first, int64_t end) {
      for (int64_t i = first; i < end; ++i) run_image(i, 1, nullptr, 0);
    });
  } else {
    for (int64_t i = 0; i < images; ++i) run_image(i, threads, scratch.rest(), scratch.rest_bytes());
  }
  if (!g.u8_out)
    for (int64_t i = 0; i < images; ++i)
      if (nan_image[size_t(i)]) {
        float* yi = reinterpret_cast<float*>(yp) + i * out_image;
        std::fill(yi, yi + out_image, std::nanf(""));
      }
  if (!direct) run_reorder(memory(nhwc_dst, engine(), ybuf.data()), memory(user_dst, engine(), y.data));
  return true;
}

// quantized_conv2d and quantized_conv2d.u8: always the int8 path (quant_direct.cpp's exact sums
// where oneDNN's products could saturate); a state of its own for a call without setup or with
// weights or scales computed per call (the setup's copy of them would be stale).
template <Kind K>
int quantized_conv(const amber_kernel_args* a) {
  const auto immutable = [](const amber_tensor_view& v) { return v.ndim < 0 || (v.cache_id != 0 && v.data); };
  ConvState* st = static_cast<ConvState*>(a->state);
  if (!int8_supported()) {
    if (!st || !immutable(a->inputs[2]) || !immutable(a->inputs[3]))  // not checked at setup: checked now
      (void)given_scales(a->inputs[2], a->inputs[3], a->inputs[1].sizes[0], "quantized_conv2d");
    return quantized_conv_direct<K == kQuantU8>(a, st && immutable(a->inputs[1]) ? st->direct_weights.data() : nullptr);
  }
  std::unique_ptr<ConvState> own;
  if (!st || !immutable(a->inputs[1]) || !immutable(a->inputs[2]) || !immutable(a->inputs[3]))
    st = (own = make_state<K>(a)).get();
  omp_set_num_threads(threads_of(a));
  (void)conv_int8(a, *st, threads_of(a));
  return 0;
}

template <Kind K>
int conv(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[2], &y = a->outputs[0];
  std::unique_ptr<ConvState> own;  // a call without setup: a state for this call alone
  ConvState* st = static_cast<ConvState*>(a->state);
  if (!st) st = (own = make_state<K>(a)).get();
  // The state was made for this step's shapes and strides (an eager call's is found by them).
  const Geometry& g = st->g;
  const int threads = std::max(1, a->num_threads);
  omp_set_num_threads(threads);
  // fused_conv2d's clamp: the post-op only when no NaN can arise that it would lose
  // (ParamBound; weights and bias bounded at setup when immutable, else here), the source's
  // bound found by a read of it: worth it when the source has at most twice the output's
  // elements (the pass after the primitive reads and writes the output), else that pass runs.
  // The dynamic int8 path bounds its source itself. silu runs after the primitive
  // (activation_output); hardswish's post-op keeps NaN and infinities as the op does.
  std::optional<ParamBound> own_params;
  const ParamBound* params = nullptr;
  if (g.act == Act::clamp) params = st->params ? &*st->params : &own_params.emplace(w, b);
  const bool params_finite = !params || params->finite();
  if (g.int8 && params_finite && conv_int8(a, *st, threads)) return 0;
  const bool own_activation =
      g.act == Act::silu ||
      (g.act == Act::clamp && (!params_finite || g.int8 || numel(x) > 2 * numel(y) || !params->safe(view_max_abs(x))));
  ProductPrim& prim = st->prim(threads, w, own_activation ? kNoActivation : kAsTyped);
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
  const void* xp = source_as(x, g, prim.src, xcontig, xbuf);
  // Destination: written in place when the output is NHWC (conv2d's own output layout).
  const memory::desc user_dst(g.yd, memory::data_type::f32, g.ys);
  const bool direct = user_dst == prim.dst;
  if (!direct) ybuf.resize(floats_for(prim.dst));
  void* yp = direct ? y.data : ybuf.data();
  if (present(b)) {
    std::vector<float> bbuf;
    const float* bp = dense_bias(b, g.oc, bbuf);
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
  if (own_activation) activation_output(y, g);
  return 0;
}

int conv2d_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN convolution failed", [&] { return conv<kConv>(a); });
}
int fused_conv2d_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN convolution failed", [&] { return conv<kFused>(a); });
}
int quantized_conv2d_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN int8 convolution failed", [&] { return quantized_conv<kQuant>(a); });
}
int quantized_conv2d_u8_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN int8 convolution failed", [&] { return quantized_conv<kQuantU8>(a); });
}
int conv_transpose2d_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN deconvolution failed", [&] { return conv<kTransposed>(a); });
}

AMBER_CPU_KERNELS(conv) {
  using State = StateOf<ConvState, make_state<kConv>>;
  using FusedState = StateOf<ConvState, make_state<kFused>>;
  using TransposedState = StateOf<ConvState, make_state<kTransposed>>;
  using QuantState = StateOf<ConvState, make_state<kQuant>>;
  using QuantU8State = StateOf<ConvState, make_state<kQuantU8>>;
  register_kernel("conv2d", DType::f32, amber_kernel{conv2d_run, State::setup, State::destroy, nullptr});
  register_kernel("fused_conv2d", DType::f32,
                  amber_kernel{fused_conv2d_run, FusedState::setup, FusedState::destroy, nullptr});
  for (DType t : {DType::f32, DType::u8}) {  // the source as f32 (quantized as it enters) or u8
    register_kernel("quantized_conv2d", t,
                    amber_kernel{quantized_conv2d_run, QuantState::setup, QuantState::destroy, nullptr});
    register_kernel("quantized_conv2d.u8", t,
                    amber_kernel{quantized_conv2d_u8_run, QuantU8State::setup, QuantU8State::destroy, nullptr});
  }
  register_kernel("conv_transpose2d", DType::f32,
                  amber_kernel{conv_transpose2d_run, TransposedState::setup, TransposedState::destroy, nullptr});
}

}  // namespace
}  // namespace amber::cpu
