// Op table entries for neural-network layers: conv2d (and fused_conv2d, with an activation;
// quantized_conv2d, with int8 weights and a static input quantization), conv_transpose2d, max_pool2d (with or without
// indices), avg_pool2d, adaptive_avg_pool2d, upsample_nearest2d/bilinear2d/bicubic2d (and _aa),
// upsample_nearest3d/trilinear3d, grid_sample, batch_norm and layer_norm (inference; add_layer_norm, layer_norm of a
// sum: a residual connection's), embedding and dropout (identity in eval). Shape rules and error conditions follow ATen
// (pooling_output_shape, ceil_mode, padding limits). conv2d produces channels-last output; pooling and batch_norm keep
// their input's layout.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

using infer::pair;

// ATen's pooling_output_shape.
int64_t pooled_size(const InferCtx& c, int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  c.check(stride > 0, "stride should be greater than zero, got ", stride);
  c.check(dil > 0, "dilation should be greater than zero, got ", dil);
  c.check(k > 0, "kernel size should be greater than zero, got ", k);
  c.check(pad >= 0, "padding must be non-negative, got ", pad);
  c.check(pad <= k / 2, "pad should be at most half of kernel size, but got pad=", pad, " and kernel_size=", k);
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

// 3-D (C, H, W) or 4-D (N, C, H, W) inputs with non-empty C, H and W.
void check_image(const InferCtx& c, const TensorMeta& x) {
  const int r = x.sizes.size();
  c.check(r == 3 || r == 4, "expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape ", x.sizes);
  for (int i = r - 3; i < r; ++i)
    c.check(x.sizes[i] > 0, "expected non-empty channel and spatial dims, got shape ", x.sizes);
}

enum class Quant { none, f32_out, u8_out };

// conv2d's shape rules; its bias is input `bias` (quantized_conv2d's is input 3, after the
// weight's scales), and a quantized_conv2d's f32 or u8 input takes an int8 weight and gives
// f32 (u8 for quantized_conv2d.u8).
void conv2d_output(InferCtx& c, int bias, Quant quant = Quant::none) {
  const bool quantized = quant != Quant::none;
  const TensorMeta &x = c.in(0), &w = c.in(1);
  check_image(c, x);
  const bool batched = x.sizes.size() == 4;
  const int64_t n = batched ? x.sizes[0] : 1, ch = x.sizes[batched ? 1 : 0];
  const int64_t h = x.sizes[batched ? 2 : 1], wd = x.sizes[batched ? 3 : 2];
  c.check(w.sizes.size() == 4, "weight must be 4-D [out_channels, in_channels/groups, kH, kW], got shape ", w.sizes);
  if (quantized)
    infer::check_quantized(c, w.sizes[0], w.sizes[1] * w.sizes[2] * w.sizes[3], quant == Quant::u8_out);
  else
    c.check(x.dtype == w.dtype, "input dtype ", x.dtype, " and weight dtype ", w.dtype, " differ");
  const auto stride = pair(c, c.attr("stride"), "stride"), pad = pair(c, c.attr("padding"), "padding"),
             dil = pair(c, c.attr("dilation"), "dilation");
  const int64_t groups = c.attr("groups").i();
  c.check(groups > 0, "groups must be positive, got ", groups);
  c.check(ch % groups == 0 && w.sizes[0] % groups == 0, "in_channels ", ch, " and out_channels ", w.sizes[0],
          " must be divisible by groups ", groups);
  c.check(w.sizes[1] * groups == ch, "expected input ", x.sizes, " to have ", w.sizes[1] * groups, " channels (weight ",
          w.sizes, ", groups ", groups, "), but got ", ch, " channels");
  for (int i = 0; i < 2; ++i) {
    c.check(stride[size_t(i)] > 0, "stride must be positive, got ", c.attr("stride"));
    c.check(pad[size_t(i)] >= 0, "padding must be non-negative, got ", c.attr("padding"));
    c.check(dil[size_t(i)] > 0, "dilation must be positive, got ", c.attr("dilation"));
  }
  if (c.has_input(bias) && !quantized) {  // check_quantized checks a quantized op's
    c.check(c.in(bias).sizes == DimVec{w.sizes[0]}, "bias must have shape [", w.sizes[0], "], got ", c.in(bias).sizes);
    c.check(c.in(bias).dtype == x.dtype, "bias dtype ", c.in(bias).dtype, " differs from input dtype ", x.dtype);
  }
  int64_t out_hw[2];
  const int64_t in_hw[2] = {h, wd};
  for (int i = 0; i < 2; ++i) {
    const int64_t eff = dil[size_t(i)] * (w.sizes[2 + i] - 1) + 1;
    out_hw[i] = (in_hw[i] + 2 * pad[size_t(i)] - eff) / stride[size_t(i)] + 1;
    c.check(in_hw[i] + 2 * pad[size_t(i)] >= eff, "input size per channel (", h, "x", wd, " after padding ",
            DimVec{pad[0], pad[1]}, ") is smaller than the kernel size (", w.sizes[2], "x", w.sizes[3],
            " with dilation ", DimVec{dil[0], dil[1]}, ")");
  }
  const DType out = quant == Quant::u8_out ? DType::u8 : quantized ? DType::f32 : x.dtype;
  if (batched)
    c.add_output(out, DimVec{n, w.sizes[0], out_hw[0], out_hw[1]}).format = MemoryFormat::channels_last;
  else
    c.add_output(out, DimVec{w.sizes[0], out_hw[0], out_hw[1]});
}

void infer_conv2d(InferCtx& c) { conv2d_output(c, 2); }

// fused_conv2d: conv2d's rules, and an activation the kernels apply to its output as they
// write it (the conv-activation fusion pass makes these; see docs/OPS.md).
void infer_fused_conv2d(InferCtx& c) {
  infer::check_activation(c);
  conv2d_output(c, 2);
}

// quantized_conv2d (made by tracer/quantize.h's calibration): conv2d's rules with an int8
// weight, its scales and the input's quantization checked (infer::check_quantized).
void infer_quantized_conv2d(InferCtx& c) {
  infer::check_activation(c);
  conv2d_output(c, 3, Quant::f32_out);
}

// quantized_conv2d.u8: the same, its output quantized to uint8 with output_scale and
// output_zero_point.
void infer_quantized_conv2d_u8(InferCtx& c) {
  infer::check_activation(c);
  conv2d_output(c, 3, Quant::u8_out);
}

// conv_transpose2d(input, weight [in, out/groups, kH, kW], bias, stride, padding,
// output_padding, groups, dilation): ATen's checks; the output is channels-last as conv2d's.
void infer_conv_transpose2d(InferCtx& c) {
  const TensorMeta &x = c.in(0), &w = c.in(1);
  check_image(c, x);
  const bool batched = x.sizes.size() == 4;
  const int64_t ch = x.sizes[batched ? 1 : 0];
  c.check(w.sizes.size() == 4, "weight must be 4-D [in_channels, out_channels/groups, kH, kW], got shape ", w.sizes);
  c.check(x.dtype == w.dtype, "input dtype ", x.dtype, " and weight dtype ", w.dtype, " differ");
  const auto stride = pair(c, c.attr("stride"), "stride"), pad = pair(c, c.attr("padding"), "padding"),
             out_pad = pair(c, c.attr("output_padding"), "output_padding"),
             dil = pair(c, c.attr("dilation"), "dilation");
  const int64_t groups = c.attr("groups").i();
  c.check(groups > 0, "groups must be positive, got ", groups);
  c.check(w.sizes[0] == ch, "expected input ", x.sizes, " to have ", w.sizes[0], " channels (weight ", w.sizes,
          "), but got ", ch, " channels");
  c.check(ch % groups == 0, "in_channels ", ch, " must be divisible by groups ", groups);
  const int64_t out_ch = w.sizes[1] * groups;
  for (int i = 0; i < 2; ++i) {
    c.check(stride[size_t(i)] > 0, "stride must be positive, got ", c.attr("stride"));
    c.check(pad[size_t(i)] >= 0, "padding must be non-negative, got ", c.attr("padding"));
    c.check(dil[size_t(i)] > 0, "dilation must be positive, got ", c.attr("dilation"));
    c.check(out_pad[size_t(i)] >= 0 && (out_pad[size_t(i)] < stride[size_t(i)] || out_pad[size_t(i)] < dil[size_t(i)]),
            "output padding must be smaller than either stride or dilation, got output_padding ",
            c.attr("output_padding"), ", stride ", c.attr("stride"), ", dilation ", c.attr("dilation"));
  }
  if (c.has_input(2)) {
    c.check(c.in(2).sizes == DimVec{out_ch}, "bias must have shape [", out_ch, "], got ", c.in(2).sizes);
    c.check(c.in(2).dtype == x.dtype, "bias dtype ", c.in(2).dtype, " differs from input dtype ", x.dtype);
  }
  DimVec out = x.sizes;
  out[batched ? 1 : 0] = out_ch;
  for (int i = 0; i < 2; ++i) {
    const int d = out.size() - 2 + i;
    out[d] = (x.sizes[d] - 1) * stride[size_t(i)] - 2 * pad[size_t(i)] + dil[size_t(i)] * (w.sizes[2 + i] - 1) +
             out_pad[size_t(i)] + 1;
    c.check(out[d] > 0, "output size ", DimVec{out[out.size() - 2], out[out.size() - 1]}, " is too small: input ",
            x.sizes, ", weight ", w.sizes, ", padding ", c.attr("padding"));
  }
  auto& y = c.add_output(x.dtype, out);
  if (batched) y.format = MemoryFormat::channels_last;
}

// x's sizes and memory format with its plane (the two trailing dims) oh x ow.
void plane_output(InferCtx& c, const TensorMeta& x, int64_t oh, int64_t ow) {
  DimVec out = x.sizes;
  out[out.size() - 2] = oh;
  out[out.size() - 1] = ow;
  c.add_output(x.dtype, out).format = x.format;
}

void pooled_output(InferCtx& c, const TensorMeta& x, int64_t oh, int64_t ow) {
  c.check(oh > 0 && ow > 0, "output size ", oh, "x", ow, " is too small (input ", x.sizes, ")");
  plane_output(c, x, oh, ow);
}

// kernel_size, stride (empty: kernel_size), padding; shared by max and avg pooling.
struct PoolArgs {
  std::array<int64_t, 2> k, s, p;
};
PoolArgs pool_args(const InferCtx& c) {
  PoolArgs a;
  a.k = pair(c, c.attr("kernel_size"), "kernel_size");
  a.s = c.attr("stride").ints().empty() ? a.k : pair(c, c.attr("stride"), "stride");
  a.p = pair(c, c.attr("padding"), "padding");
  return a;
}

void infer_max_pool2d(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  check_image(c, x);
  const PoolArgs a = pool_args(c);
  const auto dil = pair(c, c.attr("dilation"), "dilation");
  const bool ceil = c.attr("ceil_mode").b();
  const int r = x.sizes.size();
  pooled_output(c, x, pooled_size(c, x.sizes[r - 2], a.k[0], a.p[0], a.s[0], dil[0], ceil),
                pooled_size(c, x.sizes[r - 1], a.k[1], a.p[1], a.s[1], dil[1], ceil));
}

// The same windows; indices (i64) are each maximum's flat position h * W + w in its plane.
void infer_max_pool2d_with_indices(InferCtx& c) {
  infer_max_pool2d(c);
  const TensorMeta values = c.output(0);
  c.add_output(DType::i64, values.sizes).format = values.format;
}

// max_unpool2d(self, indices, output_size): ATen's max_unpooling2d_shape_check; the output is
// self's (N, C) with output_size's plane, in self's memory format.
void infer_max_unpool2d(InferCtx& c) {
  const TensorMeta &x = c.in(0), &idx = c.in(1);
  check_image(c, x);
  c.check(idx.dtype == DType::i64, "indices must be i64, got ", idx.dtype);
  c.check(idx.sizes == x.sizes, "indices must have self's shape ", x.sizes, ", got ", idx.sizes);
  const std::vector<int64_t>& size = c.attr("output_size").ints();
  c.check(size.size() == 2, "output_size must be (height, width), got ", c.attr("output_size"));
  c.check(size[0] >= 0 && size[1] >= 0, "output_size must not be negative, got ", c.attr("output_size"));
  plane_output(c, x, size[0], size[1]);
}

// roi_align(input, boxes, output_size, spatial_scale, sampling_ratio, aligned): torchvision's
// checks; one [C, oh, ow] output per box.
void infer_roi_align(InferCtx& c) {
  const TensorMeta &x = c.in(0), &b = c.in(1);
  c.check(x.sizes.size() == 4, "expected a 4-D (N, C, H, W) input, got shape ", x.sizes);
  c.check(b.sizes.size() == 2 && b.sizes[1] == 5, "boxes must be [K, 5] (batch index, x1, y1, x2, y2), got shape ",
          b.sizes);
  c.check(b.dtype == x.dtype, "boxes dtype ", b.dtype, " and input dtype ", x.dtype, " differ");
  const auto size = pair(c, c.attr("output_size"), "output_size");
  c.check(size[0] > 0 && size[1] > 0, "output_size must be positive, got ", c.attr("output_size"));
  c.check(c.attr("sampling_ratio").i() <= 64, "sampling_ratio ", c.attr("sampling_ratio").i(),
          " is more than 64 samples per bin side (0 or less: adaptive, ceil(box size / output size))");
  c.add_output(x.dtype, {b.sizes[0], x.sizes[1], size[0], size[1]});
}

void infer_avg_pool2d(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  check_image(c, x);
  const PoolArgs a = pool_args(c);
  const bool ceil = c.attr("ceil_mode").b();
  c.check(c.attr("divisor_override").is_none() || c.attr("divisor_override").i() != 0, "divisor must be not zero");
  const int r = x.sizes.size();
  pooled_output(c, x, pooled_size(c, x.sizes[r - 2], a.k[0], a.p[0], a.s[0], 1, ceil),
                pooled_size(c, x.sizes[r - 1], a.k[1], a.p[1], a.s[1], 1, ceil));
}

// grid_sample: input (N, C, H, W) sampled at grid (N, H_out, W_out, 2)'s (x, y) positions.
void infer_grid_sample(InferCtx& c) {
  const TensorMeta &x = c.in(0), &g = c.in(1);
  c.check(x.sizes.size() == 4, "input must be 4-D (N, C, H, W), got shape ", x.sizes);
  c.check(g.sizes.size() == 4 && g.sizes[3] == 2, "grid must be (N, H_out, W_out, 2), got shape ", g.sizes);
  c.check(g.sizes[0] == x.sizes[0], "grid's batch ", g.sizes[0], " differs from input's ", x.sizes[0], " (input ",
          x.sizes, ", grid ", g.sizes, ")");
  c.check(x.dtype == g.dtype, "input and grid must have the same dtype, got ", x.dtype, " and ", g.dtype);
  c.add_output(x.dtype, {x.sizes[0], x.sizes[1], g.sizes[1], g.sizes[2]});
}

void infer_adaptive_avg_pool2d(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  check_image(c, x);
  const auto o = pair(c, c.attr("output_size"), "output_size");
  c.check(o[0] >= 0 && o[1] >= 0, "output_size must be non-negative, got ", c.attr("output_size"));
  plane_output(c, x, o[0], o[1]);
}

// upsample_nearest2d / upsample_bilinear2d / upsample_bicubic2d (and _aa) (self, output_size,
// ...): ATen's upsample_2d_common_check, the layout kept.
void infer_upsample2d(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  c.check(x.sizes.size() == 4, "expected a 4-D (N, C, H, W) input, got shape ", x.sizes);
  c.check(x.sizes[1] > 0 && x.sizes[2] > 0 && x.sizes[3] > 0, "expected non-empty C, H and W, got shape ", x.sizes);
  const std::vector<int64_t>& o = c.attr("output_size").ints();
  c.check(o.size() == 2, "output_size must hold 2 values (H, W), got ", c.attr("output_size"));
  c.check(o[0] > 0 && o[1] > 0, "input and output sizes should be greater than 0, but got input (H: ", x.sizes[2],
          ", W: ", x.sizes[3], ") output (H: ", o[0], ", W: ", o[1], ")");
  c.add_output(x.dtype, {x.sizes[0], x.sizes[1], o[0], o[1]}).format = x.format;
}

// upsample_nearest3d / upsample_trilinear3d(self, output_size, ...): ATen's
// upsample_3d_common_check, contiguous output.
void infer_upsample3d(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  c.check(x.sizes.size() == 5, "expected a 5-D (N, C, D, H, W) input, got shape ", x.sizes);
  c.check(x.sizes[1] > 0 && x.sizes[2] > 0 && x.sizes[3] > 0 && x.sizes[4] > 0,
          "expected non-empty C, D, H and W, got shape ", x.sizes);
  const std::vector<int64_t>& o = c.attr("output_size").ints();
  c.check(o.size() == 3, "output_size must hold 3 values (D, H, W), got ", c.attr("output_size"));
  c.check(o[0] > 0 && o[1] > 0 && o[2] > 0,
          "input and output sizes should be greater than 0, but got input (D: ", x.sizes[2], ", H: ", x.sizes[3],
          ", W: ", x.sizes[4], ") output (D: ", o[0], ", H: ", o[1], ", W: ", o[2], ")");
  c.add_output(x.dtype, {x.sizes[0], x.sizes[1], o[0], o[1], o[2]});
}

void infer_batch_norm(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  c.check(x.sizes.size() >= 2, "expected an input with at least 2 dims (N, C, ...), got shape ", x.sizes);
  c.check(!c.attr("training").b(), "training mode is not supported (Amber runs inference only); call eval()");
  c.check(c.has_input(3) && c.has_input(4), "running_mean and running_var must be given in evaluation mode");
  const int64_t ch = x.sizes[1];
  const char* names[] = {"input", "weight", "bias", "running_mean", "running_var"};
  for (int i = 1; i <= 4; ++i) {
    if (!c.has_input(i)) continue;
    c.check(c.in(i).sizes == DimVec{ch}, names[i], " must have shape [", ch, "] for input ", x.sizes, ", got ",
            c.in(i).sizes);
    c.check(c.in(i).dtype == x.dtype, names[i], " dtype ", c.in(i).dtype, " differs from input dtype ", x.dtype);
  }
  c.add_output(x.dtype, x.sizes).format = x.format;
}

// layer_norm(input, weight, bias, normalized_shape, eps); add_layer_norm's tensors are
// (input, other, weight, bias): `first_param` is where weight is.
void layer_norm_output(InferCtx& c, int first_param) {
  const TensorMeta& x = c.in(0);
  const DimVec shape(c.attr("normalized_shape").ints());
  c.check(!shape.empty(), "normalized_shape must not be empty");
  bool ok = shape.size() <= x.sizes.size();
  for (int i = 0; ok && i < shape.size(); ++i) ok = x.sizes[x.sizes.size() - shape.size() + i] == shape[i];
  c.check(ok, "given normalized_shape=", shape, ", expected input with shape [*, ", DimsText{shape},
          "], but got input ", x.sizes);
  for (int i = first_param; i <= first_param + 1; ++i) {
    if (!c.has_input(i)) continue;
    const char* name = i == first_param ? "weight" : "bias";
    c.check(c.in(i).sizes == shape, name, " must have shape ", shape, ", got ", c.in(i).sizes);
    c.check(c.in(i).dtype == x.dtype, "weight and bias must have the input's dtype ", x.dtype);
  }
  c.add_output(x.dtype, x.sizes);
}
void infer_layer_norm(InferCtx& c) { layer_norm_output(c, 1); }

// add_layer_norm: layer_norm(input + other), other of input's shape and dtype (no
// broadcasting: the residual-connection fusion makes these from an add of equal shapes).
void infer_add_layer_norm(InferCtx& c) {
  const TensorMeta &x = c.in(0), &o = c.in(1);
  c.check(o.sizes == x.sizes, "other must have the input's shape ", x.sizes, ", got ", o.sizes);
  c.check(o.dtype == x.dtype, "other must have the input's dtype ", x.dtype, ", got ", o.dtype);
  layer_norm_output(c, 2);
}

void infer_embedding(InferCtx& c) {
  const TensorMeta &w = c.in(0), &idx = c.in(1);
  c.check(w.sizes.size() == 2, "weight must be 2-D [num_embeddings, embedding_dim], got shape ", w.sizes);
  c.check(idx.dtype == DType::i64 || idx.dtype == DType::i32, "indices must be i64 or i32, got ", idx.dtype);
  DimVec out = idx.sizes;
  out.push_back(w.sizes[1]);
  c.add_output(w.dtype, out);
  c.compute_dtype = w.dtype;
  c.cast_mask = 0;
}

void infer_dropout(InferCtx& c) {
  const double p = c.attr("p").f();
  c.check(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  c.check(!c.attr("train").b(),
          "training mode is not supported (Amber runs inference only); call eval() or pass train=false");
  c.add_output(c.in(0).dtype, c.in(0).sizes).format = c.in(0).format;
}
bool layout_identity(const InferCtx&, const Layout& in, int, Layout& out) {
  out = in;
  return true;
}

using namespace op_flags;
const DTypeSet kFloat = dtypes::floating;
// The quantized ops' inputs: f32 (quantized as it enters) or u8 (an int8 op's output).
const DTypeSet kQuantizedInput{DType::f32, DType::u8};

const OpRegistrar registrar{
    {"conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=[1], int[] padding=[0], "
     "int[] dilation=[1], int groups=1) -> Tensor",
     DTypeSet{DType::f32}, infer_conv2d, 0, nullptr, 1,
     "2-D convolution (cross-correlation) of (N, C, H, W) or (C, H, W) input; groups include depthwise. The "
     "output is channels-last.",
     OpCost::conv},
    {"fused_conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=[1], int[] padding=[0], "
     "int[] dilation=[1], int groups=1, str{clamp,silu,hardswish} activation=\"clamp\", float min_val=0.0, float "
     "max_val=6.0) -> Tensor",
     DTypeSet{DType::f32}, infer_fused_conv2d, 0, nullptr, 1,
     "conv2d followed by an activation of its output: clamp (to [min_val, max_val]; either may be infinite; "
     "NaN stays NaN), silu or hardswish, each with its pointwise op's formula; made by the conv-activation "
     "fusion pass.",
     OpCost::conv},
    {"quantized_conv2d(Tensor input, Tensor weight, Tensor weight_scale, Tensor? bias=None, int[] stride=[1], "
     "int[] padding=[0], int[] dilation=[1], int groups=1, float input_scale=1.0, int input_zero_point=0, "
     "str{clamp,silu,hardswish,none} activation=\"none\", float min_val=0.0, float max_val=6.0) -> Tensor",
     kQuantizedInput, infer_quantized_conv2d, 0, nullptr, 1,
     "conv2d of the input quantized to uint8 (q = clamp(round_half_even(x * (1 / input_scale)) + input_zero_point, 0, "
     "255); a u8 input is q) by the int8 weight times its scale per output channel, accumulated exactly in integers, "
     "then (q - input_zero_point) * input_scale * weight_scale[o] + bias[o] and the activation (none, or "
     "fused_conv2d's), in f32. An infinite input saturates; an image holding a NaN gives NaN outputs. Made by `amber "
     "quantize`.",
     OpCost::conv, 3},
    {"quantized_conv2d.u8(Tensor input, Tensor weight, Tensor weight_scale, Tensor? bias=None, int[] stride=[1], "
     "int[] padding=[0], int[] dilation=[1], int groups=1, float input_scale=1.0, int input_zero_point=0, "
     "str{clamp,silu,hardswish,none} activation=\"none\", float min_val=0.0, float max_val=6.0, float "
     "output_scale=1.0, "
     "int output_zero_point=0) -> Tensor",
     kQuantizedInput, infer_quantized_conv2d_u8, 0, nullptr, 1,
     "quantized_conv2d with its f32 result y quantized to uint8: clamp(round_half_even(y * (1 / output_scale)) + "
     "output_zero_point, 0, 255), for the next int8 op to read as it is. A NaN in an f32 input is quantized as level "
     "0 (uint8 holds no NaN). Made by `amber quantize` between consecutive int8 layers.",
     OpCost::conv, 4},
    {"conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=[1], int[] padding=[0], "
     "int[] output_padding=[0], int groups=1, int[] dilation=[1]) -> Tensor",
     DTypeSet{DType::f32}, infer_conv_transpose2d, 0, nullptr, 1,
     "2-D transposed convolution (the gradient of conv2d with respect to its input) of (N, C, H, W) or (C, H, W) "
     "input with weight [in_channels, out_channels/groups, kH, kW]. The output is channels-last.",
     OpCost::conv_transpose},
    {"max_pool2d(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=[0], int[] dilation=[1], "
     "bool ceil_mode=False) -> Tensor",
     kFloat | DTypeSet{DType::u8}, infer_max_pool2d, 0, nullptr, 1,
     "Maximum over windows; padding is -inf; stride defaults to kernel_size. u8: the int8 layers' activations, "
     "whose maximum is the quantized maximum.",
     OpCost::window},
    {"max_pool2d_with_indices(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=[0], "
     "int[] dilation=[1], bool ceil_mode=False) -> (Tensor values, Tensor indices)",
     kFloat, infer_max_pool2d_with_indices, 0, nullptr, 1,
     "max_pool2d and each maximum's flat index h * W + w in its input plane (F.max_pool2d(return_indices=True)); "
     "ties keep the first, a NaN wins (the last NaN, as ATen).",
     OpCost::window},
    {"roi_align(Tensor input, Tensor boxes, int[] output_size, float spatial_scale=1.0, int sampling_ratio=-1, "
     "bool aligned=False) -> Tensor",
     kFloat, infer_roi_align, 0, nullptr, 1,
     "torchvision.ops.roi_align: for each box [batch index, x1, y1, x2, y2] (times spatial_scale; shifted by half a "
     "pixel when aligned) an output_size grid of bins, each the mean of bilinear samples (sampling_ratio per side, or "
     "ceil(bin size) when 0 or less); a batch index outside the input's batch is an error (CUDA: zeros).",
     OpCost::roi_align},
    {"max_unpool2d(Tensor self, Tensor indices, int[] output_size) -> Tensor", kFloat, infer_max_unpool2d, 0, nullptr,
     1,
     "The inverse of max_pool2d_with_indices: zeros of output_size per plane, each element of self written at its "
     "index (flat h * W + w in the output plane; the last of repeated indices wins on the CPU, any on CUDA); an "
     "index outside the plane is an error (CUDA skips it)."},
    {"avg_pool2d(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=[0], bool ceil_mode=False, "
     "bool count_include_pad=True, int? divisor_override=None) -> Tensor",
     kFloat, infer_avg_pool2d, 0, nullptr, 1, "Average over windows, with ATen's divisor rules.", OpCost::window},
    {"grid_sample(Tensor input, Tensor grid, str{bilinear,nearest,bicubic} mode=\"bilinear\", "
     "str{zeros,border,reflection} padding_mode=\"zeros\", "
     "bool align_corners=False) -> Tensor",
     kFloat, infer_grid_sample, 0, nullptr, 1,
     "F.grid_sample of 4-D input: each output pixel reads input at grid's (x, y) in [-1, 1] (-1 the first "
     "pixel's edge, or its centre with align_corners), bilinear, nearest (ties to even) or bicubic (A = -0.75), "
     "positions outside given zeros, the border's value or the reflection's."},
    {"adaptive_avg_pool2d(Tensor self, int[] output_size) -> Tensor", kFloat, infer_adaptive_avg_pool2d, 0, nullptr, 1,
     "Average over the windows [floor(i*in/out), ceil((i+1)*in/out))."},
    {"upsample_nearest2d(Tensor self, int[] output_size, float? scales_h=None, float? scales_w=None) -> Tensor",
     dtypes::numeric, infer_upsample2d, 0, nullptr, 1,
     "Each output pixel copies input pixel floor(dst * in / out) per dim, or floor(dst / scale) where scales are "
     "given (ATen's nearest; F.interpolate(mode=\"nearest\"))."},
    {"upsample_bilinear2d(Tensor self, int[] output_size, bool align_corners, float? scales_h=None, "
     "float? scales_w=None) -> Tensor",
     kFloat, infer_upsample2d, 0, nullptr, 1,
     "Each output pixel blends the 2x2 input pixels around its source position (corners aligned, or pixel centres "
     "with scales where given), as ATen's bilinear (F.interpolate(mode=\"bilinear\"))."},
    {"upsample_bicubic2d(Tensor self, int[] output_size, bool align_corners, float? scales_h=None, "
     "float? scales_w=None) -> Tensor",
     kFloat, infer_upsample2d, 0, nullptr, 1,
     "Each output pixel blends the 4x4 input pixels around its source position (edges repeated) with Keys' cubic "
     "weights (A = -0.75), as ATen's bicubic (F.interpolate(mode=\"bicubic\"))."},
    {"upsample_nearest3d(Tensor self, int[] output_size, float? scales_d=None, float? scales_h=None, "
     "float? scales_w=None) -> Tensor",
     dtypes::numeric, infer_upsample3d, 0, nullptr, 1,
     "upsample_nearest2d of 5-D (N, C, D, H, W) input: each output element copies input element "
     "floor(dst * in / out) per dim, or floor(dst / scale) where scales are given (F.interpolate(mode=\"nearest\"))."},
    {"upsample_trilinear3d(Tensor self, int[] output_size, bool align_corners, float? scales_d=None, "
     "float? scales_h=None, float? scales_w=None) -> Tensor",
     kFloat, infer_upsample3d, 0, nullptr, 1,
     "Each output element of 5-D (N, C, D, H, W) input blends the 2x2x2 input elements around its source position "
     "(corners aligned, or centres with scales where given), as ATen's trilinear "
     "(F.interpolate(mode=\"trilinear\"))."},
    {"upsample_bilinear2d_aa(Tensor self, int[] output_size, bool align_corners, float? scales_h=None, "
     "float? scales_w=None) -> Tensor",
     kFloat, infer_upsample2d, 0, nullptr, 1,
     "Antialiased bilinear: each output pixel averages the input pixels of a window around its source position, "
     "weighted by the triangle filter widened by the scale where downsampling (W, then H), as ATen's "
     "_upsample_bilinear2d_aa (F.interpolate(mode=\"bilinear\", antialias=True))."},
    {"upsample_bicubic2d_aa(Tensor self, int[] output_size, bool align_corners, float? scales_h=None, "
     "float? scales_w=None) -> Tensor",
     kFloat, infer_upsample2d, 0, nullptr, 1,
     "Antialiased bicubic: as upsample_bilinear2d_aa with Keys' cubic filter (A = -0.5), as ATen's "
     "_upsample_bicubic2d_aa (F.interpolate(mode=\"bicubic\", antialias=True))."},
    {"batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
     "bool training=False, float momentum=0.1, float eps=1e-05) -> Tensor",
     kFloat, infer_batch_norm, 0, nullptr, 1,
     "Inference batch norm over dim 1: (x - mean) / sqrt(var + eps) * weight + bias."},
    {"layer_norm(Tensor input, Tensor? weight=None, Tensor? bias=None, int[] normalized_shape=[], "
     "float eps=1e-05) -> Tensor",
     kFloat, infer_layer_norm, 0, nullptr, 1,
     "Normalises over the trailing normalized_shape dims (tensor arguments come first, unlike ATen)."},
    {"add_layer_norm(Tensor input, Tensor other, Tensor? weight=None, Tensor? bias=None, int[] normalized_shape=[], "
     "float eps=1e-05) -> Tensor",
     kFloat, infer_add_layer_norm, 0, nullptr, 1,
     "layer_norm(input + other), other of input's shape and dtype: a residual connection and the norm after it in "
     "one pass, the sum never stored (computed as add computes it, in f32 for 16-bit tensors); made by the "
     "residual-norm fusion pass.",
     OpCost::memory, 6},
    {"embedding(Tensor weight, Tensor indices, int padding_idx=-1) -> Tensor", dtypes::all, infer_embedding, 0, nullptr,
     1, "Rows of weight selected by indices (i64 or i32); padding_idx matters only for training."},
    {"dropout(Tensor input, float p=0.5, bool train=False) -> Tensor", dtypes::all, infer_dropout, view,
     layout_identity, 1, "Identity in eval mode (train=true is an error: inference only)."},
};

}  // namespace
}  // namespace amber
