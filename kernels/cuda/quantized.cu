// CUDA kernels for quantized_conv2d, quantized_linear, their .u8 overloads and quantized_add
// (docs/OPS.md, "Int8 convolutions and linear layers"): one thread per output, the exact int32 sum of
// (q - input_zero_point) * w over the taps inside the input (an f32 source quantized as it is
// read, a u8 one taken as it is), then the epilogue of kernels/quant_math.h shared with the CPU
// (scales, bias, activation; for .u8 the requantization). With an f32 output an image (a
// linear layer's row) holding a NaN gives NaN outputs: a first pass flags a convolution's
// images in the workspace; a linear layer's thread sees its whole row. Direct kernels, no
// tensor cores: correct everywhere, not yet fast (cuDNN's int8 convolutions and cuBLASLt's
// int8 products need NHWC channels in multiples of 4 and a GPU to tune on).

#include <cmath>
#include <string_view>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/quant_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

// The quantization and epilogue of one step.
struct Quant {
  float sx = 1, inv_sx = 1;  // input_scale and its reciprocal (the CPU's float reciprocal)
  int32_t zx = 0;
  quant::Act act = quant::Act::none;
  float lo = 0, hi = 0;
  float inv_so = 1, zo = 0;  // the .u8 overloads' 1 / output_scale and output_zero_point
};

quant::Act act_of(const char* s) {
  const std::string_view v(s);
  return v == "clamp"       ? quant::Act::clamp
         : v == "silu"      ? quant::Act::silu
         : v == "hardswish" ? quant::Act::hardswish
                            : quant::Act::none;
}

// The step's quantization from attributes at these positions (-1: the op has none).
Quant quant_of(const amber_kernel_args* a, int input_scale, int input_zero_point, int activation, int min_val,
               int max_val, int output_scale, int output_zero_point) {
  Quant q;
  q.sx = float(a->attrs[input_scale].f);
  q.inv_sx = 1.0f / q.sx;
  q.zx = int32_t(a->attrs[input_zero_point].i);
  if (activation >= 0) {
    q.act = act_of(a->attrs[activation].str);
    q.lo = float(a->attrs[min_val].f);
    q.hi = float(a->attrs[max_val].f);
  }
  if (output_scale >= 0) {
    q.inv_so = 1.0f / float(a->attrs[output_scale].f);
    q.zo = float(a->attrs[output_zero_point].i);
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

ConvGeometry conv_geometry(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_conv2d;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &y = a->outputs[0];
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
  g.wss = a->inputs[2].strides[0];
  g.bs = present(a->inputs[3]) ? a->inputs[3].strides[0] : 0;
  g.groups = a->attrs[at::groups].i;
  auto pair = [&](int i, int64_t* v) {
    const amber_attr& p = a->attrs[i];
    v[0] = p.count > 0 ? p.ints[0] : 1;
    v[1] = p.count > 1 ? p.ints[1] : v[0];
  };
  pair(at::stride, g.stride);
  pair(at::padding, g.pad);
  pair(at::dilation, g.dil);
  return g;
}

// A convolution writing f32 from an f32 source needs its images' NaN flags in the workspace.
bool flags_images(const amber_kernel_args* a, bool u8_out) { return !u8_out && a->inputs[0].dtype == kF32; }

template <bool U8Out>
int conv_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  const int64_t images = a->inputs[0].ndim == 4 ? a->inputs[0].sizes[0] : 1;
  *workspace_bytes = flags_images(a, U8Out) ? size_t(images) * sizeof(int32_t) : 0;
  return 0;
}

template <typename TX, typename TY>
int launch_conv(const amber_kernel_args* a, const ConvGeometry& g, const Quant& q, int32_t* flags) {
  const int64_t total = g.n * g.oc * g.oh * g.ow;
  quantized_conv_kernel<TX, TY><<<grid_for(total), 256, 0, stream_of(a)>>>(
      static_cast<const TX*>(a->inputs[0].data), static_cast<const int8_t*>(a->inputs[1].data),
      static_cast<const float*>(a->inputs[2].data),
      present(a->inputs[3]) ? static_cast<const float*>(a->inputs[3].data) : nullptr,
      static_cast<TY*>(a->outputs[0].data), g, q, flags);
  return launched(a, "quantized_conv2d");
}

template <bool U8Out>
int quantized_conv(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_conv2d;
  namespace ua = op_attrs::quantized_conv2d_u8;
  const ConvGeometry g = conv_geometry(a);
  if (g.n * g.oc * g.oh * g.ow == 0) return 0;
  const Quant q =
      U8Out ? quant_of(a, ua::input_scale, ua::input_zero_point, ua::activation, ua::min_val, ua::max_val,
                       ua::output_scale, ua::output_zero_point)
            : quant_of(a, at::input_scale, at::input_zero_point, at::activation, at::min_val, at::max_val, -1, -1);
  DeviceScope scope(a->device);
  int32_t* flags = nullptr;
  if (flags_images(a, U8Out)) {
    if (a->workspace_bytes < size_t(g.n) * sizeof(int32_t))
      return fail(a, "quantized_conv2d: called without its setup");
    flags = static_cast<int32_t*>(a->workspace);
    if (cudaMemsetAsync(flags, 0, size_t(g.n) * sizeof(int32_t), stream_of(a)) != cudaSuccess)
      return launched(a, "quantized_conv2d");
    if (g.c * g.h * g.w > 0)
      flag_nan_images<<<grid_for(g.n * g.c * g.h * g.w), 256, 0, stream_of(a)>>>(
          static_cast<const float*>(a->inputs[0].data), g, flags);
  }
  const bool u8_in = a->inputs[0].dtype == kU8;
  if constexpr (U8Out)
    return u8_in ? launch_conv<uint8_t, uint8_t>(a, g, q, flags) : launch_conv<float, uint8_t>(a, g, q, flags);
  else
    return u8_in ? launch_conv<uint8_t, float>(a, g, q, flags) : launch_conv<float, float>(a, g, q, flags);
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

template <typename TX, typename TY>
int launch_linear(const amber_kernel_args* a, const Rows& rows, int64_t n_rows, const Quant& q) {
  const amber_tensor_view &w = a->inputs[1], &b = a->inputs[3];
  const int64_t out_f = w.sizes[0], in_f = w.sizes[1];
  quantized_linear_kernel<TX, TY><<<grid_for(n_rows * out_f), 256, 0, stream_of(a)>>>(
      static_cast<const TX*>(a->inputs[0].data), static_cast<const int8_t*>(w.data),
      static_cast<const float*>(a->inputs[2].data), present(b) ? static_cast<const float*>(b.data) : nullptr,
      static_cast<TY*>(a->outputs[0].data), rows, n_rows, in_f, out_f, w.strides[0], w.strides[1],
      a->inputs[2].strides[0], present(b) ? b.strides[0] : 0, q);
  return launched(a, "quantized_linear");
}

template <bool U8Out>
int quantized_linear(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_linear;
  namespace ua = op_attrs::quantized_linear_u8;
  const amber_tensor_view& x = a->inputs[0];
  Rows rows;
  rows.nd = x.ndim - 1;
  int64_t n_rows = 1;
  for (int d = 0; d < rows.nd; ++d) {
    rows.sizes[d] = x.sizes[d];
    rows.strides[d] = x.strides[d];
    n_rows *= x.sizes[d];
  }
  rows.cs = x.strides[x.ndim - 1];
  if (n_rows * a->inputs[1].sizes[0] == 0) return 0;
  const Quant q = U8Out ? quant_of(a, ua::input_scale, ua::input_zero_point, ua::activation, ua::min_val, ua::max_val,
                                   ua::output_scale, ua::output_zero_point)
                        : quant_of(a, at::input_scale, at::input_zero_point, -1, -1, -1, -1, -1);
  DeviceScope scope(a->device);
  const bool u8_in = x.dtype == kU8;
  if constexpr (U8Out)
    return u8_in ? launch_linear<uint8_t, uint8_t>(a, rows, n_rows, q)
                 : launch_linear<float, uint8_t>(a, rows, n_rows, q);
  else
    return u8_in ? launch_linear<uint8_t, float>(a, rows, n_rows, q) : launch_linear<float, float>(a, rows, n_rows, q);
}

// ---- quantized_add: one thread per element (cuda_util.cuh's strided map), add_u8's formula ----

template <quant::Act A>
struct AddF {
  quant::AddParams q;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<uint8_t*>(p[0]) =
        quant::add_u8<A>(*reinterpret_cast<const uint8_t*>(p[1]), *reinterpret_cast<const uint8_t*>(p[2]), q);
  }
};

int quantized_add(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_add;
  quant::AddParams q;
  q.sa = double(float(a->attrs[at::self_scale].f));
  q.za = double(a->attrs[at::self_zero_point].i);
  q.sb = double(float(a->attrs[at::other_scale].f));
  q.zb = double(a->attrs[at::other_zero_point].i);
  q.act = act_of(a->attrs[at::activation].str);
  q.lo = float(a->attrs[at::min_val].f);
  q.hi = float(a->attrs[at::max_val].f);
  q.inv_so = 1.0f / float(a->attrs[at::output_scale].f);
  q.zo = float(a->attrs[at::output_zero_point].i);
  const amber_tensor_view* v[3] = {&a->outputs[0], &a->inputs[0], &a->inputs[1]};
  const int64_t items[3] = {1, 1, 1};
  switch (q.act) {
    case quant::Act::none:
      return map<3>(a, v, items, AddF<quant::Act::none>{q}, "quantized_add");
    case quant::Act::clamp:
      return map<3>(a, v, items, AddF<quant::Act::clamp>{q}, "quantized_add");
    case quant::Act::silu:
      return map<3>(a, v, items, AddF<quant::Act::silu>{q}, "quantized_add");
    case quant::Act::hardswish:
      break;
  }
  return map<3>(a, v, items, AddF<quant::Act::hardswish>{q}, "quantized_add");
}

AMBER_CUDA_KERNELS(quantized) {
  register_kernel("quantized_add", kU8, &quantized_add);
  for (int32_t t : {kF32, kU8}) {  // the source as f32 (quantized as it is read) or u8
    register_kernel("quantized_conv2d", t, amber_kernel{quantized_conv<false>, conv_setup<false>, nullptr, nullptr});
    register_kernel("quantized_conv2d.u8", t, amber_kernel{quantized_conv<true>, conv_setup<true>, nullptr, nullptr});
    register_kernel("quantized_linear", t, &quantized_linear<false>);
    register_kernel("quantized_linear.u8", t, &quantized_linear<true>);
  }
}

}  // namespace
}  // namespace amber::cuda
