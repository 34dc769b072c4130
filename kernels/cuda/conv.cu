// CUDA kernels for conv2d, fused_conv2d and conv_transpose2d on cuDNN 9 (the transposed one
// as cuDNN's backward-data convolution): input, KRSC-packed weights and output in dense
// channels-last (other layouts copied through the workspace), FMA math (TF32 tensor cores only
// under AMBER_PRECISION_TF32). Under AMBER_PRECISION_BF16 / F16 a convolution (not depthwise
// or transposed) with immutable weights runs on tensor cores in 16 bits with f32 accumulation:
// weights converted once at setup, the input as it enters, the 16-bit output widened to f32 in
// the bias/activation pass. All three also take bf16 and f16 tensors (a model in 16 bits):
// conv2d and fused_conv2d under the matching precision on tensor cores in that type (cuDNN's
// output rounded, then bias and activation in f32 and one more rounding, as the f32 kernel's
// 16-bit path and PyTorch's CUDA convolutions do), else (and conv_transpose2d always) widened to
// f32 and rounded once at the end. conv2d runs the backend-API plan timed fastest at setup
// when asked (conv_plan.h; f32 only), else the legacy API's algorithm, or in f32 cuDNN on NCHW
// copies or Amber's own kernel (conv_direct.h) where either times faster (choose_route);
// fused_conv2d's bias (unless the plan or the own kernel adds it) and activation are one pass
// over the channels-last output with the pointwise ops' own formulas (pointwise_math.h). The
// step's state owns handle, descriptors, plan and packed weights; calls share it under a mutex
// (a handle holds one stream at a time).

#include <cudnn.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "amber/kernels/cuda/activation.cuh"
#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/conv_direct.h"
#include "amber/kernels/cuda/conv_passes_kernels.cuh"
#include "amber/kernels/cuda/conv_plan.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/device_memory.h"
#include "amber/kernels/cuda/half_products.h"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/stopwatch.h"
#include "amber/kernels/cuda/switches.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace passes;  // the weight packing and the pass after cuDNN (conv_passes_kernels.cuh)

// The backend-API plans (conv_plans_asked) are opt-in until a crash seen with them is gone:
// test_cuda's 8-threads-on-one-model case segfaults in cudnnSetStream (in cuEventRecord) in 7 of
// 25 runs on an H100, 1 of 15 and 4 of 40 on an H200, never without them; README's GPU section.
// On the H200 they took ResNet-18 in f32 from 1.45 to 1.20 ms at batch 1. Keeping every stream
// alive did not cure it (4 of 40 on the H200 with no stream ever destroyed); with them on, the
// convolutions' cuDNN work and the captures take turns (capture_lock.h's CudnnPlanTurn), and
// recording streams are kept (backend.cpp: the stream a handle last ran on still exists when the
// next call replaces it). With both, an H200 ran the threads case 40 times without a crash
// (2026-11-30); the plans stay opt-in until a whole test_cuda passes with them (README).

constexpr int kTimedRuns = 3;  // runs timed after a warm-up (time_bias_add, choose_route), the best kept

struct ConvState {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;  // conv_transpose2d's
  size_t workspace = 0;
  float algo_ms = -1;   // the legacy algorithm's time in cudnnFind at setup (-1: not timed)
  DeviceBuffer packed;  // weights in KRSC order (none on the NCHW route)
  bool weights_packed = false;
  int32_t half = -1;               // kBF16 / kF16 when the product is 16-bit (packed holds that type), else -1
  int32_t io = kF32;               // the input's and output's dtype (kBF16 / kF16: a model in 16 bits)
  int cpad = 0;                    // 16-bit products: input channels zero-padded to this (0: none)
  DeviceBuffer bias32;             // a 16-bit immutable bias widened to f32, else none
  std::unique_ptr<ConvPlan> plan;  // the backend-API plan, when one was built
  bool plan_bias = false;          // the plan adds the bias
  bool plan_clamp = false;         // the plan clamps too (fused_conv2d's clamp): no pass after it
  // An f32 convolution whose legacy algorithms run faster on NCHW tensors, the two transforms
  // counted (choose_route): its descriptors (the filter is the weight as given, dense [K, C, R, S])
  // and algorithm.
  bool nchw = false;
  cudnnTensorDescriptor_t xn = nullptr, yn = nullptr;
  cudnnFilterDescriptor_t wn = nullptr;
  cudnnConvolutionFwdAlgo_t nchw_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  // Amber's own kernel (conv_direct.h) where it times faster than cuDNN (choose_route).
  bool direct = false;
  DirectConv dc;
  float nchw_us = -1, nhwc_us = -1, direct_us = -1;  // the routes' times at setup (-1: not timed)
  std::mutex launch;
  ~ConvState() {
    CudnnPlanTurn turn;
    plan.reset();  // its descriptors refer to the handle: they go first
    packed.reset();
    bias32.reset();
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (xn) cudnnDestroyTensorDescriptor(xn);
    if (yn) cudnnDestroyTensorDescriptor(yn);
    if (wn) cudnnDestroyFilterDescriptor(wn);
    if (b) cudnnDestroyTensorDescriptor(b);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (handle) cudnnDestroy(handle);
  }
};

// The 4-D (N, C, H, W) dims of a view, treating 3-D (C, H, W) as N = 1.
void nchw_of(const amber_tensor_view& v, int dims[4]) {
  const int lead = v.ndim == 4 ? 0 : 1;
  dims[0] = lead ? 1 : int(v.sizes[0]);
  for (int i = 0; i < 3; ++i) dims[i + 1] = int(v.sizes[i + 1 - lead]);
}

// The strides (in elements, N, C, H, W order) of a dense channels-last tensor.
void nhwc_strides(const int d[4], int s[4]) {
  s[1] = 1;
  s[3] = d[1];
  s[2] = d[3] * d[1];
  s[0] = d[2] * d[3] * d[1];
}

// True when the view is laid out as dense channels-last (dims of size 1 may have any stride).
bool is_nhwc(const amber_tensor_view& v) {
  int d[4], want[4];
  nchw_of(v, d);
  nhwc_strides(d, want);
  const int lead = v.ndim == 4 ? 0 : 1;
  for (int i = lead; i < 4; ++i)
    if (d[i] != 1 && v.strides[i - lead] != want[i]) return false;
  return true;
}

// True when the view is laid out as dense NCHW (a caller's image; dims of size 1 may have any
// stride).
bool is_nchw(const amber_tensor_view& v) {
  int64_t want = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    if (v.sizes[i] != 1 && v.strides[i] != want) return false;
    want *= v.sizes[i];
  }
  return true;
}

// The same shape as v, dense channels-last at data; with channels, each pixel's channels
// spaced as that many (the rest of them padding).
amber_tensor_view nhwc_view(const amber_tensor_view& v, void* data, int channels = 0) {
  amber_tensor_view o = v;
  o.data = data;
  o.cache_id = 0;
  int d[4], s[4];
  nchw_of(v, d);
  if (channels) d[1] = channels;
  nhwc_strides(d, s);
  const int lead = v.ndim == 4 ? 0 : 1;
  for (int i = lead; i < 4; ++i) o.strides[i - lead] = s[i];
  return o;
}

// w's shape as dense [K, R, S, C] (KRSC) of dtype at data; with channels, C spaced as that
// many (the rest of them padding).
amber_tensor_view krsc_view(const amber_tensor_view& w, void* data, int32_t dtype, int64_t channels = 0) {
  amber_tensor_view o = w;
  o.dtype = dtype;
  o.data = data;
  o.cache_id = 0;
  const int64_t c = channels ? channels : w.sizes[1];
  o.strides[0] = w.sizes[2] * w.sizes[3] * c;
  o.strides[1] = 1;
  o.strides[2] = w.sizes[3] * c;
  o.strides[3] = c;
  return o;
}

// Elements of the input's channels-last copy: numel(x), or with its channels padded to cpad.
size_t input_copy_elems(const amber_tensor_view& x, int cpad) {
  return cpad ? size_t(numel(x) / x.sizes[x.ndim - 3]) * size_t(cpad) : size_t(numel(x));
}

// The input copied into dense channels-last at dst in dtype, its channels padded to s->cpad
// with zeros when set (the padding written on every call: the workspace is shared).
int input_copy(const amber_kernel_args* a, const ConvState* s, void* dst, int32_t dtype) {
  const amber_tensor_view& x = a->inputs[0];
  amber_tensor_view v = nhwc_view(x, dst, s->cpad);
  v.dtype = dtype;
  if (s->cpad) {
    const size_t bytes = input_copy_elems(x, s->cpad) * itemsize(dtype);
    if (cudaMemsetAsync(dst, 0, bytes, stream_of(a)) != cudaSuccess)
      return launched(a, "a convolution's input: zeroing its padded channels");
  }
  return copy_convert(a, v, x);
}

// A dense 1-D f32 view of v's elements at data (a bias widened from 16 bits).
amber_tensor_view dense_f32(const amber_tensor_view& v, void* data) {
  amber_tensor_view o = v;
  o.dtype = kF32;
  o.data = data;
  o.cache_id = 0;
  o.strides[0] = 1;
  return o;
}

#define CUDNN_TRY(call)                                                                                 \
  do {                                                                                                  \
    const cudnnStatus_t st_ = (call);                                                                   \
    if (st_ != CUDNN_STATUS_SUCCESS) return fail(a, "%s: %s: %s", op, #call, cudnnGetErrorString(st_)); \
  } while (0)

enum Kind { kConv, kFused, kTransposed };

// Where each op keeps the attributes the three kernels share.
struct ConvAttrs {
  const char* name;
  int stride, padding, dilation, groups;
};
template <Kind K>
constexpr ConvAttrs attrs_of() {
  if constexpr (K == kTransposed) {
    namespace at = op_attrs::conv_transpose2d;
    return {"conv_transpose2d", at::stride, at::padding, at::dilation, at::groups};
  } else if constexpr (K == kFused) {
    namespace at = op_attrs::fused_conv2d;
    return {"fused_conv2d", at::stride, at::padding, at::dilation, at::groups};
  } else {
    namespace at = op_attrs::conv2d;
    return {"conv2d", at::stride, at::padding, at::dilation, at::groups};
  }
}

// fused_conv2d's activation and its bounds (Act::none for the other ops).
template <Kind Op>
Act activation_of(const amber_kernel_args* a, float& lo, float& hi) {
  lo = hi = 0;
  if constexpr (Op == kFused) {
    namespace at = op_attrs::fused_conv2d;
    lo = float(a->attrs[at::min_val].f);
    hi = float(a->attrs[at::max_val].f);
    return act_of(a->attrs[at::activation]);
  }
  return Act::none;
}

int pair(const amber_kernel_args* a, int i, int which) {
  const amber_attr& at = a->attrs[i];
  return int(at.count > which ? at.ints[which] : at.ints[0]);
}

// Device buffers to time candidates on (try_plan's engines, choose_route's routes), from the
// backend's allocator and under its cap, freed together when it goes (after the caller's last use
// of them is synchronized).
class Scratch {
 public:
  explicit Scratch(int32_t device) : device_(device) {}
  // A buffer of `bytes`: NULL for none, or where there was no room (ok() false after).
  void* take(size_t bytes) {
    if (bytes == 0 || !ok_) return nullptr;
    DeviceBuffer b;
    ok_ = b.try_take(device_, bytes);
    if (!ok_) return nullptr;
    held_.push_back(std::move(b));
    return held_.back().get();
  }
  bool ok() const { return ok_; }

 private:
  int32_t device_;
  std::vector<DeviceBuffer> held_;
  bool ok_ = true;
};

// Microseconds cudnnAddTensor takes to add the bias to an output at y (the best of three after a
// warm-up; a large number where it cannot be timed or AMBER_CUDA_TUNING=0, so the fused plan is
// preferred).
float time_bias_add(ConvState* s, const amber_tensor_view& bias, void* y, cudaStream_t stream) {
  if (!timed_choices()) return 1e9f;
  const float one = 1.0f;
  Stopwatch watch(stream);
  const float ms =
      cudnnSetStream(s->handle, stream) != CUDNN_STATUS_SUCCESS
          ? -1
          : watch.best_ms(
                [&] { return cudnnAddTensor(s->handle, &one, s->b, bias.data, &one, s->y, y) == CUDNN_STATUS_SUCCESS; },
                kTimedRuns);
  (void)cudaGetLastError();
  return ms < 0 ? 1e9f : ms * 1000.0f;
}

// AMBER_CUDA_CONV_LOG=1: each convolution's choice printed to stderr at setup (shapes, the
// type it multiplies in, cuDNN's legacy algorithm and its time in cudnnFind, the plan's engine),
// for a GPU session's diagnostics (scripts/gpu_check.sh's profile).
void log_choice(const char* op, const ConvState& s, const int xd[4], const int w[4], const int yd[4], bool tf32,
                bool transposed) {
  if (!env_is_one("AMBER_CUDA_CONV_LOG")) return;
  const char* type = s.half == kBF16 ? "bf16" : s.half == kF16 ? "f16" : tf32 ? "tf32" : "f32";
  std::fprintf(stderr,
               "amber cuda: %s x [%d, %d, %d, %d] w [%d, %d, %d, %d] y [%d, %d, %d, %d] in %s: cuDNN %s algo %d, "
               "%.1f us in cudnnFind, workspace %zu B",
               op, xd[0], xd[1], xd[2], xd[3], w[0], w[1], w[2], w[3], yd[0], yd[1], yd[2], yd[3], type,
               transposed ? "backward-data" : "forward", transposed ? int(s.data_algo) : int(s.algo),
               double(s.algo_ms) * 1000.0, s.workspace);
  if (s.nhwc_us >= 0) std::fprintf(stderr, "; timed %.1f us", double(s.nhwc_us));
  if (s.nchw_us >= 0)
    std::fprintf(stderr, "; NCHW: algo %d, %.1f us with its transforms%s", int(s.nchw_algo), double(s.nchw_us),
                 s.nchw ? ", used" : "");
  if (s.direct && s.direct_us < 0)
    std::fprintf(stderr, "; own kernel: %dx%d tiles, %d slices, used (asked)", s.dc.tile_m, s.dc.tile_n, s.dc.splits);
  if (s.direct_us >= 0)
    std::fprintf(stderr, "; own kernel: %dx%d tiles, %d slices, %.1f us%s", s.dc.tile_m, s.dc.tile_n, s.dc.splits,
                 double(s.direct_us), s.direct ? ", used" : "");
  if (s.plan)
    std::fprintf(stderr, "; plan: engine %lld, %.1f us%s%s", static_cast<long long>(s.plan->engine()),
                 double(s.plan->microseconds()),
                 s.plan_clamp  ? ", bias and clamp fused"
                 : s.plan_bias ? ", bias fused"
                               : "",
                 s.direct ? "" : ", used");
  std::fprintf(stderr, "\n");
}

// Builds the backend-API plan for the step (ConvState::plan) when the weights are packed
// (immutable) and scratch input and output buffers can be had to time the engines on; the
// bias is fused when it is immutable, dense and aligned (with fused_conv2d's clamp too, where
// faster). Leaves no plan (and no error) when cuDNN offers none: the legacy API then runs the
// step. Returns only CUDA failures.
cudaError_t try_plan(ConvState* s, const amber_kernel_args* a, const ConvAttrs& at, const int xd[4], const int yd[4],
                     Act act, float lo, float hi, cudaStream_t stream) {
  const amber_tensor_view &w = a->inputs[1], &bias = a->inputs[2];
  ConvShape shape{};
  for (int i = 0; i < 4; ++i) shape.x[i] = xd[i], shape.y[i] = yd[i], shape.w[i] = w.sizes[i];
  for (int i = 0; i < 2; ++i) {
    shape.pad[i] = pair(a, at.padding, i);
    shape.stride[i] = pair(a, at.stride, i);
    shape.dilation[i] = pair(a, at.dilation, i);
  }
  shape.tf32 = a->precision == AMBER_PRECISION_TF32;
  shape.bias = present(bias) && bias.cache_id != 0 && bias.data && bias.strides[0] == 1 && aligned16(bias.data);
  const size_t xbytes = size_t(numel(a->inputs[0])) * sizeof(float),
               ybytes = size_t(numel(a->outputs[0])) * sizeof(float);
  Scratch scratch(a->device);
  void *x = scratch.take(xbytes), *y = scratch.take(ybytes);
  if (!scratch.ok()) return cudaSuccess;  // no room to time engines now: the legacy API's heuristics decide
  cudaError_t e = cudaMemsetAsync(x, 0, xbytes, stream);
  if (e == cudaSuccess) {
    // With a bias, the plan adding it and the plain one followed by cudnnAddTensor are both
    // timed: which is faster depends on the shape (on an H100, ResNet-18's 3x3 convolutions
    // at batch 64 ran up to 1.3x slower with the bias fused; at batch 1 some ran faster).
    // fused_conv2d's clamp with a finite lower bound (ReLU, ReLU6) can join them (cuDNN's ReLU
    // with clips, NaN propagated as the clamp does): a third plan, timed against the better of
    // the other two plus the pass after, which cudnnAddTensor's time stands for.
    void* const buffers[4] = {x, s->packed.get(), y, shape.bias ? bias.data : nullptr};
    auto full = std::make_unique<ConvPlan>(), fused = std::make_unique<ConvPlan>(),
         plain = std::make_unique<ConvPlan>();
    bool have_full = false;
    if (shape.bias && act == Act::clamp && std::isfinite(lo) && !std::isnan(hi) && lo <= hi) {
      ConvShape clamped = shape;
      clamped.clamp = true, clamped.lo = lo, clamped.hi = hi;
      have_full = full->build(s->handle, clamped, buffers, stream, a->device).empty();
    }
    const bool have_fused = shape.bias && fused->build(s->handle, shape, buffers, stream, a->device).empty();
    shape.bias = false;
    const bool have_plain = plain->build(s->handle, shape, buffers, stream, a->device).empty();
    const float pass_us = present(bias) && (have_plain || have_full) ? time_bias_add(s, bias, y, stream) : 0;
    const float plain_us = have_plain ? plain->microseconds() + pass_us : 0;
    const float fused_us = have_fused ? fused->microseconds() + (have_full ? pass_us : 0) : 0;
    if (have_full && (!have_fused || full->microseconds() <= fused_us) &&
        (!have_plain || full->microseconds() <= plain_us)) {
      s->plan = std::move(full);
      s->plan_bias = s->plan_clamp = true;
    } else if (have_fused && (!have_plain || fused->microseconds() <= plain_us)) {
      s->plan = std::move(fused);
      s->plan_bias = true;
    } else if (have_plain) {
      s->plan = std::move(plain);
    }
    e = cudaStreamSynchronize(stream);
  }
  return e;
}

// Picks cuDNN's fastest algorithm from its timed list (find), or failing that from its heuristic
// ranking (rank): the first with FMA math (any math with tf32) whose workspace (workspace_of)
// can be sized; keep records it (with its timed milliseconds, -1 for a heuristic pick). Timing
// runs every algorithm on this shape once, as PyTorch's cudnn.benchmark; the callers' find
// declines under AMBER_CUDA_TUNING=0.
template <typename Perf, int Count, typename Find, typename Rank, typename WorkspaceOf, typename Keep>
bool choose_fastest(bool tf32, Find find, Rank rank, WorkspaceOf workspace_of, Keep keep) {
  Perf perf[Count];
  int found = 0;
  if (find(perf, &found) != CUDNN_STATUS_SUCCESS) {
    (void)cudaGetLastError();
    found = 0;
  }
  bool chosen = false, timed = true;
  auto choose = [&](bool fma_only) {
    for (int i = 0; i < found && !chosen; ++i) {
      size_t bytes = 0;
      if (perf[i].status != CUDNN_STATUS_SUCCESS || (fma_only && perf[i].mathType != CUDNN_FMA_MATH) ||
          workspace_of(perf[i].algo, &bytes) != CUDNN_STATUS_SUCCESS)
        continue;
      keep(perf[i].algo, padded(bytes), timed ? perf[i].time : -1.0f);
      chosen = true;
    }
  };
  choose(!tf32);
  if (!chosen && rank(perf, &found) == CUDNN_STATUS_SUCCESS) {
    timed = false;
    choose(!tf32);
    choose(false);
  }
  return chosen;
}

// conv2d's legacy-API algorithm (s->algo, s->workspace): the fallback for calls whose buffers
// the plan cannot take (misaligned) or when no plan was built; with a plan, not timed.
bool choose_algo(ConvState* s, bool tf32) {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  constexpr int n = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return choose_fastest<Perf, n>(
      tf32,
      [&](Perf* perf, int* found) {
        return s->plan || !timed_choices()
                   ? CUDNN_STATUS_NOT_SUPPORTED
                   : cudnnFindConvolutionForwardAlgorithm(s->handle, s->x, s->w, s->conv, s->y, n, found, perf);
      },
      [&](Perf* perf, int* found) {
        return cudnnGetConvolutionForwardAlgorithm_v7(s->handle, s->x, s->w, s->conv, s->y, n, found, perf);
      },
      [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(s->handle, s->x, s->w, s->conv, s->y, algo, bytes);
      },
      [&](cudnnConvolutionFwdAlgo_t algo, size_t bytes, float ms) {
        s->algo = algo, s->workspace = bytes, s->algo_ms = ms;
      });
}

// conv_transpose2d's algorithm (s->data_algo, s->workspace): cuDNN's backward-data convolution
// with the step's input as the forward output's gradient (dy, s->x) and its output as the
// input's (dx, s->y).
bool choose_data_algo(ConvState* s, bool tf32) {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  constexpr int n = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return choose_fastest<Perf, n>(
      tf32,
      [&](Perf* perf, int* found) {
        return !timed_choices()
                   ? CUDNN_STATUS_NOT_SUPPORTED
                   : cudnnFindConvolutionBackwardDataAlgorithm(s->handle, s->w, s->x, s->conv, s->y, n, found, perf);
      },
      [&](Perf* perf, int* found) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(s->handle, s->w, s->x, s->conv, s->y, n, found, perf);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(s->handle, s->w, s->x, s->conv, s->y, algo, bytes);
      },
      [&](cudnnConvolutionBwdDataAlgo_t algo, size_t bytes, float ms) {
        s->data_algo = algo, s->workspace = bytes, s->algo_ms = ms;
      });
}

// An f32 convolution's route (conv2d and fused_conv2d): cuDNN's legacy algorithm on the
// channels-last tensors (s->algo) or its backend-API plan where one was built, Amber's own kernel
// (s->direct, conv_direct.h), or cuDNN on NCHW copies (s->nchw). On channels-last FP32 tensors
// cuDNN's legacy API offers its implicit GEMMs only (the H200's cudnnFind picked algorithm 0 or 1
// for ResNet-18's 3x3 convolutions, 170-220 us each at batch 1, where the whole network took 0.46
// ms in TF32); its Winograd, FFT and explicit-GEMM algorithms take NCHW tensors (PyTorch's eager
// ResNet-18, NCHW by default, beat its channels-last run there: 11.0 against 12.0 ms at batch 64,
// where Amber's took 13.6), and Amber's own kernel splits the sum where the output gives too few
// blocks. Each candidate is timed on scratch buffers of the call's sizes, the best of three runs
// after a warm-up (NCHW's with cudnnTransformTensor's two transforms, the input to NCHW and the
// output back; the bias and activation pass left out, which the own kernel does in its own), and
// taken when at least 5% faster than the legacy algorithm (than the plan, where there is one).
// AMBER_CUDA_CONV_DIRECT=1, 2 or 3 takes the own kernel with that tile wherever it fits, untimed
// (mutable weights too: scripts/gpu_check.sh runs every op so), else AMBER_CUDA_CONV_NCHW=1 the
// NCHW route wherever cuDNN has an NCHW algorithm; either =0 never. AMBER_CUDA_TUNING=0 times
// nothing: a forced route, else the legacy one.
// Leaves the legacy route, and no error, where anything is missing.
constexpr size_t kNchwMaxWorkspace = size_t(64) << 20;

// The NCHW route's descriptors (the filter: the immutable weight as given, dense [K, C, R, S]) and
// cuDNN's fastest algorithm for them (FMA math unless TF32 was asked for), as choose_algo's (its
// heuristic's first under AMBER_CUDA_TUNING=0).
// False where there is none. (An algorithm's workspace is held by every call slot's arena: one
// that needs more than 64 MiB, or than the channels-last algorithm's, is passed over: FFT's grow
// with the batch.)
bool prepare_nchw(ConvState* s, const amber_kernel_args* a, const int xd[4], const int yd[4], bool tf32,
                  cudnnConvolutionFwdAlgo_t* algo, size_t* workspace) {
  const amber_tensor_view& w = a->inputs[1];
  const int64_t K = w.sizes[0], C = w.sizes[1], R = w.sizes[2], S = w.sizes[3];
  if (!s->weights_packed || w.dtype != kF32 || !w.data || w.cache_id == 0 || w.strides[3] != 1 || w.strides[2] != S ||
      w.strides[1] != R * S || w.strides[0] != C * R * S)
    return false;
  const int xs[4] = {xd[1] * xd[2] * xd[3], xd[2] * xd[3], xd[3], 1},
            ys[4] = {yd[1] * yd[2] * yd[3], yd[2] * yd[3], yd[3], 1};
  constexpr cudnnStatus_t kOk = CUDNN_STATUS_SUCCESS;
  if (cudnnCreateTensorDescriptor(&s->xn) != kOk || cudnnCreateTensorDescriptor(&s->yn) != kOk ||
      cudnnCreateFilterDescriptor(&s->wn) != kOk ||  // (each destroyed with the state)
      cudnnSetTensorNdDescriptor(s->xn, CUDNN_DATA_FLOAT, 4, xd, xs) != kOk ||
      cudnnSetTensorNdDescriptor(s->yn, CUDNN_DATA_FLOAT, 4, yd, ys) != kOk ||
      cudnnSetFilter4dDescriptor(s->wn, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, int(K), int(C), int(R), int(S)) != kOk)
    return false;
  constexpr int n = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  cudnnConvolutionFwdAlgoPerf_t perf[n];
  int found = 0;
  const auto find = timed_choices() ? cudnnFindConvolutionForwardAlgorithm : cudnnGetConvolutionForwardAlgorithm_v7;
  if (find(s->handle, s->xn, s->wn, s->conv, s->yn, n, &found, perf) != kOk) found = 0;
  (void)cudaGetLastError();
  for (int i = 0; i < found; ++i)
    if (perf[i].status == kOk && (tf32 || perf[i].mathType == CUDNN_FMA_MATH) &&
        cudnnGetConvolutionForwardWorkspaceSize(s->handle, s->xn, s->wn, s->conv, s->yn, perf[i].algo, workspace) ==
            kOk &&
        *workspace <= std::max(s->workspace, kNchwMaxWorkspace)) {
      *algo = perf[i].algo;
      return true;
    }
  return false;
}

// The own kernel's description of the convolution (conv_direct.h), its sum split for a device of
// `sms` multiprocessors. False where the kernel does not take it.
bool prepare_direct(const amber_kernel_args* a, const ConvAttrs& at, const int xd[4], const int yd[4], int tile_m,
                    int tile_n, int sms, DirectConv* d) {
  const amber_tensor_view &w = a->inputs[1], &bias = a->inputs[2];
  if (a->attrs[at.groups].i != 1 || (present(bias) && bias.dtype != kF32)) return false;
  d->n = xd[0], d->c = xd[1], d->h = xd[2], d->w = xd[3];
  d->k = int(w.sizes[0]), d->r = int(w.sizes[2]), d->s = int(w.sizes[3]);
  d->p = yd[2], d->q = yd[3];
  d->tile_m = tile_m, d->tile_n = tile_n;
  for (int i = 0; i < 2; ++i)
    d->stride[i] = pair(a, at.stride, i), d->pad[i] = pair(a, at.padding, i), d->dilation[i] = pair(a, at.dilation, i);
  if (int(w.sizes[1]) != d->c || !direct_conv_fits(*d)) return false;
  direct_conv_split(*d, sms);
  return true;
}

void choose_route(ConvState* s, const amber_kernel_args* a, const ConvAttrs& at, const int xd[4], const int yd[4],
                  bool tf32) {
  const amber_tensor_view& w = a->inputs[1];
  // The own kernel's three tiles (pixels x channels: 64 x 64, 128 x 128, 128 x 64, as
  // AMBER_CUDA_CONV_DIRECT's 1, 2, 3 force them); its partial sums' room is setup's, after cuDNN's.
  constexpr int kTiles = 3, kTile[kTiles][2] = {{64, 64}, {128, 128}, {128, 64}};
  DirectConv own[kTiles];
  bool fits[kTiles] = {};
  size_t own_ws = 0;
  // Prepared where it may be taken: forced, or timed (untimed and not forced, the legacy route
  // stays); the device's multiprocessors asked once for the three.
  const bool own_wanted = conv_direct_switch() > 0 || (conv_direct_switch() != 0 && timed_choices());
  int sms = 0;
  if (own_wanted && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, a->device) != cudaSuccess) {
    (void)cudaGetLastError();
    sms = 0;
  }
  for (int i = 0; i < kTiles; ++i) {
    fits[i] = sms > 0 && prepare_direct(a, at, xd, yd, kTile[i][0], kTile[i][1], sms, &own[i]);
    if (fits[i]) own_ws = std::max(own_ws, direct_conv_workspace(own[i]));
  }
  auto take_direct = [&](int i) { s->direct = true, s->dc = own[i]; };
  for (int i = 0; i < kTiles; ++i)
    if (fits[i] && conv_direct_switch() == i + 1) return take_direct(i);
  const bool direct = std::find(fits, fits + kTiles, true) != fits + kTiles;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t nchw_ws = 0;
  // Untimed (AMBER_CUDA_TUNING=0): a forced route, else the legacy one.
  const bool nchw = (conv_nchw_switch() == 1 || (conv_nchw_switch() != 0 && timed_choices())) &&
                    prepare_nchw(s, a, xd, yd, tf32, &algo, &nchw_ws);
  // Taking the NCHW route: the channels-last copy of the weights goes (the route reads the weight
  // as given; weights_packed stays true: nothing to pack per call), and with it a plan's use.
  auto take_nchw = [&] {
    s->nchw = true, s->nchw_algo = algo;
    s->workspace = std::max(s->workspace, padded(nchw_ws));
    s->packed.reset();
    s->plan.reset();
    s->plan_bias = s->plan_clamp = false;
  };
  if (nchw && conv_nchw_switch() == 1) return take_nchw();
  if (!s->packed || (!direct && !nchw) || !timed_choices()) return;
  // The routes timed on scratch buffers of the call's sizes (zeros: the algorithms' time does not
  // depend on the values), on a stream of their own.
  constexpr cudnnStatus_t kOk = CUDNN_STATUS_SUCCESS;
  const size_t xbytes = size_t(numel(a->inputs[0])) * sizeof(float),
               ybytes = size_t(numel(a->outputs[0])) * sizeof(float),
               wsbytes = std::max({s->workspace, nchw ? nchw_ws : 0, own_ws});
  Scratch scratch(a->device);
  void *x = scratch.take(xbytes), *y = scratch.take(ybytes), *ws = scratch.take(wsbytes);
  void *xn = nchw ? scratch.take(xbytes) : nullptr, *yn = nchw ? scratch.take(ybytes) : nullptr;
  cudaStream_t stream = nullptr;
  float nhwc_ms = -1, direct_ms[kTiles] = {-1, -1, -1}, nchw_ms = -1;
  if (scratch.ok() && cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
      cudaMemsetAsync(x, 0, xbytes, stream) == cudaSuccess && cudnnSetStream(s->handle, stream) == kOk) {
    const float one = 1.0f, zero = 0.0f;
    Stopwatch watch(stream);
    nhwc_ms = watch.best_ms(
        [&] {
          return cudnnConvolutionForward(s->handle, &one, s->x, x, s->w, s->packed.get(), s->conv, s->algo, ws,
                                         s->workspace, &zero, s->y, y) == kOk;
        },
        kTimedRuns);
    float quickest = FLT_MAX;  // a tile whose first run takes twice that is not timed further
    for (int i = 0; i < kTiles; ++i)
      if (fits[i]) {
        direct_ms[i] = watch.best_ms(
            [&] {
              return direct_conv(own[i], static_cast<const float*>(x), s->packed.as<const float>(), nullptr, 0,
                                 Act::none, 0, 0, static_cast<float*>(y), ws, stream) == cudaSuccess;
            },
            kTimedRuns, quickest < FLT_MAX ? 2 * quickest : FLT_MAX);
        if (direct_ms[i] >= 0) quickest = std::min(quickest, direct_ms[i]);
      }
    if (nchw)
      nchw_ms = watch.best_ms(
          [&] {
            return cudnnTransformTensor(s->handle, &one, s->x, x, &zero, s->xn, xn) == kOk &&
                   cudnnConvolutionForward(s->handle, &one, s->xn, xn, s->wn, w.data, s->conv, algo, ws, nchw_ws, &zero,
                                           s->yn, yn) == kOk &&
                   cudnnTransformTensor(s->handle, &one, s->yn, yn, &zero, s->y, y) == kOk;
          },
          kTimedRuns);
  }
  // The legacy stream again before this one goes (cudnnSetStream touches the one it replaces).
  (void)cudnnSetStream(s->handle, nullptr);
  // The scratch buffers go with `scratch`, once this stream's work is done.
  if (stream) (void)cudaStreamSynchronize(stream);
  if (stream) cudaStreamDestroy(stream);
  (void)cudaGetLastError();  // an algorithm that failed to run leaves no error behind
  if (nhwc_ms < 0) return;
  s->nhwc_us = nhwc_ms * 1000.0f;
  int best = 0;
  for (int i = 1; i < kTiles; ++i)
    if (direct_ms[i] >= 0 && (direct_ms[best] < 0 || direct_ms[i] < direct_ms[best])) best = i;
  if (direct_ms[best] >= 0) s->direct_us = direct_ms[best] * 1000.0f, s->dc = own[best];
  if (nchw_ms >= 0) s->nchw_us = nchw_ms * 1000.0f, s->nchw_algo = algo;
  const float own_ms = direct_ms[best];
  // With a plan (AMBER_CUDA_CONV_PLANS=1), the plan's time (its bias fused where it fuses it) is
  // what the others must beat; the own kernel keeps the plan, then the legacy algorithm, for
  // buffers it cannot take (misaligned).
  const float base_ms = s->plan ? s->plan->microseconds() / 1000.0f : nhwc_ms;
  const bool direct_wins = own_ms >= 0 && own_ms < 0.95f * base_ms && (nchw_ms < 0 || own_ms <= nchw_ms);
  const bool nchw_wins = !direct_wins && nchw_ms >= 0 && nchw_ms < 0.95f * base_ms;
  if (direct_wins) take_direct(best);
  if (nchw_wins) take_nchw();
}

template <Kind Op>
int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  constexpr bool Transposed = Op == kTransposed;
  constexpr ConvAttrs at = attrs_of<Op>();
  const char* const op = at.name;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &y = a->outputs[0];
  // cuDNN describes a tensor with 32-bit sizes and at most 2^31 - 1 elements.
  for (const amber_tensor_view* v : {&x, &y})
    if (numel(*v) > int64_t(INT32_MAX))
      return fail(a, "%s: a %s of %lld elements is more than cuDNN takes (2^31 - 1); split the batch", op,
                  v == &x ? "input" : "output", static_cast<long long>(numel(*v)));
  std::unique_lock no_capture(capture_lock());
  CudnnPlanTurn turn;  // after the capture lock: a call holding its turn never waits for that one
  DeviceScope scope(a->device);
  auto s = std::make_unique<ConvState>();
  CUDNN_TRY(cudnnCreate(&s->handle));
  CUDNN_TRY(cudnnCreateTensorDescriptor(&s->x));
  CUDNN_TRY(cudnnCreateTensorDescriptor(&s->y));
  CUDNN_TRY(cudnnCreateFilterDescriptor(&s->w));
  CUDNN_TRY(cudnnCreateConvolutionDescriptor(&s->conv));
  // Activations, filter and output all dense channels-last: the layout cuDNN's FP32 FMA
  // engines take with every algorithm (other strides are copied at the call).
  int xd[4], xs[4], yd[4], ys[4];
  nchw_of(x, xd);
  nhwc_strides(xd, xs);
  nchw_of(y, yd);
  nhwc_strides(yd, ys);
  // The filter as the forward convolution's [K, C / groups, R, S]: conv2d's weight, or
  // conv_transpose2d's [in, out / groups, R, S] (its input is that convolution's output).
  const int K = int(w.sizes[0]), C = int(w.sizes[1]), R = int(w.sizes[2]), S = int(w.sizes[3]);
  const int groups = int(a->attrs[at.groups].i);
  // FMA math unless the model was loaded with Precision::tf32 (tensor cores on TF32 inputs, as
  // PyTorch's torch.backends.cudnn.allow_tf32); 16-bit data on tensor cores, f32 accumulation.
  const bool tf32 = a->precision == AMBER_PRECISION_TF32;
  auto describe = [&](int32_t half, int cin) -> int {
    const cudnnDataType_t io = half == kBF16 ? CUDNN_DATA_BFLOAT16 : half == kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    int xdc[4] = {xd[0], cin == C ? xd[1] : cin, xd[2], xd[3]}, xsc[4];
    nhwc_strides(xdc, xsc);
    CUDNN_TRY(cudnnSetTensorNdDescriptor(s->x, io, 4, xdc, xsc));
    CUDNN_TRY(cudnnSetTensorNdDescriptor(s->y, io, 4, yd, ys));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(s->w, io, CUDNN_TENSOR_NHWC, K, cin, R, S));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(s->conv, pair(a, at.padding, 0), pair(a, at.padding, 1),
                                              pair(a, at.stride, 0), pair(a, at.stride, 1), pair(a, at.dilation, 0),
                                              pair(a, at.dilation, 1), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionGroupCount(s->conv, groups));
    CUDNN_TRY(cudnnSetConvolutionMathType(s->conv, tf32 || half >= 0 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    return 0;
  };
  // 16-bit products (not depthwise: a few products per element loaded, as the CPU keeps them
  // f32): the weights converted into KRSC now. Where that is refused (f16 beyond its range) or
  // cuDNN has no algorithm for the shape in 16 bits, the convolution stays f32.
  // 16-bit tensors (a model in 16 bits) multiply in their own type under the matching
  // precision when the weights are immutable; otherwise they are widened and the product is f32.
  s->io = x.dtype;
  const bool depthwise = groups > 1 && C == 1;
  const bool own_type = (s->io == kBF16 && a->precision == AMBER_PRECISION_BF16) ||
                        (s->io == kF16 && a->precision == AMBER_PRECISION_F16);
  const int32_t wanted = Transposed || depthwise                 ? -1
                         : s->io == kF32                         ? half_product_type(a, w)
                         : own_type && w.cache_id != 0 && w.data ? s->io
                                                                 : -1;
  // Input channels not a multiple of 8 (an image's 3) leave cuDNN no tensor-core algorithm in
  // 16 bits: its fallback took ResNet-18's first convolution 1.04 ms of the 7.4 at batch 64 on an
  // H200. They are padded with zeros to the next multiple (weights now, the input's copy at each
  // call): the same sums, every added product zero.
  const int cin = groups == 1 && C % 8 != 0 ? (C + 7) / 8 * 8 : C;
  if (const int32_t half = wanted; half >= 0) {
    const size_t hbytes = size_t(K) * cin * R * S * 2;
    if (s->packed.take(a, hbytes, op, "its weights in 16 bits") != 0) return 1;
    if (cin != C && (cudaMemset(s->packed.get(), 0, hbytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess))
      return launched(a, "a convolution's weights: zeroing their padded channels");
    const int rc = convert_weights(a, krsc_view(w, s->packed.get(), half, cin), w);
    if (rc > 0) return 1;
    if (rc == 0 && describe(half, cin) == 0 && choose_algo(s.get(), true)) {
      s->half = half;
      s->weights_packed = true;
      if (cin != C) s->cpad = cin;
    } else {
      s->packed.reset();
      (void)cudaGetLastError();
    }
  }
  if (s->half < 0 && describe(-1, C) != 0) return 1;
  if (present(bias)) {
    CUDNN_TRY(cudnnCreateTensorDescriptor(&s->b));
    const int oc = yd[1], bd[4] = {1, oc, 1, 1}, bs[4] = {oc * int(bias.strides[0]), int(bias.strides[0]), 1, 1};
    CUDNN_TRY(cudnnSetTensorNdDescriptor(s->b, CUDNN_DATA_FLOAT, 4, bd, bs));
  }
  // A 16-bit immutable bias widened to f32 now (the pass after the convolution adds in f32);
  // a mutable one per call, into the workspace.
  const bool bias16 = present(bias) && bias.dtype != kF32;
  if (bias16 && bias.cache_id != 0 && bias.data) {
    const size_t bbytes = size_t(numel(bias)) * sizeof(float);
    if (s->bias32.take(a, bbytes, op, "its bias widened to f32") != 0) return 1;
    if (convert_weights(a, dense_f32(bias, s->bias32.as<float>()), bias) != 0) return 1;
  }
  // Weights packed now when immutable; mutable ones are packed per call into the workspace.
  const size_t wbytes = size_t(K) * C * R * S * sizeof(float);
  if (s->half < 0 && w.cache_id != 0 && w.data && w.dtype != kF32) {  // 16-bit weights, f32 products
    if (s->packed.take(a, wbytes, op, "its weights packed") != 0) return 1;
    if (convert_weights(a, krsc_view(w, s->packed.get(), kF32), w) != 0) return 1;
    s->weights_packed = true;
  } else if (s->half < 0 && w.cache_id != 0 && w.data) {
    if (s->packed.take(a, wbytes, op, "its weights packed") != 0) return 1;
    cudaStream_t packing = nullptr;  // its own stream: the setup waits for nothing else
    if (cudaStreamCreateWithFlags(&packing, cudaStreamNonBlocking) != cudaSuccess)
      return launched(
          a, Transposed ? "conv_transpose2d: a stream to pack the weights" : "conv2d: a stream to pack the weights");
    pack_krsc<><<<grid_for(int64_t(wbytes / sizeof(float))), 256, 0, packing>>>(
        static_cast<const float*>(w.data), s->packed.as<float>(), K, C, R, S, w.strides[0], w.strides[1], w.strides[2],
        w.strides[3]);
    cudaError_t e = cudaStreamSynchronize(packing);
    if (!Transposed && e == cudaSuccess && conv_plans_asked()) {
      float lo, hi;
      const Act act = activation_of<Op>(a, lo, hi);
      e = try_plan(s.get(), a, at, xd, yd, act, lo, hi, packing);
    }
    // Timing the plans set the handle's stream to `packing`: the legacy stream again before that
    // one goes, so the handle never holds a destroyed stream (cudnnSetStream touches the one it
    // replaces).
    if (cudnnSetStream(s->handle, nullptr) != CUDNN_STATUS_SUCCESS && e == cudaSuccess) e = cudaErrorUnknown;
    (void)cudaStreamDestroy(packing);
    if (e != cudaSuccess)
      return launched(a, Transposed ? "conv_transpose2d: packing the weights" : "conv2d: packing the weights");
    s->weights_packed = true;
  }
  if (s->half < 0 && !(Transposed ? choose_data_algo(s.get(), tf32) : choose_algo(s.get(), tf32)))
    return fail(a,
                "%s: cuDNN has no FP32 algorithm for input [%d, %d, %d, %d], weight [%d, %d, %d, %d], "
                "groups %d, output [%d, %d, %d, %d]",
                op, xd[0], xd[1], xd[2], xd[3], K, C, R, S, groups, yd[0], yd[1], yd[2], yd[3]);
  if (!Transposed && s->half < 0 && s->io == kF32) choose_route(s.get(), a, at, xd, yd, tf32);
  if (s->plan) s->workspace = std::max(s->workspace, padded(s->plan->workspace_bytes()));
  const int wd[4] = {K, C, R, S};
  log_choice(op, *s, xd, wd, yd, tf32, Transposed);  // cuDNN's workspace, before the copies' room
  // Room for the input and the output to be copied to channels-last when they come in
  // another layout (a step's calls have its setup's strides: core/backend.h; a call that
  // broke that would fail on the room, not compute wrongly); in 16 bits, for the input and the
  // convolution's output in 16 bits, and the output in f32 when its layout is another. (Room
  // for both whatever their layouts made ResNet-18's first convolution at batch 64 ask for
  // about 244 MB, the largest scratch of its steps, which every call slot's arena holds.)
  // 16-bit tensors (conv_16): cuDNN's input (a channels-last copy, in f32 unless the product
  // is 16-bit) and output (channels-last, in its type), the output's channels-last copy when its
  // layout is another, a mutable bias in f32.
  // A padded input is always copied, at its padded size.
  const size_t nx = size_t(numel(x)), ny = size_t(numel(y));
  const size_t y_room = is_nhwc(y) ? 0 : padded(ny * sizeof(float));
  const size_t nx_copy = input_copy_elems(x, s->cpad);
  if (s->io != kF32 && s->half >= 0)
    s->workspace +=
        (is_nhwc(x) && !s->cpad ? 0 : padded(nx_copy * 2)) + padded(ny * 2) + (is_nhwc(y) ? 0 : padded(ny * 2));
  else if (s->io != kF32)
    s->workspace += padded(nx * sizeof(float)) + padded(ny * sizeof(float)) + (is_nhwc(y) ? 0 : padded(ny * 2));
  else if (s->half < 0)
    s->workspace += (is_nhwc(x) ? 0 : padded(nx * sizeof(float))) + y_room +
                    (s->nchw ? padded(nx * sizeof(float)) + padded(ny * sizeof(float)) : 0) +
                    (s->direct ? padded(direct_conv_workspace(s->dc)) : 0);
  else
    s->workspace += padded(nx_copy * 2) + padded(ny * 2) + y_room;
  if (bias16 && !s->bias32) s->workspace += padded(size_t(numel(bias)) * sizeof(float));
  if (!s->weights_packed) s->workspace += padded(wbytes);
  *workspace_bytes = s->workspace;
  *state = s.release();
  return 0;
}

void destroy(void* state) { delete static_cast<ConvState*>(state); }

template <typename T, typename D = float>
void launch_finish(const amber_kernel_args* a, const void* src, void* y, int64_t n, int64_t channels, const float* bias,
                   int64_t bias_stride, Act act, float lo, float hi) {
  const T* from = static_cast<const T*>(src);
  D* to = static_cast<D*>(y);
  const bool by_four = std::is_same_v<D, float> && passes::by_four(n, channels, src, y);
  if constexpr (std::is_same_v<D, float>)
    if (by_four) {  // n is a multiple of the channels, so of four
      finish4<T><<<grid_for(n / 4), 256, 0, stream_of(a)>>>(from, to, uint32_t(n / 4), uint32_t(channels), bias,
                                                            bias_stride, act, lo, hi);
      return;
    }
  if (n <= int64_t(INT32_MAX))
    finish<T, uint32_t, D><<<grid_for(n), 256, 0, stream_of(a)>>>(from, to, uint32_t(n), uint32_t(channels), bias,
                                                                  bias_stride, act, lo, hi);
  else
    finish<T, int64_t, D><<<grid_for(n), 256, 0, stream_of(a)>>>(from, to, n, channels, bias, bias_stride, act, lo, hi);
}

// conv2d, fused_conv2d and conv_transpose2d on 16-bit tensors of type T (s->io): cuDNN in T on
// tensor cores when the product is 16-bit (s->half; never transposed), else in f32 on widened
// copies; then bias and activation in f32 and the output rounded to T in one pass (into y, or a
// channels-last copy of it). carve gives the workspace from its end (cuDNN's own room stays at
// its start).
template <Kind Op, typename T, typename Carve>
int conv_16(const amber_kernel_args* a, ConvState* s, Carve& carve, char* ws, size_t& ws_bytes) {
  const char* const op = attrs_of<Op>().name;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &y = a->outputs[0];
  const int64_t channels = y.sizes[1];  // the bias's
  const bool half = s->half >= 0;
  const int32_t ct = half ? s->io : kF32;  // what cuDNN reads and writes
  const size_t item = half ? 2 : sizeof(float);
  const void* wp = s->packed.get();
  if (!s->weights_packed) {  // mutable weights (f32 products only): widened into KRSC here
    void* dst = carve(size_t(numel(w)) * sizeof(float));
    if (!dst) return fail(a, "%s: the workspace is too small", op);
    if (copy_convert(a, krsc_view(w, dst, kF32), w) != 0) return 1;
    wp = dst;
  }
  const float* b = nullptr;
  int64_t bstride = 0;
  if (present(bias)) {
    b = s->bias32.as<const float>(), bstride = 1;
    if (!b && bias.dtype == kF32) {
      b = static_cast<const float*>(bias.data), bstride = bias.strides[0];
    } else if (!b) {  // a mutable 16-bit bias
      void* dst = carve(size_t(numel(bias)) * sizeof(float));
      if (!dst) return fail(a, "%s: the workspace is too small", op);
      if (copy_convert(a, dense_f32(bias, dst), bias) != 0) return 1;
      b = static_cast<const float*>(dst);
    }
  }
  const void* xp = x.data;
  if (!half || !is_nhwc(x) || s->cpad) {
    void* dst = carve(input_copy_elems(x, s->cpad) * item);
    if (!dst) return fail(a, "%s: the workspace is too small", op);
    if (input_copy(a, s, dst, ct) != 0) return 1;
    xp = dst;
  }
  void* out = carve(size_t(numel(y)) * item);  // cuDNN's output, channels-last
  const bool y_direct = is_nhwc(y);
  void* yp = y_direct ? y.data : carve(size_t(numel(y)) * 2);
  if (!out || !yp) return fail(a, "%s: the workspace is too small", op);
  {
    const float one = 1.0f, zero = 0.0f;
    CudnnPlanTurn turn;
    std::lock_guard lock(s->launch);
    CUDNN_TRY(cudnnSetStream(s->handle, stream_of(a)));
    if constexpr (Op == kTransposed)
      CUDNN_TRY(cudnnConvolutionBackwardData(s->handle, &one, s->w, wp, s->x, xp, s->conv, s->data_algo, ws, ws_bytes,
                                             &zero, s->y, out));
    else
      CUDNN_TRY(cudnnConvolutionForward(s->handle, &one, s->x, xp, s->w, wp, s->conv, s->algo, ws, ws_bytes, &zero,
                                        s->y, out));
  }
  float lo, hi;
  const Act which = activation_of<Op>(a, lo, hi);
  if (half)
    launch_finish<T, T>(a, out, yp, numel(y), channels, b, bstride, which, lo, hi);
  else
    launch_finish<float, T>(a, out, yp, numel(y), channels, b, bstride, which, lo, hi);
  if (!y_direct) {
    amber_tensor_view v = nhwc_view(y, yp);
    if (copy_convert(a, y, v) != 0) return 1;
  }
  return launched(a, op);
}

template <Kind Op>
int conv(const amber_kernel_args* a) {
  constexpr bool Transposed = Op == kTransposed;
  const char* const op = attrs_of<Op>().name;
  auto* s = setup_state<ConvState>(a, op);
  if (!s) return 1;
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &y = a->outputs[0];
  if (numel(y) == 0) return 0;
  DeviceScope scope(a->device);
  const int K = int(w.sizes[0]), C = int(w.sizes[1]), R = int(w.sizes[2]), S = int(w.sizes[3]);
  // The workspace, from its end: packed weights (mutable weights only), the output and the
  // input in channels-last (when they come in another layout; in 16 bits, always, and the
  // output in f32 when its layout is another), cuDNN's own at the start.
  char* ws = static_cast<char*>(a->workspace);
  size_t ws_bytes = a->workspace_bytes;
  auto take = [&](size_t bytes) -> void* {
    const size_t room = padded(bytes);
    if (ws_bytes < room) return nullptr;
    ws_bytes -= room;
    return ws + ws_bytes;
  };
  if (s->io == kBF16) return conv_16<Op, __nv_bfloat16>(a, s, take, ws, ws_bytes);
  if (s->io == kF16) return conv_16<Op, __half>(a, s, take, ws, ws_bytes);
  const void* wp = s->packed.get();
  if (!s->weights_packed) {
    const size_t wbytes = size_t(K) * C * R * S * sizeof(float);
    auto* dst = static_cast<float*>(take(wbytes));
    if (!dst) return fail(a, "%s: the workspace is too small", op);
    pack_krsc<><<<grid_for(int64_t(wbytes / sizeof(float))), 256, 0, stream_of(a)>>>(
        static_cast<const float*>(w.data), dst, K, C, R, S, w.strides[0], w.strides[1], w.strides[2], w.strides[3]);
    if (launched(a, Transposed ? "conv_transpose2d: packing the weights" : "conv2d: packing the weights") != 0)
      return 1;
    wp = dst;
  }
  // The NCHW route (s->nchw) reads an input that is dense NCHW already (a caller's image) as it is.
  const bool x_nchw = s->nchw && is_nchw(x);
  void* yp = y.data;  // the f32 output in channels-last
  const bool y_direct = is_nhwc(y);
  if (!y_direct && !(yp = take(size_t(numel(y)) * sizeof(float)))) return fail(a, "%s: the workspace is too small", op);
  const void* xp = x.data;
  void* out = yp;  // what cuDNN writes: yp, or the output in 16 bits
  if (s->half >= 0) {
    void* dst = take(input_copy_elems(x, s->cpad) * 2);
    if (!dst || !(out = take(size_t(numel(y)) * 2))) return fail(a, "%s: the workspace is too small", op);
    if (input_copy(a, s, dst, s->half) != 0) return 1;
    xp = dst;
  } else if (!is_nhwc(x) && !x_nchw) {
    void* dst = take(size_t(numel(x)) * sizeof(float));
    if (!dst) return fail(a, "%s: the workspace is too small", op);
    if (copy_convert(a, nhwc_view(x, dst), x) != 0) return 1;
    xp = dst;
  }
  if (s->direct && aligned16(xp) && aligned16(yp) && aligned16(wp)) {  // Amber's own kernel (choose_route)
    const size_t pbytes = direct_conv_workspace(s->dc);
    void* partials = pbytes ? take(pbytes) : nullptr;
    if (pbytes && !partials) return fail(a, "%s: the workspace is too small", op);
    float lo, hi;
    const Act which = activation_of<Op>(a, lo, hi);
    const bool with_bias = present(bias);
    const cudaError_t e =
        direct_conv(s->dc, static_cast<const float*>(xp), static_cast<const float*>(wp),
                    with_bias ? static_cast<const float*>(bias.data) : nullptr, with_bias ? bias.strides[0] : 0, which,
                    lo, hi, static_cast<float*>(yp), partials, stream_of(a));
    if (e != cudaSuccess) return fail(a, "%s: %s", op, cudaGetErrorString(e));
    if (!y_direct && copy_convert(a, y, nhwc_view(y, yp)) != 0) return 1;
    return launched(a, op);
  }
  void *xn = nullptr, *yn = nullptr;  // the NCHW route's input and output (s->nchw)
  if (s->nchw && (!(xn = take(size_t(numel(x)) * sizeof(float))) || !(yn = take(size_t(numel(y)) * sizeof(float)))))
    return fail(a, "%s: the workspace is too small", op);
  const float one = 1.0f, zero = 0.0f;
  bool add_bias = false, finished = false;  // finished: the plan added the bias and clamped
  {
    CudnnPlanTurn turn;
    std::lock_guard lock(s->launch);
    CUDNN_TRY(cudnnSetStream(s->handle, stream_of(a)));
    const bool by_plan = s->plan && ws_bytes >= s->plan->workspace_bytes() && aligned16(xp) && aligned16(yp) &&
                         aligned16(wp) && aligned16(ws) && (!s->plan_bias || aligned16(bias.data));
    if (by_plan) {
      void* const buffers[4] = {const_cast<void*>(xp), const_cast<void*>(wp), yp, s->plan_bias ? bias.data : nullptr};
      CUDNN_TRY(s->plan->run(s->handle, buffers, ws));
    } else if constexpr (Transposed) {
      CUDNN_TRY(cudnnConvolutionBackwardData(s->handle, &one, s->w, wp, s->x, xp, s->conv, s->data_algo, ws, ws_bytes,
                                             &zero, s->y, yp));
    } else if (s->nchw) {  // through NCHW copies (choose_route): the weight as given
      if (!x_nchw) CUDNN_TRY(cudnnTransformTensor(s->handle, &one, s->x, xp, &zero, s->xn, xn));
      CUDNN_TRY(cudnnConvolutionForward(s->handle, &one, s->xn, x_nchw ? x.data : xn, s->wn, w.data, s->conv,
                                        s->nchw_algo, ws, ws_bytes, &zero, s->yn, yn));
      CUDNN_TRY(cudnnTransformTensor(s->handle, &one, s->yn, yn, &zero, s->y, out));
    } else {
      CUDNN_TRY(cudnnConvolutionForward(s->handle, &one, s->x, xp, s->w, wp, s->conv, s->algo, ws, ws_bytes, &zero,
                                        s->y, out));
    }
    // The bias, unless the plan added it: fused_conv2d and 16-bit products add it in the
    // pass after.
    add_bias = present(bias) && !(by_plan && s->plan_bias);
    finished = by_plan && s->plan_clamp;
    if (add_bias && Op != kFused && out == yp)
      CUDNN_TRY(cudnnAddTensor(s->handle, &one, s->b, bias.data, &one, s->y, yp));
  }
  if ((Op == kFused && !finished) || out != yp) {
    float lo, hi;
    const Act which = activation_of<Op>(a, lo, hi);
    const float* b = add_bias ? static_cast<const float*>(bias.data) : nullptr;
    const int64_t n = numel(y), bstride = add_bias ? bias.strides[0] : 0;
    if (s->half == kBF16)
      launch_finish<__nv_bfloat16>(a, out, yp, n, K, b, bstride, which, lo, hi);
    else if (s->half == kF16)
      launch_finish<__half>(a, out, yp, n, K, b, bstride, which, lo, hi);
    else
      launch_finish<float>(a, yp, yp, n, K, b, bstride, which, lo, hi);
  }
  if (!y_direct && copy_convert(a, y, nhwc_view(y, yp)) != 0) return 1;
  return launched(a, op);
}

AMBER_CUDA_KERNELS(conv) {
  for (const int32_t t : {kF32, kBF16, kF16}) {
    register_kernel("conv2d", t, amber_kernel{conv<kConv>, setup<kConv>, destroy, nullptr});
    register_kernel("fused_conv2d", t, amber_kernel{conv<kFused>, setup<kFused>, destroy, nullptr});
    register_kernel("conv_transpose2d", t, amber_kernel{conv<kTransposed>, setup<kTransposed>, destroy, nullptr});
  }
}

}  // namespace
}  // namespace amber::cuda
