// CPU kernel for scaled_dot_product_attention: for each batch entry, blocks of query rows
// are processed by one thread each: scores = q k^T / sqrt(E) (oneDNN sgemm), the mask or
// causal mask applied, a softmax per row, then scores v. Scores never exceed a block of
// rows at a time, so memory stays bounded for long sequences.

#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include <cmath>
#include <limits>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/row_ops.h"
#include "amber/kernels/cpu/vec_math.h"

namespace amber::cpu {
namespace {

constexpr int64_t kRowBlock = 64;

// In place over a contiguous row: softmax.
struct SoftmaxInPlace {
  static void run(char* const* p, const int64_t*, int64_t n, const void*) {
    float* r = reinterpret_cast<float*>(p[0]);
    const float mx = row_max(r, n);
    for (int64_t i = 0; i < n; ++i) r[i] = vexp(r[i] - mx);
    const float inv = 1.0f / row_sum(r, n);
    for (int64_t i = 0; i < n; ++i) r[i] *= inv;
  }
};

// Offsets of batch entry b of a view whose last two dims are matrices (batch dims of the
// view may broadcast against `bsizes`: size-1 dims get stride 0).
int64_t batch_offset(const amber_tensor_view& v, const int64_t* bsizes, int nb, int64_t b) {
  int64_t off = 0;
  for (int d = nb - 1; d >= 0; --d) {
    const int64_t i = b % bsizes[d];
    b /= bsizes[d];
    const int vd = d - (nb - (v.ndim - 2));
    if (vd >= 0 && v.sizes[vd] != 1) off += i * v.strides[vd];
  }
  return off;
}

bool gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float* c, int64_t ldc) {
  return dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc) == dnnl_success;
}

int sdpa(const amber_kernel_args* a) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2], &mask = a->inputs[3];
  const amber_tensor_view& out = a->outputs[0];
  const bool causal = attr_bool(a, 1);
  const int r = q.ndim;
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  int64_t batches = 1, bsizes[AMBER_MAX_DIMS];
  for (int d = 0; d < r - 2; ++d) batches *= (bsizes[d] = q.sizes[d]);
  if (L == 0 || Ev == 0 || batches == 0) return 0;
  // sgemm wants unit stride in one of the two matrix dims; pack operands that lack it.
  auto packed = [&](const amber_tensor_view& t, std::vector<float>& buf, amber_tensor_view& view) {
    view = t;
    const int64_t rs = t.strides[r - 2], cs = t.strides[r - 1];
    if (cs == 1 || rs == 1) return;
    buf.resize(size_t(numel(t)));
    int64_t st = 1;
    for (int d = r - 1; d >= 0; --d) {
      view.strides[d] = st;
      st *= t.sizes[d];
    }
    view.data = buf.data();
    // Element-by-element gather into row-major order.
    const int64_t n = numel(t);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = 0;
      for (int d = r - 1; d >= 0; --d) {
        off += (rem % t.sizes[d]) * t.strides[d];
        rem /= t.sizes[d];
      }
      buf[size_t(i)] = static_cast<const float*>(t.data)[off];
    }
  };
  std::vector<float> qb, kb, vb;
  amber_tensor_view qv, kv, vv;
  packed(q, qb, qv);
  packed(k, kb, kv);
  packed(v, vb, vv);
  auto operand = [&](const amber_tensor_view& t, bool transpose, char& trans, int64_t& ld) {
    const int64_t rs = t.strides[r - 2], cs = t.strides[r - 1];
    const bool row_major = cs == 1;
    trans = (row_major != transpose) ? 'N' : 'T';
    ld = row_major ? std::max<int64_t>(rs, t.sizes[r - 1]) : std::max<int64_t>(cs, t.sizes[r - 2]);
    ld = std::max<int64_t>(ld, 1);
  };
  char tq, tk, tv;
  int64_t ldq, ldk, ldv;
  operand(qv, false, tq, ldq);
  operand(kv, true, tk, ldk);  // k^T
  operand(vv, false, tv, ldv);
  const float scale = float(1.0 / std::sqrt(double(E)));
  const float* qp = static_cast<const float*>(qv.data);
  const float* kp = static_cast<const float*>(kv.data);
  const float* vp = static_cast<const float*>(vv.data);
  float* op = static_cast<float*>(out.data);
  const bool has_mask = present(mask);
  const bool bool_mask = has_mask && mask.dtype == int32_t(DType::b8);
  const int64_t msr = has_mask && mask.ndim >= 2 && mask.sizes[mask.ndim - 2] != 1 ? mask.strides[mask.ndim - 2] : 0;
  const int64_t msc = has_mask && mask.ndim >= 1 && mask.sizes[mask.ndim - 1] != 1 ? mask.strides[mask.ndim - 1] : 0;
  static const InnerFn softmax_row = IsaVariants<SoftmaxInPlace>::pick();
  const int64_t blocks = (L + kRowBlock - 1) / kRowBlock;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  ThreadLimit limit(std::max(1, a->num_threads));
  std::vector<char> ok(static_cast<size_t>(batches * blocks), 1);
  parallel_for(batches * blocks, 1, [&](int64_t t0, int64_t t1) {
    omp_set_num_threads(1);
    std::vector<float> scores;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / blocks, row0 = (t % blocks) * kRowBlock, rows = std::min(kRowBlock, L - row0);
      const int64_t qo = batch_offset(qv, bsizes, r - 2, b), ko = batch_offset(kv, bsizes, r - 2, b),
                    vo = batch_offset(vv, bsizes, r - 2, b), oo = b * L * Ev;
      const float* qrow = qp + qo + row0 * (tq == 'N' ? ldq : 1);
      scores.resize(size_t(rows * S));
      if (S > 0 && !gemm(tq, tk, rows, S, E, scale, qrow, ldq, kp + ko, ldk, scores.data(), S)) {
        ok[size_t(t)] = 0;
        continue;
      }
      if (has_mask) {
        const int64_t mo = batch_offset(mask, bsizes, r - 2, b);
        for (int64_t i = 0; i < rows; ++i) {
          float* s = scores.data() + i * S;
          const int64_t base = mo + (row0 + i) * msr;
          if (bool_mask) {
            const bool* m = static_cast<const bool*>(mask.data) + base;
            for (int64_t j = 0; j < S; ++j) s[j] = m[j * msc] ? s[j] : neg_inf;
          } else {
            const float* m = static_cast<const float*>(mask.data) + base;
            for (int64_t j = 0; j < S; ++j) s[j] += m[j * msc];
          }
        }
      }
      if (causal)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = row0 + i + 1; j < S; ++j) scores[size_t(i * S + j)] = neg_inf;
      for (int64_t i = 0; i < rows; ++i) {
        char* p[1] = {reinterpret_cast<char*>(scores.data() + i * S)};
        if (S > 0) softmax_row(p, nullptr, S, nullptr);
      }
      float* orow = op + oo + row0 * Ev;
      if (S == 0) {
        for (int64_t i = 0; i < rows * Ev; ++i) orow[i] = std::nanf("");
      } else if (!gemm('N', tv, rows, Ev, S, 1.0f, scores.data(), S, vp + vo, ldv, orow, Ev)) {
        ok[size_t(t)] = 0;
      }
    }
  });
  for (char g : ok)
    if (!g) return fail(a, "oneDNN sgemm failed");
  return 0;
}

template <typename T>
struct SdpaKernel {
  static int run(const amber_kernel_args* a) {
    return guarded(a, [&] { return sdpa(a); });
  }
};

AMBER_CPU_KERNELS(attention) { register_typed<SdpaKernel, float>("scaled_dot_product_attention"); }

}  // namespace
}  // namespace amber::cpu
