// int8 quantization of weights and rows, and the dequantization of int8 products'
// accumulators (quantize.h). The per-element loops are plain loops compiled for each ISA
// (IsaVariants): extremes as integer minima and maxima over the floats' bits mapped to
// order-preserving integers, rounding and the epilogues by quant_math.h's formulas (the
// 1.5 * 2^23 trick), so they vectorise.
#include "amber/kernels/cpu/quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/quant_direct.h"

namespace amber::cpu {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A float's bits as an int32 ordered as the floats are (NaNs beyond the infinities).
inline int32_t ordered(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b ^ ((b >> 31) & 0x7fffffff);
}
inline float from_ordered(int32_t o) {
  const int32_t b = o ^ ((o >> 31) & 0x7fffffff);
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
const int32_t kPlusInf = ordered(std::numeric_limits<float>::infinity());
const int32_t kMinusInf = ordered(-std::numeric_limits<float>::infinity());

// One dense row: p[0] the floats, p[1] the uint8 out, p[2] its scale out, p[3] its zero point out.
struct QuantizeRow {
  static void run(char* const* p, const int64_t*, int64_t n, const void*) {
    const float* x = reinterpret_cast<const float*>(p[0]);
    uint8_t* q = reinterpret_cast<uint8_t*>(p[1]);
    float& scale = *reinterpret_cast<float*>(p[2]);
    int32_t& zero = *reinterpret_cast<int32_t*>(p[3]);
    int32_t lo = 0, hi = 0;  // ordered(0.0f) == 0: the range includes zero
    for (int64_t i = 0; i < n; ++i) {
      const int32_t o = ordered(x[i]);
      lo = o < lo ? o : lo;
      hi = o > hi ? o : hi;
    }
    zero = 0;
    if (lo <= kMinusInf || hi >= kPlusInf || lo == hi) {  // not finite, or all zeros
      scale = lo == hi ? 0.0f : kNaN;
      std::memset(q, 0, size_t(n));
      return;
    }
    const float fl = from_ordered(lo), fh = from_ordered(hi);
    scale = (fh - fl) / 255.0f;
    const float inv = 255.0f / (fh - fl);
    // The zero point: where 0 lands, in [0, 255] since fl <= 0 <= fh.
    const float z = std::min(std::max(quant::round_even(-fl * inv), 0.0f), 255.0f);
    zero = static_cast<int32_t>(z);
    for (int64_t i = 0; i < n; ++i) q[i] = quant::to_u8(x[i], inv, z);
  }
};

// A run's range as ordered ints: p[0] the floats, p[1] two int32 (lo, hi) updated.
struct RangeRun {
  static void run(char* const* p, const int64_t*, int64_t n, const void*) {
    const float* x = reinterpret_cast<const float*>(p[0]);
    int32_t* r = reinterpret_cast<int32_t*>(p[1]);
    int32_t lo = r[0], hi = r[1];
    for (int64_t i = 0; i < n; ++i) {
      const int32_t o = ordered(x[i]);
      lo = o < lo ? o : lo;
      hi = o > hi ? o : hi;
    }
    r[0] = lo;
    r[1] = hi;
  }
};

// A run quantized: p[0] the floats, p[1] the uint8 out; ctx the TensorQuant.
struct QuantizeRun {
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    const float* x = reinterpret_cast<const float*>(p[0]);
    uint8_t* q = reinterpret_cast<uint8_t*>(p[1]);
    const TensorQuant& t = *static_cast<const TensorQuant*>(ctx);
    const float inv = 1.0f / t.scale, z = float(t.zero_point);
    int32_t nan = 0;  // or-ed per element (x != x): the loop stays vectorised
    for (int64_t i = 0; i < n; ++i) {
      nan |= int32_t(x[i] != x[i]);
      q[i] = quant::to_u8(x[i], inv, z);  // a NaN becomes 0 rather than an undefined cast
    }
    *reinterpret_cast<char*>(p[2]) = char(nan);
  }
};

constexpr int64_t kRun = int64_t(1) << 14;  // elements per task of a whole-tensor loop

// One row of accumulators: p[0] int32 in, float out; p[1] column scales; p[2] column sums;
// p[3] the bias or null; p[4] the row's scale; p[5] its zero point.
struct DequantizeRow {
  static void run(char* const* p, const int64_t*, int64_t n, const void*) {
    const int32_t* acc = reinterpret_cast<const int32_t*>(p[0]);
    float* out = reinterpret_cast<float*>(p[0]);
    const float* cs = reinterpret_cast<const float*>(p[1]);
    const int32_t* sums = reinterpret_cast<const int32_t*>(p[2]);
    const float* bias = reinterpret_cast<const float*>(p[3]);
    const float rs = *reinterpret_cast<const float*>(p[4]);
    const int32_t z = *reinterpret_cast<const int32_t*>(p[5]);
    if (bias)
      for (int64_t i = 0; i < n; ++i) out[i] = quant::dequantized(acc[i], z, sums[i], rs, cs[i], bias[i]);
    else
      for (int64_t i = 0; i < n; ++i) out[i] = quant::dequantized(acc[i], z, sums[i], rs, cs[i], 0.0f);
  }
};

// One row of accumulators into uint8 with activation A and a bias or not: a loop each, with
// the parameters in locals (a uint8 store may alias anything, so reading them through `r` in
// the loop kept it scalar: 1.3 ms for the transformer's 128 x 1024 rows), so that it vectorises.
template <Act A, bool Bias>
inline void requantize_row(const int32_t* __restrict acc, uint8_t* __restrict y, int64_t n, const Requantization& r) {
  const float inv = 1.0f / r.output_scale, z = float(r.output_zero_point), sx = r.input_scale, lo = r.lo, hi = r.hi;
  const int32_t zx = r.input_zero_point;
  const int32_t* __restrict sums = r.sums;
  const float* __restrict cs = r.col_scales;
  const float* __restrict bias = r.bias;
  for (int64_t i = 0; i < n; ++i) {
    const float v = quant::dequantized(acc[i], zx, sums[i], sx, cs[i], Bias ? bias[i] : 0.0f);
    y[i] = quant::to_u8(quant::activate(v, A, lo, hi), inv, z);
  }
}
template <bool Bias>
inline void requantize_row(const int32_t* acc, uint8_t* y, int64_t n, const Requantization& r) {
  with_act(r.act, [&](auto act) { requantize_row<decltype(act)::value, Bias>(acc, y, n, r); });
}

// One row of accumulators into uint8: p[0] int32 in, p[1] uint8 out; ctx the Requantization.
struct RequantizeRow {
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    const int32_t* acc = reinterpret_cast<const int32_t*>(p[0]);
    uint8_t* y = reinterpret_cast<uint8_t*>(p[1]);
    const Requantization& r = *static_cast<const Requantization*>(ctx);
    if (r.bias)
      requantize_row<true>(acc, y, n, r);
    else
      requantize_row<false>(acc, y, n, r);
  }
};

// Rows per task of a loop over rows of `cols` elements: about 16K elements each.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(cols, 1)); }

}  // namespace

void quantize_channels(const float* w, int64_t out, int64_t in, int64_t s0, int64_t s1, int8_t* q, float* scales,
                       int32_t* sums) {
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w + o * s0;
    int8_t* qr = q + o * in;
    float m = 0;
    bool finite = true;
    for (int64_t i = 0; i < in; ++i) {
      finite = finite && std::isfinite(row[i * s1]);
      m = std::max(m, std::fabs(row[i * s1]));
    }
    scales[o] = finite ? m / 127.0f : kNaN;  // a channel with an infinity or NaN gives NaN, as in f32
    sums[o] = 0;
    if (!finite || m == 0.0f) {
      std::memset(qr, 0, size_t(in));
      continue;
    }
    const float inv = 127.0f / m;
    for (int64_t i = 0; i < in; ++i) {
      qr[i] = static_cast<int8_t>(std::lrint(std::min(std::max(row[i * s1] * inv, -127.0f), 127.0f)));
      sums[o] += qr[i];
    }
  }
}

bool tensor_range(const float* x, int64_t n, float& lo, float& hi) {
  static const InnerFn inner = IsaVariants<RangeRun>::pick();
  const int64_t runs = (n + kRun - 1) / kRun;
  std::vector<int32_t> r(size_t(2 * runs), 0);  // ordered(0.0f) == 0: the range includes zero
  parallel_for(runs, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      char* p[2] = {reinterpret_cast<char*>(const_cast<float*>(x + i * kRun)),
                    reinterpret_cast<char*>(&r[size_t(2 * i)])};
      inner(p, nullptr, std::min(kRun, n - i * kRun), nullptr);
    }
  });
  int32_t l = 0, h = 0;
  for (int64_t i = 0; i < runs; ++i) {
    l = std::min(l, r[size_t(2 * i)]);
    h = std::max(h, r[size_t(2 * i + 1)]);
  }
  if (l <= kMinusInf || h >= kPlusInf) return false;
  lo = from_ordered(l);
  hi = from_ordered(h);
  return true;
}

TensorQuant tensor_quant(float lo, float hi) {
  TensorQuant t;
  if (!(hi > lo)) return t;  // zeros
  t.scale = (hi - lo) / 255.0f;
  t.zero_point = int32_t(std::min(std::max(std::nearbyint(-lo / t.scale), 0.0f), 255.0f));
  return t;
}

bool quantize_tensor(const float* x, int64_t n, TensorQuant t, uint8_t* q) {
  if (t.scale == 0.0f) {
    std::memset(q, 0, size_t(n));
    return has_nan(x, n);
  }
  static const InnerFn inner = IsaVariants<QuantizeRun>::pick();
  std::atomic<bool> any_nan{false};
  parallel_for((n + kRun - 1) / kRun, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      char nan = 0;
      char* p[3] = {reinterpret_cast<char*>(const_cast<float*>(x + i * kRun)), reinterpret_cast<char*>(q + i * kRun),
                    &nan};
      inner(p, nullptr, std::min(kRun, n - i * kRun), &t);
      if (nan) any_nan.store(true, std::memory_order_relaxed);
    }
  });
  return any_nan.load(std::memory_order_relaxed);
}

void quantize_rows(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scales, int32_t* zero_points) {
  static const InnerFn inner = IsaVariants<QuantizeRow>::pick();
  parallel_for(rows, row_grain(cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      char* p[4] = {reinterpret_cast<char*>(const_cast<float*>(x + r * cols)), reinterpret_cast<char*>(q + r * cols),
                    reinterpret_cast<char*>(scales + r), reinterpret_cast<char*>(zero_points + r)};
      inner(p, nullptr, cols, nullptr);
    }
  });
}

void dequantize_products(void* io, int64_t rows, int64_t cols, const float* row_scales, const int32_t* zero_points,
                         const float* col_scales, const int32_t* sums, const float* bias) {
  static const InnerFn inner = IsaVariants<DequantizeRow>::pick();
  char* base = static_cast<char*>(io);
  parallel_for(rows, row_grain(cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      char* p[6] = {base + r * cols * int64_t(sizeof(float)),
                    reinterpret_cast<char*>(const_cast<float*>(col_scales)),
                    reinterpret_cast<char*>(const_cast<int32_t*>(sums)),
                    reinterpret_cast<char*>(const_cast<float*>(bias)),
                    reinterpret_cast<char*>(const_cast<float*>(row_scales + r)),
                    reinterpret_cast<char*>(const_cast<int32_t*>(zero_points + r))};
      inner(p, nullptr, cols, nullptr);
    }
  });
}

void requantize_products(const int32_t* acc, int64_t rows, int64_t cols, const Requantization& r, uint8_t* y) {
  static const InnerFn inner = IsaVariants<RequantizeRow>::pick();
  parallel_for(rows, row_grain(cols), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      char* p[2] = {reinterpret_cast<char*>(const_cast<int32_t*>(acc + i * cols)),
                    reinterpret_cast<char*>(y + i * cols)};
      inner(p, nullptr, cols, &r);
    }
  });
}

std::vector<float> given_scales(const amber_tensor_view& scales, const amber_tensor_view& bias, int64_t n,
                                const char* op) {
  const float* p = static_cast<const float*>(scales.data);
  const std::string error =
      quant::scale_error(p, scales.strides[0], bias.ndim >= 0 ? static_cast<const float*>(bias.data) : nullptr,
                         bias.ndim >= 0 ? bias.strides[0] : 0, n, op);
  if (!error.empty()) throw std::runtime_error(error);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = p[i * scales.strides[0]];
  return out;
}

bool has_nan(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(x[i])) return true;
  return false;
}

}  // namespace amber::cpu
