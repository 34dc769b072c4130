// CUDA kernels for scaled_dot_product_attention and attention_merge_heads (each head's output rows
// written into [*, L, H * Ev] at the head's columns), fused kernels of Amber's own, on f32, bf16
// and f16 tensors (computing in f32 throughout, a 16-bit output rounded once, as the CPU's route
// through its f32 kernel). Heads of
// up to 128 (E and Ev): a block takes 8 query rows of one batch entry (two a warp; 4, one a warp,
// when that makes fewer than 128 blocks) and walks the
// keys in tiles of 32 staged in shared memory (one key a lane), with a running softmax (with
// fewer than 128 blocks, more than 32 keys and heads up to 92, the block's 4 warps take the 4
// rows together and split each round of 128 keys, their softmaxes combined at the end): each
// tile's scores (the mask or causal mask applied) raise the row's maximum, the row's sum and
// output so far are rescaled by exp(old max - new max), and the tile's weights times its values
// are added; no score row is ever held whole, so any key length runs. Wider heads: one block per
// (batch entry, query row) holding the row's scores in shared memory (about 12k keys at 48
// KiB; longer sequences are refused with an error). Both give what the CPU's softmax gives on
// special rows: a row whose every score is -inf (fully masked) or with a NaN or +inf score is
// NaN, and no keys (S = 0) gives NaN. Batch dims of q, k, v and the mask broadcast as on the CPU.
// With AMBER_CUDA_CUDNN_ATTENTION=1, f16/bf16 attention of the shapes cuDNN's fused attention
// takes (attention_plan.h: 4-D, no broadcast, no mask, not causal) runs on cuDNN instead, its plan
// built at setup; shapes it refuses keep these kernels.

#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>

#include "amber/kernels/cuda/attention_kernels.cuh"
#include "amber/kernels/cuda/attention_plan.h"
#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/switches.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace attention;  // the kernels and what they share (attention_kernels.cuh)

static_assert(op_attrs::scaled_dot_product_attention::is_causal == op_attrs::attention_merge_heads::is_causal);

// ---- cuDNN's fused attention (opt-in) ----

// The cuDNN operation's view of a call, or false where it does not apply: 4-D q, k, v of the same
// batch and head counts, unit-stride rows, every other stride a multiple of 8 elements (16
// bytes), no mask, not causal, at least one query and one key (not both one: a case cuDNN's own
// tests skip). Merged: the output [B, L, H * Ev] seen as [B, H, L, Ev].
template <bool Merged>
bool cudnn_shape(const amber_kernel_args* a, cudnnDataType_t type, AttentionShape* s) {
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
  if (Merged) {  // out [B, L, H * Ev]: head h at columns [h * Ev, (h + 1) * Ev)
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

// 16-bit attention's setup: with AMBER_CUDA_CUDNN_ATTENTION=1 and a shape cuDNN's operation takes,
// its plan (the state) and workspace; otherwise no state, and calls run Amber's kernels. A plan
// cuDNN does not make is said on stderr and is no error.
template <typename T, bool Merged>
int sdpa_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes = 0;
  const char* name = Merged ? "attention_merge_heads" : "scaled_dot_product_attention";
  AttentionShape shape;
  if (!cudnn_attention_asked() ||
      !cudnn_shape<Merged>(a, std::is_same_v<T, __half> ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16, &shape))
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

void sdpa_destroy(void* state) { delete static_cast<CudnnAttention*>(state); }

// Runs the call on the step's cuDNN plan when there is one and the call is the shape it was built
// for (buffers 16-byte aligned): 1 when it ran (or failed, reported), 0 to take Amber's kernels.
template <typename T, bool Merged>
int by_cudnn(const amber_kernel_args* a, int* rc) {
  auto* s = static_cast<CudnnAttention*>(a->state);
  AttentionShape shape;
  if (!s || !cudnn_shape<Merged>(a, s->shape.type, &shape) || !(shape == s->shape) ||
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
               Merged ? "attention_merge_heads" : "scaled_dot_product_attention", cudnnGetErrorString(st));
    return 1;
  }
  *rc = launched(a, Merged ? "attention_merge_heads" : "scaled_dot_product_attention");
  return 1;
}

// ---- The op ----

// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal) on T tensors;
// Merged: attention_merge_heads, the same with the output rows [*, L, H * Ev].
template <typename T, bool Merged>
int sdpa(const amber_kernel_args* a) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2], &mask = a->inputs[3];
  const amber_tensor_view& out = a->outputs[0];
  if constexpr (!std::is_same_v<T, float>) {
    int rc = 0;
    if (by_cudnn<T, Merged>(a, &rc)) return rc;
  }
  const int r = q.ndim;
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  Batch bt{r - 2, {}};
  int64_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= (bt.sizes[d] = q.sizes[d]);
  if (L == 0 || Ev == 0 || batches == 0) return 0;
  const bool has_mask = present(mask);
  const bool causal = a->attrs[op_attrs::scaled_dot_product_attention::is_causal].i != 0;
  const float scale = float(1.0 / std::sqrt(double(E)));
  const OutRows orows{Merged ? q.sizes[r - 3] : 1, L, Ev};
  const char* name = Merged ? "attention_merge_heads" : "scaled_dot_product_attention";
  if (E <= kMaxHead && Ev <= kMaxHead) {
    DeviceScope scope(a->device);
    const bool few = batches * ((L + 2 * kWarps - 1) / (2 * kWarps)) < kFewBlocks;
    const int tile_rows = few ? kWarps : 2 * kWarps;
    const int64_t row_tiles = (L + tile_rows - 1) / tile_rows;
    if (batches * row_tiles > int64_t(INT32_MAX))
      return fail(a, "%s: %lld blocks of query rows is more than a launch takes", name,
                  (long long)(batches * row_tiles));
    if (few && S > kTileKeys && split_fits(E, Ev) && attention_split_wanted()) {
      sdpa_split_kernel<T><<<unsigned(batches * row_tiles), kThreads, split_smem(int(E), int(Ev)), stream_of(a)>>>(
          view_of<T>(q), view_of<T>(k), view_of<T>(v), has_mask ? view_of<T>(mask) : View<T>{}, has_mask,
          has_mask && mask.dtype == kBool, causal, bt, static_cast<T*>(out.data), orows, L, S, int(E), int(Ev), scale,
          row_tiles);
      return launched(a, name);
    }
    auto kernel = few ? &sdpa_tiled_kernel<T, 1> : &sdpa_tiled_kernel<T, 2>;
    kernel<<<unsigned(batches * row_tiles), kThreads, tiled_smem(tile_rows, E, Ev), stream_of(a)>>>(
        view_of<T>(q), view_of<T>(k), view_of<T>(v), has_mask ? view_of<T>(mask) : View<T>{}, has_mask,
        has_mask && mask.dtype == kBool, causal, bt, static_cast<T*>(out.data), orows, L, S, int(E), int(Ev), scale,
        row_tiles);
    return launched(a, name);
  }
  if (S > kMaxKeys)
    return fail(a,
                "%s: %lld keys is more than the CUDA kernel for heads wider than %d "
                "(query %lld, value %lld) holds (%lld)",
                name, (long long)S, kMaxHead, (long long)E, (long long)Ev, (long long)kMaxKeys);
  DeviceScope scope(a->device);
  const size_t smem = size_t(S + kThreads) * sizeof(float);
  sdpa_kernel<T><<<unsigned(batches * L), kThreads, smem, stream_of(a)>>>(
      view_of<T>(q), view_of<T>(k), view_of<T>(v), has_mask ? view_of<T>(mask) : View<T>{}, has_mask,
      has_mask && mask.dtype == kBool, causal, bt, static_cast<T*>(out.data), orows, L, S, E, Ev, scale);
  return launched(a, name);
}

template <typename T, bool Merged>
constexpr amber_kernel half_kernel() {
  return amber_kernel{&sdpa<T, Merged>, &sdpa_setup<T, Merged>, &sdpa_destroy, nullptr};
}

AMBER_CUDA_KERNELS(attention) {
  register_kernel("scaled_dot_product_attention", kF32, &sdpa<float, false>);
  register_kernel("scaled_dot_product_attention", kBF16, half_kernel<__nv_bfloat16, false>());
  register_kernel("scaled_dot_product_attention", kF16, half_kernel<__half, false>());
  register_kernel("attention_merge_heads", kF32, &sdpa<float, true>);
  register_kernel("attention_merge_heads", kBF16, half_kernel<__nv_bfloat16, true>());
  register_kernel("attention_merge_heads", kF16, half_kernel<__half, true>());
}

}  // namespace
}  // namespace amber::cuda
