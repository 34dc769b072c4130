// The device code of the pooling kernels (pool.cu): the window rules of max_pool2d (and its
// indices), avg_pool2d and adaptive_avg_pool2d in one kernel, max_unpool2d's two, and the
// host-side geometry they take, in a header of its own so that tests/test_pool_emulated.cpp runs
// the same code on the CPU (tests/cuda_emulation.h) against the CPU's pooling; pool.cu launches
// them. Private to libamber_cuda.so.
#pragma once

#include <cmath>

#include "amber/kernels/cuda/cuda_util.cuh"

namespace amber::cuda::pool {

struct Geometry {  // N, C, H, W of input and output, element strides
  int64_t n, c, h, w, oh, ow;
  int64_t sn, sc, sh, sw, on, oc, osh, osw;
  bool channels_last;  // the output's channels are adjacent: threads walk c fastest (coalesced)
};
inline Geometry geometry(const amber_tensor_view& x, const amber_tensor_view& y) {
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
// The indices output of x's pooling, laid out as the values (its own strides).
inline Indices indices_of(const amber_tensor_view& x, const amber_tensor_view& indices) {
  const Geometry gi = geometry(x, indices);
  return Indices{static_cast<int64_t*>(indices.data), gi.on, gi.oc, gi.osh, gi.osw};
}

// (::min and ::max, CUDA's device functions: an includer's own min and max, Amber's eager ops
// in the emulated test, must not hide them.)
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
      const I h1 = ::min(h0 + (kh - 1) * dh + 1, gh), w1 = ::min(w0 + (kw - 1) * dw + 1, gw);
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
        h1 = ::min(h0 + kh, gh + ph);
        w1 = ::min(w0 + kw, gw + pw);
        const int64_t pool_size = int64_t(h1 - h0) * (w1 - w0);
        h0 = ::max(h0, I(0));
        w0 = ::max(w0, I(0));
        h1 = ::min(h1, gh);
        w1 = ::min(w1, gw);
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
inline bool fits_32(const Geometry& g, const Params& p) {
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

}  // namespace amber::cuda::pool
