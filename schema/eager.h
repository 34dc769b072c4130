// The eager C++ API: free functions and operators over amber::Tensor, each a thin call into
// the dispatcher (so the tracer records it). Defaults mirror the op table's signatures;
// the trailing SrcLoc argument captures the caller's line and is never passed by hand.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amber/core/fused_ops.h"
#include "amber/core/random.h"
#include "amber/core/tensor.h"
#include "amber/schema/attr.h"

namespace amber {

// ---- Arithmetic (PyTorch's broadcasting and type promotion). ----
Tensor add(const Tensor& self, const Tensor& other, Scalar alpha = 1, SrcLoc loc = {});
Tensor add(const Tensor& self, Scalar other, Scalar alpha = 1, SrcLoc loc = {});
Tensor sub(const Tensor& self, const Tensor& other, Scalar alpha = 1, SrcLoc loc = {});
Tensor sub(const Tensor& self, Scalar other, Scalar alpha = 1, SrcLoc loc = {});
Tensor rsub(const Tensor& self, Scalar other, Scalar alpha = 1, SrcLoc loc = {});  // other - alpha * self
Tensor mul(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor mul(const Tensor& self, Scalar other, SrcLoc loc = {});
// rounding_mode: "" (true division), "trunc" or "floor".
Tensor div(const Tensor& self, const Tensor& other, const std::string& rounding_mode = "", SrcLoc loc = {});
Tensor div(const Tensor& self, Scalar other, const std::string& rounding_mode = "", SrcLoc loc = {});
Tensor pow(const Tensor& self, const Tensor& exponent, SrcLoc loc = {});
Tensor pow(const Tensor& self, Scalar exponent, SrcLoc loc = {});
Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt, SrcLoc loc = {});
// x where x >= 0, else weight * x, weight (1 or self.size(1) elements) per channel (dim 1),
// as torch.nn.functional.prelu: where(ge(x, 0), x, x * weight shaped to broadcast on dim 1).
Tensor prelu(const Tensor& self, const Tensor& weight, SrcLoc loc = {});
// clamp with tensor bounds (broadcast, dtypes promoted), as torch.clamp(self, min, max):
// minimum(maximum(self, min), max), so NaN in self or a bound propagates.
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max, SrcLoc loc = {});

// ---- Unary math and activations: one function per op of one tensor in the instruction list
// (core/fused_ops.h), generated: neg, abs, relu, sign, floor, ceil, round (halves to even;
// every numeric dtype); exp, log, sqrt, rsqrt, tanh, sigmoid, silu, reciprocal, erf, log1p,
// expm1, sin, cos, relu6, hardsigmoid, hardswish, mish, selu, softsign, the trigonometric and
// hyperbolic functions (f32 and f64; integer inputs of exp,
// log, sqrt, rsqrt, tanh, sigmoid, reciprocal, erf, log1p, expm1, sin, cos compute in f32). ----
#define AMBER_EAGER_UNARY_none(name)
#define AMBER_EAGER_UNARY_numeric(name) Tensor name(const Tensor& self, SrcLoc loc = {});
#define AMBER_EAGER_UNARY_floating(name) AMBER_EAGER_UNARY_numeric(name)
#define AMBER_EAGER_UNARY_floating_cheap(name) AMBER_EAGER_UNARY_numeric(name)
#define AMBER_EAGER_UNARY_floating_attrs(name)  // declared by hand below (their attributes' defaults)
#define AMBER_EAGER_UNARY_binary(name) Tensor name(const Tensor& self, const Tensor& other, SrcLoc loc = {});
#define AMBER_EAGER_UNARY(OPCODE, name, arity, kind) AMBER_EAGER_UNARY_##kind(name)
AMBER_FUSED_OPS(AMBER_EAGER_UNARY)

// ---- Activations (torch.nn.functional). ----
// approximate: "none" (erf) or "tanh".
Tensor gelu(const Tensor& self, const std::string& approximate = "none", SrcLoc loc = {});
Tensor hardtanh(const Tensor& self, Scalar min_val = -1, Scalar max_val = 1, SrcLoc loc = {});
// The list's ops with Scalar attributes (torch.nn.functional's defaults).
Tensor leaky_relu(const Tensor& self, Scalar negative_slope = 0.01, SrcLoc loc = {});
Tensor elu(const Tensor& self, Scalar alpha = 1, SrcLoc loc = {});
Tensor softplus(const Tensor& self, Scalar beta = 1, Scalar threshold = 20, SrcLoc loc = {});
Tensor hardshrink(const Tensor& self, Scalar lambd = 0.5, SrcLoc loc = {});
Tensor softshrink(const Tensor& self, Scalar lambd = 0.5, SrcLoc loc = {});
Tensor threshold(const Tensor& self, Scalar threshold, Scalar value, SrcLoc loc = {});
Tensor softmax(const Tensor& self, int64_t dim, SrcLoc loc = {});
Tensor log_softmax(const Tensor& self, int64_t dim, SrcLoc loc = {});
// The same computed in dtype (self cast to it first), as softmax(self, dim, dtype=...).
Tensor softmax(const Tensor& self, int64_t dim, DType dtype, SrcLoc loc = {});
Tensor log_softmax(const Tensor& self, int64_t dim, DType dtype, SrcLoc loc = {});
// Identity when train is false; train = true is an error (inference only).
Tensor dropout(const Tensor& self, double p = 0.5, bool train = false, SrcLoc loc = {});

// ---- Comparisons (bool results) and selection. ----
Tensor eq(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor eq(const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor ne(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor ne(const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor lt(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor lt(const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor le(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor le(const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor gt(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor gt(const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor ge(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor ge(const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other, SrcLoc loc = {});
// where with a number for a branch, as torch.where: the number becomes a 0-d tensor (a `full`
// node) of the result type (a float number with an integer tensor gives f32).
Tensor where(const Tensor& condition, const Tensor& self, Scalar other, SrcLoc loc = {});
Tensor where(const Tensor& condition, Scalar self, const Tensor& other, SrcLoc loc = {});
Tensor where(const Tensor& condition, Scalar self, Scalar other, SrcLoc loc = {});
// Nonzero (NaN included) is true; bool results, broadcasting as arithmetic.
Tensor logical_and(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor logical_or(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor logical_xor(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor logical_not(const Tensor& self, SrcLoc loc = {});
// value (converted to self's dtype) where mask (bool, broadcasting to self) is true, else self.
Tensor masked_fill(const Tensor& self, const Tensor& mask, Scalar value, SrcLoc loc = {});

// ---- Reductions and products. ----
Tensor sum(const Tensor& self, SrcLoc loc = {});
Tensor sum(const Tensor& self, const DimVec& dims, bool keepdim = false, SrcLoc loc = {});
Tensor mean(const Tensor& self, SrcLoc loc = {});
Tensor mean(const Tensor& self, const DimVec& dims, bool keepdim = false, SrcLoc loc = {});
// The same accumulated and returned in dtype (self cast to it first), as sum/mean(dtype=...);
// empty dims: every dim.
Tensor sum(const Tensor& self, const DimVec& dims, bool keepdim, DType dtype, SrcLoc loc = {});
Tensor mean(const Tensor& self, const DimVec& dims, bool keepdim, DType dtype, SrcLoc loc = {});
// Product over dims (empty: every dim), as torch.prod (which takes one dim); integers
// multiply in i64. dtype: accumulated and returned in it (self cast to it first).
Tensor prod(const Tensor& self, const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {});
Tensor prod(const Tensor& self, const DimVec& dims, bool keepdim, DType dtype, SrcLoc loc = {});
Tensor amax(const Tensor& self, const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {});
Tensor amin(const Tensor& self, const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {});
Tensor argmax(const Tensor& self, SrcLoc loc = {});  // over the flattened tensor
Tensor argmax(const Tensor& self, int64_t dim, bool keepdim = false, SrcLoc loc = {});
Tensor argmin(const Tensor& self, SrcLoc loc = {});  // over the flattened tensor
Tensor argmin(const Tensor& self, int64_t dim, bool keepdim = false, SrcLoc loc = {});
// The maximum (minimum) along dim and its first index, as torch.max/min(self, dim, keepdim):
// amax and argmax (amin and argmin) over the same dim, so NaN wins with its first index.
std::pair<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false, SrcLoc loc = {});
std::pair<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false, SrcLoc loc = {});
// Whether any (every) element over dims (all dims when empty) is nonzero, as torch.any/all;
// the result is bool.
Tensor any(const Tensor& self, const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {});
Tensor all(const Tensor& self, const DimVec& dims = {}, bool keepdim = false, SrcLoc loc = {});
// The k largest (smallest) elements along dim and their i64 indices, as torch.topk; always in
// order; NaN counts as the largest; equal values keep their index order.
std::pair<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true,
                               SrcLoc loc = {});
// self sorted along dim (ascending unless descending) and the i64 indices, as torch.sort with
// stable=True: topk with k = size(dim) (one node; NaN sorts as the largest).
std::pair<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false, SrcLoc loc = {});
// Running sums along dim, as torch.cumsum: in dtype when given (self cast to it first), else
// self's dtype (i64 for integer and bool inputs).
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt, SrcLoc loc = {});
Tensor mm(const Tensor& self, const Tensor& mat2, SrcLoc loc = {});
Tensor bmm(const Tensor& self, const Tensor& mat2, SrcLoc loc = {});
Tensor matmul(const Tensor& self, const Tensor& other, SrcLoc loc = {});
// input @ weight^T + bias; bias may be undefined.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, SrcLoc loc = {});
// linear and then an activation of its output (fused_conv2d's), as one op (what the
// product-activation fusion makes of a linear layer and its ReLU, clamp, SiLU or hardswish).
Tensor fused_linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const std::string& activation,
                    double min_val = 0.0, double max_val = 6.0, SrcLoc loc = {});
// linear of the input quantized to uint8 with a static scale and zero point, by int8 weights
// [out, in] with a scale per output feature, in integers, plus the bias (docs/OPS.md).
Tensor quantized_linear(const Tensor& input, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                        double input_scale, int64_t input_zero_point, SrcLoc loc = {});
// quantized_linear, then an activation (none, or fused_conv2d's) of its result, quantized to
// uint8 with output_scale and output_zero_point: an int8 layer's output for the next one to read
// as it is (the input may be such a u8 tensor too; docs/OPS.md).
Tensor quantized_linear_u8(const Tensor& input, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                           double input_scale, int64_t input_zero_point, const std::string& activation, double min_val,
                           double max_val, double output_scale, int64_t output_zero_point, SrcLoc loc = {});
// softmax(q k^T / sqrt(E) + mask) v; a bool mask keeps its true positions.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    SrcLoc loc = {});
// scaled_dot_product_attention over [*, H, L, E] queries with its heads merged: the output as
// [*, L, H * Ev] (each row every head's output side by side), written there directly; equal to
// scaled_dot_product_attention(...).transpose(-3, -2).flatten(-2). Rank 3 [B, L, E] gives
// [L, B * Ev]: sequence-first attention's layout, heads folded into B.
Tensor attention_merge_heads(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask = {},
                             double dropout_p = 0.0, bool is_causal = false, SrcLoc loc = {});

// ---- Convolution, pooling, normalisation, embedding (torch.nn.functional order). ----
// The output of conv2d is channels-last (NHWC memory); values and shape are PyTorch's.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, const DimVec& stride = {1},
              const DimVec& padding = {0}, const DimVec& dilation = {1}, int64_t groups = 1, SrcLoc loc = {});
// conv2d and then an activation of its output, as one op (what the conv-activation fusion
// pass makes; docs/OPS.md): "clamp" to [min_val, max_val], "silu" or "hardswish".
Tensor fused_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const DimVec& stride,
                    const DimVec& padding, const DimVec& dilation, int64_t groups, const std::string& activation,
                    double min_val = 0.0, double max_val = 6.0, SrcLoc loc = {});
// conv2d of the input quantized to uint8 with a static scale and zero point, by int8 weights
// [out, in/groups, kH, kW] with a scale per output channel, in integers, then the bias and an
// activation (none, or fused_conv2d's): what `amber quantize` makes of a conv2d (docs/OPS.md).
Tensor quantized_conv2d(const Tensor& input, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                        const DimVec& stride, const DimVec& padding, const DimVec& dilation, int64_t groups,
                        double input_scale, int64_t input_zero_point, const std::string& activation = "none",
                        double min_val = 0.0, double max_val = 6.0, SrcLoc loc = {});
// The sum of two uint8 tensors of one shape as the values their quantizations stand for,
// through an activation (none, or fused_conv2d's), quantized to uint8 (ONNX's QLinearAdd): a
// residual addition between int8 layers (docs/OPS.md).
Tensor quantized_add(const Tensor& self, const Tensor& other, double self_scale, int64_t self_zero_point,
                     double other_scale, int64_t other_zero_point, const std::string& activation, double min_val,
                     double max_val, double output_scale, int64_t output_zero_point, SrcLoc loc = {});
// quantized_conv2d with its result quantized to uint8 with output_scale and output_zero_point:
// an int8 layer's output for the next one to read as it is (docs/OPS.md).
Tensor quantized_conv2d_u8(const Tensor& input, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                           const DimVec& stride, const DimVec& padding, const DimVec& dilation, int64_t groups,
                           double input_scale, int64_t input_zero_point, const std::string& activation, double min_val,
                           double max_val, double output_scale, int64_t output_zero_point, SrcLoc loc = {});
// The transposed convolution (the gradient of conv2d with respect to its input), as
// torch.nn.functional.conv_transpose2d: weight [in_channels, out_channels / groups, kH, kW];
// output_padding adds rows and columns at the far side. Output channels-last, as conv2d's.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, const DimVec& stride = {1},
                        const DimVec& padding = {0}, const DimVec& output_padding = {0}, int64_t groups = 1,
                        const DimVec& dilation = {1}, SrcLoc loc = {});
// Convolution padding by rule, as PyTorch's padding="same" / "valid" (libtorch's kSame /
// kValid): "same" keeps the size at stride 1, an odd total putting its extra row/column at the
// far side by a pad node, as PyTorch; "valid" pads nothing.
enum class PaddingMode : uint8_t { same, valid };
inline constexpr PaddingMode kSame = PaddingMode::same, kValid = PaddingMode::valid;
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const DimVec& stride, PaddingMode padding,
              const DimVec& dilation = {1}, int64_t groups = 1, SrcLoc loc = {});
// [N, C, L] (or [C, L]) with a [K, C / groups, k] weight, as torch.nn.functional.conv1d: a
// conv2d over [N, C, 1, L] between an unsqueeze and a squeeze (traced as those three ops).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, const DimVec& stride = {1},
              const DimVec& padding = {0}, const DimVec& dilation = {1}, int64_t groups = 1, SrcLoc loc = {});
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const DimVec& stride, PaddingMode padding,
              const DimVec& dilation = {1}, int64_t groups = 1, SrcLoc loc = {});
Tensor max_pool2d(const Tensor& input, const DimVec& kernel_size, const DimVec& stride = {},
                  const DimVec& padding = {0}, const DimVec& dilation = {1}, bool ceil_mode = false, SrcLoc loc = {});
// max_pool2d and each maximum's flat index h * W + w in its input plane (i64), as
// F.max_pool2d(..., return_indices=True).
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const DimVec& kernel_size,
                                                  const DimVec& stride = {}, const DimVec& padding = {0},
                                                  const DimVec& dilation = {1}, bool ceil_mode = false,
                                                  SrcLoc loc = {});
// torchvision.ops.roi_align with boxes as one [K, 5] tensor (batch index, x1, y1, x2, y2):
// [K, C, output_size] bins, each the mean of bilinear samples of input[batch index].
Tensor roi_align(const Tensor& input, const Tensor& boxes, const DimVec& output_size, double spatial_scale = 1.0,
                 int64_t sampling_ratio = -1, bool aligned = false, SrcLoc loc = {});
// The inverse of max_pool2d_with_indices: zeros of output_size (H, W) per plane, each element
// of input written at its index, as torch._C._nn.max_unpool2d. F.max_unpool2d's default
// output_size is (in - 1) * stride - 2 * padding + kernel_size per dim.
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const DimVec& output_size, SrcLoc loc = {});
Tensor avg_pool2d(const Tensor& input, const DimVec& kernel_size, const DimVec& stride = {},
                  const DimVec& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt, SrcLoc loc = {});
// adaptive_avg_pool2d's output_size, as PyTorch's Optional[int] list: (H, W) or one value for
// both, where std::nullopt keeps the input's size: adaptive_avg_pool2d(x, {std::nullopt, 7}).
// Resolved against the input when called, so a trace records the concrete sizes.
class OptionalSize2d {
 public:
  OptionalSize2d(std::initializer_list<std::optional<int64_t>> sizes) : sizes_(sizes) {}
  OptionalSize2d(const DimVec& sizes) : sizes_(sizes.begin(), sizes.end()) {}
  const std::vector<std::optional<int64_t>>& values() const { return sizes_; }

 private:
  std::vector<std::optional<int64_t>> sizes_;
};
Tensor adaptive_avg_pool2d(const Tensor& input, const OptionalSize2d& output_size, SrcLoc loc = {});
// torch.nn.functional.adaptive_avg_pool3d of 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input:
// output_size (D, H, W) or one value for all three, std::nullopt keeping the input's size. Each
// output element is the mean of its box [floor(i*in/out), ceil((i+1)*in/out)) along each dim,
// computed as two adaptive_avg_pool2d (each (D) plane's (H, W) windows, then the planes' D
// windows), which is what a trace records; f32 results are within rounding of ATen's one sum.
using OptionalSize3d = OptionalSize2d;
Tensor adaptive_avg_pool3d(const Tensor& input, const OptionalSize3d& output_size, SrcLoc loc = {});
// Nearest and bilinear resizing of [N, C, H, W] to output_size (H, W), as ATen's ops: the
// scales (when given, and > 0) set the source step 1 / scale instead of in / out, as
// F.interpolate passes them with scale_factor.
Tensor upsample_nearest2d(const Tensor& input, const DimVec& output_size, std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt, SrcLoc loc = {});
Tensor upsample_bilinear2d(const Tensor& input, const DimVec& output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt,
                           SrcLoc loc = {});
Tensor upsample_bicubic2d(const Tensor& input, const DimVec& output_size, bool align_corners,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt,
                          SrcLoc loc = {});
// The antialiased forms (ATen's _upsample_bilinear2d_aa and _upsample_bicubic2d_aa): each output
// pixel averages a window of input pixels under the filter, widened by the scale when downsampling.
Tensor upsample_bilinear2d_aa(const Tensor& input, const DimVec& output_size, bool align_corners,
                              std::optional<double> scales_h = std::nullopt,
                              std::optional<double> scales_w = std::nullopt, SrcLoc loc = {});
Tensor upsample_bicubic2d_aa(const Tensor& input, const DimVec& output_size, bool align_corners,
                             std::optional<double> scales_h = std::nullopt,
                             std::optional<double> scales_w = std::nullopt, SrcLoc loc = {});
// Nearest and trilinear resizing of [N, C, D, H, W] to output_size (D, H, W), as ATen's ops (the
// scales as for the 2-D ones).
Tensor upsample_nearest3d(const Tensor& input, const DimVec& output_size, std::optional<double> scales_d = std::nullopt,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt,
                          SrcLoc loc = {});
Tensor upsample_trilinear3d(const Tensor& input, const DimVec& output_size, bool align_corners,
                            std::optional<double> scales_d = std::nullopt,
                            std::optional<double> scales_h = std::nullopt,
                            std::optional<double> scales_w = std::nullopt, SrcLoc loc = {});
// F.grid_sample of 4-D input at grid (N, H_out, W_out, 2)'s (x, y) positions in [-1, 1]:
// mode "bilinear", "nearest" or "bicubic"; padding_mode "zeros", "border" or "reflection".
Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode = "bilinear",
                   const std::string& padding_mode = "zeros", bool align_corners = false, SrcLoc loc = {});
// torch.nn.functional.interpolate's arguments (exactly one of size and scale_factor; one value
// applies to both H and W). Call as interpolate(x, {.scale_factor = {2}, .mode = "bilinear"}).
struct InterpolateOptions {
  DimVec size = {};
  std::vector<double> scale_factor = {};
  // "nearest", "nearest-exact" or "area" (3-D, 4-D or 5-D input), "linear" (3-D),
  // "bilinear" or "bicubic" (4-D), "trilinear" (5-D)
  std::string mode = "nearest";
  std::optional<bool> align_corners = std::nullopt;  // the interpolating modes; false when not given
  bool recompute_scale_factor = false;
  bool antialias = false;  // bilinear and bicubic only
};
// torch.nn.functional.interpolate for 3-D (N, C, L), 4-D (N, C, H, W) and 5-D (N, C, D, H, W)
// input: the output size is floor(in * scale) when scaled, and the scales reach the op unless
// recompute_scale_factor; traced as upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d
// (antialias: their _aa forms), upsample_nearest3d, upsample_trilinear3d, (area)
// adaptive_avg_pool2d (5-D: adaptive_avg_pool3d's) or (nearest-exact) index_select of constant
// source indices, 3-D input between an unsqueeze and a squeeze.
Tensor interpolate(const Tensor& input, const InterpolateOptions& options, SrcLoc loc = {});
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight = {},
                  const Tensor& bias = {}, bool training = false, double momentum = 0.1, double eps = 1e-5,
                  SrcLoc loc = {});
Tensor layer_norm(const Tensor& input, const DimVec& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, SrcLoc loc = {});
// layer_norm(input + other), other of input's shape: a residual connection and the norm after
// it in one op (what the residual-norm fusion pass makes of add then layer_norm).
Tensor add_layer_norm(const Tensor& input, const Tensor& other, const DimVec& normalized_shape,
                      const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5, SrcLoc loc = {});
// torch.nn.functional.group_norm: each of num_groups channel groups normalised per sample (a
// layer_norm over [N, G, C / G * spatial]), then scaled and shifted per channel.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, SrcLoc loc = {});
// torch.nn.functional.instance_norm: group_norm with one group per channel, or with
// use_input_stats=false the running statistics' batch_norm.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5, SrcLoc loc = {});
// Rows of weight selected by indices (i64 or i32), as torch.embedding(weight, indices,
// padding_idx); padding_idx (negative counts from the end, -1 by default) only marks a row
// that training would not update, so inference reads it as any other.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1, SrcLoc loc = {});

// ---- Joining, splitting, gathering. ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, SrcLoc loc = {});
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, SrcLoc loc = {});
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0, SrcLoc loc = {});
std::vector<Tensor> split_with_sizes(const Tensor& self, const std::vector<int64_t>& split_sizes, int64_t dim = 0,
                                     SrcLoc loc = {});
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0, SrcLoc loc = {});
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, SrcLoc loc = {});
// Elements of self picked along dim by index (same dims as self), as torch.gather.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, SrcLoc loc = {});
// self with src's elements written where index points along dim, as torch.scatter /
// scatter_add (index i64 or i32, no larger than src, nor than self but along dim): the last of
// repeated indices wins (on CUDA, some one of them), and scatter_add sums them.
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, SrcLoc loc = {});
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, Scalar value, SrcLoc loc = {});
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, SrcLoc loc = {});
// self with src's elements folded in where index points along dim, as torch.scatter_reduce:
// reduce "sum", "prod", "mean", "amax" or "amin" (a NaN wins those two); include_self false
// starts each element scattered to from src's alone; integer means floor.
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true, SrcLoc loc = {});
// self padded by pad's (before, after) pairs, last dim first, as torch.nn.functional.pad:
// mode "constant" (with value; negative pads crop), "reflect", "replicate" or "circular".
Tensor pad(const Tensor& self, const DimVec& pad, const std::string& mode = "constant", Scalar value = 0,
           SrcLoc loc = {});
// self's elements shifted by shifts[i] along dims[i], wrapping around, as torch.roll; with no
// dims, over the flattened tensor (a reshape, the roll along dim 0 and a reshape back).
Tensor roll(const Tensor& self, const DimVec& shifts, const DimVec& dims = {}, SrcLoc loc = {});
// self tiled repeats[d] times along each dim, as Tensor.repeat (extra leading repeats add dims).
Tensor repeat(const Tensor& self, const DimVec& repeats, SrcLoc loc = {});
// [*, C r^2, H, W] -> [*, C, H r, W r] and back, as torch.nn.functional.pixel_shuffle /
// pixel_unshuffle: a reshape, a permute and a reshape (traced as those three ops).
Tensor pixel_shuffle(const Tensor& self, int64_t upscale_factor, SrcLoc loc = {});
Tensor pixel_unshuffle(const Tensor& self, int64_t downscale_factor, SrcLoc loc = {});
// The elements in reverse order along each of dims, as torch.flip.
Tensor flip(const Tensor& self, const DimVec& dims, SrcLoc loc = {});
// The lower (upper) triangle of each matrix in the last two dims: (i, j) kept where
// j - i <= diagonal (>= diagonal), zero elsewhere, as torch.tril / torch.triu.
Tensor tril(const Tensor& self, int64_t diagonal = 0, SrcLoc loc = {});
Tensor triu(const Tensor& self, int64_t diagonal = 0, SrcLoc loc = {});

// ---- Factories. ----
Tensor full(const DimVec& size, Scalar fill_value, TensorOptions options = {}, SrcLoc loc = {});
Tensor zeros(const DimVec& size, TensorOptions options = {}, SrcLoc loc = {});
Tensor ones(const DimVec& size, TensorOptions options = {}, SrcLoc loc = {});
Tensor zeros_like(const Tensor& t, SrcLoc loc = {});
Tensor ones_like(const Tensor& t, SrcLoc loc = {});
// start, start+step, ... before end. dtype: f32 if any bound is floating, else i64, unless
// options.dtype is given explicitly through the overload with options.
Tensor arange(Scalar end, SrcLoc loc = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, SrcLoc loc = {});
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options, SrcLoc loc = {});
// Uniform [0, 1) and standard normal samples from gen (the default generator when null);
// equal to torch.rand / torch.randn after the same manual_seed. Recorded by the tracer as
// frozen constants, with a warning.
Tensor rand(const DimVec& size, TensorOptions options = {}, Generator* gen = nullptr, SrcLoc loc = {});
Tensor randn(const DimVec& size, TensorOptions options = {}, Generator* gen = nullptr, SrcLoc loc = {});

// ---- Operators. A C++ operator carries no source line of its own; the tracer records the
// nearest user line available. ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);

// ---- Any op by name: how an op library's ops are called (and traced). ----
// inputs follow the op's tensor arguments (an undefined Tensor for an absent optional one);
// attrs are by name, in any order, defaults filling the rest. Throws amber::Error naming the
// op for an unknown op, a missing or unknown attribute, or bad inputs. Returns every output.
using NamedAttr = std::pair<std::string_view, Attr>;
std::vector<Tensor> call_op(std::string_view op, const std::vector<Tensor>& inputs,
                            std::initializer_list<NamedAttr> attrs = {}, SrcLoc loc = {});

}  // namespace amber
