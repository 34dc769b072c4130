// quantized_conv2d, quantized_linear and their .u8 overloads where oneDNN's int8 products could
// saturate (no VNNI: pairs of uint8 x int8 products summed in 16 bits): the exact int32 sums, the
// source's levels (less the zero point, in the step's workspace) and the weights (at setup) widened
// to int16 so the dot products vectorise (pmaddwd), four pixels or rows against two weight rows at
// a time, for AVX2 and portably; quant_direct.h's epilogue.
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

// sums[p][o] = sum_i a[p][i] * b[o][i] for kRows rows a (kRows * n, one after another) and O rows b
// (O * n): each b element loaded once for kRows rows, each a element once for O rows. Exact in
// int32 (|a| <= 255, |b| <= 127, at most AMBER_MAX_INT8_REDUCTION terms).
constexpr int64_t kRows = 4;
template <int O>
inline void dots(const int16_t* a, const int16_t* b, int64_t n, int32_t (*sums)[2]) {
  int32_t s[kRows][O] = {};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < kRows; ++p)
      for (int o = 0; o < O; ++o) s[p][o] += int32_t(a[p * n + i]) * int32_t(b[o * n + i]);
  for (int64_t p = 0; p < kRows; ++p)
    for (int o = 0; o < O; ++o) sums[p][o] = s[p][o];
}

// Fn(c, args...) compiled for AVX2 and portably (kernel_util.h's targets, Fn inlined into each):
// the variant for this processor.
template <auto Fn, typename C, typename... A>
AMBER_TARGET_AVX2 void on_avx2(const C& c, A... args) {
  Fn(c, args...);
}
template <auto Fn, typename C, typename... A>
AMBER_TARGET_BASE void on_base(const C& c, A... args) {
  Fn(c, args...);
}
template <auto Fn, typename C, typename... A>
auto for_this_cpu() {
  return cpu_isa() == Isa::base ? &on_base<Fn, C, A...> : &on_avx2<Fn, C, A...>;
}

constexpr size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

// A convolution's scratch, one block: the levels (int16 [n][h][w][c]), a NaN flag per image row
// and per image, and each of `threads` slots' kRows patches (int16, kh * kw * C / groups each).
struct ConvLayout {
  size_t flags, patches, slot, bytes;
  ConvLayout(const quant::ConvGeometry& g, int threads) {
    flags = aligned(size_t(g.n * g.h * g.w * g.c) * sizeof(int16_t));
    patches = flags + aligned(size_t(g.n * g.h + g.n));
    slot = aligned(size_t(kRows * g.kh * g.kw * (g.c / g.groups)) * sizeof(int16_t));
    bytes = patches + size_t(threads) * slot;
  }
};

// A convolution's operands widened: levels x[n][h][w][c] - zero point, weights w[o][r][s][c].
struct Conv {
  quant::ConvGeometry g;
  quant::Quant q;
  int16_t* x;
  const int16_t* w;  // quantized_conv_direct_weights' (own_w, or the setup's)
  std::vector<int16_t> own_w;
  const char* nan = nullptr;  // an f32 source: image n holds a NaN (else null)
  char* patches;              // slot s's at patches + s * slot
  size_t slot;
  const float *scales, *bias;
  void* y;
};

// Output pixels [begin, end) over [n, oh, ow], every channel of each, kRows pixels at a time:
// per pixel and group, its patch of levels gathered into one run (zero where it lies in the
// padding: level zero_point), so that each output channel's sum is one dot product of
// kh * kw * (C / groups) terms, and each weight row is read once for kRows pixels (a tile's
// missing pixels are zero patches, their sums unused).
template <typename TY>
inline void conv_pixels(const Conv& c, int slot, int64_t begin, int64_t end) {
  const quant::ConvGeometry& g = c.g;
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, k = g.kh * g.kw * icg;
  int16_t* patches = reinterpret_cast<int16_t*>(c.patches + size_t(slot) * c.slot);
  int32_t sums[kRows][2];
  for (int64_t p0 = begin; p0 < end; p0 += kRows) {
    const int64_t rows = std::min(kRows, end - p0);
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      for (int64_t i = 0; i < kRows; ++i) {
        int16_t* at = patches + i * k;
        if (i >= rows) {
          std::fill(at, at + k, int16_t(0));
          continue;
        }
        const int64_t p = p0 + i, ow = p % g.ow, oh = p / g.ow % g.oh, n = p / (g.ow * g.oh);
        for (int64_t r = 0; r < g.kh; ++r) {
          const int64_t ih = oh * g.stride[0] - g.pad[0] + r * g.dil[0];
          for (int64_t s = 0; s < g.kw; ++s, at += icg) {
            const int64_t iw = ow * g.stride[1] - g.pad[1] + s * g.dil[1];
            if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
              std::fill(at, at + icg, int16_t(0));
            else
              std::copy_n(c.x + ((n * g.h + ih) * g.w + iw) * g.c + gi * icg, icg, at);
          }
        }
      }
      for (int64_t o = gi * ocg; o < (gi + 1) * ocg;) {
        const int pair = o + 1 < (gi + 1) * ocg ? 2 : 1;
        if (pair == 2)
          dots<2>(patches, c.w + o * k, k, sums);
        else
          dots<1>(patches, c.w + o * k, k, sums);
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t p = p0 + i, ow = p % g.ow, oh = p / g.ow % g.oh, n = p / (g.ow * g.oh);
          for (int j = 0; j < pair; ++j)
            quant::write_out(static_cast<TY*>(c.y) + n * g.ys[0] + (o + j) * g.ys[1] + oh * g.ys[2] + ow * g.ys[3],
                             sums[i][j], c.q, c.scales[(o + j) * g.wss], c.bias ? c.bias[(o + j) * g.bs] : 0.0f,
                             c.nan && c.nan[n]);
        }
        o += pair;
      }
    }
  }
}

// The source's levels less the zero point, NHWC. An f32 source is quantized as read and its NaN
// images flagged in `flags` (c.nan), after one flag per image row: each its own, no shared writes.
template <typename TX>
void conv_levels(const amber_tensor_view& xv, Conv& c, char* flags) {
  const quant::ConvGeometry& g = c.g;
  const auto* x = static_cast<const TX*>(xv.data);
  char* nan_rows = flags + g.n;
  std::fill(nan_rows, nan_rows + g.n * g.h, char(0));
  parallel_for(g.n * g.h, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nh = begin; nh < end; ++nh) {
      const int64_t n = nh / g.h, h = nh % g.h;
      int16_t* out = c.x + nh * g.w * g.c;
      for (int64_t i = 0; i < g.w; ++i)
        for (int64_t ch = 0; ch < g.c; ++ch) {
          const TX v = x[n * g.xs[0] + ch * g.xs[1] + h * g.xs[2] + i * g.xs[3]];
          if constexpr (!std::is_same_v<TX, uint8_t>)
            if (std::isnan(v)) nan_rows[nh] = 1;
          out[i * g.c + ch] = int16_t(quant::level(v, c.q) - c.q.zx);
        }
    }
  });
  if constexpr (std::is_same_v<TX, uint8_t>) return;
  std::fill(flags, flags + g.n, char(0));
  for (int64_t nh = 0; nh < g.n * g.h; ++nh) flags[nh / g.h] |= nan_rows[nh];
  c.nan = flags;
}

// A linear layer's scratch, one block: the levels (int16 [rows rounded up to kRows][in]) and a NaN
// flag per row.
struct LinearLayout {
  size_t flags, bytes;
  LinearLayout(int64_t n_rows, int64_t in_f) {
    flags = aligned(size_t((n_rows + kRows - 1) / kRows * kRows * in_f) * sizeof(int16_t));
    bytes = flags + aligned(size_t(n_rows));
  }
};

// A linear layer's operands widened: rows x[r][k] - zero point (NaN rows flagged), weights w[o][k].
struct Linear {
  quant::LinearGeometry l;
  quant::Quant q;
  int16_t* x;
  const int16_t* w;  // quantized_linear_direct_weights' (own_w, or the setup's)
  std::vector<int16_t> own_w;
  char* nan = nullptr;  // an f32 source: row r holds a NaN (else null)
  const float *scales, *bias;
  void* y;
};

// Rows [begin, end), kRows at a time (c.x holds zero rows past the last, up to a multiple of kRows:
// their sums unused), each weight row read once for kRows rows.
template <typename TY>
inline void linear_rows_out(const Linear& c, int64_t begin, int64_t end) {
  const quant::LinearGeometry& l = c.l;
  int32_t sums[kRows][2];
  for (int64_t r0 = begin; r0 < end; r0 += kRows) {
    const int64_t rows = std::min(kRows, end - r0);
    for (int64_t o = 0; o < l.out_f;) {
      const int pair = o + 1 < l.out_f ? 2 : 1;
      if (pair == 2)
        dots<2>(c.x + r0 * l.in_f, c.w + o * l.in_f, l.in_f, sums);
      else
        dots<1>(c.x + r0 * l.in_f, c.w + o * l.in_f, l.in_f, sums);
      for (int64_t i = 0; i < rows; ++i)
        for (int j = 0; j < pair; ++j)
          quant::write_out(static_cast<TY*>(c.y) + (r0 + i) * l.out_f + o + j, sums[i][j], c.q,
                           c.scales[(o + j) * l.wss], c.bias ? c.bias[(o + j) * l.bs] : 0.0f, c.nan && c.nan[r0 + i]);
      o += pair;
    }
  }
}

// The rows' levels less the zero point, zero rows after them up to a multiple of kRows. An f32
// source is quantized as read and its NaN rows flagged in `flags` (c.nan).
template <typename TX>
void linear_levels(const amber_tensor_view& xv, Linear& c, const quant::Rows& rows, int64_t n_rows, char* flags) {
  const auto* x = static_cast<const TX*>(xv.data);
  if constexpr (!std::is_same_v<TX, uint8_t>) c.nan = flags;
  const int64_t in_f = c.l.in_f;
  std::fill(c.x + n_rows * in_f, c.x + (n_rows + kRows - 1) / kRows * kRows * in_f, int16_t(0));
  if constexpr (!std::is_same_v<TX, uint8_t>) std::fill(c.nan, c.nan + n_rows, char(0));
  parallel_for(n_rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const TX* xr = x + rows.offset(r);
      for (int64_t k = 0; k < in_f; ++k) {
        const TX v = xr[k * rows.cs];
        if constexpr (!std::is_same_v<TX, uint8_t>)
          if (std::isnan(v)) c.nan[r] = 1;
        c.x[r * in_f + k] = int16_t(quant::level(v, c.q) - c.q.zx);
      }
    }
  });
}

}  // namespace

std::vector<int16_t> quantized_conv_direct_weights(const amber_tensor_view& w) {
  const int64_t oc = w.sizes[0], icg = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
  std::vector<int16_t> out(size_t(oc * kh * kw * icg));
  const auto* wp = static_cast<const int8_t*>(w.data);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t r = 0; r < kh; ++r)
      for (int64_t s = 0; s < kw; ++s)
        for (int64_t ch = 0; ch < icg; ++ch)
          out[size_t(((o * kh + r) * kw + s) * icg + ch)] =
              wp[o * w.strides[0] + ch * w.strides[1] + r * w.strides[2] + s * w.strides[3]];
  return out;
}

std::vector<int16_t> quantized_linear_direct_weights(const amber_tensor_view& w) {
  const int64_t out_f = w.sizes[0], in_f = w.sizes[1];
  std::vector<int16_t> out(size_t(out_f * in_f));
  const auto* wp = static_cast<const int8_t*>(w.data);
  for (int64_t o = 0; o < out_f; ++o)
    for (int64_t k = 0; k < in_f; ++k) out[size_t(o * in_f + k)] = wp[o * w.strides[0] + k * w.strides[1]];
  return out;
}

template <bool U8Out>
int quantized_conv_direct(const amber_kernel_args* a, const int16_t* weights) {
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
  const int threads = std::max(1, a->num_threads);
  ThreadLimit limit(threads);
  const ConvLayout layout(g, threads);
  CallScratch scratch(a);
  char* block = scratch.take(layout.bytes);
  c.x = reinterpret_cast<int16_t*>(block);
  c.patches = block + layout.patches;
  c.slot = layout.slot;
  if (x.dtype == int32_t(DType::u8))
    conv_levels<uint8_t>(x, c, block + layout.flags);
  else
    conv_levels<float>(x, c, block + layout.flags);
  const int64_t icg = g.c / g.groups;
  c.w = weights ? weights : (c.own_w = quantized_conv_direct_weights(w)).data();
  const auto run = for_this_cpu<conv_pixels<TY>, Conv, int, int64_t, int64_t>();
  const int64_t tiles = (pixels + kRows - 1) / kRows, per_tile = kRows * g.oc * g.kh * g.kw * icg;
  parallel_for_slots(
      tiles, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, per_tile / 64)),
      [&](int slot, int64_t begin, int64_t end) { run(c, slot, begin * kRows, std::min(pixels, end * kRows)); });
  return 0;
}

size_t quantized_conv_direct_workspace(const amber_kernel_args* a) {
  return ConvLayout(quant::conv_geometry(a), std::max(1, a->num_threads)).bytes;
}

template <bool U8Out>
int quantized_linear_direct(const amber_kernel_args* a, const int16_t* weights) {
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
  const LinearLayout layout(n_rows, c.l.in_f);
  CallScratch scratch(a);
  char* block = scratch.take(layout.bytes);
  c.x = reinterpret_cast<int16_t*>(block);
  if (x.dtype == int32_t(DType::u8))
    linear_levels<uint8_t>(x, c, rows, n_rows, block + layout.flags);
  else
    linear_levels<float>(x, c, rows, n_rows, block + layout.flags);
  c.w = weights ? weights : (c.own_w = quantized_linear_direct_weights(w)).data();
  const auto run = for_this_cpu<linear_rows_out<TY>, Linear, int64_t, int64_t>();
  // whole tiles to each thread: a tile's rows past the last are c.x's zero rows
  parallel_for((n_rows + kRows - 1) / kRows, 1,
               [&](int64_t begin, int64_t end) { run(c, begin * kRows, std::min(n_rows, end * kRows)); });
  return 0;
}

size_t quantized_linear_direct_workspace(const amber_kernel_args* a) {
  int64_t n_rows = 0;
  (void)quant::linear_rows(a->inputs[0], n_rows);
  return LinearLayout(n_rows, a->inputs[1].sizes[1]).bytes;
}

template int quantized_conv_direct<false>(const amber_kernel_args*, const int16_t*);
template int quantized_conv_direct<true>(const amber_kernel_args*, const int16_t*);
template int quantized_linear_direct<false>(const amber_kernel_args*, const int16_t*);
template int quantized_linear_direct<true>(const amber_kernel_args*, const int16_t*);

}  // namespace amber::cpu
