// CUDA kernels for matrix products: mm, bmm, matmul (torch.matmul's broadcasting and 1-D
// operands), linear (bias in cuBLASLt's epilogue) and fused_linear (its activation a pass after),
// on cuBLASLt in plain f32 (TF32 tensor cores
// only under AMBER_PRECISION_TF32; a linear layer's product in bf16 or f16 with f32 accumulation
// and output under AMBER_PRECISION_BF16 / F16: weights converted at setup, rows per call), and on
// bf16 or f16 operands (a model in 16 bits) with f32 accumulation, the bias added in f32 and the
// output rounded once to the operands' type.
// Row-major C = A B is computed as column-major C^T = B^T A^T, so an operand with a unit
// column stride is used as is and one with a unit row stride through a transpose; an
// operand with neither is copied to dense rows first (in the call's workspace). Batches whose
// offsets follow one stride run as one strided-batched product, others one product each, on
// the fastest of cuBLASLt's heuristic's first few algorithms (up to 4 MiB of workspace, the
// operands' alignment), timed on the first call of each geometry. The step's state holds the
// cuBLASLt handle and those choices.

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "amber/kernels/cuda/activation.cuh"
#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/device_memory.h"
#include "amber/kernels/cuda/half_products.h"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/stopwatch.h"
#include "amber/kernels/cuda/switches.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

// Workspace offered to cuBLASLt's heuristic for each product (its split-K and other algorithms
// that need one; without it, as with an algo of NULL, only workspace-free ones are eligible):
// 4 MiB, NVIDIA's recommendation before Hopper (32 MiB there) and PyTorch's on large Ampere
// GPUs. A plan's steps share one scratch area, so a model holds it once per call in flight.
constexpr size_t kLtWorkspace = size_t(4) << 20;

// Everything cuBLASLt's heuristic sees of one product: shapes, strides, batching, types,
// compute type, the bias epilogue (by its alignment), the ReLU epilogue, the operands'
// alignments and the room.
using ChoiceKey = std::array<int64_t, 21>;
struct Choice {
  cublasLtMatmulAlgo_t algo{};
  bool found = false;    // false: no algorithm found, cuBLASLt's implicit choice (algo NULL)
  bool relu_ok = false;  // with the ReLU epilogue: its algorithm kept NaN (relu_keeps_nan)
};
// multiply()'s answer when it was asked for the ReLU epilogue and ran nothing: gemm() then runs
// the product with the plain epilogue, and fused_linear its activation pass after.
constexpr int kNoReluEpilogue = -1;
// The most scratch relu_keeps_nan allocates; a larger product takes no ReLU epilogue.
constexpr size_t kMaxProbeBytes = size_t(64) << 20;
constexpr size_t kMaxChoices = 16;  // a step sees one geometry, a few with matmul's batches
constexpr int kCandidates = 8;      // the heuristic's algorithms timed for a new geometry
constexpr int kTimedRuns = 3;       // runs of each candidate after its first

struct GemmState {
  cublasLtHandle_t handle = nullptr;
  // cuBLASLt's choice per geometry, asked once: later calls of the step that run node by node
  // (loop bodies, graphs off, eager calls) skip the query. Calls of many threads share it.
  mutable std::mutex choices_mutex;
  mutable std::vector<std::pair<ChoiceKey, Choice>> choices;  // at most kMaxChoices
  // A linear layer's weights in 16 bits ([out, in] dense) and their type (kBF16, kF16), under a
  // reduced precision; -1 and none in f32.
  int32_t half = -1;
  DeviceBuffer weights;
  // fused_linear: a geometry's ReLU epilogue lost NaN (relu_keeps_nan), so the step's later
  // calls take the plain epilogue and the activation pass without asking.
  mutable std::atomic<bool> relu_refused{false};
  ~GemmState() {
    if (handle) cublasLtDestroy(handle);
  }
};

int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  std::unique_lock no_capture(capture_lock());
  DeviceScope scope(a->device);
  auto s = std::make_unique<GemmState>();
  const cublasStatus_t st = cublasLtCreate(&s->handle);
  if (st != CUBLAS_STATUS_SUCCESS) return fail(a, "cublasLtCreate failed (status %d)", int(st));
  // Room to copy the operands that have no unit stride in their matrix dims into dense rows
  // (gemm() packs exactly those; 1-D operands are rows or columns, always usable).
  size_t bytes = 0;
  for (int i = 0; i < 2 && i < a->n_inputs; ++i) {
    const amber_tensor_view& v = a->inputs[i];
    if (!present(v) || v.ndim < 2) continue;
    // (No rows == 1 shortcut: linear flattens leading dims into rows.)
    const int64_t cols = v.sizes[v.ndim - 1], rs = v.strides[v.ndim - 2], cs = v.strides[v.ndim - 1];
    if (!(cs == 1 || cols == 1 || rs == 1)) bytes += padded(size_t(numel(v)) * sizeof(float));
  }
  *workspace_bytes = bytes + kLtWorkspace;
  *state = s.release();
  return 0;
}

// linear's setup: under AMBER_PRECISION_BF16 / F16 with immutable weights, the weights
// converted once to dense [out, in] 16-bit (f16 refused for a weight beyond its range: the
// layer stays f32), and room for each call's rows in 16 bits at the workspace's start.
int linear_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  if (setup(a, state, workspace_bytes) != 0) return 1;
  // Taken back until it succeeds: a failed setup leaves no state.
  std::unique_ptr<GemmState> s(static_cast<GemmState*>(*state));
  *state = nullptr;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1];
  const int32_t half = half_product_type(a, w);
  if (half < 0 || x.dtype != kF32) {
    *state = s.release();
    return 0;
  }
  std::unique_lock no_capture(capture_lock());
  DeviceScope scope(a->device);
  const int64_t out_f = w.sizes[0], in_f = w.sizes[1];
  const size_t wbytes = size_t(out_f * in_f) * 2;
  if (s->weights.take(a, wbytes, "linear", "its weights in 16 bits") != 0) return 1;
  amber_tensor_view dense = w;
  dense.dtype = half;
  dense.data = s->weights.get();
  dense.cache_id = 0;
  dense.strides[0] = in_f;
  dense.strides[1] = 1;
  const int rc = convert_weights(a, dense, w);
  if (rc > 0) return 1;
  if (rc < 0) {  // beyond f16's range: f32 products
    s->weights.reset();
  } else {
    s->half = half;
    *workspace_bytes += padded(size_t(numel(x)) * 2);  // the rows in 16 bits
  }
  *state = s.release();
  return 0;
}
void destroy(void* state) { delete static_cast<GemmState*>(state); }

// A batch of [rows, cols] matrices: element strides, and each batch's element offset; f32, or
// 16-bit (kBF16, kF16: a linear layer's converted rows and weights, or a 16-bit op's operands).
struct Mat {
  const void* data;
  int64_t rows, cols, rs, cs;
  std::vector<int64_t> offsets;  // per batch
  int32_t type = kF32;
  const void* at(int64_t offset) const { return static_cast<const char*>(data) + offset * int64_t(itemsize(type)); }
};

cudaDataType_t cuda_type(int32_t code) { return code == kBF16 ? CUDA_R_16BF : code == kF16 ? CUDA_R_16F : CUDA_R_32F; }

// Dense row copy of the matrices that have no unit stride (into dst); the matrix then views it.
template <typename W>  // the element's width
struct PackF {
  __device__ void operator()(char* const* p) const { *reinterpret_cast<W*>(p[0]) = *reinterpret_cast<const W*>(p[1]); }
};

int pack(const amber_kernel_args* a, Mat& m, char* dst) {
  // Every batch's matrix copied to dst in order, as [batches, rows, cols] dense.
  const int64_t batches = int64_t(m.offsets.size()), item = int64_t(itemsize(m.type));
  for (int64_t b = 0; b < batches; ++b) {
    amber_tensor_view src{}, out{};
    src.data = const_cast<void*>(m.at(m.offsets[size_t(b)]));
    src.dtype = out.dtype = m.type;
    src.ndim = out.ndim = 2;
    src.sizes[0] = out.sizes[0] = m.rows;
    src.sizes[1] = out.sizes[1] = m.cols;
    src.strides[0] = m.rs;
    src.strides[1] = m.cs;
    out.strides[0] = m.cols;
    out.strides[1] = 1;
    out.data = dst + b * m.rows * m.cols * item;
    const amber_tensor_view* v[2] = {&out, &src};
    const int64_t items[2] = {item, item};
    const int rc = item == 2 ? map<2>(a, v, items, PackF<uint16_t>{}, "matmul: packing an operand")
                             : map<2>(a, v, items, PackF<uint32_t>{}, "matmul: packing an operand");
    if (rc != 0) return 1;
  }
  m.data = dst;
  m.rs = m.cols;
  m.cs = 1;
  for (int64_t b = 0; b < batches; ++b) m.offsets[size_t(b)] = b * m.rows * m.cols;
  return 0;
}

// The largest power of two up to 256 that divides p's address (cuBLASLt's alignment preferences).
uint32_t alignment(const void* p) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < 256 && x % (uintptr_t(a) * 2) == 0) a *= 2;
  return a;
}

// Whether cuBLASLt can read m in place: a unit stride in one dim and, in the other, a stride
// that steps past it (the leading dimension cuBLASLt needs is at least that dim's length, so
// rows of stride 0, as an expand makes them, would be read as separate rows past the buffer's
// end); others are packed into dense rows first.
bool usable(const Mat& m) {
  return ((m.cs == 1 || m.cols == 1) && (m.rows == 1 || m.rs >= std::max<int64_t>(m.cols, 1))) ||
         ((m.rs == 1 || m.rows == 1) && (m.cols == 1 || m.cs >= std::max<int64_t>(m.rows, 1)));
}

// The stride between consecutive batches when the offsets follow one, else -1.
int64_t batch_stride(const std::vector<int64_t>& o) {
  if (o.size() < 2) return 0;
  const int64_t s = o[1] - o[0];
  for (size_t i = 2; i < o.size(); ++i)
    if (o[i] - o[i - 1] != s) return -1;
  return s;
}

struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  ~Layout() {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

// One operand of the column-major product: `m` (row-major) seen transposed. Returns the op.
cublasOperation_t describe(const Mat& m, int64_t batches, int64_t bstride, Layout& out) {
  // m^T column-major is m row-major: with a unit column stride it is stored as is.
  const bool direct = m.cs == 1 || m.cols == 1;
  const uint64_t rows = uint64_t(direct ? m.cols : m.rows), cols = uint64_t(direct ? m.rows : m.cols);
  int64_t ld = direct ? m.rs : m.cs;
  ld = std::max<int64_t>({ld, int64_t(rows), 1});
  cublasLtMatrixLayoutCreate(&out.l, cuda_type(m.type), rows, cols, ld);
  if (batches > 1) {
    const int32_t count = int32_t(batches);
    cublasLtMatrixLayoutSetAttribute(out.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    cublasLtMatrixLayoutSetAttribute(out.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bstride, sizeof bstride);
  }
  return direct ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// The output of a product: its data and type (kF32, or the 16-bit operands' type), row stride
// ldc and batch stride cstride in elements.
struct Out {
  void* data;
  int32_t type;
  int64_t ldc, cstride;
  void* at(int64_t c) const { return static_cast<char*>(data) + c * cstride * int64_t(itemsize(type)); }
};

// One product's operands as cuBLASLt sees them (run_product; fastest() times candidates on them).
struct Operands {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;  // cuBLASLt's A, B (our B, A) and C = D
  const void *ap, *bp;
  void* cp;
  void* workspace;
  size_t room;
};

cublasStatus_t run_product(const GemmState& st, const Operands& o, const cublasLtMatmulAlgo_t* algo,
                           cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(st.handle, o.desc, &one, o.ap, o.a, o.bp, o.b, &zero, o.cp, o.c, o.cp, o.c, algo, o.workspace,
                        o.room, stream);
}

// The fastest of the heuristic's results (ranked, each within the room), timed with CUDA events
// on the call's own operands: its output is overwritten by the call after. Each candidate runs
// once, then kTimedRuns times for its best unless that first run took over twice the best so far.
// Returns the index of the fastest, or 0 when none could be timed: the stream is being recorded
// into a graph, another thread is recording (its capture holds capture_lock; timing waits on the
// device), no events, or AMBER_CUDA_TUNING=0 (switches.h). `us` gets each candidate's time (-1
// where it did not run). The caller times only choices it keeps: timing runs each candidate
// several times and waits for them.
int fastest(const GemmState& st, const Operands& o, const cublasLtMatmulHeuristicResult_t* results, int n,
            cudaStream_t stream, float* us) {
  std::fill(us, us + n, -1.0f);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (n < 2 || !timed_choices() || cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    return 0;
  }
  std::unique_lock no_capture(capture_lock(), std::try_to_lock);
  if (!no_capture.owns_lock()) return 0;
  Stopwatch watch(stream);
  if (!watch.ok()) return 0;
  int best = -1;
  float best_ms = 0;
  for (int i = 0; i < n; ++i) {
    const float ms =
        watch.best_ms([&] { return run_product(st, o, &results[i].algo, stream) == CUBLAS_STATUS_SUCCESS; }, kTimedRuns,
                      best >= 0 ? 2 * best_ms : FLT_MAX);
    if (ms < 0) continue;  // refused or failed: not a candidate
    us[i] = ms * 1000.0f;
    if (best < 0 || ms < best_ms) best = i, best_ms = ms;
  }
  return best < 0 ? 0 : best;
}

// AMBER_CUDA_GEMM_LOG=1: each product's choice printed to stderr when its geometry is first seen
// (sizes, types, how many candidates, the chosen one's time against the heuristic's first), for a
// GPU session's diagnostics (scripts/gpu_check.sh's profile).
void log_choice(int64_t m, int64_t k, int64_t n, int64_t batches, int32_t type, bool tf32, int count, int chosen,
                const float* us) {
  if (!env_is_one("AMBER_CUDA_GEMM_LOG")) return;
  const char* name = type == kBF16 ? "bf16" : type == kF16 ? "f16" : tf32 ? "tf32" : "f32";
  std::fprintf(stderr, "amber cuda: product [%lld, %lld] x [%lld, %lld] x %lld in %s: ", (long long)m, (long long)k,
               (long long)k, (long long)n, (long long)batches, name);
  if (count == 0) {
    std::fprintf(stderr, "no algorithm from the heuristic, cuBLASLt's implicit choice\n");
  } else if (us[chosen] < 0) {
    std::fprintf(stderr, "the heuristic's first of %d, not timed\n", count);
  } else {
    std::fprintf(stderr, "candidate %d of %d, %.1f us (the heuristic's first: %.1f us)\n", chosen + 1, count,
                 double(us[chosen]), double(us[0]));
  }
}

// Whether cuBLASLt's ReLU epilogue keeps NaN for one product: NVIDIA documents
// CUBLASLT_EPILOGUE_RELU(_BIAS) as x := max(x, 0), silent on NaN, where Amber's ReLU (clamp to
// [0, inf]) keeps it. The product's algorithm (NULL: cuBLASLt's implicit one) runs once on
// scratch operands of the same layouts (o's desc and layouts; its bias pointer swapped for the
// scratch's and back): zero weights, NaN across the input's first and last rows, a bias of -1
// and 2 by turns; the output must be NaN across those rows and max(bias, 0) elsewhere. A GEMM's
// kernels take the same path whatever the values, so what holds there holds for the call's own
// operands. false as well when the scratch would pass kMaxProbeBytes or is not to be had;
// nullopt when it cannot run now: the stream is being recorded, or another thread is recording
// (capture_lock).
std::optional<bool> relu_keeps_nan(const GemmState& st, const Operands& o, const Mat& A, const Mat& B, const Out& C,
                                   int64_t n, bool with_bias, const cublasLtMatmulAlgo_t* algo, cudaStream_t stream,
                                   int32_t device) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  std::unique_lock no_capture(capture_lock(), std::try_to_lock);
  if (!no_capture.owns_lock()) return std::nullopt;
  const int64_t m = A.rows, k = A.cols;
  const size_t ia = itemsize(A.type), ib = itemsize(B.type), ic = itemsize(C.type);
  const int64_t span_a = (m - 1) * A.rs + (k - 1) * A.cs + 1, span_b = (k - 1) * B.rs + (n - 1) * B.cs + 1,
                span_c = (m - 1) * C.ldc + n;
  const size_t bytes_a = padded(size_t(span_a) * ia), bytes_b = padded(size_t(span_b) * ib),
               bytes_c = padded(size_t(span_c) * ic), bytes_bias = padded(size_t(n) * ic);
  const size_t total = bytes_a + bytes_b + bytes_c + bytes_bias;
  if (total > kMaxProbeBytes) return false;  // not probed: no epilogue, for good
  // The host's picture of the scratch (input, weights, output, bias; zeros but for NaN, -1 and 2
  // in each type's bits), written at element i of the part starting at byte `at`.
  std::vector<uint8_t> host(total, 0);
  auto put = [&](size_t at, int64_t i, int32_t type, int what) {  // 0: NaN, 1: -1, 2: 2
    if (type == kF32) {
      const float v = what == 0 ? NAN : what == 1 ? -1.0f : 2.0f;
      std::memcpy(host.data() + at + i * 4, &v, 4);
    } else {
      static constexpr uint16_t kF16Bits[3] = {0x7e00, 0xbc00, 0x4000}, kBF16Bits[3] = {0x7fc0, 0xbf80, 0x4000};
      const uint16_t v = (type == kF16 ? kF16Bits : kBF16Bits)[what];
      std::memcpy(host.data() + at + i * 2, &v, 2);
    }
  };
  for (const int64_t r : {int64_t(0), m - 1})
    for (int64_t j = 0; j < k; ++j) put(0, r * A.rs + j * A.cs, A.type, 0);
  for (int64_t j = 0; j < n; ++j) put(bytes_a + bytes_b + bytes_c, j, C.type, j % 2 == 0 ? 1 : 2);
  DeviceBuffer scratch;  // (under the cap: none to be had is no epilogue, as a probe too large)
  if (!scratch.try_take(device, total)) return false;
  char* const dev = scratch.as<char>();
  const void* probe_bias = dev + bytes_a + bytes_b + bytes_c;
  Operands p = o;
  p.ap = dev + bytes_a;  // cuBLASLt's A is our B
  p.bp = dev;
  p.cp = dev + bytes_a + bytes_b;
  std::vector<uint8_t> out(size_t(span_c) * ic);
  bool ran = cudaMemcpyAsync(dev, host.data(), total, cudaMemcpyHostToDevice, stream) == cudaSuccess;
  if (ran && with_bias) {
    const void* real = nullptr;
    size_t written = 0;
    cublasLtMatmulDescGetAttribute(o.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &real, sizeof real, &written);
    cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &probe_bias, sizeof probe_bias);
    ran = run_product(st, p, algo, stream) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulDescSetAttribute(o.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &real, sizeof real);
  } else if (ran) {
    ran = run_product(st, p, algo, stream) == CUBLAS_STATUS_SUCCESS;
  }
  ran = ran && cudaMemcpyAsync(out.data(), p.cp, out.size(), cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
        cudaStreamSynchronize(stream) == cudaSuccess;
  (void)cudaGetLastError();
  if (!ran) return false;  // the algorithm refused: no ReLU epilogue for this geometry
  // What the output holds at (r, j): 0 NaN, 1 zero (either sign), 2 two, 3 anything else.
  auto kind = [&](int64_t r, int64_t j) {
    const int64_t i = r * C.ldc + j;
    if (C.type == kF32) {
      float v;
      std::memcpy(&v, out.data() + i * 4, 4);
      return std::isnan(v) ? 0 : v == 0.0f ? 1 : v == 2.0f ? 2 : 3;
    }
    uint16_t v;
    std::memcpy(&v, out.data() + i * 2, 2);
    const uint16_t exp = C.type == kF16 ? 0x7c00 : 0x7f80;
    return (v & exp) == exp && (v & ~exp & 0x7fff) != 0 ? 0 : (v & 0x7fff) == 0 ? 1 : v == 0x4000 ? 2 : 3;
  };
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const int want = r == 0 || r == m - 1 ? 0 : with_bias && j % 2 == 1 ? 2 : 1;
      if (kind(r, j) != want) return false;
    }
  return true;
}

// gemm()'s product on operands cuBLASLt reads as they are (the packed ones in the workspace's
// first `used` bytes): the choice of algorithm per geometry, then one cuBLASLt call per batch
// that its strides cannot take in one. With relu, the ReLU epilogue as well (RELU_BIAS, or RELU
// without a bias), for one product whose algorithm keeps NaN through it (relu_keeps_nan, asked
// on the geometry's first call); otherwise nothing runs and the answer is kNoReluEpilogue.
int multiply(const amber_kernel_args* a, const Mat& A, const Mat& B, const Out& C, const void* bias, size_t used,
             bool relu) {
  const int64_t ldc = C.ldc, cstride = C.cstride;
  const auto* st = static_cast<const GemmState*>(a->state);
  const int64_t m = A.rows, k = A.cols, n = B.cols, batches = int64_t(A.offsets.size());
  char* ws = static_cast<char*>(a->workspace);
  DeviceScope scope(a->device);
  const int64_t sa = batch_stride(A.offsets), sb = batch_stride(B.offsets);
  const bool one_call = batches == 1 || (sa >= 0 && sb >= 0);
  const int64_t calls = one_call ? 1 : batches, per_call = one_call ? batches : 1;

  cublasLtMatmulDesc_t desc = nullptr;
  // Plain f32 unless the model was loaded with Precision::tf32 (tensor cores on TF32 inputs);
  // 16-bit operands accumulate in f32 (their products are exact in it).
  const cublasComputeType_t compute =
      a->precision == AMBER_PRECISION_TF32 && A.type == kF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
    return fail(a, "cublasLtMatmulDescCreate failed");
  struct DescGuard {
    cublasLtMatmulDesc_t d;
    ~DescGuard() { cublasLtMatmulDescDestroy(d); }
  } guard{desc};
  // D^T (n x m) = op(B^T) (n x k) * op(A^T) (k x m): cuBLASLt's A is our B, its B our A.
  Layout lb, la, lc;
  const cublasOperation_t opb = describe(B, per_call, sb, lb), opa = describe(A, per_call, sa, la);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opb, sizeof opb);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opa, sizeof opa);
  if (bias || relu) {
    const cublasLtEpilogue_t epi =
        relu ? (bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU) : CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (bias) cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  cublasLtMatrixLayoutCreate(&lc.l, cuda_type(C.type), uint64_t(n), uint64_t(m), std::max<int64_t>(ldc, n));
  if (per_call > 1) {
    const int32_t count = int32_t(per_call);
    cublasLtMatrixLayoutSetAttribute(lc.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    cublasLtMatrixLayoutSetAttribute(lc.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &cstride, sizeof cstride);
  }
  // cuBLASLt's first choice for the product with the workspace left and the operands' actual
  // alignment (its preferences assume 256-byte aligned buffers); none found: its implicit choice.
  const size_t room = a->workspace_bytes - used;
  uint32_t align_a = 256, align_b = 256, align_c = 256;  // cuBLASLt's A is our B, its B our A
  for (int64_t c = 0; c < calls; ++c) {
    align_a = std::min(align_a, alignment(B.at(B.offsets[size_t(c)])));
    align_b = std::min(align_b, alignment(A.at(A.offsets[size_t(c)])));
    align_c = std::min(align_c, alignment(C.at(c)));
  }
  const int64_t types = int64_t(compute) * 16 + C.type;  // with A.type and B.type below
  const ChoiceKey key = {
      m,       n,       k,       per_call,      sa,          sb,     cstride, ldc,
      A.rs,    A.cs,    A.type,  B.rs,          B.cs,        B.type, types,   bias ? int64_t(alignment(bias)) : 0,
      align_a, align_b, align_c, int64_t(room), relu ? 1 : 0};
  Choice choice;
  bool known = false;
  {
    std::lock_guard lock(st->choices_mutex);
    for (const auto& [k2, c] : st->choices)
      if (k2 == key) {
        choice = c;
        known = true;
        break;
      }
  }
  if (known && relu && !choice.relu_ok) return kNoReluEpilogue;
  cublasLtMatmulPreference_t pref = nullptr;
  if (!known && cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS) {
    const uint64_t max_ws = room;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof align_a);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof align_b);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c);
    if (C.type != kF32) {
      // A 16-bit output: split-K partial sums kept in f32 or none, never in the output's type
      // (in place and output-type reductions round every partial sum to 16 bits).
      const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
    }
    cublasLtMatmulHeuristicResult_t results[kCandidates]{};
    int returned = 0;
    if (cublasLtMatmulAlgoGetHeuristic(st->handle, desc, lb.l, la.l, lc.l, lc.l, pref, kCandidates, results,
                                       &returned) != CUBLAS_STATUS_SUCCESS)
      returned = 0;
    int count = 0;  // the usable results, kept in their ranking
    for (int i = 0; i < returned; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= room) results[count++] = results[i];
    float us[kCandidates];
    std::fill(us, us + kCandidates, -1.0f);
    int chosen = 0;
    // Timed only when the choice will be kept: a step past kMaxChoices geometries (eager calls
    // of ever new shapes) asks the heuristic on each call and takes its first.
    bool room_to_keep = false;
    {
      std::lock_guard lock(st->choices_mutex);
      room_to_keep = st->choices.size() < kMaxChoices;
    }
    if (count > 0) {
      const Operands o{desc, lb.l, la.l, lc.l, B.at(B.offsets[0]), A.at(A.offsets[0]), C.at(0), ws + used, room};
      if (room_to_keep) chosen = fastest(*st, o, results, count, stream_of(a), us);
      choice.found = true;
      choice.algo = results[chosen].algo;
    }
    log_choice(m, k, n, batches, A.type, compute == CUBLAS_COMPUTE_32F_FAST_TF32, count, chosen, us);
    cublasLtMatmulPreferenceDestroy(pref);
    if (relu) {
      // The ReLU epilogue only where its algorithm keeps NaN; not asked (a recording, another
      // thread's, no room to keep the answer): nothing kept, asked again on a later call.
      const Operands o{desc, lb.l, la.l, lc.l, B.at(B.offsets[0]), A.at(A.offsets[0]), C.at(0), ws + used, room};
      const std::optional<bool> keeps =
          room_to_keep ? relu_keeps_nan(*st, o, A, B, C, n, bias != nullptr, choice.found ? &choice.algo : nullptr,
                                        stream_of(a), a->device)
                       : std::nullopt;
      if (env_is_one("AMBER_CUDA_GEMM_LOG"))
        std::fprintf(stderr, "amber cuda: product [%lld, %lld] x [%lld, %lld]: ReLU epilogue %s\n", (long long)m,
                     (long long)k, (long long)k, (long long)n,
                     !keeps   ? "not probed now"
                     : *keeps ? "keeps NaN, used"
                              : "loses NaN, not used");
      if (!keeps) return kNoReluEpilogue;
      choice.relu_ok = *keeps;
      if (!*keeps) st->relu_refused.store(true);
    }
    std::lock_guard lock(st->choices_mutex);
    if (st->choices.size() < kMaxChoices) st->choices.emplace_back(key, choice);
  }
  if (relu && !choice.relu_ok) return kNoReluEpilogue;
  for (int64_t c = 0; c < calls; ++c) {
    const Operands o{desc,    lb.l,      la.l, lc.l, B.at(B.offsets[size_t(c)]), A.at(A.offsets[size_t(c)]),
                     C.at(c), ws + used, room};
    cublasStatus_t s = run_product(*st, o, choice.found ? &choice.algo : nullptr, stream_of(a));
    if (s != CUBLAS_STATUS_SUCCESS && relu) {  // (nothing was queued) the implicit choice was not probed
      st->relu_refused.store(true);
      return kNoReluEpilogue;
    }
    if (s != CUBLAS_STATUS_SUCCESS && choice.found) {
      // The chosen algorithm refused (nothing was queued): cuBLASLt's implicit choice, from now
      // on for this geometry.
      const cublasStatus_t first = s;
      s = run_product(*st, o, nullptr, stream_of(a));
      if (s != CUBLAS_STATUS_SUCCESS)
        return fail(a,
                    "cublasLtMatmul failed (status %d with the chosen algorithm, %d with the implicit one) for "
                    "[%lld, %lld] x [%lld, %lld]",
                    int(first), int(s), (long long)m, (long long)k, (long long)k, (long long)n);
      choice.found = false;
      std::lock_guard lock(st->choices_mutex);
      for (auto& [k2, c2] : st->choices)
        if (k2 == key) c2.found = false;
    }
    if (s != CUBLAS_STATUS_SUCCESS)
      return fail(a, "cublasLtMatmul failed (status %d) for [%lld, %lld] x [%lld, %lld]", int(s), (long long)m,
                  (long long)k, (long long)k, (long long)n);
  }
  return launched(a, "matmul");
}

// C[b] (rows m, dense) = A[b] B[b] (+ bias[n], of C's type), accumulated in f32: A and B both
// f32 (C f32), or both 16-bit (C f32, or of their type, rounded once). The workspace's first
// `reserved` bytes hold what the caller put there. With relu (*relu true: fused_linear's ReLU
// asked for), the ReLU in the epilogue where multiply() takes it; *relu says on return whether
// it did (false: the caller applies it). The operands are packed once either way.
int gemm(const amber_kernel_args* a, Mat A, Mat B, const Out& C, const void* bias, size_t reserved = 0,
         bool* relu = nullptr) {
  const auto* st = setup_state<const GemmState>(a, "matmul");
  if (!st) return 1;
  const int64_t batches = int64_t(A.offsets.size());
  if (relu && (batches != 1 || st->relu_refused.load())) *relu = false;
  if (A.rows == 0 || B.cols == 0 || batches == 0) return 0;
  char* ws = static_cast<char*>(a->workspace);
  size_t used = reserved;
  for (Mat* x : {&A, &B})
    if (!usable(*x)) {
      const size_t need = size_t(batches * x->rows * x->cols) * itemsize(x->type);
      if (used + need > a->workspace_bytes) return fail(a, "matmul: the workspace is too small to pack an operand");
      if (pack(a, *x, ws + used) != 0) return 1;
      used += padded(need);
    }
  if (relu && *relu) {
    const int rc = multiply(a, A, B, C, bias, used, true);
    if (rc != kNoReluEpilogue) return rc;
    *relu = false;
  }
  return multiply(a, A, B, C, bias, used, false);
}

Mat mat_of(const amber_tensor_view& v) {
  const int r = v.ndim;
  return {v.data, v.sizes[r - 2], v.sizes[r - 1], v.strides[r - 2], v.strides[r - 1], {0}, v.dtype};
}

int mm_kernel(const amber_kernel_args* a) {
  const amber_tensor_view& c = a->outputs[0];
  return gemm(a, mat_of(a->inputs[0]), mat_of(a->inputs[1]), Out{c.data, c.dtype, c.strides[0], 0}, nullptr);
}

int bmm_kernel(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &y = a->inputs[1], &c = a->outputs[0];
  Mat A = mat_of(x), B = mat_of(y);
  A.offsets.clear();
  B.offsets.clear();
  for (int64_t i = 0; i < x.sizes[0]; ++i) {
    A.offsets.push_back(i * x.strides[0]);
    B.offsets.push_back(i * y.strides[0]);
  }
  return gemm(a, A, B, Out{c.data, c.dtype, c.strides[1], c.strides[0]}, nullptr);
}

// torch.matmul: a 1-D left operand is a row [1, k], a 1-D right operand a column [k, 1];
// batch dims broadcast; the output is contiguous [batch..., n, m].
int matmul_kernel(const amber_kernel_args* a) {
  const amber_tensor_view &x = a->inputs[0], &y = a->inputs[1], &c = a->outputs[0];
  const int64_t k = x.sizes[x.ndim - 1];
  const int64_t n = x.ndim >= 2 ? x.sizes[x.ndim - 2] : 1, m = y.ndim >= 2 ? y.sizes[y.ndim - 1] : 1;
  Mat A{x.data, n, k, x.ndim >= 2 ? x.strides[x.ndim - 2] : k, x.strides[x.ndim - 1], {}, x.dtype};
  Mat B{y.data, k,      m, y.ndim >= 2 ? y.strides[y.ndim - 2] : y.strides[0], y.ndim >= 2 ? y.strides[y.ndim - 1] : 1,
        {},     y.dtype};
  const int obatch = std::max(0, c.ndim - (x.ndim >= 2 ? 1 : 0) - (y.ndim >= 2 ? 1 : 0));
  int64_t batches = 1;
  for (int d = 0; d < obatch; ++d) batches *= c.sizes[d];
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rem = b, xo = 0, yo = 0;
    for (int d = obatch - 1; d >= 0; --d) {
      const int64_t j = rem % c.sizes[d];
      rem /= c.sizes[d];
      const int xd = d - (obatch - std::max(0, x.ndim - 2)), yd = d - (obatch - std::max(0, y.ndim - 2));
      if (xd >= 0 && x.sizes[xd] != 1) xo += j * x.strides[xd];
      if (yd >= 0 && y.sizes[yd] != 1) yo += j * y.strides[yd];
    }
    A.offsets.push_back(xo);
    B.offsets.push_back(yo);
  }
  return gemm(a, A, B, Out{c.data, c.dtype, m, n * m}, nullptr);
}

// A bias that the epilogue cannot take (not dense) added after the product: in 16 bits the
// output is then rounded twice, where the epilogue's sum is rounded once.
template <typename T>
struct AddBiasF {
  __device__ void operator()(char* const* p) const {
    T& y = *reinterpret_cast<T*>(p[0]);
    y = cast_value<T>(float(widen(y)) + float(widen(*reinterpret_cast<const T*>(p[1]))));
  }
};

// linear's product on its operands as they are, f32 or 16-bit (bias: the epilogue's, or NULL).
// The leading dims of the input become rows: one batch of rows when their strides allow, else
// one product per row.
int linear_direct(const amber_kernel_args* a, int64_t rows, const void* bias, bool* relu) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &c = a->outputs[0];
  const int64_t in_f = w.sizes[1], out_f = w.sizes[0];
  int64_t rs = in_f;
  bool uniform = true;
  if (x.ndim >= 2) {
    rs = x.strides[x.ndim - 2];
    int64_t expect = rs;
    for (int d = x.ndim - 2; d >= 0 && uniform; --d) {
      uniform = x.sizes[d] == 1 || x.strides[d] == expect;
      expect *= x.sizes[d];
    }
  }
  Mat A{x.data, rows, in_f, rs, x.strides[x.ndim - 1], {0}, x.dtype};
  if (!uniform) {  // one row per product, at each row's offset
    A.rows = 1;
    A.offsets.clear();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t rem = r, off = 0;
      for (int d = x.ndim - 2; d >= 0; --d) {
        off += (rem % x.sizes[d]) * x.strides[d];
        rem /= x.sizes[d];
      }
      A.offsets.push_back(off);
    }
  }
  // B = weight^T: [in, out] with strides (w.strides[1], w.strides[0]).
  Mat B{w.data, in_f, out_f, w.strides[1], w.strides[0], std::vector<int64_t>(A.offsets.size(), 0), w.dtype};
  return gemm(a, A, B, Out{c.data, c.dtype, out_f, uniform ? 0 : out_f}, bias, 0, relu);
}

// linear's product in 16 bits (linear_setup's weights): the input converted into the
// workspace's start as dense rows, then one product with f32 accumulation and output.
int linear_half(const amber_kernel_args* a, const GemmState& st, int64_t rows, const void* bias, bool* relu) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &c = a->outputs[0];
  const int64_t in_f = w.sizes[1], out_f = w.sizes[0];
  const size_t row_bytes = padded(size_t(rows * in_f) * 2);
  if (a->workspace_bytes < row_bytes) return fail(a, "linear: the workspace is too small for the 16-bit rows");
  amber_tensor_view dense = x;
  dense.dtype = st.half;
  dense.data = a->workspace;
  dense.cache_id = 0;
  int64_t step = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    dense.strides[d] = step;
    step *= x.sizes[d];
  }
  if (rows * in_f > 0 && copy_convert(a, dense, x) != 0) return 1;
  const Mat A{a->workspace, rows, in_f, in_f, 1, {0}, st.half};
  const Mat B{st.weights.get(), in_f, out_f, 1, in_f, {0}, st.half};  // weight^T of the dense [out, in]
  return gemm(a, A, B, Out{c.data, c.dtype, out_f, 0}, bias, row_bytes, relu);
}

// linear(input, weight, bias): [*, in] x [out, in]^T + bias, the bias in cuBLASLt's epilogue
// when dense, else added after. With relu (*relu true: fused_linear's ReLU), the ReLU in the
// epilogue as well where gemm() takes it; *relu says on return whether it did.
int linear_product(const amber_kernel_args* a, bool* relu) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &c = a->outputs[0];
  const int64_t out_f = w.sizes[0];
  int64_t rows = 1;
  for (int d = 0; d + 1 < x.ndim; ++d) rows *= x.sizes[d];
  const bool dense_bias = present(bias) && (bias.ndim == 0 || bias.sizes[0] == 1 || bias.strides[0] == 1) &&
                          (bias.ndim == 1 && bias.sizes[0] == out_f);
  const void* const epilogue_bias = dense_bias ? bias.data : nullptr;
  const auto* st = static_cast<const GemmState*>(a->state);
  if (relu && (!st || st->relu_refused.load() || (present(bias) && !dense_bias))) *relu = false;
  const int rc = st && st->half >= 0 ? linear_half(a, *st, rows, epilogue_bias, relu)
                                     : linear_direct(a, rows, epilogue_bias, relu);
  if (rc != 0 || !present(bias) || dense_bias) return rc;
  const amber_tensor_view* v[2] = {&c, &bias};
  const int64_t item = int64_t(itemsize(c.dtype)), items[2] = {item, item};
  switch (c.dtype) {
    case kBF16:
      return map<2>(a, v, items, AddBiasF<__nv_bfloat16>{}, "linear: adding the bias");
    case kF16:
      return map<2>(a, v, items, AddBiasF<__half>{}, "linear: adding the bias");
    default:
      return map<2>(a, v, items, AddBiasF<float>{}, "linear: adding the bias");
  }
}

int linear_kernel(const amber_kernel_args* a) { return linear_product(a, nullptr); }

// fused_linear's activation over its output in place, in f32 (a 16-bit output rounded again).
template <typename T>
struct ActivationF {
  Act act;
  float lo, hi;
  __device__ void operator()(char* const* p) const {
    T& y = *reinterpret_cast<T*>(p[0]);
    y = cast_value<T>(apply_act(float(widen(y)), act, lo, hi));
  }
};

// fused_linear: a ReLU (clamp to [0, inf]) in cuBLASLt's epilogue where its algorithm keeps NaN
// (relu_keeps_nan), one product; otherwise linear's product (its bias in the epilogue; a 16-bit
// layer's rows converted once either way), then the activation by the op's formula in one pass
// over the output.
int fused_linear_kernel(const amber_kernel_args* a) {
  namespace fa = op_attrs::fused_linear;
  const Act act = act_of(a->attrs[fa::activation]);
  const float lo = float(a->attrs[fa::min_val].f), hi = float(a->attrs[fa::max_val].f);
  bool relu = act == Act::clamp && lo == 0.0f && hi == INFINITY;
  const int rc = linear_product(a, &relu);
  if (rc != 0 || relu) return rc;
  const amber_tensor_view& c = a->outputs[0];
  const amber_tensor_view* v[1] = {&c};
  const int64_t items[1] = {int64_t(itemsize(c.dtype))};
  switch (c.dtype) {
    case kBF16:
      return map<1>(a, v, items, ActivationF<__nv_bfloat16>{act, lo, hi}, "fused_linear: the activation");
    case kF16:
      return map<1>(a, v, items, ActivationF<__half>{act, lo, hi}, "fused_linear: the activation");
    default:
      return map<1>(a, v, items, ActivationF<float>{act, lo, hi}, "fused_linear: the activation");
  }
}

AMBER_CUDA_KERNELS(gemm) {
  for (int32_t t : {kF32, kBF16, kF16}) {  // 16-bit operands: a model in 16 bits
    register_kernel("mm", t, amber_kernel{mm_kernel, setup, destroy, nullptr});
    register_kernel("bmm", t, amber_kernel{bmm_kernel, setup, destroy, nullptr});
    register_kernel("matmul", t, amber_kernel{matmul_kernel, setup, destroy, nullptr});
    register_kernel("linear", t, amber_kernel{linear_kernel, linear_setup, destroy, nullptr});
    register_kernel("fused_linear", t, amber_kernel{fused_linear_kernel, linear_setup, destroy, nullptr});
  }
}

}  // namespace
}  // namespace amber::cuda
