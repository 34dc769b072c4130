// CUDA kernel for conv2d on cuDNN 9 (its convolution API): activations with whatever
// strides they come in (conv2d's own outputs are channels-last), weights packed once at the
// step's setup into cuDNN's NHWC filter layout, bias added by cuDNN after the product. FMA
// math only (no TF32). The step's state owns the handle, the descriptors, the algorithm
// (cuDNN's heuristics, at setup), and the packed weights; concurrent calls share it under a
// mutex around the launch (a cuDNN handle holds one stream at a time).

#include <cudnn.h>

#include <memory>
#include <mutex>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"

namespace amber::cuda {
namespace {

struct ConvState {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;
  float* packed = nullptr;  // weights in KRSC order (cudaMalloc'd, freed with the state)
  bool weights_packed = false;
  std::mutex launch;
  ~ConvState() {
    if (packed) cudaFree(packed);
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (b) cudnnDestroyTensorDescriptor(b);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (handle) cudnnDestroy(handle);
  }
};

// The 4-D (N, C, H, W) dims and strides of a view, treating 3-D (C, H, W) as N = 1.
void nchw_of(const amber_tensor_view& v, int dims[4], int strides[4]) {
  if (v.ndim == 4) {
    for (int i = 0; i < 4; ++i) dims[i] = int(v.sizes[i]), strides[i] = int(v.strides[i]);
  } else {
    dims[0] = 1;
    strides[0] = int(v.sizes[0] * v.strides[0]);
    for (int i = 0; i < 3; ++i) dims[i + 1] = int(v.sizes[i]), strides[i + 1] = int(v.strides[i]);
  }
  for (int i = 0; i < 4; ++i)
    if (dims[i] == 1 && strides[i] <= 0) strides[i] = 1;
}

// w[k, c, r, s] (any strides) -> out[k, r, s, c] dense.
__global__ void pack_krsc(const float* w, float* out, int K, int C, int R, int S, int64_t sk, int64_t sc, int64_t sr,
                          int64_t ss) {
  const int64_t n = int64_t(K) * C * R * S;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i;
    const int c = int(rest % C);
    rest /= C;
    const int s = int(rest % S);
    rest /= S;
    const int r = int(rest % R);
    const int k = int(rest / R);
    out[i] = w[k * sk + c * sc + r * sr + s * ss];
  }
}

#define CUDNN_TRY(call)                                                                   \
  do {                                                                                    \
    const cudnnStatus_t st_ = (call);                                                     \
    if (st_ != CUDNN_STATUS_SUCCESS) return fail(a, "conv2d: %s: %s", #call, cudnnGetErrorString(st_)); \
  } while (0)

int pair(const amber_kernel_args* a, int i, int which) {
  const amber_attr& at = a->attrs[i];
  return int(at.count > which ? at.ints[which] : at.ints[0]);
}

int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &y = a->outputs[0];
  DeviceScope scope(a->device);
  auto s = std::make_unique<ConvState>();
  CUDNN_TRY(cudnnCreate(&s->handle));
  CUDNN_TRY(cudnnCreateTensorDescriptor(&s->x));
  CUDNN_TRY(cudnnCreateTensorDescriptor(&s->y));
  CUDNN_TRY(cudnnCreateFilterDescriptor(&s->w));
  CUDNN_TRY(cudnnCreateConvolutionDescriptor(&s->conv));
  int xd[4], xs[4], yd[4], ys[4];
  nchw_of(x, xd, xs);
  nchw_of(y, yd, ys);
  CUDNN_TRY(cudnnSetTensorNdDescriptor(s->x, CUDNN_DATA_FLOAT, 4, xd, xs));
  CUDNN_TRY(cudnnSetTensorNdDescriptor(s->y, CUDNN_DATA_FLOAT, 4, yd, ys));
  const int K = int(w.sizes[0]), C = int(w.sizes[1]), R = int(w.sizes[2]), S = int(w.sizes[3]);
  CUDNN_TRY(cudnnSetFilter4dDescriptor(s->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, K, C, R, S));
  const int groups = int(a->attrs[3].i);
  CUDNN_TRY(cudnnSetConvolution2dDescriptor(s->conv, pair(a, 1, 0), pair(a, 1, 1), pair(a, 0, 0), pair(a, 0, 1),
                                            pair(a, 2, 0), pair(a, 2, 1), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_TRY(cudnnSetConvolutionGroupCount(s->conv, groups));
  CUDNN_TRY(cudnnSetConvolutionMathType(s->conv, CUDNN_FMA_MATH));  // no TF32
  if (present(bias)) {
    CUDNN_TRY(cudnnCreateTensorDescriptor(&s->b));
    const int bd[4] = {1, K, 1, 1}, bs[4] = {K * int(bias.strides[0]), int(bias.strides[0]), 1, 1};
    CUDNN_TRY(cudnnSetTensorNdDescriptor(s->b, CUDNN_DATA_FLOAT, 4, bd, bs));
  }
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(s->handle, s->x, s->w, s->conv, s->y, 8, &found, perf));
  bool chosen = false;
  for (int i = 0; i < found && !chosen; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH) {
      s->algo = perf[i].algo;
      chosen = true;
    }
  if (!chosen && found > 0) s->algo = perf[0].algo;
  CUDNN_TRY(cudnnGetConvolutionForwardWorkspaceSize(s->handle, s->x, s->w, s->conv, s->y, s->algo, &s->workspace));
  // Weights packed now when immutable; mutable ones are packed per call into the workspace.
  const size_t wbytes = size_t(K) * C * R * S * sizeof(float);
  if (w.cache_id != 0 && w.data) {
    if (cudaMalloc(&s->packed, wbytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return fail(a, "conv2d: out of memory packing %zu bytes of weights", wbytes);
    }
    pack_krsc<<<grid_for(int64_t(wbytes / sizeof(float))), 256>>>(static_cast<const float*>(w.data), s->packed, K, C,
                                                                   R, S, w.strides[0], w.strides[1], w.strides[2],
                                                                   w.strides[3]);
    if (cudaDeviceSynchronize() != cudaSuccess) return launched(a, "conv2d: packing the weights");
    s->weights_packed = true;
  } else {
    s->workspace += (wbytes + 255) / 256 * 256;
  }
  *workspace_bytes = s->workspace;
  *state = s.release();
  return 0;
}

void destroy(void* state) { delete static_cast<ConvState*>(state); }

int conv2d(const amber_kernel_args* a) {
  auto* s = static_cast<ConvState*>(a->state);
  if (!s) return fail(a, "conv2d: called without its setup");
  const amber_tensor_view &x = a->inputs[0], &w = a->inputs[1], &bias = a->inputs[2], &y = a->outputs[0];
  if (numel(y) == 0) return 0;
  DeviceScope scope(a->device);
  const int K = int(w.sizes[0]), C = int(w.sizes[1]), R = int(w.sizes[2]), S = int(w.sizes[3]);
  const size_t wbytes = size_t(K) * C * R * S * sizeof(float);
  char* ws = static_cast<char*>(a->workspace);
  size_t ws_bytes = a->workspace_bytes;
  const float* wp = s->packed;
  if (!s->weights_packed) {  // mutable weights: packed into the end of the workspace
    const size_t room = (wbytes + 255) / 256 * 256;
    if (ws_bytes < room) return fail(a, "conv2d: the workspace is too small");
    float* dst = reinterpret_cast<float*>(ws + ws_bytes - room);
    pack_krsc<<<grid_for(int64_t(wbytes / sizeof(float))), 256, 0, stream_of(a)>>>(
        static_cast<const float*>(w.data), dst, K, C, R, S, w.strides[0], w.strides[1], w.strides[2], w.strides[3]);
    if (launched(a, "conv2d: packing the weights") != 0) return 1;
    wp = dst;
    ws_bytes -= room;
  }
  const float one = 1.0f, zero = 0.0f;
  std::lock_guard lock(s->launch);
  CUDNN_TRY(cudnnSetStream(s->handle, stream_of(a)));
  CUDNN_TRY(cudnnConvolutionForward(s->handle, &one, s->x, x.data, s->w, wp, s->conv, s->algo, ws, ws_bytes, &zero,
                                    s->y, y.data));
  if (present(bias)) CUDNN_TRY(cudnnAddTensor(s->handle, &one, s->b, bias.data, &one, s->y, y.data));
  return launched(a, "conv2d");
}

AMBER_CUDA_KERNELS(conv) { register_kernel("conv2d", kF32, amber_kernel{conv2d, setup, destroy, nullptr}); }

}  // namespace
}  // namespace amber::cuda
