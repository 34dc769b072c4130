// A convolution (with its bias added, and a clamp applied, in the same kernel where an engine
// allows) as a cuDNN 9
// backend-API execution plan: the operation graph is built once, every FP32 engine config that
// cuDNN's heuristics (mode A, then the fallback list) offer without tensor cores (with them too
// under ConvShape::tf32) is timed on
// the real shape, and the fastest is kept. The legacy cudnnFind API reaches fewer engines:
// on an H100 its pick ran ResNet-18's 3x3 convolutions up to 2.4x slower.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <string>

#include "amber/kernels/cuda/cudnn_graph.h"

namespace amber::cuda {

struct ConvShape {
  int64_t x[4], w[4], y[4];  // N, C, H, W; K, C / groups, R, S; N, K, P, Q (all dense NHWC/KRSC)
  int64_t pad[2], stride[2], dilation[2];
  bool bias = false;   // adds a [K] bias (dense, 16-byte aligned) in the plan
  bool clamp = false;  // then clamps to [lo, hi] (lo finite; cuDNN's ReLU with clips, NaN propagated)
  float lo = 0, hi = 0;
  bool tf32 = false;  // tensor-core engines (TF32 inputs) are candidates too
};

class ConvPlan {
 public:
  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() = default;  // before the handle it was built with is destroyed

  // Builds and times the candidates on `stream` with the buffers given (x, w, y, bias; the
  // same sizes as the call's, 16-byte aligned; their contents are overwritten in y only), each
  // candidate's workspace taken from `device`'s allocator (device_memory.h).
  // Returns "" with a plan chosen, or why there is none (the caller then takes another path).
  std::string build(cudnnHandle_t handle, const ConvShape& shape, void* const buffers[4], cudaStream_t stream,
                    int32_t device);
  size_t workspace_bytes() const { return size_t(workspace_); }
  // Runs the plan on the handle's stream; buffers as for build, workspace of workspace_bytes().
  // A run recorded into a CUDA graph (the stream capturing) keeps its variant pack until the
  // plan is destroyed, in case the engine's recorded work refers to the pack's host memory.
  // Not thread-safe: callers serialise runs on a plan (as on its handle).
  cudnnStatus_t run(cudnnHandle_t handle, void* const buffers[4], void* workspace);
  // The chosen engine's global index and its measured time (for diagnostics).
  int64_t engine() const { return engine_; }
  float microseconds() const { return microseconds_; }

 private:
  cudnn_graph::Descriptors d_;               // every descriptor the plan refers to, the plan too once chosen
  cudnnBackendDescriptor_t plan_ = nullptr;  // the chosen plan (owned by d_)
  int64_t workspace_ = 0, engine_ = -1;
  int n_tensors_ = 3;
  float microseconds_ = 0;
};

}  // namespace amber::cuda
