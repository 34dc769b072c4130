// The device code of the int8 CUDA kernels (quantized.cu): quantized_conv2d's and
// quantized_linear's, a thread an output summing exact int32 products (an f32 source quantized as
// read), kernels/quant_math.h's epilogue, and their geometry from the views, in a header of its own
// so that tests/test_quantized_emulated.cpp runs the same code on the CPU against the CPU's
// kernels; quantized.cu launches them. Private to libamber_cuda.so.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/quant_math.h"

namespace amber::cuda::quantized {

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

// A source element's uint8 level: itself, or an f32 quantized as quantized ops define it.
template <typename TX>
__device__ inline int32_t level(TX v, const Quant& q) {
  if constexpr (std::is_same_v<TX, uint8_t>)
    return int32_t(v);
  else
    return int32_t(quant::to_u8(v, q.inv_sx, float(q.zx)));
}

// The f32 result (NaN where `nan`) or its uint8 requantization, written to *y.
template <typename TY>
__device__ inline void write_out(TY* y, int32_t acc, const Quant& q, float sw, float b, bool nan) {
  const float v = quant::activate(quant::dequantized(acc, 0, 0, q.sx, sw, b), q.act, q.lo, q.hi);
  if constexpr (std::is_same_v<TY, uint8_t>)
    *y = quant::to_u8(v, q.inv_so, q.zo);
  else
    *y = nan ? NAN : v;
}

// ---- quantized_conv2d ----

struct ConvGeometry {  // N, C, H, W of input and output; element strides; weight [OC, IC/G, KH, KW]
  int64_t n, c, h, w, oc, oh, ow, groups, kh, kw;
  int64_t xs[4], ys[4], ws[4], wss, bs;
  int64_t stride[2], pad[2], dil[2];
};

// flags[n] = 1 for each image n of x holding a NaN (flags zeroed before).
template <int Unused = 0>  // (a header's kernel must not be defined once per file)
__global__ void flag_nan_images(const float* x, ConvGeometry g, int32_t* flags) {
  const int64_t total = g.n * g.c * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.w, ih = i / g.w % g.h, c = i / (g.w * g.h) % g.c, n = i / (g.w * g.h * g.c);
    if (isnan(x[n * g.xs[0] + c * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]])) flags[n] = 1;
  }
}

// One thread per output element, output channels fastest (adjacent in a channels-last output).
template <typename TX, typename TY>
__global__ void quantized_conv_kernel(const TX* x, const int8_t* w, const float* wscale, const float* bias, TY* y,
                                      ConvGeometry g, Quant q, const int32_t* nan_images) {
  const int64_t total = g.n * g.oc * g.oh * g.ow;
  const int64_t ocg = g.oc / g.groups, icg = g.c / g.groups;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i % g.oc, ow = i / g.oc % g.ow, oh = i / (g.oc * g.ow) % g.oh, n = i / (g.oc * g.ow * g.oh);
    const int64_t c0 = o / ocg * icg;
    int32_t acc = 0;
    for (int64_t c = 0; c < icg; ++c)
      for (int64_t r = 0; r < g.kh; ++r) {
        const int64_t ih = oh * g.stride[0] - g.pad[0] + r * g.dil[0];
        if (ih < 0 || ih >= g.h) continue;  // padding: level zero_point, (q - zx) = 0
        for (int64_t s = 0; s < g.kw; ++s) {
          const int64_t iw = ow * g.stride[1] - g.pad[1] + s * g.dil[1];
          if (iw < 0 || iw >= g.w) continue;
          const int32_t qx = level(x[n * g.xs[0] + (c0 + c) * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]], q) - q.zx;
          acc += qx * int32_t(w[o * g.ws[0] + c * g.ws[1] + r * g.ws[2] + s * g.ws[3]]);
        }
      }
    write_out(y + n * g.ys[0] + o * g.ys[1] + oh * g.ys[2] + ow * g.ys[3], acc, q, wscale[o * g.wss],
              bias ? bias[o * g.bs] : 0.0f, nan_images && nan_images[n]);
  }
}

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
  g.bs = present(bias) ? bias.strides[0] : 0;
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

// ---- quantized_linear ----

struct Rows {  // the input's leading dims flattened into rows: their sizes and element strides
  int nd = 0;
  int64_t sizes[AMBER_MAX_DIMS] = {}, strides[AMBER_MAX_DIMS] = {};
  int64_t cs = 1;  // the input's last-dim stride
  __device__ int64_t offset(int64_t r) const {
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

// One thread per output (row, column); y dense [rows, out].
template <typename TX, typename TY>
__global__ void quantized_linear_kernel(const TX* x, const int8_t* w, const float* wscale, const float* bias, TY* y,
                                        Rows rows, int64_t n_rows, int64_t in_f, int64_t out_f, int64_t ws0,
                                        int64_t ws1, int64_t wss, int64_t bs, Quant q) {
  const int64_t total = n_rows * out_f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i % out_f, r = i / out_f;
    const TX* xr = x + rows.offset(r);
    int32_t acc = 0;
    bool nan = false;
    for (int64_t k = 0; k < in_f; ++k) {
      const TX v = xr[k * rows.cs];
      if constexpr (!std::is_same_v<TX, uint8_t>) nan = nan || isnan(v);
      acc += (level(v, q) - q.zx) * int32_t(w[o * ws0 + k * ws1]);
    }
    write_out(y + i, acc, q, wscale[o * wss], bias ? bias[o * bs] : 0.0f, nan);
  }
}

}  // namespace amber::cuda::quantized
