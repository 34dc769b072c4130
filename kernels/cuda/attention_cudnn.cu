// attention_cudnn.h: the opt-in cuDNN route of 16-bit attention, a step's AttentionPlan
// (attention_plan.h) with its own handle, built at setup and run where a call is the shape it was
// built for.

#include "amber/kernels/cuda/attention_cudnn.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "amber/kernels/cuda/attention_plan.h"
#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/device_scope.h"
#include "amber/kernels/cuda/switches.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

// The cuDNN operation's view of a call, or false where it does not apply: 4-D q, k, v of the same
// batch and head counts, unit-stride rows, every other stride a multiple of 8 elements (16
// bytes), no mask, not causal, at least one query and one key (not both one: a case cuDNN's own
// tests skip). merged: the output [B, L, H * Ev] seen as [B, H, L, Ev].
bool cudnn_shape(const amber_kernel_args* a, bool merged, cudnnDataType_t type, AttentionShape* s) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2], &out = a->outputs[0];
  if (q.ndim != 4 || k.ndim != 4 || v.ndim != 4 || present(a->inputs[3]) ||
      a->attrs[op_attrs::scaled_dot_product_attention::is_causal].i != 0)
    return false;
  for (int d = 0; d < 2; ++d)
    if (k.sizes[d] != q.sizes[d] || v.sizes[d] != q.sizes[d]) return false;
  const int64_t B = q.sizes[0], H = q.sizes[1], L = q.sizes[2], E = q.sizes[3], S = k.sizes[2], Ev = v.sizes[3];
  if (B == 0 || H == 0 || L == 0 || S == 0 || (L == 1 && S == 1) || E % 8 != 0 || Ev % 8 != 0) return false;
  s->type = type;
  s->scale = float(1.0 / std::sqrt(double(E)));
  for (int d = 0; d < 4; ++d) {
    s->q[d] = q.sizes[d], s->qs[d] = q.strides[d];
    s->k[d] = k.sizes[d], s->ks[d] = k.strides[d];
    s->v[d] = v.sizes[d], s->vs[d] = v.strides[d];
  }
  const int64_t o[4] = {B, H, L, Ev};
  std::copy(o, o + 4, s->o);
  if (merged) {  // out [B, L, H * Ev]: head h at columns [h * Ev, (h + 1) * Ev)
    if (out.ndim != 3 || out.strides[2] != 1) return false;
    const int64_t os[4] = {out.strides[0], Ev, out.strides[1], 1};
    std::copy(os, os + 4, s->os);
  } else {
    if (out.ndim != 4) return false;
    std::copy(out.strides, out.strides + 4, s->os);
  }
  for (const int64_t* st : {s->qs, s->ks, s->vs, s->os}) {
    if (st[3] != 1) return false;
    for (int d = 0; d < 3; ++d)
      if (st[d] % 8 != 0) return false;
  }
  return true;
}

// A step's cuDNN attention: the handle, the shape its plan was built for, the plan.
struct CudnnAttention {
  cudnnHandle_t handle = nullptr;
  AttentionShape shape;
  std::unique_ptr<AttentionPlan> plan;
  std::mutex launch;  // a handle holds one stream at a time
  ~CudnnAttention() {
    CudnnPlanTurn turn;
    plan.reset();  // its descriptors refer to the handle: they go first
    if (handle) cudnnDestroy(handle);
  }
};

void say(const char* name, const AttentionShape& s, const std::string& what) {
  std::fprintf(stderr, "amber cuda: %s q [%lld, %lld, %lld, %lld] k [.., %lld, %lld] v [.., %lld, %lld] on cuDNN: %s\n",
               name, (long long)s.q[0], (long long)s.q[1], (long long)s.q[2], (long long)s.q[3], (long long)s.k[2],
               (long long)s.k[3], (long long)s.v[2], (long long)s.v[3], what.c_str());
}

}  // namespace

int cudnn_attention_setup(const amber_kernel_args* a, bool merged, bool f16, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes = 0;
  const char* name = merged ? "attention_merge_heads" : "scaled_dot_product_attention";
  AttentionShape shape;
  if (!cudnn_attention_asked() || !cudnn_shape(a, merged, f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16, &shape))
    return 0;
  std::unique_lock no_capture(capture_lock());
  CudnnPlanTurn turn;  // after the capture lock, as a capture takes them
  DeviceScope scope(a->device);
  auto s = std::make_unique<CudnnAttention>();
  const cudnnStatus_t st = cudnnCreate(&s->handle);
  if (st != CUDNN_STATUS_SUCCESS) {
    s->handle = nullptr;
    say(name, shape, std::string("no handle: ") + cudnnGetErrorString(st));
    return 0;
  }
  s->shape = shape;
  s->plan = std::make_unique<AttentionPlan>();
  const std::string why = s->plan->build(s->handle, shape);
  (void)cudaGetLastError();
  if (!why.empty()) {
    say(name, shape, "not used: " + why);
    return 0;
  }
  say(name, shape,
      "engine " + std::to_string(s->plan->engine()) + ", workspace " + std::to_string(s->plan->workspace_bytes()) +
          " B");
  *workspace_bytes = s->plan->workspace_bytes();
  *state = s.release();
  return 0;
}

void cudnn_attention_destroy(void* state) { delete static_cast<CudnnAttention*>(state); }

int cudnn_attention_run(const amber_kernel_args* a, bool merged, int* rc) {
  auto* s = static_cast<CudnnAttention*>(a->state);
  AttentionShape shape;
  if (!s || !cudnn_shape(a, merged, s->shape.type, &shape) || !(shape == s->shape) ||
      a->workspace_bytes < s->plan->workspace_bytes() || !aligned16(a->inputs[0].data) ||
      !aligned16(a->inputs[1].data) || !aligned16(a->inputs[2].data) || !aligned16(a->outputs[0].data) ||
      !aligned16(a->workspace))
    return 0;
  DeviceScope scope(a->device);
  CudnnPlanTurn turn;
  std::lock_guard lock(s->launch);
  cudnnStatus_t st = cudnnSetStream(s->handle, stream_of(a));
  if (st == CUDNN_STATUS_SUCCESS)
    st = s->plan->run(s->handle, a->inputs[0].data, a->inputs[1].data, a->inputs[2].data, a->outputs[0].data,
                      a->workspace);
  if (st != CUDNN_STATUS_SUCCESS) {
    (void)cudaGetLastError();
    *rc = fail(a, "%s: cuDNN's fused attention failed: %s",
               merged ? "attention_merge_heads" : "scaled_dot_product_attention", cudnnGetErrorString(st));
    return 1;
  }
  *rc = launched(a, merged ? "attention_merge_heads" : "scaled_dot_product_attention");
  return 1;
}

}  // namespace amber::cuda
