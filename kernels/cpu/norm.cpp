// CPU kernels for normalisation in inference: batch_norm (y = x * alpha[c] + beta[c] with
// ATen's alpha = weight / sqrt(var + eps), beta = bias - mean * alpha, any layout) and
// layer_norm (per row: mean and variance accumulated in double, then
// (x - mean) * rstd * weight + bias); add_layer_norm sums its two inputs into the output row
// first (as add does) and normalises that row in place.

#include <cmath>
#include <vector>

#include "amber/kernels/cpu/copy.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/row_ops.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

template <typename T>
struct AffineInner {  // y = x * alpha + beta
  static void run(char* const* p, const int64_t* s, int64_t n, const void*) {
    T* y = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* al = reinterpret_cast<const T*>(p[2]);
    const T* be = reinterpret_cast<const T*>(p[3]);
    constexpr int64_t e = sizeof(T);
    if (s[0] == e && s[1] == e && s[2] == e && s[3] == e) {  // channels innermost
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * al[i] + be[i];
    } else if (s[0] == e && s[1] == e && s[2] == 0 && s[3] == 0) {  // one channel's plane
      const T av = *al, bv = *be;
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * av + bv;
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            *reinterpret_cast<const T*>(p[1] + i * s[1]) * *reinterpret_cast<const T*>(p[2] + i * s[2]) +
            *reinterpret_cast<const T*>(p[3] + i * s[3]);
    }
  }
};

// batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
template <typename T>
struct BatchNormKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& x = a->inputs[0];
    const int64_t ch = x.sizes[1];
    const double eps = attr_float(a, op_attrs::batch_norm::eps);
    auto at = [&](int i, int64_t c, T dflt) {
      const amber_tensor_view& v = a->inputs[i];
      return present(v) ? static_cast<const T*>(v.data)[c * v.strides[0]] : dflt;
    };
    std::vector<T> alpha(static_cast<size_t>(ch)), beta(static_cast<size_t>(ch));
    for (int64_t c = 0; c < ch; ++c) {
      const T invstd = T(1) / std::sqrt(at(4, c, T(1)) + T(eps));
      alpha[size_t(c)] = invstd * at(1, c, T(1));
      beta[size_t(c)] = at(2, c, T(0)) - at(3, c, T(0)) * alpha[size_t(c)];
    }
    // alpha and beta as views broadcast along every dim but 1.
    amber_tensor_view av{}, bv{};
    av.ndim = bv.ndim = x.ndim;
    for (int d = 0; d < x.ndim; ++d) {
      av.sizes[d] = bv.sizes[d] = d == 1 ? ch : 1;
      av.strides[d] = bv.strides[d] = d == 1 ? 1 : 0;
    }
    av.data = alpha.data();
    bv.data = beta.data();
    av.dtype = bv.dtype = x.dtype;
    ElementwiseIter<4> it({&a->outputs[0], &x, &av, &bv}, {sizeof(T), sizeof(T), sizeof(T), sizeof(T)});
    static const InnerFn inner = IsaVariants<AffineInner<T>>::pick();
    it.run(inner, nullptr, a->num_threads, kGrainCheap);
    return 0;
  }
};

// p[0]: output row, p[1]: input row, p[2]: weight, p[3]: bias, p[4]: add_layer_norm's other
// row (each null when absent; with p[4] the sum is written to the output row first and
// normalised there in place); n = row length.
template <typename T>
struct LayerNormRow {
  struct Ctx {
    double eps;
  };
  static void run(char* const* p, const int64_t*, int64_t n, const void* vc) {
    T* y = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* w = reinterpret_cast<const T*>(p[2]);
    const T* b = reinterpret_cast<const T*>(p[3]);
    if (const T* other = reinterpret_cast<const T*>(p[4])) {  // the sum as add computes it
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] + other[i];
      x = y;
    }
    // Mean and variance in double over 32 partial sums: four independent chains of eight
    // (each a zmm register with AVX-512), where eight partials were one chain whose addition
    // latency bounded the row (the zoo encoder's 128 x 256 layer_norm nodes: 25.3 -> 22.0 us
    // each at 1 thread, mean of three profiled runs). The partials meet in halve_sum's fixed
    // tree, the same on every ISA.
    constexpr int P = 32;
    double s[P] = {};
    int64_t i = 0;
    for (; i + P <= n; i += P)
      for (int j = 0; j < P; ++j) s[j] += double(x[i + j]);
    for (int j = 0; i < n; ++i, ++j) s[j] += double(x[i]);
    const double mu = halve_sum<P>(s) / double(n);
    double q[P] = {};
    for (i = 0; i + P <= n; i += P)
      for (int j = 0; j < P; ++j) {
        const double d = double(x[i + j]) - mu;
        q[j] += d * d;
      }
    for (int j = 0; i < n; ++i, ++j) q[j] += (double(x[i]) - mu) * (double(x[i]) - mu);
    const double var = halve_sum<P>(q) / double(n);
    const T rstd = T(1.0 / std::sqrt(var + static_cast<const Ctx*>(vc)->eps));
    const T m = T(mu);
    if (w && b) {
      for (i = 0; i < n; ++i) y[i] = (x[i] - m) * rstd * w[i] + b[i];
    } else if (w) {
      for (i = 0; i < n; ++i) y[i] = (x[i] - m) * rstd * w[i];
    } else if (b) {
      for (i = 0; i < n; ++i) y[i] = (x[i] - m) * rstd + b[i];
    } else {
      for (i = 0; i < n; ++i) y[i] = (x[i] - m) * rstd;
    }
  }
};

// layer_norm(input, weight, bias, normalized_shape, eps), and with Add
// add_layer_norm(input, other, weight, bias, normalized_shape, eps): layer_norm(input + other).
template <bool Add>
struct LayerNorm {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a);
  };
};
template <bool Add>
template <typename T>
int LayerNorm<Add>::Kernel<T>::run(const amber_kernel_args* a) {
  namespace la = op_attrs::layer_norm;
  namespace aa = op_attrs::add_layer_norm;
  static_assert(aa::normalized_shape == la::normalized_shape && aa::eps == la::eps);
  constexpr int kParams = Add ? 2 : 1;  // weight's input
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[kParams], &b = a->inputs[kParams + 1], &y = a->outputs[0];
  const int nn = a->attrs[la::normalized_shape].count;
  int64_t n = 1;
  for (int d = x.ndim - nn; d < x.ndim; ++d) n *= x.sizes[d];
  const int64_t rows = n == 0 ? 0 : numel(x) / n;
  if (rows == 0 || n == 0) return 0;
  // Contiguous copies of what is not: rows of x (and of other), weight, bias.
  std::vector<T> xbuf, obuf, wbuf, bbuf;
  auto contiguous = [&](const amber_tensor_view& v, std::vector<T>& buf) -> const T* {
    if (!present(v)) return nullptr;
    if (is_contiguous(v)) return static_cast<const T*>(v.data);
    buf.resize(size_t(numel(v)));
    amber_tensor_view dst = v;
    dst.data = buf.data();
    int64_t st = 1;
    for (int d = v.ndim - 1; d >= 0; --d) {
      dst.strides[d] = st;
      st *= v.sizes[d];
    }
    copy_convert(dst, v, a->num_threads);
    return buf.data();
  };
  const T* xp = contiguous(x, xbuf);
  const T* op = Add ? contiguous(a->inputs[1], obuf) : nullptr;  // the op's inference: x's shape
  const T* wp = contiguous(w, wbuf);
  const T* bp = contiguous(b, bbuf);
  T* yp = static_cast<T*>(y.data);
  typename LayerNormRow<T>::Ctx ctx{attr_float(a, la::eps)};
  static const InnerFn row = IsaVariants<LayerNormRow<T>>::pick();
  ThreadLimit limit(std::max(1, a->num_threads));
  parallel_for(rows, std::max<int64_t>(1, 8192 / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const auto ptr = [](const T* v) { return reinterpret_cast<char*>(const_cast<T*>(v)); };
      char* ptrs[5] = {ptr(yp + r * n), ptr(xp + r * n), ptr(wp), ptr(bp), Add ? ptr(op + r * n) : nullptr};
      row(ptrs, nullptr, n, &ctx);
    }
  });
  return 0;
}

AMBER_CPU_KERNELS(norm) {
  register_typed<BatchNormKernel>(ctypes::floating{}, "batch_norm");
  register_typed<LayerNorm<false>::Kernel>(ctypes::floating{}, "layer_norm");
  register_typed<LayerNorm<true>::Kernel>(ctypes::floating{}, "add_layer_norm");
}

}  // namespace
}  // namespace amber::cpu
