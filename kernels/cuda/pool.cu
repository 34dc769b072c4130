// CUDA kernels for 2-D pooling with the CPU kernels' window rules (ATen's): max_pool2d (NaN
// propagates, dilation, ceil_mode through the output size; with or without indices; of u8 too), avg_pool2d
// (count_include_pad, divisor_override), adaptive_avg_pool2d and max_unpool2d, in f32, f64 and 16 bits (a window
// compared and summed in f32, the average rounded once). One thread per output element, channels
// fastest for channels-last outputs; any strides (3-D inputs are one image). Own kernels rather than cuDNN's pooling,
// which has no dilation and other rounding rules.

#include <cmath>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

struct Geometry {  // N, C, H, W of input and output, element strides
  int64_t n, c, h, w, oh, ow;
  int64_t sn, sc, sh, sw, on, oc, osh, osw;
  bool channels_last;  // the output's channels are adjacent: threads walk c fastest (coalesced)
};
Geometry geometry(const amber_tensor_view& x, const amber_tensor_view& y) {
  const int o = x.ndim == 4 ? 1 : 0;
  Geometry g{};
  g.n = o ? x.sizes[0] : 1;
  g.sn = o ? x.strides[0] : 0;
  g.on = o ? y.strides[0] : 0;
  g.c = x.sizes[o];
  g.h = x.sizes[o + 1];
  g.w = x.sizes[o + 2];
  g.sc = x.strides[o];
  g.sh = x.strides[o + 1];
  g.sw = x.strides[o + 2];
  g.oh = y.sizes[o + 1];
  g.ow = y.sizes[o + 2];
  g.oc = y.strides[o];
  g.osh = y.strides[o + 1];
  g.osw = y.strides[o + 2];
  g.channels_last = g.c > 1 && g.oc == 1;
  return g;
}

struct Params {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool include_pad, has_override;
  int64_t override_div;
};

enum class Kind : int { max, avg, adaptive };

// What no window element is below: -inf, or (u8, an int8 model's activations) 0.
template <typename T>
__device__ inline T lowest() {
  if constexpr (std::is_floating_point_v<T>)
    return T(-INFINITY);
  else
    return T(0);
}

struct Indices {  // max_pool2d_with_indices' second output (p null for the other ops)
  int64_t* p;
  int64_t on, oc, osh, osw;
};

// Windows compared and summed in compute_t<T> (f32 for 16-bit values: the maximum is exact, an
// average rounded once). I indexes: 32-bit where every offset fits (run_pool), since the five
// 64-bit divisions an output element takes to find its window cost more than its loads
// (ResNet-18's max pool at batch 64 ran 4.6x below the device's bandwidth on an H200).
template <typename T, Kind K, typename I>
__global__ void pool_kernel(const T* x, T* y, Geometry g64, Params p64, Indices yi) {
  using C = compute_t<T>;
  const I gc = I(g64.c), gh = I(g64.h), gw = I(g64.w), goh = I(g64.oh), gow = I(g64.ow);
  const I sn = I(g64.sn), sc = I(g64.sc), sh = I(g64.sh), sw = I(g64.sw);
  const I on = I(g64.on), oc = I(g64.oc), osh = I(g64.osh), osw = I(g64.osw);
  const I kh = I(p64.kh), kw = I(p64.kw), st_h = I(p64.sh), st_w = I(p64.sw), ph = I(p64.ph), pw = I(p64.pw),
          dh = I(p64.dh), dw = I(p64.dw);
  const I total = I(g64.n) * gc * goh * gow;
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    I rest = i, c = 0;
    if (g64.channels_last) {
      c = rest % gc;
      rest /= gc;
    }
    const I ow = rest % gow;
    rest /= gow;
    const I oh = rest % goh;
    rest /= goh;
    if (!g64.channels_last) {
      c = rest % gc;
      rest /= gc;
    }
    const I n = rest;
    const T* base = x + n * sn + c * sc;
    C out;
    if constexpr (K == Kind::max) {
      I h0 = oh * st_h - ph, w0 = ow * st_w - pw;
      const I h1 = min(h0 + (kh - 1) * dh + 1, gh), w1 = min(w0 + (kw - 1) * dw + 1, gw);
      while (h0 < 0) h0 += dh;
      while (w0 < 0) w0 += dw;
      C m = lowest<C>();
      I at = h0 * gw + w0;
      for (I r = h0; r < h1; r += dh)
        for (I s = w0; s < w1; s += dw) {
          const C v = load_as_compute(base[r * sh + s * sw]);
          if (v > m || v != v) m = v, at = r * gw + s;
        }
      out = m;
      if (yi.p) yi.p[int64_t(n) * yi.on + int64_t(c) * yi.oc + int64_t(oh) * yi.osh + int64_t(ow) * yi.osw] = at;
    } else {
      I h0, h1, w0, w1;
      double div;
      if constexpr (K == Kind::avg) {
        h0 = oh * st_h - ph;
        w0 = ow * st_w - pw;
        h1 = min(h0 + kh, gh + ph);
        w1 = min(w0 + kw, gw + pw);
        const int64_t pool_size = int64_t(h1 - h0) * (w1 - w0);
        h0 = max(h0, I(0));
        w0 = max(w0, I(0));
        h1 = min(h1, gh);
        w1 = min(w1, gw);
        div = p64.has_override  ? double(p64.override_div)
              : p64.include_pad ? double(pool_size)
                                : double(int64_t(h1 - h0) * (w1 - w0));
      } else {
        h0 = oh * gh / goh;
        h1 = ((oh + 1) * gh + goh - 1) / goh;
        w0 = ow * gw / gow;
        w1 = ((ow + 1) * gw + gow - 1) / gow;
        div = double(int64_t(h1 - h0) * (w1 - w0));
      }
      C acc = 0;
      for (I r = h0; r < h1; ++r)
        for (I s = w0; s < w1; ++s) acc += load_as_compute(base[r * sh + s * sw]);
      out = (h0 >= h1 || w0 >= w1 || div == 0) ? C(0) : acc / C(div);
    }
    y[n * on + c * oc + oh * osh + ow * osw] = cast_value<T>(out);
  }
}

// Whether every index pool_kernel forms fits in 32 bits: the flat output index, offsets into
// x and y, the window's corners and h * w (the indices' values), with room to spare.
bool fits_32(const Geometry& g, const Params& p) {
  constexpr int64_t kMax = int64_t(1) << 30, kParam = int64_t(1) << 20;
  for (int64_t v : {p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw})
    if (v < 0 || v >= kParam) return false;
  auto span = [](int64_t size, int64_t stride) { return size > 0 ? (size - 1) * (stride < 0 ? -stride : stride) : 0; };
  const int64_t x_span = span(g.n, g.sn) + span(g.c, g.sc) + span(g.h, g.sh) + span(g.w, g.sw);
  const int64_t y_span = span(g.n, g.on) + span(g.c, g.oc) + span(g.oh, g.osh) + span(g.ow, g.osw);
  const int64_t reach_h = (p.kh + 1) * (p.dh + 1) + p.ph + p.sh, reach_w = (p.kw + 1) * (p.dw + 1) + p.pw + p.sw;
  return g.n * g.c * g.oh * g.ow < kMax && x_span < kMax && y_span < kMax && g.h * g.w < kMax &&
         (g.oh + 1) * (g.h + reach_h) < kMax && (g.ow + 1) * (g.w + reach_w) < kMax;
}

void ints2(const amber_kernel_args* a, int i, int64_t fallback0, int64_t fallback1, int64_t& v0, int64_t& v1) {
  const amber_attr& at = a->attrs[i];
  if (at.count == 0) {
    v0 = fallback0;
    v1 = fallback1;
  } else {
    v0 = at.ints[0];
    v1 = at.count > 1 ? at.ints[1] : at.ints[0];
  }
}

template <typename T, Kind K>
int run_pool(const amber_kernel_args* a, const Params& p, const char* what) {
  const Geometry g = geometry(a->inputs[0], a->outputs[0]);
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total == 0) return 0;
  Indices yi{};
  if (a->n_outputs > 1) {  // the indices, laid out as the values (their own strides)
    const Geometry gi = geometry(a->inputs[0], a->outputs[1]);
    yi = Indices{static_cast<int64_t*>(a->outputs[1].data), gi.on, gi.oc, gi.osh, gi.osw};
  }
  DeviceScope scope(a->device);
  const auto* x = static_cast<const T*>(a->inputs[0].data);
  auto* y = static_cast<T*>(a->outputs[0].data);
  if (fits_32(g, p))
    pool_kernel<T, K, int32_t><<<grid_for(total), 256, 0, stream_of(a)>>>(x, y, g, p, yi);
  else
    pool_kernel<T, K, int64_t><<<grid_for(total), 256, 0, stream_of(a)>>>(x, y, g, p, yi);
  return launched(a, what);
}

template <typename T>
struct MaxPoolKernel {  // max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode)
  static int run(const amber_kernel_args* a) {
    Params p{};
    namespace at = op_attrs::max_pool2d;
    ints2(a, at::kernel_size, 1, 1, p.kh, p.kw);
    ints2(a, at::stride, p.kh, p.kw, p.sh, p.sw);
    ints2(a, at::padding, 0, 0, p.ph, p.pw);
    ints2(a, at::dilation, 1, 1, p.dh, p.dw);
    return run_pool<T, Kind::max>(a, p, "max_pool2d");
  }
};
template <typename T>
struct MaxPoolWithIndicesKernel {  // max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
  static int run(const amber_kernel_args* a) {
    Params p{};
    namespace at = op_attrs::max_pool2d_with_indices;
    ints2(a, at::kernel_size, 1, 1, p.kh, p.kw);
    ints2(a, at::stride, p.kh, p.kw, p.sh, p.sw);
    ints2(a, at::padding, 0, 0, p.ph, p.pw);
    ints2(a, at::dilation, 1, 1, p.dh, p.dw);
    return run_pool<T, Kind::max>(a, p, "max_pool2d_with_indices");
  }
};
template <typename T>
struct AvgPoolKernel {  // avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        // divisor_override)
  static int run(const amber_kernel_args* a) {
    Params p{};
    namespace at = op_attrs::avg_pool2d;
    ints2(a, at::kernel_size, 1, 1, p.kh, p.kw);
    ints2(a, at::stride, p.kh, p.kw, p.sh, p.sw);
    ints2(a, at::padding, 0, 0, p.ph, p.pw);
    p.include_pad = a->attrs[at::count_include_pad].i != 0;
    p.has_override = a->attrs[at::divisor_override].kind != AMBER_ATTR_NONE;
    p.override_div = p.has_override ? a->attrs[at::divisor_override].i : 0;
    return run_pool<T, Kind::avg>(a, p, "avg_pool2d");
  }
};
// max_unpool2d(self, indices, output_size): the output zeroed, then one thread per element of
// self writes it at its index in its plane (an index outside the plane is skipped; of repeated
// indices some write wins, as in PyTorch's CUDA kernel).
template <typename T>
__global__ void unpool_zero_kernel(T* y, Geometry g) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, c = i / (g.ow * g.oh) % g.c, n = i / (g.ow * g.oh * g.c);
    y[n * g.on + c * g.oc + oh * g.osh + ow * g.osw] = cast_value<T>(0.0f);
  }
}
template <typename T>
__global__ void unpool_kernel(const T* x, const int64_t* idx, T* y, Geometry g, Geometry gi) {
  const int64_t total = g.n * g.c * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.w, h = i / g.w % g.h, c = i / (g.w * g.h) % g.c, n = i / (g.w * g.h * g.c);
    const int64_t at = idx[n * gi.sn + c * gi.sc + h * gi.sh + w * gi.sw];
    if (at < 0 || at >= g.oh * g.ow) continue;
    y[n * g.on + c * g.oc + at / g.ow * g.osh + at % g.ow * g.osw] = x[n * g.sn + c * g.sc + h * g.sh + w * g.sw];
  }
}
template <typename T>
struct MaxUnpoolKernel {
  static int run(const amber_kernel_args* a) {
    const Geometry g = geometry(a->inputs[0], a->outputs[0]), gi = geometry(a->inputs[1], a->outputs[0]);
    const int64_t total = g.n * g.c * g.oh * g.ow;
    if (total == 0) return 0;
    DeviceScope scope(a->device);
    T* y = static_cast<T*>(a->outputs[0].data);
    unpool_zero_kernel<T><<<grid_for(total), 256, 0, stream_of(a)>>>(y, g);
    if (g.n * g.c * g.h * g.w > 0)
      unpool_kernel<T><<<grid_for(g.n * g.c * g.h * g.w), 256, 0, stream_of(a)>>>(
          static_cast<const T*>(a->inputs[0].data), static_cast<const int64_t*>(a->inputs[1].data), y, g, gi);
    return launched(a, "max_unpool2d");
  }
};

template <typename T>
struct AdaptiveAvgPoolKernel {  // adaptive_avg_pool2d(self, output_size)
  static int run(const amber_kernel_args* a) { return run_pool<T, Kind::adaptive>(a, Params{}, "adaptive_avg_pool2d"); }
};

template <template <typename> class K>
void register_floats(const char* op) {  // f16 and bf16: a model in 16 bits
  register_kernel(op, kF32, &K<float>::run);
  register_kernel(op, kF64, &K<double>::run);
  register_kernel(op, kF16, &K<__half>::run);
  register_kernel(op, kBF16, &K<__nv_bfloat16>::run);
}

AMBER_CUDA_KERNELS(pool) {
  register_floats<MaxPoolKernel>("max_pool2d");
  register_kernel("max_pool2d", kU8, &MaxPoolKernel<uint8_t>::run);
  register_floats<MaxPoolWithIndicesKernel>("max_pool2d_with_indices");
  register_floats<MaxUnpoolKernel>("max_unpool2d");
  register_floats<AvgPoolKernel>("avg_pool2d");
  register_floats<AdaptiveAvgPoolKernel>("adaptive_avg_pool2d");
}

}  // namespace
}  // namespace amber::cuda
