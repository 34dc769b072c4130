// CPU kernels for 2-D pooling: max_pool2d (NaN propagates, dilation, ceil_mode; with or without
// the maxima's indices; also of u8, the int8 layers' activations), its inverse max_unpool2d,
// avg_pool2d (ATen's divisor rules) and adaptive_avg_pool2d. Window bounds follow ATen exactly.
// Channels-last inputs run with the channel loop innermost (vectorised); max_pool2d, with indices
// or not, pools NCHW planes in whole rows; the rest one window at a time. Any strides accepted.

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "amber/core/hot.h"
#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// N, C, H, W sizes and strides of a 3-D or 4-D view (3-D: N = 1).
struct Nchw {
  int64_t n, c, h, w, sn, sc, sh, sw;
  explicit Nchw(const amber_tensor_view& v) {
    if (v.ndim == 4) {
      n = v.sizes[0], c = v.sizes[1], h = v.sizes[2], w = v.sizes[3];
      sn = v.strides[0], sc = v.strides[1], sh = v.strides[2], sw = v.strides[3];
    } else {
      n = 1, c = v.sizes[0], h = v.sizes[1], w = v.sizes[2];
      sn = 0, sc = v.strides[0], sh = v.strides[1], sw = v.strides[2];
    }
  }
};

// One output position's window: rows [h0, h1) step dh, cols [w0, w1) step dw, divisor.
struct Window {
  int64_t h0, h1, dh, w0, w1, dw;
  double divisor;
};

// Pools every output position with window(oh, ow); Reduce folds channel vectors.
template <typename T, typename Acc, typename Reduce>
void pool(const amber_kernel_args* a, Reduce r, auto window) {
  const Nchw in(a->inputs[0]), out(a->outputs[0]);
  const T* x = static_cast<const T*>(a->inputs[0].data);
  T* y = static_cast<T*>(a->outputs[0].data);
  ThreadLimit limit(std::max(1, a->num_threads));
  if (in.sc == 1 && out.sc == 1) {  // channels-last: vectorise over C
    parallel_for(in.n * out.h * out.w, std::max<int64_t>(1, 2048 / std::max<int64_t>(in.c, 1)),
                 [&](int64_t b, int64_t e) {
                   std::vector<Acc> acc(static_cast<size_t>(in.c));
                   for (int64_t p = b; p < e; ++p) {
                     const int64_t n = p / (out.h * out.w), oh = p / out.w % out.h, ow = p % out.w;
                     const Window win = window(oh, ow);
                     r.init(acc.data(), in.c);
                     for (int64_t ih = win.h0; ih < win.h1; ih += win.dh)
                       for (int64_t iw = win.w0; iw < win.w1; iw += win.dw)
                         r.fold(acc.data(), x + n * in.sn + ih * in.sh + iw * in.sw, in.c);
                     r.finish(y + n * out.sn + oh * out.sh + ow * out.sw, acc.data(), in.c, win.divisor);
                   }
                 });
    return;
  }
  parallel_for(in.n * in.c, 1, [&](int64_t b, int64_t e) {
    Acc acc;
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t n = nc / in.c, c = nc % in.c;
      const T* xp = x + n * in.sn + c * in.sc;
      T* yp = y + n * out.sn + c * out.sc;
      for (int64_t oh = 0; oh < out.h; ++oh)
        for (int64_t ow = 0; ow < out.w; ++ow) {
          const Window win = window(oh, ow);
          r.init(&acc, 1);
          for (int64_t ih = win.h0; ih < win.h1; ih += win.dh)
            for (int64_t iw = win.w0; iw < win.w1; iw += win.dw) r.fold(&acc, xp + ih * in.sh + iw * in.sw, 1);
          r.finish(yp + oh * out.sh + ow * out.sw, &acc, 1, win.divisor);
        }
    }
  });
}

// What no window element is below: -inf, or an integer type's lowest value.
template <typename T>
constexpr T lowest_value() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

template <typename T>
struct MaxReduce {
  static bool nan(T v) {
    if constexpr (std::is_floating_point_v<T>)
      return std::isnan(v);
    else
      return false;
  }
  void init(T* acc, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) acc[i] = lowest_value<T>();
  }
  void fold(T* acc, const T* x, int64_t n) const {  // ATen: (val > max) || isnan(val)
    for (int64_t i = 0; i < n; ++i) acc[i] = (x[i] > acc[i] || nan(x[i])) ? x[i] : acc[i];
  }
  void finish(T* y, const T* acc, int64_t n, double) const {
    for (int64_t i = 0; i < n; ++i) y[i] = acc[i];
  }
};

template <typename T>
struct SumReduce {
  void init(T* acc, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) acc[i] = 0;
  }
  void fold(T* acc, const T* x, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
  }
  void finish(T* y, const T* acc, int64_t n, double divisor) const {
    if (divisor == 0) {  // an empty window
      for (int64_t i = 0; i < n; ++i) y[i] = 0;
      return;
    }
    const T d = T(divisor);
    for (int64_t i = 0; i < n; ++i) y[i] = acc[i] / d;
  }
};

// max_pool2d without dilation on channels-last tensors or NCHW planes, in two passes per output
// row: the maximum over the window's input rows (whole rows of W x C values at once: long
// contiguous loops whatever C is), then over each window's columns. LeNet's first pool
// ([64, 6, 30, 30], C = 6) ran at about 1 ns per input value one window at a time with loops of
// 6. Each output row is one IsaVariants call (the loops vectorised for the machine's widest ISA):
// measured with 1 thread (bench_kernels) on ResNet-18's pool of 64 x 112 x 112, 470 us in f32 and
// 70 us in u8, against 1142 and 1221 us when the loops were compiled for the baseline ISA alone.
// NCHW planes run as one-channel images, the windows inside a row a tap at a time over the
// row: [8, 64, 112, 112] took 52.6 ms at 1 thread one window at a time, 4.7 ms so.
template <typename T>
struct MaxPoolRows {
  const T* x;
  T* y;
  Nchw in, out;
  std::array<int64_t, 2> k, s, p;
};

// ATen's rule: v replaces the running maximum acc when larger or NaN (v != v: false for
// integers), so NaN propagates. As `|`, not `||`: both sides always evaluated, no branch.
template <typename T>
inline bool beats(T v, T acc) {
  return (v > acc) | (v != v);
}
template <typename T>
inline T take_max(T acc, T v) {
  return beats(v, acc) ? v : acc;
}

// Output row n (n = image * out.h + oh) of MaxPoolRows<T> (ctx); p[0] a scratch row of W x C.
template <typename T>
struct MaxPoolRow {
  static void run(char* const* p, const int64_t*, int64_t r, const void* ctx) {
    const MaxPoolRows<T>& m = *static_cast<const MaxPoolRows<T>*>(ctx);
    T* __restrict rows = reinterpret_cast<T*>(p[0]);
    const Nchw &in = m.in, &out = m.out;
    const int64_t c = in.c, span = in.w * c;
    const int64_t n = r / out.h, oh = r % out.h;
    int64_t h0 = oh * m.s[0] - m.p[0];
    const int64_t h1 = std::min(h0 + m.k[0], in.h);
    h0 = std::max<int64_t>(h0, 0);
    if (h0 >= h1) std::fill(rows, rows + span, lowest_value<T>());  // no window row
    for (int64_t ih = h0; ih < h1; ++ih) {
      const T* __restrict xr = m.x + n * in.sn + ih * in.sh;
      if (in.sw == c) {  // dense row
        if (ih == h0)
          std::copy(xr, xr + span, rows);
        else
          for (int64_t i = 0; i < span; ++i) rows[i] = take_max(rows[i], xr[i]);
      } else {
        for (int64_t iw = 0; iw < in.w; ++iw)
          for (int64_t ch = 0; ch < c; ++ch) {
            T& v = rows[iw * c + ch];
            v = ih == h0 ? xr[iw * in.sw + ch] : take_max(v, xr[iw * in.sw + ch]);
          }
      }
    }
    T* yr = m.y + n * out.sn + oh * out.sh;
    if (c == 1 && out.sw == 1) {  // a plane's row (NCHW): the windows inside it a tap at a time
      const int64_t s1 = m.s[1], p1 = m.p[1], k1 = m.k[1], last = in.w + p1 - k1;  // last window's start
      const int64_t lo = std::min(out.w, (p1 + s1 - 1) / s1), hi = std::clamp(last >= 0 ? last / s1 + 1 : 0, lo, out.w);
      if (hi > lo) {
        const T* first = rows + (lo * s1 - p1);  // the first inner window's start (inside the row)
        if (s1 == 1)
          inner_columns<1>(first, yr + lo, hi - lo, 1, k1);
        else if (s1 == 2)
          inner_columns<2>(first, yr + lo, hi - lo, 2, k1);
        else
          inner_columns<0>(first, yr + lo, hi - lo, s1, k1);
      }
      edge_columns(m, rows, yr, 0, lo);
      edge_columns(m, rows, yr, hi, out.w);
      return;
    }
    edge_columns(m, rows, yr, 0, out.w);
  }

  // n outputs of a plane's row whose windows lie inside it: y[i] the maximum of x[i * s + kw]
  // over kw < k in that order, a loop over the row per tap (S: s where known at compile time).
  template <int S>
  static void inner_columns(const T* __restrict x, T* __restrict y, int64_t n, int64_t s, int64_t k) {
    const int64_t step = S ? S : s;
    for (int64_t i = 0; i < n; ++i) y[i] = x[i * step];
    for (int64_t kw = 1; kw < k; ++kw)
      for (int64_t i = 0; i < n; ++i) y[i] = take_max(y[i], x[i * step + kw]);
  }

  // Output columns [b, e) of a row from the window rows' maxima (rows), window by window.
  static void edge_columns(const MaxPoolRows<T>& m, const T* __restrict rows, T* yr, int64_t b, int64_t e) {
    const int64_t c = m.in.c;
    for (int64_t ow = b; ow < e; ++ow) {
      int64_t w0 = ow * m.s[1] - m.p[1];
      const int64_t w1 = std::min(w0 + m.k[1], m.in.w);
      w0 = std::max<int64_t>(w0, 0);
      T* __restrict yp = yr + ow * m.out.sw;
      if (w0 >= w1) {  // no window column
        std::fill(yp, yp + c, lowest_value<T>());
        continue;
      }
      const T* __restrict v = rows + w0 * c;
      for (int64_t ch = 0; ch < c; ++ch) yp[ch] = v[ch];
      for (int64_t iw = w0 + 1; iw < w1; ++iw) {
        v += c;
        for (int64_t ch = 0; ch < c; ++ch) yp[ch] = take_max(yp[ch], v[ch]);
      }
    }
  }
};

template <typename T>
void max_pool_rows(const amber_kernel_args* a, const Nchw& in, const Nchw& out, std::array<int64_t, 2> k,
                   std::array<int64_t, 2> s, std::array<int64_t, 2> p) {
  static const InnerFn row = IsaVariants<MaxPoolRow<T>>::pick();
  const MaxPoolRows<T> m{
      static_cast<const T*>(a->inputs[0].data), static_cast<T*>(a->outputs[0].data), in, out, k, s, p};
  const int64_t span = m.in.w * m.in.c;
  ThreadLimit limit(std::max(1, a->num_threads));
  parallel_for(m.in.n * m.out.h, std::max<int64_t>(1, 16384 / std::max<int64_t>(span * k[0], 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<T> rows(static_cast<size_t>(span));
                 char* scratch[1] = {reinterpret_cast<char*>(rows.data())};
                 for (int64_t r = b; r < e; ++r) row(scratch, nullptr, r, &m);
               });
}

// v as N x C images of one channel each (C = 1), where its images' planes are evenly spaced
// (NCHW and any layout whose N steps over C planes): the rows pass pools those planes.
std::optional<Nchw> as_planes(const Nchw& v) {
  if (v.n > 1 && v.sn != v.c * v.sc) return std::nullopt;
  Nchw p = v;
  p.n = v.n * v.c, p.sn = v.sc, p.c = 1, p.sc = 1;
  return p;
}

std::array<int64_t, 2> ints2(const amber_kernel_args* a, int i, std::array<int64_t, 2> fallback) {
  auto v = attr_ints(a, i);
  if (v.empty()) return fallback;
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

// max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode)
template <typename T>
struct MaxPoolKernel {
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::max_pool2d;
    const auto k = ints2(a, at::kernel_size, {1, 1});
    const auto s = ints2(a, at::stride, k), p = ints2(a, at::padding, {0, 0}), d = ints2(a, at::dilation, {1, 1});
    const Nchw in(a->inputs[0]), out(a->outputs[0]);
    if (d[0] == 1 && d[1] == 1 && in.c > 0 && in.w > 0 && out.h > 0 && out.w > 0) {
      if (in.sc == 1 && out.sc == 1) {
        max_pool_rows<T>(a, in, out, k, s, p);
        return 0;
      }
      if (const auto in_planes = as_planes(in), out_planes = as_planes(out); in_planes && out_planes) {
        max_pool_rows<T>(a, *in_planes, *out_planes, k, s, p);
        return 0;
      }
    }
    pool<T, T>(a, MaxReduce<T>{}, [&](int64_t oh, int64_t ow) {
      int64_t h0 = oh * s[0] - p[0], w0 = ow * s[1] - p[1];
      const int64_t h1 = std::min(h0 + (k[0] - 1) * d[0] + 1, in.h), w1 = std::min(w0 + (k[1] - 1) * d[1] + 1, in.w);
      while (h0 < 0) h0 += d[0];
      while (w0 < 0) w0 += d[1];
      return Window{h0, h1, d[0], w0, w1, d[1], 1.0};
    });
    return 0;
  }
};

// One window element for each of n output columns of a max_pool2d_with_indices row: p[0] the
// elements (stride s[0]), p[1] the row's maxima so far (s[1]), p[2] their indices (s[2]); ctx
// {at0, step}: column ow's element has index at0 + ow * step. ATen's rule (beats) as selects, not
// branches (random data mispredicted them), which GCC vectorises; XS, where not 0, fixes s[0]
// and the outputs dense.
template <int XS, typename T>
struct MaxTake {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* ctx) {
    const T* __restrict x = reinterpret_cast<const T*>(p[0]);
    T* __restrict y = reinterpret_cast<T*>(p[1]);
    int64_t* __restrict yi = reinterpret_cast<int64_t*>(p[2]);
    const int64_t at0 = static_cast<const int64_t*>(ctx)[0], step = static_cast<const int64_t*>(ctx)[1];
    const int64_t xs = XS ? XS : s[0], ys = XS ? 1 : s[1], is = XS ? 1 : s[2];
    for (int64_t ow = 0; ow < n; ++ow) {
      const T v = x[ow * xs], best = y[ow * ys];
      const bool take = beats(v, best);
      const int64_t m = -int64_t(take);  // all ones where taken
      y[ow * ys] = take ? v : best;
      yi[ow * is] = (yi[ow * is] & ~m) | ((at0 + ow * step) & m);
    }
  }
};

// max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode): ATen's
// rule, (v > max) || isnan(v), with each maximum's flat index in its plane (the window's first
// element's when none is taken); one (n, c) plane per task, any strides. An output row at a
// time: each window row and kernel column in ATen's order, across every output column it
// covers (MaxTake); a window at a time, with branches, [8, 64, 112, 112] 2x2 took 17-19 ms.
template <typename T>
struct MaxPoolWithIndicesKernel {
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::max_pool2d_with_indices;
    const auto k = ints2(a, at::kernel_size, {1, 1});
    const auto s = ints2(a, at::stride, k), p = ints2(a, at::padding, {0, 0}), d = ints2(a, at::dilation, {1, 1});
    const Nchw in(a->inputs[0]), out(a->outputs[0]), oi(a->outputs[1]);
    const T* x = static_cast<const T*>(a->inputs[0].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    int64_t* yi = static_cast<int64_t*>(a->outputs[1].data);
    const int64_t xs = in.sw * s[1];
    const bool dense = out.sw == 1 && oi.sw == 1;
    static const InnerFn take1 = IsaVariants<MaxTake<1, T>>::pick(), take2 = IsaVariants<MaxTake<2, T>>::pick(),
                         take_any = IsaVariants<MaxTake<0, T>>::pick();
    const InnerFn take = dense && xs == 1 ? take1 : dense && xs == 2 ? take2 : take_any;
    const int64_t strides[3] = {xs, out.sw, oi.sw};
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(in.n * in.c, 1, [&](int64_t b, int64_t e) {
      for (int64_t nc = b; nc < e; ++nc) {
        const int64_t n = nc / in.c, c = nc % in.c;
        const T* xp = x + n * in.sn + c * in.sc;
        for (int64_t oh = 0; oh < out.h; ++oh) {
          int64_t h0 = oh * s[0] - p[0];
          const int64_t h1 = std::min(h0 + (k[0] - 1) * d[0] + 1, in.h);
          while (h0 < 0) h0 += d[0];
          T* yr = y + n * out.sn + c * out.sc + oh * out.sh;
          int64_t* ir = yi + n * oi.sn + c * oi.sc + oh * oi.sh;
          for (int64_t ow = 0; ow < out.w; ++ow) {
            int64_t w0 = ow * s[1] - p[1];
            while (w0 < 0) w0 += d[1];
            yr[ow * out.sw] = -std::numeric_limits<T>::infinity();
            ir[ow * oi.sw] = h0 * in.w + w0;
          }
          for (int64_t ih = h0; ih < h1; ih += d[0])
            for (int64_t kw = 0; kw < k[1]; ++kw) {
              // The output columns ow whose window holds input column ow * s + off.
              const int64_t off = kw * d[1] - p[1];
              const int64_t lo = off >= 0 ? 0 : (-off + s[1] - 1) / s[1];
              const int64_t hi = in.w - 1 - off < 0 ? 0 : std::min(out.w, (in.w - 1 - off) / s[1] + 1);
              if (lo >= hi) continue;
              char* ptrs[3] = {
                  const_cast<char*>(reinterpret_cast<const char*>(xp + ih * in.sh + (lo * s[1] + off) * in.sw)),
                  reinterpret_cast<char*>(yr + lo * out.sw), reinterpret_cast<char*>(ir + lo * oi.sw)};
              const int64_t first[2] = {ih * in.w + lo * s[1] + off, s[1]};
              take(ptrs, strides, hi - lo, first);
            }
        }
      }
    });
    return 0;
  }
};

// max_unpool2d(self, indices, output_size): every index checked first (ATen's error), then
// zeros and each element of self at its index in its plane, in order within a plane (so the
// last of repeated indices wins, as ATen's CPU kernel); one (n, c) plane per task.
template <typename T>
struct MaxUnpoolKernel {
  static int run(const amber_kernel_args* a) {
    const Nchw in(a->inputs[0]), ix(a->inputs[1]), out(a->outputs[0]);
    const T* x = static_cast<const T*>(a->inputs[0].data);
    const int64_t* idx = static_cast<const int64_t*>(a->inputs[1].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    const int64_t plane = out.h * out.w;
    for (int64_t nc = 0; nc < in.n * in.c; ++nc)
      for (int64_t h = 0; h < in.h; ++h)
        for (int64_t w = 0; w < in.w; ++w) {
          const int64_t at = idx[nc / in.c * ix.sn + nc % in.c * ix.sc + h * ix.sh + w * ix.sw];
          if (at < 0 || at >= plane)
            return fail(a,
                        "found an invalid max index: %" PRId64 " (output volumes are of size %" PRId64 "x%" PRId64 ")",
                        at, out.h, out.w);
        }
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(in.n * in.c, 1, [&](int64_t b, int64_t e) {
      for (int64_t nc = b; nc < e; ++nc) {
        const int64_t n = nc / in.c, c = nc % in.c;
        T* yp = y + n * out.sn + c * out.sc;
        for (int64_t h = 0; h < out.h; ++h)
          for (int64_t w = 0; w < out.w; ++w) yp[h * out.sh + w * out.sw] = T(0);
        for (int64_t h = 0; h < in.h; ++h)
          for (int64_t w = 0; w < in.w; ++w) {
            const int64_t at = idx[n * ix.sn + c * ix.sc + h * ix.sh + w * ix.sw];
            yp[at / out.w * out.sh + at % out.w * out.sw] = x[n * in.sn + c * in.sc + h * in.sh + w * in.sw];
          }
      }
    });
    return 0;
  }
};

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
template <typename T>
struct AvgPoolKernel {
  static int run(const amber_kernel_args* a) {
    namespace at = op_attrs::avg_pool2d;
    const auto k = ints2(a, at::kernel_size, {1, 1});
    const auto s = ints2(a, at::stride, k), p = ints2(a, at::padding, {0, 0});
    const bool include_pad = attr_bool(a, at::count_include_pad);
    const bool has_override = !attr_none(a, at::divisor_override);
    const int64_t override_div = has_override ? attr_int(a, at::divisor_override) : 0;
    const Nchw in(a->inputs[0]);
    pool<T, T>(a, SumReduce<T>{}, [&](int64_t oh, int64_t ow) {
      int64_t h0 = oh * s[0] - p[0], w0 = ow * s[1] - p[1];
      int64_t h1 = std::min(h0 + k[0], in.h + p[0]), w1 = std::min(w0 + k[1], in.w + p[1]);
      const int64_t pool_size = (h1 - h0) * (w1 - w0);
      h0 = std::max<int64_t>(h0, 0);
      w0 = std::max<int64_t>(w0, 0);
      h1 = std::min(h1, in.h);
      w1 = std::min(w1, in.w);
      if (h0 >= h1 || w0 >= w1) return Window{0, 0, 1, 0, 0, 1, 0.0};
      const double div = has_override  ? double(override_div)
                         : include_pad ? double(pool_size)
                                       : double((h1 - h0) * (w1 - w0));
      return Window{h0, h1, 1, w0, w1, 1, div};
    });
    return 0;
  }
};

// adaptive_avg_pool2d(self, output_size): windows [floor(i*in/out), ceil((i+1)*in/out)).
template <typename T>
struct AdaptiveAvgPoolKernel {
  static int run(const amber_kernel_args* a) {
    const Nchw in(a->inputs[0]), out(a->outputs[0]);
    if (out.h == 0 || out.w == 0) return 0;
    pool<T, T>(a, SumReduce<T>{}, [&](int64_t oh, int64_t ow) {
      const int64_t h0 = oh * in.h / out.h, h1 = ((oh + 1) * in.h + out.h - 1) / out.h;
      const int64_t w0 = ow * in.w / out.w, w1 = ((ow + 1) * in.w + out.w - 1) / out.w;
      return Window{h0, h1, 1, w0, w1, 1, double((h1 - h0) * (w1 - w0))};
    });
    return 0;
  }
};

AMBER_CPU_KERNELS(pool) {
  register_typed<MaxPoolKernel>(TypeList<float, double, uint8_t>{}, "max_pool2d");
  register_typed<MaxPoolWithIndicesKernel>(ctypes::floating{}, "max_pool2d_with_indices");
  register_typed<MaxUnpoolKernel>(ctypes::floating{}, "max_unpool2d");
  register_typed<AvgPoolKernel>(ctypes::floating{}, "avg_pool2d");
  register_typed<AdaptiveAvgPoolKernel>(ctypes::floating{}, "adaptive_avg_pool2d");
}

}  // namespace
}  // namespace amber::cpu
