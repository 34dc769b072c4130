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
// takes runs on cuDNN instead (attention_cudnn.h), its plan built at setup; shapes it refuses keep
// these kernels.

#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>

#include "amber/kernels/cuda/attention_cudnn.h"
#include "amber/kernels/cuda/attention_kernels.cuh"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/switches.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace attention;  // the kernels and what they share (attention_kernels.cuh)

static_assert(op_attrs::scaled_dot_product_attention::is_causal == op_attrs::attention_merge_heads::is_causal);

// ---- The op ----

// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal) on T tensors;
// Merged: attention_merge_heads, the same with the output rows [*, L, H * Ev].
template <typename T, bool Merged>
int sdpa(const amber_kernel_args* a) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2], &mask = a->inputs[3];
  const amber_tensor_view& out = a->outputs[0];
  if constexpr (!std::is_same_v<T, float>) {
    int rc = 0;
    if (cudnn_attention_run(a, Merged, &rc)) return rc;
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
      enqueue_shared(a, &sdpa_split_kernel<T>, dim3(unsigned(batches * row_tiles)), dim3(kThreads),
                     split_smem(int(E), int(Ev)), view_of<T>(q), view_of<T>(k), view_of<T>(v),
                     has_mask ? view_of<T>(mask) : View<T>{}, has_mask, has_mask && mask.dtype == kBool, causal, bt,
                     static_cast<T*>(out.data), orows, L, S, int(E), int(Ev), scale, row_tiles);
      return launched(a, name);
    }
    auto kernel = few ? &sdpa_tiled_kernel<T, 1> : &sdpa_tiled_kernel<T, 2>;
    enqueue_shared(a, kernel, dim3(unsigned(batches * row_tiles)), dim3(kThreads), tiled_smem(tile_rows, E, Ev),
                   view_of<T>(q), view_of<T>(k), view_of<T>(v), has_mask ? view_of<T>(mask) : View<T>{}, has_mask,
                   has_mask && mask.dtype == kBool, causal, bt, static_cast<T*>(out.data), orows, L, S, int(E), int(Ev),
                   scale, row_tiles);
    return launched(a, name);
  }
  if (S > kMaxKeys)
    return fail(a,
                "%s: %lld keys is more than the CUDA kernel for heads wider than %d "
                "(query %lld, value %lld) holds (%lld)",
                name, (long long)S, kMaxHead, (long long)E, (long long)Ev, (long long)kMaxKeys);
  DeviceScope scope(a->device);
  const size_t smem = size_t(S + kThreads) * sizeof(float);
  enqueue_shared(a, &sdpa_kernel<T>, dim3(unsigned(batches * L)), dim3(kThreads), smem, view_of<T>(q), view_of<T>(k),
                 view_of<T>(v), has_mask ? view_of<T>(mask) : View<T>{}, has_mask, has_mask && mask.dtype == kBool,
                 causal, bt, static_cast<T*>(out.data), orows, L, S, E, Ev, scale);
  return launched(a, name);
}

// 16-bit attention's setup: cuDNN's plan where asked and it takes the shape (attention_cudnn.h).
template <typename T, bool Merged>
int sdpa_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  return cudnn_attention_setup(a, Merged, std::is_same_v<T, __half>, state, workspace_bytes);
}

template <typename T, bool Merged>
constexpr amber_kernel half_kernel() {
  return amber_kernel{&sdpa<T, Merged>, &sdpa_setup<T, Merged>, &cudnn_attention_destroy, nullptr};
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
