// The int8 products of quantized_conv2d and quantized_linear (and their .u8 overloads) an output
// element at a time: the exact int32 sum of the source's uint8 levels (an f32 source quantized as
// read) times the int8 weights, then quant_math.h's epilogue. The CUDA kernels run it a thread an
// output (kernels/cuda/quantized_kernels.cuh); the CPU runs it where oneDNN's int8 products could
// saturate (no VNNI: their u8 x s8 pairs are summed in 16 bits), so both compute the same numbers.
// Also the rule both hold the weight scales and bias to (scale_error).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/kernels/activation_kind.h"
#include "amber/kernels/hd.h"
#include "amber/kernels/quant_math.h"
#include "amber/op_attrs.h"

namespace amber::quant {

// The error a quantized op's weight scales (n of them, element stride ss) or bias (stride bs;
// null: none) give: the first scale that is negative, infinite or NaN, or bias element that is
// not finite, named with its index, value and `op`; "" when every one holds. The CPU checks a
// call's (constant ones at setup), the CUDA backend a loaded model's constant ones at setup.
inline std::string scale_error(const float* scales, int64_t ss, const float* bias, int64_t bs, int64_t n,
                               const char* op) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = scales[i * ss];
    if (!std::isfinite(v) || v < 0)
      return std::string(op) + ": weight_scale[" + std::to_string(i) + "] is " + std::to_string(v) +
             "; the scales must be finite and non-negative";
  }
  for (int64_t i = 0; bias && i < n; ++i)
    if (!std::isfinite(bias[i * bs]))
      return std::string(op) + ": bias[" + std::to_string(i) + "] is " + std::to_string(bias[i * bs]) +
             "; a quantized op's bias must be finite";
  return {};
}

// The quantization and epilogue of one step.
struct Quant {
  float sx = 1, inv_sx = 1;  // input_scale and its reciprocal (the CPU's float reciprocal)
  int32_t zx = 0;
  Act act = Act::none;
  float lo = 0, hi = 0;
  float inv_so = 1, zo = 0;  // the .u8 overloads' 1 / output_scale and output_zero_point
};
// A step's Quant from its attributes' values (output_scale 0: an f32 output).
inline Quant make_quant(double input_scale, int64_t input_zero_point, Act act, double min_val, double max_val,
                        double output_scale, int64_t output_zero_point) {
  Quant q;
  q.sx = float(input_scale);
  q.inv_sx = 1.0f / q.sx;
  q.zx = int32_t(input_zero_point);
  q.act = act;
  q.lo = float(min_val);
  q.hi = float(max_val);
  if (output_scale != 0) {
    q.inv_so = 1.0f / float(output_scale);
    q.zo = float(output_zero_point);
  }
  return q;
}
// The step's Quant from its attributes at these positions (-1: the op has none).
inline Quant quant_of(const amber_kernel_args* a, int input_scale, int input_zero_point, int activation, int min_val,
                      int max_val, int output_scale, int output_zero_point) {
  const bool act = activation >= 0, u8 = output_scale >= 0;
  return make_quant(a->attrs[input_scale].f, a->attrs[input_zero_point].i,
                    act ? act_of(a->attrs[activation]) : Act::none, act ? a->attrs[min_val].f : 0.0,
                    act ? a->attrs[max_val].f : 0.0, u8 ? a->attrs[output_scale].f : 0.0,
                    u8 ? a->attrs[output_zero_point].i : 0);
}
// quantized_conv2d's (U8Out: quantized_conv2d.u8's) Quant.
template <bool U8Out>
inline Quant conv_quant(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_conv2d;
  namespace ua = op_attrs::quantized_conv2d_u8;
  return U8Out ? quant_of(a, ua::input_scale, ua::input_zero_point, ua::activation, ua::min_val, ua::max_val,
                          ua::output_scale, ua::output_zero_point)
               : quant_of(a, at::input_scale, at::input_zero_point, at::activation, at::min_val, at::max_val, -1, -1);
}
// quantized_linear's (U8Out: quantized_linear.u8's) Quant.
template <bool U8Out>
inline Quant linear_quant(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_linear;
  namespace ua = op_attrs::quantized_linear_u8;
  return U8Out ? quant_of(a, ua::input_scale, ua::input_zero_point, ua::activation, ua::min_val, ua::max_val,
                          ua::output_scale, ua::output_zero_point)
               : quant_of(a, at::input_scale, at::input_zero_point, -1, -1, -1, -1, -1);
}

// A source element's uint8 level: itself, or an f32 quantized as quantized ops define it.
template <typename TX>
AMBER_HD inline int32_t level(TX v, const Quant& q) {
  if constexpr (std::is_same_v<TX, uint8_t>)
    return int32_t(v);
  else
    return int32_t(to_u8(v, q.inv_sx, float(q.zx)));
}

// The f32 result (NaN where `nan`) or its uint8 requantization, written to *y.
template <typename TY>
AMBER_HD inline void write_out(TY* y, int32_t acc, const Quant& q, float sw, float b, bool nan) {
  const float v = activate(dequantized(acc, 0, 0, q.sx, sw, b), q.act, q.lo, q.hi);
  if constexpr (std::is_same_v<TY, uint8_t>)
    *y = to_u8(v, q.inv_so, q.zo);
  else
    *y = nan ? NAN : v;
}

// ---- quantized_conv2d ----

struct ConvGeometry {  // N, C, H, W of input and output; element strides; weight [OC, IC/G, KH, KW]
  int64_t n, c, h, w, oc, oh, ow, groups, kh, kw;
  int64_t xs[4], ys[4], ws[4], wss, bs;
  int64_t stride[2], pad[2], dil[2];
};

// The geometry of x (4-D, or 3-D: one image), weight, weight_scale, bias (absent: ndim < 0) and
// y, with stride, padding and dilation as int[] attributes (one value for both dims, or two).
inline ConvGeometry conv_geometry(const amber_tensor_view& x, const amber_tensor_view& w,
                                  const amber_tensor_view& wscale, const amber_tensor_view& bias,
                                  const amber_tensor_view& y, const amber_attr& stride, const amber_attr& padding,
                                  const amber_attr& dilation, int64_t groups) {
  const bool batched = x.ndim == 4;
  ConvGeometry g{};
  const int o = batched ? 1 : 0;
  g.n = batched ? x.sizes[0] : 1;
  g.c = x.sizes[o];
  g.h = x.sizes[o + 1];
  g.w = x.sizes[o + 2];
  g.oc = y.sizes[o];
  g.oh = y.sizes[o + 1];
  g.ow = y.sizes[o + 2];
  for (int d = 0; d < 3; ++d) {
    g.xs[d + 1] = x.strides[o + d];
    g.ys[d + 1] = y.strides[o + d];
  }
  g.xs[0] = batched ? x.strides[0] : 0;
  g.ys[0] = batched ? y.strides[0] : 0;
  for (int d = 0; d < 4; ++d) g.ws[d] = w.strides[d];
  g.kh = w.sizes[2];
  g.kw = w.sizes[3];
  g.wss = wscale.strides[0];
  g.bs = bias.ndim >= 0 ? bias.strides[0] : 0;
  g.groups = groups;
  auto pair = [](const amber_attr& p, int64_t* v) {
    v[0] = p.count > 0 ? p.ints[0] : 1;
    v[1] = p.count > 1 ? p.ints[1] : v[0];
  };
  pair(stride, g.stride);
  pair(padding, g.pad);
  pair(dilation, g.dil);
  return g;
}
// The geometry of a quantized_conv2d (or .u8) step.
inline ConvGeometry conv_geometry(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_conv2d;
  static_assert(
      at::stride == op_attrs::quantized_conv2d_u8::stride && at::padding == op_attrs::quantized_conv2d_u8::padding &&
      at::dilation == op_attrs::quantized_conv2d_u8::dilation && at::groups == op_attrs::quantized_conv2d_u8::groups);
  return conv_geometry(a->inputs[0], a->inputs[1], a->inputs[2], a->inputs[3], a->outputs[0], a->attrs[at::stride],
                       a->attrs[at::padding], a->attrs[at::dilation], a->attrs[at::groups].i);
}

// Output element i of a convolution (i over [n, oh, ow, oc], output channels fastest); bias
// null: none; nan_images null or image n's flag (an f32 source holding a NaN).
template <typename TX, typename TY>
AMBER_HD inline void conv_output(int64_t i, const TX* x, const int8_t* w, const float* wscale, const float* bias, TY* y,
                                 const ConvGeometry& g, const Quant& q, const int32_t* nan_images) {
  const int64_t ocg = g.oc / g.groups, icg = g.c / g.groups;
  const int64_t o = i % g.oc, ow = i / g.oc % g.ow, oh = i / (g.oc * g.ow) % g.oh, n = i / (g.oc * g.ow * g.oh);
  const int64_t c0 = o / ocg * icg;
  int32_t acc = 0;
  for (int64_t r = 0; r < g.kh; ++r) {
    const int64_t ih = oh * g.stride[0] - g.pad[0] + r * g.dil[0];
    if (ih < 0 || ih >= g.h) continue;  // padding: level zero_point, (q - zx) = 0
    for (int64_t s = 0; s < g.kw; ++s) {
      const int64_t iw = ow * g.stride[1] - g.pad[1] + s * g.dil[1];
      if (iw < 0 || iw >= g.w) continue;
      const TX* xp = x + n * g.xs[0] + c0 * g.xs[1] + ih * g.xs[2] + iw * g.xs[3];
      const int8_t* wp = w + o * g.ws[0] + r * g.ws[2] + s * g.ws[3];
      for (int64_t c = 0; c < icg; ++c) acc += (level(xp[c * g.xs[1]], q) - q.zx) * int32_t(wp[c * g.ws[1]]);
    }
  }
  write_out(y + n * g.ys[0] + o * g.ys[1] + oh * g.ys[2] + ow * g.ys[3], acc, q, wscale[o * g.wss],
            bias ? bias[o * g.bs] : 0.0f, nan_images && nan_images[n]);
}

// ---- quantized_linear ----

struct Rows {  // the input's leading dims flattened into rows: their sizes and element strides
  int nd = 0;
  int64_t sizes[AMBER_MAX_DIMS] = {}, strides[AMBER_MAX_DIMS] = {};
  int64_t cs = 1;  // the input's last-dim stride
  AMBER_HD int64_t offset(int64_t r) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      off += r % sizes[d] * strides[d];
      r /= sizes[d];
    }
    return off;
  }
};

// The rows of x (its leading dims; n_rows their count).
inline Rows linear_rows(const amber_tensor_view& x, int64_t& n_rows) {
  Rows rows;
  rows.nd = x.ndim - 1;
  n_rows = 1;
  for (int d = 0; d < rows.nd; ++d) {
    rows.sizes[d] = x.sizes[d];
    rows.strides[d] = x.strides[d];
    n_rows *= x.sizes[d];
  }
  rows.cs = x.strides[x.ndim - 1];
  return rows;
}

// A linear layer's operands: weight [out, in] with its strides, the scales' and bias's strides.
struct LinearGeometry {
  int64_t in_f, out_f, ws0, ws1, wss, bs;
};
inline LinearGeometry linear_geometry(const amber_tensor_view& w, const amber_tensor_view& wscale,
                                      const amber_tensor_view& bias) {
  return {w.sizes[1], w.sizes[0], w.strides[0], w.strides[1], wscale.strides[0], bias.ndim >= 0 ? bias.strides[0] : 0};
}

// Output element i of a linear layer (row i / out_f, column i % out_f; y dense [rows, out]); a
// row holding a NaN (f32 source) gives NaN.
template <typename TX, typename TY>
AMBER_HD inline void linear_output(int64_t i, const TX* x, const int8_t* w, const float* wscale, const float* bias,
                                   TY* y, const Rows& rows, const LinearGeometry& l, const Quant& q) {
  const int64_t o = i % l.out_f, r = i / l.out_f;
  const TX* xr = x + rows.offset(r);
  int32_t acc = 0;
  bool nan = false;
  for (int64_t k = 0; k < l.in_f; ++k) {
    const TX v = xr[k * rows.cs];
    if constexpr (!std::is_same_v<TX, uint8_t>) nan = nan || v != v;  // (a NaN)
    acc += (level(v, q) - q.zx) * int32_t(w[o * l.ws0 + k * l.ws1]);
  }
  write_out(y + i, acc, q, wscale[o * l.wss], bias ? bias[o * l.bs] : 0.0f, nan);
}

}  // namespace amber::quant
