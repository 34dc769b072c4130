// CPU kernels for matrix products: mm, bmm, matmul, linear, fused_linear and quantized_linear, on
// oneDNN (tiny products, and loaded linear layers of a few rows by few weights, computed directly).
//
// Why oneDNN: measured here (AMD EPYC with AVX-512, `g++ -O2`, dnnl_sgemm vs OpenBLAS 0.3.21
// cblas_sgemm, row-major, B transposed), GFLOP/s with 1 / 2 threads:
//   1024x1024x1024: oneDNN 133 / 232, OpenBLAS 110 / 199
//   128x768x256:    oneDNN 191 / 340, OpenBLAS  94 / 120
//   128x256x1024:   oneDNN 168 / 185, OpenBLAS 101 / 132
//   1x1000x512:     oneDNN  42 /  66, OpenBLAS   7 /  12
// oneDNN also runs on the same OpenMP pool as Amber's own loops, while OpenBLAS would bring a
// second spinning pthread pool. Operands with a unit stride in either dim are used in place
// (as transposed or not); other layouts are packed first.

#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "amber/core/hot.h"
#include "amber/core/mapped_pages.h"
#include "amber/core/parallel.h"
#include "amber/kernels/cpu/activation.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/onednn.h"
#include "amber/kernels/cpu/quantize.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/row_ops.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// A [rows, cols] f32 matrix: base pointer and element strides.
struct Mat {
  const float* data;
  int64_t rows, cols, rs, cs;
};

// The matrix as (pointer, transpose flag, leading dimension) for row-major sgemm, packed
// into `scratch` when neither dim has unit stride.
struct GemmOperand {
  const float* data;
  char trans;
  int64_t ld;

  GemmOperand(const Mat& m, std::vector<float>& scratch) {
    data = m.data;
    if (m.cs == 1 && (m.rows == 1 || m.rs >= std::max<int64_t>(m.cols, 1))) {
      trans = 'N';
      ld = std::max<int64_t>({m.rs, m.cols, 1});
    } else if (m.rs == 1 && (m.cols == 1 || m.cs >= std::max<int64_t>(m.rows, 1))) {
      trans = 'T';
      ld = std::max<int64_t>({m.cs, m.rows, 1});
    } else {
      scratch.resize(size_t(m.rows * m.cols));
      for (int64_t i = 0; i < m.rows; ++i)
        for (int64_t j = 0; j < m.cols; ++j) scratch[size_t(i * m.cols + j)] = m.data[i * m.rs + j * m.cs];
      data = scratch.data();
      trans = 'N';
      ld = std::max<int64_t>(m.cols, 1);
    }
  }
};

// Products of at most this many multiply-adds (an RNN cell's 1 x 20 x 20) are computed here:
// the call into oneDNN costs more than their arithmetic, and a process's first sgemm call
// generates oneDNN's whole sgemm kernel set (about 4 ms here, paid by the Elman RNN's load).
constexpr int64_t kTinyGemm = 1024;

// C[m, n] (row stride ldc) = A[m, k] B[k, n] + beta * C for m * n * k <= kTinyGemm, k >= 1.
AMBER_HOT void tiny_gemm(const Mat& a, const Mat& b, float* c, int64_t ldc, float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  float row[kTinyGemm];  // n <= kTinyGemm
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row, row + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float av = a.data[i * a.rs + p * a.cs];
      const float* bp = b.data + p * b.rs;
      if (b.cs == 1)
        for (int64_t j = 0; j < n; ++j) row[j] += av * bp[j];
      else
        for (int64_t j = 0; j < n; ++j) row[j] += av * bp[j * b.cs];
    }
    float* cr = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) cr[j] = beta == 0 ? row[j] : row[j] + beta * cr[j];
  }
}

// C[m, n] (row stride ldc) = A[m, k] B[k, n] + beta * C, using `threads` threads.
bool sgemm(const Mat& a, const Mat& b, float* c, int64_t ldc, float beta, int threads) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return true;
  }
  if (m <= kTinyGemm && n <= kTinyGemm && k <= kTinyGemm && m * n * k <= kTinyGemm) {
    tiny_gemm(a, b, c, ldc, beta);
    return true;
  }
  std::vector<float> sa, sb;
  GemmOperand A(a, sa), B(b, sb);
  omp_set_num_threads(std::max(1, threads));
  return dnnl_sgemm(A.trans, B.trans, m, n, k, 1.0f, A.data, A.ld, B.data, B.ld, beta, c, std::max<int64_t>(ldc, 1)) ==
         dnnl_success;
}

Mat mat_of(const amber_tensor_view& v, int64_t offset = 0) {
  const int r = v.ndim;
  return {static_cast<const float*>(v.data) + offset, v.sizes[r - 2], v.sizes[r - 1], v.strides[r - 2],
          v.strides[r - 1]};
}

// The step between a linear bias's elements (a present bias of linear's shape rules): 0 when it
// broadcasts, as a scalar or [1], over the output features.
int64_t bias_stride(const amber_tensor_view& b) { return b.ndim == 0 || b.sizes[0] == 1 ? 0 : b.strides[0]; }

// A batch of gemms. Small products spread over threads one gemm each; large ones use
// every thread inside each gemm.
template <typename F>
bool run_batches(int64_t batches, double flops_each, int threads, F gemm_at) {
  bool ok = true;
  if (batches > 1 && threads > 1 && flops_each < 2.0e7) {
    ThreadLimit limit(threads);
    std::vector<char> good(static_cast<size_t>(batches), 1);
    parallel_for(batches, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) good[size_t(i)] = gemm_at(i, 1);
    });
    for (char g : good) ok &= g != 0;
  } else {
    for (int64_t i = 0; i < batches && ok; ++i) ok = gemm_at(i, threads);
  }
  return ok;
}

int mm_kernel(const amber_kernel_args* a) {
  const amber_tensor_view& c = a->outputs[0];
  if (!sgemm(mat_of(a->inputs[0]), mat_of(a->inputs[1]), static_cast<float*>(c.data), c.strides[0], 0.0f,
             a->num_threads))
    return fail(a, "oneDNN sgemm failed");
  return 0;
}

int bmm_kernel(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &y = a->inputs[1], &c = a->outputs[0];
  float* out = static_cast<float*>(c.data);
  const double flops = 2.0 * double(x.sizes[1]) * double(x.sizes[2]) * double(y.sizes[2]);
  const bool ok = run_batches(x.sizes[0], flops, a->num_threads, [&](int64_t i, int threads) {
    return sgemm(mat_of(x, i * x.strides[0]), mat_of(y, i * y.strides[0]), out + i * c.strides[0], c.strides[1], 0.0f,
                 threads);
  });
  return ok ? 0 : fail(a, "oneDNN sgemm failed");
}

// torch.matmul. Operands are viewed as batches of matrices: a 1-D left operand is a row
// [1, k], a 1-D right operand a column [k, 1]; batch dims broadcast.
AMBER_HOT int matmul_kernel(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &y = a->inputs[1], &c = a->outputs[0];
  float* out = static_cast<float*>(c.data);
  const float* xp = static_cast<const float*>(x.data);
  const float* yp = static_cast<const float*>(y.data);
  if (x.ndim == 1 && y.ndim == 1) {  // dot product
    double acc = 0;
    for (int64_t i = 0; i < x.sizes[0]; ++i) acc += double(xp[i * x.strides[0]]) * double(yp[i * y.strides[0]]);
    *out = float(acc);
    return 0;
  }
  const int64_t k = x.sizes[x.ndim - 1];
  const int64_t n = x.ndim >= 2 ? x.sizes[x.ndim - 2] : 1, m = y.ndim >= 2 ? y.sizes[y.ndim - 1] : 1;
  const int64_t xrs = x.ndim >= 2 ? x.strides[x.ndim - 2] : 0, xcs = x.strides[x.ndim - 1];
  const int64_t yrs = y.ndim >= 2 ? y.strides[y.ndim - 2] : y.strides[0], ycs = y.ndim >= 2 ? y.strides[y.ndim - 1] : 0;
  // Output batch dims and each operand's stride along them (0 where broadcast).
  const int obatch = std::max(0, c.ndim - (x.ndim >= 2 ? 1 : 0) - (y.ndim >= 2 ? 1 : 0));
  int64_t bsz[AMBER_MAX_DIMS], xbs[AMBER_MAX_DIMS], ybs[AMBER_MAX_DIMS];
  int64_t batches = 1;
  for (int d = 0; d < obatch; ++d) {
    bsz[d] = c.sizes[d];
    batches *= bsz[d];
    const int xd = d - (obatch - std::max(0, x.ndim - 2)), yd = d - (obatch - std::max(0, y.ndim - 2));
    xbs[d] = xd >= 0 && x.sizes[xd] != 1 ? x.strides[xd] : 0;
    ybs[d] = yd >= 0 && y.sizes[yd] != 1 ? y.strides[yd] : 0;
  }
  const int64_t out_rows_stride = m;  // output is contiguous [batch..., n, m]
  // Fold the batch into M when the right operand is shared and the left rows are evenly strided.
  bool fold = batches > 1;
  for (int d = 0; d < obatch && fold; ++d) fold = ybs[d] == 0;
  if (fold) {
    int64_t expect = xrs * n;
    for (int d = obatch - 1; d >= 0 && fold; --d) {
      fold = bsz[d] == 1 || xbs[d] == expect;
      expect *= bsz[d];
    }
  }
  if (fold) {
    const Mat A{xp, batches * n, k, xrs, xcs}, B{yp, k, m, yrs, ycs};
    return sgemm(A, B, out, out_rows_stride, 0.0f, a->num_threads) ? 0 : fail(a, "oneDNN sgemm failed");
  }
  const double flops = 2.0 * double(n) * double(k) * double(m);
  const bool ok = run_batches(batches, flops, a->num_threads, [&](int64_t i, int threads) {
    int64_t rem = i, xo = 0, yo = 0;
    for (int d = obatch - 1; d >= 0; --d) {
      const int64_t j = rem % bsz[d];
      rem /= bsz[d];
      xo += j * xbs[d];
      yo += j * ybs[d];
    }
    const Mat A{xp + xo, n, k, xrs, xcs}, B{yp + yo, k, m, yrs, ycs};
    return sgemm(A, B, out + i * n * m, out_rows_stride, 0.0f, threads);
  });
  return ok ? 0 : fail(a, "oneDNN sgemm failed");
}

// ---- linear with immutable weights: oneDNN's inner product, weights packed once ----
// Loaded models' weights never change (cache_id != 0), so linear runs as an inner-product
// primitive whose weights are packed into its own layout once, at load. Measured here: the
// primitive is created in 0.5 ms where dnnl_sgemm's first large product generates its whole
// kernel set (about 38 ms per process, most of loading LeNet at batch 64); the transformer
// encoder at batch 1 went from 4.6 to 2.9 ms per call on packed weights. Calls reuse their
// thread's memory objects (onednn::execute), so a tiny product costs within 1 us of sgemm's
// (LeNet's 1 x 84 x 10: 0.9 us vs 0.2). With AMBER_PRECISION_BF16 the primitive takes bf16
// rows and weights (packed to bf16 once) and writes f32: measured here with 2 threads,
// 128 x 768 x 768 at 439 GFLOP/s against 219. With AMBER_PRECISION_DYNAMIC_INT8 the weights
// are quantized once (quantize.h: int8 per output channel), each call's rows as they enter
// (uint8 per row), the primitive multiplies them into int32 (oneDNN's VNNI kernels) in the
// output's buffer, and the scales, zero points and bias turn that into f32 in place: measured
// here with 2 threads (oneDNN alone, us per product, f32 / bf16 / int8): 128 x 256 x 768:
// 219 / 112 / 59; 128 x 1024 x 256: 292 / 148 / 75; 197 x 768 x 3072: 4060 / 2037 / 1032.

// Whether a product of `rows` rows and `out_f` outputs in `type` runs on oneDNN's matmul.
// f32 from 128 rows and 256 outputs as well: in a model, where each layer's packed weights
// come from L3 rather than staying in L2 as in a loop over one product, the matmul's
// brgemm kernels hold up better. Measured here (alternating runs of `amber bench FILE
// --iters 300`, median of 5 pair ratios against rows >= 192 and out_f >= 512): the zoo's
// encoder (128 x 256 x {256, 768, 1024}, 128 x 1024 x 256) 0.952 at 1 thread and 0.967 at 2,
// ConvNeXt-T 0.965 / 0.990; GPT-2's 64 rows 1.015 at 2 threads, so they stay on the inner
// product. Standalone, the same 128-row products cycling through 16 weight sets: 112-120
// GFLOP/s on the matmul against 108-112 on the inner product (1 thread).
bool use_matmul(int64_t rows, int64_t out_f, onednn::memory::data_type type) {
  if (rows >= 192 && out_f >= 512) return true;
  return type == onednn::memory::data_type::f32 && rows >= 128 && out_f >= 256;
}

// The state of a linear step on the inner product (or, for many rows of wide outputs,
// oneDNN's matmul, which packs the weights for the same product better: measured here with 2
// threads, 197 x 768 x 3072 at 215 GFLOP/s against 165, 197 x 768 x 768 at 228 against 175,
// while 64 x 576 x 120 ran at 107 against 131, and 128 or single rows alike with one product's
// weights in L2; which one: use_matmul): a primitive per thread count, weights packed once per
// target layout.
struct LinearState {
  int64_t rows = 0, in_f = 0, out_f = 0;
  bool bias = false;
  bool matmul = false;        // use_matmul
  std::vector<float> direct;  // f32 products small enough for linear_direct: the weights as [in, out]
  // Of source and weights: f32, bf16 (product_type) or s8 (dynamic int8: uint8 rows).
  onednn::memory::data_type type = onednn::memory::data_type::f32;
  std::vector<int8_t> qweights;  // int8: the weights quantized, [out, in] dense
  std::vector<float> wscales;    // int8: their scale per output channel
  std::vector<int32_t> wsums;    // int8: the sum of each output channel's quantized weights
  // quantized_linear where int8_supported() is false: quant_direct.cpp's weights, and no primitive.
  std::vector<int16_t> direct_weights;
  // quantized_linear: every row quantized with the op's input scale and zero point (not its
  // own range), its bias input 3; its rows u8 already (u8_in); quantized_linear.u8's
  // accumulators requantized to u8 after its activation (u8_out).
  bool fixed_quant = false;
  TensorQuant input_q;
  bool u8_in = false, u8_out = false;
  Act act = Act::none;
  float lo = 0, hi = 0;
  TensorQuant output_q;
  int bias_input = 2;
  onednn::ByThreads<onednn::ProductPrim> prims;
  onednn::PackedByLayout packs;
  size_t ws = 0;  // the converted rows (rows_bytes()), then the primitive's scratchpad
  size_t workspace_bytes() const { return ws; }
  bool int8() const { return type == onednn::memory::data_type::s8; }
  // Bytes of the rows converted at the workspace's start: in bf16, or in uint8 (unless u8
  // already) followed by their scales and zero points and, for a u8 output, the int32
  // accumulators (each part 64-byte aligned).
  static size_t up(size_t b) { return (b + 63) & ~size_t(63); }
  size_t quantized_rows_bytes() const { return u8_in ? 0 : up(size_t(rows * in_f)); }
  size_t row_params_bytes() const { return 2 * up(size_t(rows) * sizeof(float)); }
  size_t rows_bytes() const {
    if (type == onednn::memory::data_type::bf16) return up(size_t(rows * in_f) * sizeof(uint16_t));
    if (int8())
      return quantized_rows_bytes() + row_params_bytes() + (u8_out ? up(size_t(rows * out_f) * sizeof(int32_t)) : 0);
    return 0;
  }

  // quantized_linear.u8's epilogue over the products, with the bias bp (null: none).
  Requantization requantization(const float* bp) const {
    Requantization r;
    r.input_scale = input_q.scale;
    r.input_zero_point = input_q.zero_point;
    r.col_scales = wscales.data();
    r.sums = wsums.data();
    r.bias = bp;
    r.act = act;
    r.lo = lo;
    r.hi = hi;
    r.output_scale = output_q.scale;
    r.output_zero_point = output_q.zero_point;
    return r;
  }

  onednn::ProductPrim& prim(int threads, const amber_tensor_view& w) {
    using namespace onednn;
    return prims.get(threads, [&](int t) {
      omp_set_num_threads(t);
      const memory::desc src_md({rows, in_f}, int8() ? memory::data_type::u8 : type, memory::format_tag::ab);
      // int8 products accumulate into int32 and leave the bias to dequantize_products.
      const memory::desc dst_md({rows, out_f}, int8() ? memory::data_type::s32 : memory::data_type::f32,
                                memory::format_tag::ab);
      const bool with_bias = bias && !int8();
      auto p = std::make_unique<ProductPrim>();
      if (matmul) {  // weights as the [in, out] matrix
        const memory::desc wei_md({in_f, out_f}, type, memory::format_tag::any);
        const memory::desc bias_md =
            with_bias ? memory::desc({1, out_f}, memory::data_type::f32, memory::format_tag::ab) : memory::desc();
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md), user_scratchpad(),
                                        engine());
        p->keep(dnnl::matmul(pd), pd);
      } else {
        const memory::desc wei_md({out_f, in_f}, type, memory::format_tag::any);
        const memory::desc bias_md =
            with_bias ? memory::desc({out_f}, memory::data_type::f32, memory::format_tag::a) : memory::desc();
        dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src_md, wei_md, bias_md, dst_md);
        dnnl::inner_product_forward::primitive_desc pd(d, user_scratchpad(), engine());
        p->keep(dnnl::inner_product_forward(pd), pd);
      }
      const memory::desc user_wei = user_weights(w);
      if (user_wei != p->wei) p->packed = packs.get(user_data(w), user_wei, p->wei);
      return p;
    });
  }
  // The weights the primitive's are made from: the step's, or in int8 their quantized copy.
  const void* user_data(const amber_tensor_view& w) const { return int8() ? qweights.data() : w.data; }
  onednn::memory::desc user_weights(const amber_tensor_view& w) const {
    if (int8())
      return matmul ? onednn::memory::desc({in_f, out_f}, type, onednn::Dims{1, in_f})
                    : onednn::memory::desc({out_f, in_f}, type, onednn::Dims{in_f, 1});
    const onednn::Dims strides{out_f == 1 ? in_f : w.strides[0], in_f == 1 ? 1 : w.strides[1]};
    if (matmul)  // the [out, in] weight read as its transpose
      return onednn::memory::desc({in_f, out_f}, onednn::memory::data_type::f32, onednn::Dims{strides[1], strides[0]});
    return onednn::memory::desc({out_f, in_f}, onednn::memory::data_type::f32, strides);
  }
};

// Loaded f32 products of at most kDirectRows rows by at most kDirectWeights weights (256 KiB,
// in L2) run here, not on oneDNN, whose primitive costs about 0.9 us a call however small the
// product (LeNet's 1 x 84 x 10: 0.9 us against sgemm's 0.2). The zoo's recurrent model, forty
// such layers: 0.061 -> 0.030 ms a call at 1 thread (`amber bench`), 1.05 -> 0.55x ONNX Runtime.
constexpr int64_t kDirectRows = 4, kDirectWeights = 65536;

// y[r] += sum over i, in order, of x[r][i] times row i of the [in, out] weights: every row in
// one pass over the weights, vectorised across the outputs per ISA.
struct DirectProduct {
  const float* x;
  const float* wt;
  float* y;
  int64_t rows, in_f, out_f;
  static void run(char* const*, const int64_t*, int64_t, const void* ctx) {
    const DirectProduct& d = *static_cast<const DirectProduct*>(ctx);
    const float* w = d.wt;
    for (int64_t i = 0; i < d.in_f; ++i, w += d.out_f)
      for (int64_t r = 0; r < d.rows; ++r) {
        const float xv = d.x[r * d.in_f + i];
        float* __restrict yr = d.y + r * d.out_f;
        for (int64_t o = 0; o < d.out_f; ++o) yr[o] += xv * w[o];
      }
  }
};

// linear_ip's product for a state with `direct` weights: each row starts as the bias (or zeros).
int linear_direct(const amber_kernel_args* a, const LinearState& st, const float* x) {
  float* y = static_cast<float*>(a->outputs[0].data);
  const amber_tensor_view& bias = a->inputs[st.bias_input];
  const float* bp = present(bias) ? static_cast<const float*>(bias.data) : nullptr;
  const int64_t bs = bp ? bias_stride(bias) : 0;
  for (int64_t r = 0; r < st.rows; ++r)
    for (int64_t o = 0; o < st.out_f; ++o) y[r * st.out_f + o] = bp ? bp[o * bs] : 0.0f;
  static const InnerFn product = IsaVariants<DirectProduct>::pick();
  const DirectProduct d{x, st.direct.data(), y, st.rows, st.in_f, st.out_f};
  product(nullptr, nullptr, 0, &d);
  return 0;
}

// y[rows, out] = x[rows, in] w[out, in]^T (+ bias); x dense rows (f32, or u8 for a quantized
// linear layer's u8 input), y dense. In bf16 the rows are converted first; in int8 they are
// quantized first (unless u8) and the int32 products dequantized after (or requantized to u8).
int linear_ip(const amber_kernel_args* a, LinearState& st, const void* xin) {
  const float* xf = static_cast<const float*>(xin);
  if (!st.direct.empty()) return linear_direct(a, st, xf);
  using namespace onednn;
  const amber_tensor_view &w = a->inputs[1], &bias = a->inputs[st.bias_input];
  const int64_t out_f = st.out_f, n = st.rows * st.in_f;
  const int threads = std::max(1, a->num_threads);
  omp_set_num_threads(threads);
  onednn::ProductPrim& prim = st.prim(threads, w);
  const void* wei = prim.packed ? prim.packed->data : st.user_data(w);
  void* y = a->outputs[0].data;
  const void* x = xf;
  CallScratch scratch(a);
  char* rows = nullptr;  // the converted rows (rows_bytes())
  if (const size_t bytes = st.rows_bytes()) x = rows = scratch.take(bytes);
  const float* bp = present(bias) ? static_cast<const float*>(bias.data) : nullptr;
  std::vector<float> bbuf;
  const int64_t bs = bp ? bias_stride(bias) : 0;
  if (bp && bs != 1 && out_f > 1) {  // broadcast or strided: a dense copy
    bbuf.resize(size_t(out_f));
    for (int64_t j = 0; j < out_f; ++j) bbuf[size_t(j)] = bp[j * bs];
    bp = bbuf.data();
  }
  if (st.int8()) {
    uint8_t* xq = st.u8_in ? static_cast<uint8_t*>(const_cast<void*>(xin)) : reinterpret_cast<uint8_t*>(rows);
    char* params = rows + st.quantized_rows_bytes();
    float* row_scales = reinterpret_cast<float*>(params);
    int32_t* zero_points = reinterpret_cast<int32_t*>(params + LinearState::up(size_t(st.rows) * sizeof(float)));
    void* acc = st.u8_out ? params + st.row_params_bytes() : y;  // u8 out: the int32 products apart
    bool nan = false;
    if (st.fixed_quant) {
      std::fill(row_scales, row_scales + st.rows, st.input_q.scale);
      std::fill(zero_points, zero_points + st.rows, st.input_q.zero_point);
      if (!st.u8_in) nan = quantize_tensor(xf, n, st.input_q, xq);
    } else {
      quantize_rows(xf, st.rows, st.in_f, xq, row_scales, zero_points);
    }
    prim.prim->execute(
        {{DNNL_ARG_SRC, &prim.src, xq}, {DNNL_ARG_WEIGHTS, &prim.wei, wei}, {DNNL_ARG_DST, &prim.dst, acc}},
        scratch.rest(), scratch.rest_bytes());
    if (st.u8_out) {  // a NaN in an f32 source was quantized as level 0: u8 holds no NaN
      requantize_products(static_cast<const int32_t*>(acc), st.rows, out_f, st.requantization(bp),
                          static_cast<uint8_t*>(y));
      return 0;
    }
    dequantize_products(y, st.rows, out_f, row_scales, zero_points, st.wscales.data(), st.wsums.data(), bp);
    if (nan)  // infinities saturated; a row holding a NaN is NaN
      for (int64_t r = 0; r < st.rows; ++r)
        if (has_nan(xf + r * st.in_f, st.in_f))
          std::fill_n(static_cast<float*>(y) + r * out_f, out_f, std::numeric_limits<float>::quiet_NaN());
    return 0;
  }
  if (rows) to_bf16(xf, reinterpret_cast<uint16_t*>(rows), n);
  if (!bp) {
    prim.prim->execute({{DNNL_ARG_SRC, &prim.src, x}, {DNNL_ARG_WEIGHTS, &prim.wei, wei}, {DNNL_ARG_DST, &prim.dst, y}},
                       scratch.rest(), scratch.rest_bytes());
    return 0;
  }
  prim.prim->execute({{DNNL_ARG_SRC, &prim.src, x},
                      {DNNL_ARG_WEIGHTS, &prim.wei, wei},
                      {DNNL_ARG_BIAS, &prim.bias, bp},
                      {DNNL_ARG_DST, &prim.dst, y}},
                     scratch.rest(), scratch.rest_bytes());
  return 0;
}

std::unique_ptr<LinearState> linear_state(const amber_kernel_args* a);

bool use_ip(const amber_tensor_view& w, const amber_tensor_view& c, int64_t rows) {
  return w.cache_id != 0 && w.data && w.sizes[0] > 0 && w.sizes[1] > 0 && rows > 0 && c.ndim >= 1 &&
         c.strides[c.ndim - 1] == 1;
}

template <bool U8Out>
std::unique_ptr<LinearState> quantized_linear_state(const amber_kernel_args* a, bool setup);
template <bool U8Out>
std::unique_ptr<LinearState> quantized_linear_setup(const amber_kernel_args* a) {
  return quantized_linear_state<U8Out>(a, true);
}

// x's leading dims flattened: its rows gathered into a dense [rows, in_f] `packed`.
template <typename T>
const T* gather_rows(const amber_tensor_view& x, int64_t rows, int64_t in_f, std::vector<T>& packed) {
  const T* xp = static_cast<const T*>(x.data);
  const int64_t cs = x.strides[x.ndim - 1];
  packed.resize(size_t(rows * in_f));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = 0;
    for (int d = x.ndim - 2; d >= 0; --d) {
      off += (rem % x.sizes[d]) * x.strides[d];
      rem /= x.sizes[d];
    }
    T* dst = packed.data() + r * in_f;
    if (cs == 1)
      std::memcpy(dst, xp + off, size_t(in_f) * sizeof(T));
    else
      for (int64_t j = 0; j < in_f; ++j) dst[j] = xp[off + j * cs];
  }
  return packed.data();
}

// x's leading dims flattened into dense [rows, in_f] rows: x itself when it is laid out so,
// else gathered into `packed`.
template <typename T>
const T* dense_rows(const amber_tensor_view& x, int64_t rows, int64_t in_f, std::vector<T>& packed) {
  bool dense = in_f == 1 || x.strides[x.ndim - 1] == 1;
  int64_t expect = in_f;
  for (int d = x.ndim - 2; d >= 0 && dense; --d) {
    dense = x.sizes[d] == 1 || x.strides[d] == expect;
    expect *= x.sizes[d];
  }
  return dense ? static_cast<const T*>(x.data) : gather_rows(x, rows, in_f, packed);
}

// quantized_linear and quantized_linear.u8 (input f32 or u8, weight int8, weight_scale,
// bias): the int8 inner product above with the op's weights and input quantization; a state
// of its own for a call without setup or with weights, scales or bias computed per call (the
// setup's copy would be stale).
template <bool U8Out>
int quantized_linear_kernel(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[3];
  const int64_t in_f = w.sizes[1], out_f = w.sizes[0];
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.sizes[d];
  if (rows == 0 || out_f == 0) return 0;
  const auto immutable = [](const amber_tensor_view& v) { return v.ndim < 0 || (v.cache_id != 0 && v.data); };
  if (!int8_supported()) {
    const auto* st = static_cast<const LinearState*>(a->state);
    if (!st || !immutable(a->inputs[2]) || !immutable(bias))  // not checked at setup: checked now
      (void)given_scales(a->inputs[2], bias, out_f, U8Out ? "quantized_linear.u8" : "quantized_linear");
    return quantized_linear_direct<U8Out>(a, st && immutable(w) ? st->direct_weights.data() : nullptr);
  }
  std::unique_ptr<LinearState> own;
  if (in_f == 0) {  // no products: the bias (or zeros) through the epilogue
    own = quantized_linear_state<U8Out>(a, /*setup=*/false);
    const std::vector<int32_t> zeros(size_t(rows * out_f), 0);
    std::vector<float> b(size_t(out_f), 0.0f);
    if (present(bias))
      for (int64_t j = 0; j < out_f; ++j) b[size_t(j)] = static_cast<const float*>(bias.data)[j * bias.strides[0]];
    if (U8Out) {
      requantize_products(zeros.data(), rows, out_f, own->requantization(b.data()),
                          static_cast<uint8_t*>(a->outputs[0].data));
    } else {
      float* out = static_cast<float*>(a->outputs[0].data);
      for (int64_t r = 0; r < rows; ++r) std::copy(b.begin(), b.end(), out + r * out_f);
    }
    return 0;
  }
  std::vector<float> packed;
  std::vector<uint8_t> packed_u8;
  const void* xp = x.dtype == int32_t(DType::u8) ? static_cast<const void*>(dense_rows(x, rows, in_f, packed_u8))
                                                 : static_cast<const void*>(dense_rows(x, rows, in_f, packed));
  LinearState* st = static_cast<LinearState*>(a->state);
  if (!st || !immutable(w) || !immutable(a->inputs[2]) || !immutable(bias))
    st = (own = quantized_linear_setup<U8Out>(a)).get();
  return linear_ip(a, *st, xp);
}

// linear(input, weight, bias): [*, in] x [out, in]^T + bias. The leading dims of input are
// flattened into rows (in place when their strides allow, else packed). Immutable weights
// run on the inner product above, others on sgemm.
int linear_kernel(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &c = a->outputs[0];
  const int64_t in_f = w.sizes[1], out_f = w.sizes[0];
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.sizes[d];
  float* out = static_cast<float*>(c.data);
  // Row stride for the flattened leading dims, if uniform: the innermost leading dim of more
  // than one entry sets it (a size-1 dim's stride says nothing; taking it made the zoo
  // encoder's [128, 1, 256] view of strides [256, 32768, 1] look non-uniform and gathered
  // its rows on every call).
  int64_t rs = in_f, expect = 0;
  bool uniform = true, first = true;
  for (int d = x.ndim - 2; d >= 0 && uniform; --d) {
    if (x.sizes[d] == 1) continue;
    if (first) expect = rs = x.strides[d];
    first = false;
    uniform = x.strides[d] == expect;
    expect *= x.sizes[d];
  }
  std::vector<float> packed;
  const float* xp = static_cast<const float*>(x.data);
  int64_t cs = x.strides[x.ndim - 1];
  if (!uniform) {  // gather rows into a contiguous [rows, in] buffer
    xp = gather_rows(x, rows, in_f, packed);
    rs = in_f;
    cs = 1;
  }
  if (use_ip(w, c, rows)) {
    if (cs != 1 || (rows > 1 && rs != in_f)) {  // the primitive reads dense rows
      packed.resize(size_t(rows * in_f));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < in_f; ++j) packed[size_t(r * in_f + j)] = xp[r * rs + j * cs];
      xp = packed.data();
    }
    std::unique_ptr<LinearState> own;  // a call without setup: a state for this call alone
    LinearState* st = static_cast<LinearState*>(a->state);
    if (!st) st = (own = linear_state(a)).get();
    return linear_ip(a, *st, xp);
  }
  float beta = 0.0f;
  if (present(bias)) {  // C starts as the broadcast bias
    const float* bp = static_cast<const float*>(bias.data);
    const int64_t bs = bias_stride(bias);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < out_f; ++j) out[r * out_f + j] = bp[j * bs];
    beta = 1.0f;
  }
  const Mat A{xp, rows, in_f, rs, cs};
  const Mat B{static_cast<const float*>(w.data), in_f, out_f, w.strides[1], w.strides[0]};  // weight^T
  return sgemm(A, B, out, out_f, beta, a->num_threads) ? 0 : fail(a, "oneDNN sgemm failed");
}

// fused_linear: linear's product, then its activation by the op's formula over the output (dense
// [rows, out]) as it leaves the product, in the same call: oneDNN's eltwise post-ops would lose
// NaN in clip (see conv.cpp) and divide per element in swish, and a ReLU of its own after the
// layer reads and writes the output again through memory.
int fused_linear_kernel(const amber_kernel_args* a) {
  namespace fa = op_attrs::fused_linear;
  const int rc = linear_kernel(a);
  if (rc != 0) return rc;
  const amber_tensor_view& y = a->outputs[0];
  activation_dense(static_cast<float*>(y.data), numel(y), act_of(a->attrs[fa::activation]),
                   float(attr_float(a, fa::min_val)), float(attr_float(a, fa::max_val)));
  return 0;
}

// Setup of quantized_linear and quantized_linear.u8 (and their state for a call without one;
// without `setup`, the parameters alone, for a call with no products): the int8 inner product
// with the op's weights copied dense, their scales and sums, the input's quantization and the
// u8 output's.
template <bool U8Out>
std::unique_ptr<LinearState> quantized_linear_state(const amber_kernel_args* a, bool setup) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1];
  auto st = std::make_unique<LinearState>();
  st->rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) st->rows *= x.sizes[d];
  st->in_f = w.sizes[1];
  st->out_f = w.sizes[0];
  if (setup && (st->rows == 0 || st->in_f == 0 || st->out_f == 0)) return nullptr;  // no product to set up
  st->bias_input = 3;
  st->bias = present(a->inputs[3]);
  st->type = onednn::memory::data_type::s8;
  st->matmul = use_matmul(st->rows, st->out_f, st->type);
  st->fixed_quant = true;
  namespace qa = op_attrs::quantized_linear;
  namespace ua = op_attrs::quantized_linear_u8;
  static_assert(ua::input_scale == qa::input_scale && ua::input_zero_point == qa::input_zero_point);
  st->input_q.scale = float(attr_float(a, qa::input_scale));
  st->input_q.zero_point = int32_t(attr_int(a, qa::input_zero_point));
  st->u8_in = x.dtype == int32_t(DType::u8);
  if constexpr (U8Out) {
    st->u8_out = true;
    st->act = act_of(a->attrs[ua::activation]);
    st->lo = float(attr_float(a, ua::min_val));
    st->hi = float(attr_float(a, ua::max_val));
    st->output_q.scale = float(attr_float(a, ua::output_scale));
    st->output_q.zero_point = int32_t(attr_int(a, ua::output_zero_point));
  }
  // Setup sees the contents of constants only: a weight, scale or bias computed in the graph
  // has no data then, and each call makes its own state from what it reads (a call has them all).
  const auto has = [](const amber_tensor_view& v) { return v.ndim < 0 || v.data; };
  const bool contents = has(w) && has(a->inputs[2]) && has(a->inputs[3]);
  if (contents)
    st->wscales =
        given_scales(a->inputs[2], a->inputs[3], st->out_f, U8Out ? "quantized_linear.u8" : "quantized_linear");
  if (setup && !int8_supported()) {  // quant_direct.cpp's loops: their weights and scratch, no primitive
    if (has(w)) st->direct_weights = quantized_linear_direct_weights(w);
    st->ws = quantized_linear_direct_workspace(a);
    return st;
  }
  if (!contents) {  // setup of a step whose calls make their own states: their converted rows
    st->ws = st->rows_bytes();
    return st;
  }
  st->qweights.resize(size_t(st->out_f * st->in_f));
  st->wsums.assign(size_t(st->out_f), 0);
  const int8_t* wp = static_cast<const int8_t*>(w.data);
  for (int64_t o = 0; o < st->out_f; ++o)
    for (int64_t i = 0; i < st->in_f; ++i) {
      const int8_t v = wp[o * w.strides[0] + i * w.strides[1]];
      st->qweights[size_t(o * st->in_f + i)] = v;
      st->wsums[size_t(o)] += v;
    }
  if (!setup) return st;
  const int threads = std::max(1, a->num_threads);
  st->ws = st->rows_bytes() + st->prim(threads, w).prim->scratch_bytes();
  return st;
}

// Setup of linear. With immutable weights: the inner product's primitive for this shape and
// thread count (and for one thread), the weights packed into its layout. On sgemm: oneDNN
// generates its kernels on first use, so one small product of the same kind (transposes,
// beta, at most 64 rows of zeros) runs now, reading the immutable weights once as well; that
// leaves no state.
std::unique_ptr<LinearState> linear_state(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2];
  if (w.cache_id == 0 || !w.data) return nullptr;  // weights computed per call: nothing to do
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.sizes[d];
  const int64_t in_f = w.sizes[1], out_f = w.sizes[0];
  if (use_ip(w, a->outputs[0], rows)) {
    auto st = std::make_unique<LinearState>();
    st->rows = rows;
    st->in_f = in_f;
    st->out_f = out_f;
    st->bias = present(bias);
    if (a->precision == AMBER_PRECISION_DYNAMIC_INT8 && in_f <= kMaxInt8Reduction) {  // else f32
      st->type = onednn::memory::data_type::s8;
      st->qweights.resize(size_t(out_f * in_f));
      st->wscales.resize(size_t(out_f));
      st->wsums.resize(size_t(out_f));
      const float* wp = static_cast<const float*>(w.data);
      quantize_channels(wp, out_f, in_f, w.strides[0], w.strides[1], st->qweights.data(), st->wscales.data(),
                        st->wsums.data());
      // The f32 weights mapped from an archive are not read again.
      drop_file_pages(wp, size_t((out_f - 1) * w.strides[0] + (in_f - 1) * w.strides[1] + 1) * sizeof(float));
    } else {
      st->type = onednn::product_type(a, w);
    }
    st->matmul = use_matmul(rows, out_f, st->type);
    if (st->type == onednn::memory::data_type::f32 && rows <= kDirectRows && in_f * out_f <= kDirectWeights) {
      st->direct.resize(size_t(in_f * out_f));
      const float* wp = static_cast<const float*>(w.data);
      for (int64_t i = 0; i < in_f; ++i)
        for (int64_t o = 0; o < out_f; ++o) st->direct[size_t(i * out_f + o)] = wp[o * w.strides[0] + i * w.strides[1]];
      return st;
    }
    const int threads = std::max(1, a->num_threads);
    if (st->type != onednn::memory::data_type::f32) {
      try {
        (void)st->prim(threads, w);
      } catch (const dnnl::error&) {  // no bf16 or int8 implementation of this shape: f32
        st->type = onednn::memory::data_type::f32;
        st->qweights = {};
        st->wscales = {};
        st->wsums = {};
      }
    }
    st->ws = st->rows_bytes() + st->prim(threads, w).prim->scratch_bytes();
    if (threads > 1) (void)st->prim(1, w);
    return st;
  }
  rows = std::clamp<int64_t>(rows, 1, 64);
  std::vector<float> zeros(size_t(rows * in_f)), out(size_t(rows * out_f));
  const Mat A{zeros.data(), rows, in_f, in_f, 1};
  const Mat B{static_cast<const float*>(w.data), in_f, out_f, w.strides[1], w.strides[0]};
  if (!sgemm(A, B, out.data(), out_f, present(bias) ? 1.0f : 0.0f, a->num_threads))
    throw std::runtime_error("oneDNN sgemm failed");
  return nullptr;
}

template <int (*F)(const amber_kernel_args*)>
struct Guarded {
  template <typename T>
  struct Kernel {
    static int run(const amber_kernel_args* a) {
      return guarded(a, [&] { return F(a); });
    }
  };
};

AMBER_CPU_KERNELS(gemm) {
  register_typed<Guarded<mm_kernel>::Kernel, float>("mm");
  register_typed<Guarded<bmm_kernel>::Kernel, float>("bmm");
  register_typed<Guarded<matmul_kernel>::Kernel, float>("matmul");
  using State = onednn::StateOf<LinearState, linear_state>;
  register_kernel("linear", DType::f32,
                  amber_kernel{&Guarded<linear_kernel>::Kernel<float>::run, State::setup, State::destroy, nullptr});
  register_kernel(
      "fused_linear", DType::f32,
      amber_kernel{&Guarded<fused_linear_kernel>::Kernel<float>::run, State::setup, State::destroy, nullptr});
  using QuantState = onednn::StateOf<LinearState, quantized_linear_setup<false>>;
  using QuantU8State = onednn::StateOf<LinearState, quantized_linear_setup<true>>;
  for (DType t : {DType::f32, DType::u8}) {  // the rows as f32 (quantized as they enter) or u8
    register_kernel("quantized_linear", t,
                    amber_kernel{&Guarded<quantized_linear_kernel<false>>::Kernel<float>::run, QuantState::setup,
                                 QuantState::destroy, nullptr});
    register_kernel("quantized_linear.u8", t,
                    amber_kernel{&Guarded<quantized_linear_kernel<true>>::Kernel<float>::run, QuantU8State::setup,
                                 QuantU8State::destroy, nullptr});
  }
}

}  // namespace
}  // namespace amber::cpu
