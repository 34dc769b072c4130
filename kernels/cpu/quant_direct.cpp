// quantized_conv2d, quantized_linear and their .u8 overloads where oneDNN's int8 products could
// saturate (no VNNI: they sum pairs of uint8 x int8 products in 16 bits, and two levels of 255
// against weights near 127 overflow): the exact int32 sums, the source's levels (less the zero
// point) and the weights widened to int16 so the dot products vectorise (pmaddwd), compiled for
// AVX2 and portably; quant_direct.h's level and epilogue, as the CUDA kernels'.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/quantize.h"
#include "amber/kernels/quant_direct.h"

namespace amber::cpu {
namespace {

// sum a[i] * b[i], exact in int32 (|a| <= 255, |b| <= 127, at most AMBER_MAX_INT8_REDUCTION terms).
inline int32_t dot(const int16_t* a, const int16_t* b, int64_t n) {
  int32_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

// Fn(c, begin, end) compiled for AVX2 and portably (kernel_util.h's targets, Fn inlined into each):
// the variant for this processor.
template <auto Fn, typename C>
AMBER_TARGET_AVX2 void on_avx2(const C& c, int64_t begin, int64_t end) {
  Fn(c, begin, end);
}
template <auto Fn, typename C>
AMBER_TARGET_BASE void on_base(const C& c, int64_t begin, int64_t end) {
  Fn(c, begin, end);
}
template <auto Fn, typename C>
auto for_this_cpu() {
  return cpu_isa() == Isa::base ? &on_base<Fn, C> : &on_avx2<Fn, C>;
}

// A convolution's operands widened: levels x[n][h][w][c] - zero point, weights w[o][r][s][c].
struct Conv {
  quant::ConvGeometry g;
  quant::Quant q;
  std::vector<int16_t> x, w;
  std::vector<char> nan;  // an f32 output from an f32 source: image n holds a NaN
  const float *scales, *bias;
  void* y;
};

// Output pixels [begin, end) over [n, oh, ow], every channel of each: per pixel and group, its
// patch of levels gathered into one run (zero where it lies in the padding: level zero_point), so
// that each output channel's sum is one dot product of kh * kw * (C / groups) terms.
template <typename TY>
inline void conv_pixels(const Conv& c, int64_t begin, int64_t end) {
  const quant::ConvGeometry& g = c.g;
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, k = g.kh * g.kw * icg;
  std::vector<int16_t> patch(static_cast<size_t>(k));
  for (int64_t p = begin; p < end; ++p) {
    const int64_t ow = p % g.ow, oh = p / g.ow % g.oh, n = p / (g.ow * g.oh);
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      int16_t* at = patch.data();
      for (int64_t r = 0; r < g.kh; ++r) {
        const int64_t ih = oh * g.stride[0] - g.pad[0] + r * g.dil[0];
        for (int64_t s = 0; s < g.kw; ++s, at += icg) {
          const int64_t iw = ow * g.stride[1] - g.pad[1] + s * g.dil[1];
          if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
            std::fill(at, at + icg, int16_t(0));
          else
            std::copy_n(&c.x[size_t(((n * g.h + ih) * g.w + iw) * g.c + gi * icg)], icg, at);
        }
      }
      for (int64_t o = gi * ocg; o < (gi + 1) * ocg; ++o)
        quant::write_out(static_cast<TY*>(c.y) + n * g.ys[0] + o * g.ys[1] + oh * g.ys[2] + ow * g.ys[3],
                         dot(patch.data(), &c.w[size_t(o * k)], k), c.q, c.scales[o * g.wss],
                         c.bias ? c.bias[o * g.bs] : 0.0f, !c.nan.empty() && c.nan[size_t(n)]);
    }
  }
}

// The source's levels less the zero point, NHWC (f32: quantized as read; NaN images flagged).
template <typename TX>
void conv_levels(const amber_tensor_view& xv, Conv& c, bool flag_nan) {
  const quant::ConvGeometry& g = c.g;
  const auto* x = static_cast<const TX*>(xv.data);
  c.x.resize(size_t(g.n * g.h * g.w * g.c));
  std::vector<char> nan_rows(size_t(g.n * g.h), 0);  // each (image, row) its own flag: no shared writes
  parallel_for(g.n * g.h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nh = begin; nh < end; ++nh) {
      const int64_t n = nh / g.h, h = nh % g.h;
      int16_t* out = &c.x[size_t(nh * g.w * g.c)];
      for (int64_t i = 0; i < g.w; ++i)
        for (int64_t ch = 0; ch < g.c; ++ch) {
          const TX v = x[n * g.xs[0] + ch * g.xs[1] + h * g.xs[2] + i * g.xs[3]];
          if constexpr (!std::is_same_v<TX, uint8_t>)
            if (std::isnan(v)) nan_rows[size_t(nh)] = 1;
          out[i * g.c + ch] = int16_t(quant::level(v, c.q) - c.q.zx);
        }
    }
  });
  if (!flag_nan) return;
  c.nan.assign(size_t(g.n), 0);
  for (int64_t nh = 0; nh < g.n * g.h; ++nh) c.nan[size_t(nh / g.h)] |= nan_rows[size_t(nh)];
}

// A linear layer's operands widened: rows x[r][k] - zero point (NaN rows flagged), weights w[o][k].
struct Linear {
  quant::LinearGeometry l;
  quant::Quant q;
  std::vector<int16_t> x, w;
  std::vector<char> nan;
  const float *scales, *bias;
  void* y;
};

template <typename TY>
inline void linear_rows_out(const Linear& c, int64_t begin, int64_t end) {
  const quant::LinearGeometry& l = c.l;
  for (int64_t r = begin; r < end; ++r)
    for (int64_t o = 0; o < l.out_f; ++o)
      quant::write_out(static_cast<TY*>(c.y) + r * l.out_f + o,
                       dot(&c.x[size_t(r * l.in_f)], &c.w[size_t(o * l.in_f)], l.in_f), c.q, c.scales[o * l.wss],
                       c.bias ? c.bias[o * l.bs] : 0.0f, !c.nan.empty() && c.nan[size_t(r)]);
}

template <typename TX>
void linear_levels(const amber_tensor_view& xv, Linear& c, const quant::Rows& rows, int64_t n_rows) {
  const auto* x = static_cast<const TX*>(xv.data);
  const int64_t in_f = c.l.in_f;
  c.x.resize(size_t(n_rows * in_f));
  if constexpr (!std::is_same_v<TX, uint8_t>) c.nan.assign(size_t(n_rows), 0);
  parallel_for(n_rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const TX* xr = x + rows.offset(r);
      for (int64_t k = 0; k < in_f; ++k) {
        const TX v = xr[k * rows.cs];
        if constexpr (!std::is_same_v<TX, uint8_t>)
          if (std::isnan(v)) c.nan[size_t(r)] = 1;
        c.x[size_t(r * in_f + k)] = int16_t(quant::level(v, c.q) - c.q.zx);
      }
    }
  });
}

}  // namespace

template <bool U8Out>
int quantized_conv_direct(const amber_kernel_args* a) {
  using TY = std::conditional_t<U8Out, uint8_t, float>;
  Conv c;
  c.g = quant::conv_geometry(a);
  const quant::ConvGeometry& g = c.g;
  const int64_t pixels = g.n * g.oh * g.ow;
  if (pixels * g.oc == 0) return 0;
  c.q = quant::conv_quant<U8Out>(a);
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[3];
  c.scales = static_cast<const float*>(a->inputs[2].data);
  c.bias = present(b) ? static_cast<const float*>(b.data) : nullptr;
  c.y = a->outputs[0].data;
  ThreadLimit limit(std::max(1, a->num_threads));
  if (x.dtype == int32_t(DType::u8))
    conv_levels<uint8_t>(x, c, false);
  else
    conv_levels<float>(x, c, !U8Out);
  const int64_t icg = g.c / g.groups;
  c.w.resize(size_t(g.oc * g.kh * g.kw * icg));
  const auto* wp = static_cast<const int8_t*>(w.data);
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t r = 0; r < g.kh; ++r)
      for (int64_t s = 0; s < g.kw; ++s)
        for (int64_t ch = 0; ch < icg; ++ch)
          c.w[size_t(((o * g.kh + r) * g.kw + s) * icg + ch)] =
              wp[o * g.ws[0] + ch * g.ws[1] + r * g.ws[2] + s * g.ws[3]];
  const auto run = for_this_cpu<conv_pixels<TY>, Conv>();
  parallel_for(pixels, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.oc * g.kh * g.kw * icg / 64)),
               [&](int64_t begin, int64_t end) { run(c, begin, end); });
  return 0;
}

template <bool U8Out>
int quantized_linear_direct(const amber_kernel_args* a) {
  using TY = std::conditional_t<U8Out, uint8_t, float>;
  Linear c;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &b = a->inputs[3];
  int64_t n_rows = 0;
  const quant::Rows rows = quant::linear_rows(x, n_rows);
  c.l = quant::linear_geometry(w, a->inputs[2], b);
  if (n_rows * c.l.out_f == 0) return 0;
  c.q = quant::linear_quant<U8Out>(a);
  c.scales = static_cast<const float*>(a->inputs[2].data);
  c.bias = present(b) ? static_cast<const float*>(b.data) : nullptr;
  c.y = a->outputs[0].data;
  ThreadLimit limit(std::max(1, a->num_threads));
  if (x.dtype == int32_t(DType::u8))
    linear_levels<uint8_t>(x, c, rows, n_rows);
  else
    linear_levels<float>(x, c, rows, n_rows);
  c.w.resize(size_t(c.l.out_f * c.l.in_f));
  const auto* wp = static_cast<const int8_t*>(w.data);
  for (int64_t o = 0; o < c.l.out_f; ++o)
    for (int64_t k = 0; k < c.l.in_f; ++k) c.w[size_t(o * c.l.in_f + k)] = wp[o * c.l.ws0 + k * c.l.ws1];
  const auto run = for_this_cpu<linear_rows_out<TY>, Linear>();
  parallel_for(n_rows, 1, [&](int64_t begin, int64_t end) { run(c, begin, end); });
  return 0;
}

template int quantized_conv_direct<false>(const amber_kernel_args*);
template int quantized_conv_direct<true>(const amber_kernel_args*);
template int quantized_linear_direct<false>(const amber_kernel_args*);
template int quantized_linear_direct<true>(const amber_kernel_args*);

}  // namespace amber::cpu
