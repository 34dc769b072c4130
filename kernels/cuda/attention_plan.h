// Scaled dot-product attention on f16 or bf16 tensors as one cuDNN backend-API operation (the
// unified SDPA forward of cuDNN 9.13.1 and later: its fused, flash-style kernels), for the shapes
// it takes: Q [B, H, L, E], K [B, H, S, E], V [B, H, S, Ev] and O [B, H, L, Ev], any strides with
// unit-stride rows, a scale, no mask. Unlike Amber's own kernel (f32 throughout, the output
// rounded once), cuDNN rounds the softmax's weights to the tensors' type before their product
// with V, as flash attention does. Opt-in (attention.cu).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>

#include "amber/kernels/cuda/cudnn_graph.h"

namespace amber::cuda {

struct AttentionShape {
  cudnnDataType_t type = CUDNN_DATA_HALF;  // CUDNN_DATA_HALF or CUDNN_DATA_BFLOAT16
  int64_t q[4], k[4], v[4], o[4];          // dims
  int64_t qs[4], ks[4], vs[4], os[4];      // strides, in elements
  float scale = 1;                         // the scores' factor
  bool operator==(const AttentionShape& other) const;
};

class AttentionPlan {
 public:
  AttentionPlan() = default;
  AttentionPlan(const AttentionPlan&) = delete;
  AttentionPlan& operator=(const AttentionPlan&) = delete;
  ~AttentionPlan() = default;  // before the handle it was built with is destroyed

  // Builds the operation and the first execution plan cuDNN's heuristics (mode A, then the
  // fallback list) offer for it. Returns "" with a plan, or why there is none (cuDNN older than
  // 9.13.1 at build or run time, or the shape refused): the caller then takes another path.
  std::string build(cudnnHandle_t handle, const AttentionShape& shape);
  size_t workspace_bytes() const { return size_t(workspace_); }
  int64_t engine() const { return engine_; }
  // Runs the plan on the handle's stream (buffers 16-byte aligned, workspace of
  // workspace_bytes()). Not thread-safe: callers serialise runs on a plan (as on its handle).
  cudnnStatus_t run(cudnnHandle_t handle, const void* q, const void* k, const void* v, void* o, void* workspace);

 private:
  cudnn_graph::Descriptors d_;
  cudnnBackendDescriptor_t plan_ = nullptr;  // owned by d_
  int64_t workspace_ = 0, engine_ = -1;
  float scale_ = 1;  // the scale's host value, passed by value through each run's variant pack
};

}  // namespace amber::cuda
