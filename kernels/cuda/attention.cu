// CUDA kernels for scaled_dot_product_attention and attention_merge_heads (each head's output rows
// written into [*, L, H * Ev] at the head's columns), fused kernels of Amber's own, on f32, bf16
// and f16 tensors (computing in f32 throughout, a 16-bit output rounded once, as the CPU's route
// through its f32 kernel). Heads of
// up to 128 (E and Ev): a block takes 8 query rows of one batch entry (two a warp; 4, one a warp,
// when that makes fewer than 128 blocks) and walks the
// keys in tiles of 32 staged in shared memory (one key a lane), with a running softmax: each
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

#include "amber/kernels/cuda/attention_plan.h"
#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxKeys = (48 * 1024) / sizeof(float) - 2 * kThreads;

template <typename T>
struct View {
  const T* data;
  int ndim;
  int64_t sizes[AMBER_MAX_DIMS], strides[AMBER_MAX_DIMS];
};
template <typename T>
View<T> view_of(const amber_tensor_view& v) {
  View<T> r{static_cast<const T*>(v.data), v.ndim, {}, {}};
  for (int d = 0; d < v.ndim; ++d) r.sizes[d] = v.sizes[d], r.strides[d] = v.strides[d];
  return r;
}

struct Batch {
  int nb;
  int64_t sizes[AMBER_MAX_DIMS];
};

// The offset of batch entry b in v, whose last two dims are matrices and whose batch dims
// broadcast against bsizes (right-aligned; size-1 dims repeat).
template <typename T>
__device__ int64_t batch_offset(const View<T>& v, const Batch& bt, int64_t b) {
  int64_t off = 0;
  for (int d = bt.nb - 1; d >= 0; --d) {
    const int64_t i = b % bt.sizes[d];
    b /= bt.sizes[d];
    const int vd = d - (bt.nb - (v.ndim - 2));
    if (vd >= 0 && v.sizes[vd] != 1) off += i * v.strides[vd];
  }
  return off;
}

// The mask of one batch entry (when there is one): its offset and its row and column strides
// (0 where a dim of size 1 broadcasts); applied to the score of (row, key), a bool mask's false
// gives -inf, a float mask (of the query's type T) adds.
template <typename T>
struct MaskAt {
  const void* data = nullptr;
  bool is_bool = false;
  int64_t base = 0, rs = 0, cs = 0;
  __device__ float apply(float x, int64_t row, int64_t key) const {
    if (!data) return x;
    const int64_t at = base + row * rs + key * cs;
    return is_bool ? (static_cast<const bool*>(data)[at] ? x : -INFINITY)
                   : x + float(widen(static_cast<const T*>(data)[at]));
  }
};
template <typename T>
__device__ MaskAt<T> mask_at(const View<T>& mask, bool has_mask, bool bool_mask, const Batch& bt, int64_t b) {
  MaskAt<T> m;
  if (!has_mask) return m;
  m.data = mask.data;
  m.is_bool = bool_mask;
  m.base = batch_offset(mask, bt, b);
  m.rs = mask.ndim >= 2 && mask.sizes[mask.ndim - 2] != 1 ? mask.strides[mask.ndim - 2] : 0;
  m.cs = mask.ndim >= 1 && mask.sizes[mask.ndim - 1] != 1 ? mask.strides[mask.ndim - 1] : 0;
  return m;
}

// Where batch entry b's output rows start and how far apart they are: b's own [L, Ev] block, or
// with the heads merged (heads > 1; b = outer * heads + h) the columns [h * Ev, (h + 1) * Ev)
// of outer's [L, heads * Ev] rows.
struct OutRows {
  int64_t heads, L, Ev;
  __device__ int64_t stride() const { return heads * Ev; }
  __device__ int64_t at(int64_t b, int64_t row) const { return ((b / heads) * L + row) * stride() + (b % heads) * Ev; }
};

template <typename T>
__global__ void sdpa_kernel(View<T> q, View<T> k, View<T> v, View<T> mask, bool has_mask, bool bool_mask, bool causal,
                            Batch bt, T* out, OutRows orows, int64_t L, int64_t S, int64_t E, int64_t Ev, float scale) {
  extern __shared__ float smem[];
  float* scores = smem;   // S
  float* red = smem + S;  // kThreads
  const int64_t b = blockIdx.x / L, row = blockIdx.x % L;
  const int r = q.ndim;
  const T* qp = q.data + batch_offset(q, bt, b) + row * q.strides[r - 2];
  const T* kp = k.data + batch_offset(k, bt, b);
  const T* vp = v.data + batch_offset(v, bt, b);
  const MaskAt<T> mk = mask_at(mask, has_mask, bool_mask, bt, b);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    const T* kr = kp + j * k.strides[r - 2];
    float s = 0;
    for (int64_t e = 0; e < E; ++e)
      s += float(widen(qp[e * q.strides[r - 1]])) * float(widen(kr[e * k.strides[r - 1]]));
    s = mk.apply(s * scale, row, j);
    if (causal && j > row) s = -INFINITY;
    scores[j] = s;
    mx = fmaxf(mx, s);
  }
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int t = kThreads / 2; t > 0; t /= 2) {
    if (int(threadIdx.x) < t) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + t]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    const float p = pw::exp_(scores[j] - mx);
    scores[j] = p;
    sum += p;
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int t = kThreads / 2; t > 0; t /= 2) {
    if (int(threadIdx.x) < t) red[threadIdx.x] += red[threadIdx.x + t];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  T* orow = out + orows.at(b, row);
  for (int64_t e = threadIdx.x; e < Ev; e += blockDim.x) {
    float acc = 0;
    for (int64_t j = 0; j < S; ++j) acc += scores[j] * float(widen(vp[j * v.strides[r - 2] + e * v.strides[r - 1]]));
    orow[e] = cast_value<T>(S == 0 ? NAN : acc * inv);
  }
}

constexpr int kWarps = kThreads / 32;
constexpr int kTileKeys = 32;  // keys a tile: one a lane
constexpr int kMaxHead = 128;  // E and Ev the tiled kernel takes
constexpr int kHeadSlices = kMaxHead / 32;
// A block of the tiled kernel takes two query rows a warp (8 a block), or one when blocks of 8
// rows would number fewer than kFewBlocks: short sequences at small batches (the bench
// transformer's 4 heads of 128 rows make 64 blocks at batch 1), where most SMs would idle.
constexpr int64_t kFewBlocks = 128;

__device__ float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Stages rows [0, count) of a [rows, width] tile (row r at src + r * rs, its elements cs apart)
// into shared memory as floats (row r at dst + r * ds), rows past count as zeros. Each thread
// issues its loads kBatch at a time (rows clamped to the valid ones, so no load waits behind a
// branch) before storing them: a few memory round trips a tile, where a load-then-store loop
// waited for each element in turn. At batch 1 a block is alone on its SM (the transformer's
// 64 blocks on 132 SMs): nothing else hides that latency. (All of a thread's loads at once,
// 32 at the widest head, took 255 registers and spilled.) A thread's elements are kThreads
// apart, so its row and column step by (kThreads / width, kThreads % width) from one to the
// next, with one carry: no integer division an element (two a division, about 20 instructions
// each, were most of the staging's work).
template <typename T>
__device__ void stage_rows(const T* src, int64_t rs, int64_t cs, int count, int rows, int width, float* dst, int ds) {
  constexpr int kBatch = 8;
  const int n = rows * width, dr = kThreads / width, de = kThreads % width;
  int r = int(threadIdx.x) / width, e = int(threadIdx.x) % width;  // of the thread's next element
#pragma unroll 1
  for (int i0 = int(threadIdx.x); i0 < n; i0 += kBatch * kThreads) {
    float v[kBatch];
    const int r0 = r, e0 = e;  // the batch's first element: the stores walk from it again
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      v[t] = 0.0f;
      if (i0 + t * kThreads < n) {
        const float x = float(widen(src[(r < count ? r : count - 1) * rs + e * cs]));
        v[t] = r < count ? x : 0.0f;
      }
      r += dr;
      e += de;
      const bool wrap = e >= width;
      e -= wrap ? width : 0;
      r += wrap;
    }
    int sr = r0, se = e0;
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      if (i0 + t * kThreads < n) dst[sr * ds + se] = v[t];
      sr += dr;
      se += de;
      const bool wrap = se >= width;
      se -= wrap ? width : 0;
      sr += wrap;
    }
  }
}

// Shared memory of the tiled kernel: the block's query rows, a tile of keys (rows of an odd
// stride, so that lanes each reading their own key's row hit distinct banks) and of values.
size_t tiled_smem(int64_t rows, int64_t E, int64_t Ev) {
  return size_t(rows * E + kTileKeys * (E | 1) + kTileKeys * Ev) * sizeof(float);
}

// At least four blocks an SM (the bench transformer at batch 8: 512 blocks on 132 SMs, all
// resident): ptxas then keeps every value in registers (95-100), where its own choice (64-80)
// spilled 8-16 bytes.
template <typename T, int RowsPerWarp>
__global__ void __launch_bounds__(kThreads, 4)
    sdpa_tiled_kernel(View<T> q, View<T> k, View<T> v, View<T> mask, bool has_mask, bool bool_mask, bool causal,
                      Batch bt, T* out, OutRows orows, int64_t L, int64_t S, int E, int Ev, float scale,
                      int64_t row_tiles) {
  constexpr int kTileRows = RowsPerWarp * kWarps, kRowsPerWarp = RowsPerWarp;
  extern __shared__ float smem[];
  const int ks = E | 1;
  float* qs = smem;                 // kTileRows x E
  float* kt = qs + kTileRows * E;   // kTileKeys x ks
  float* vt = kt + kTileKeys * ks;  // kTileKeys x Ev
  const int64_t b = blockIdx.x / row_tiles, row0 = (blockIdx.x % row_tiles) * kTileRows;
  const int r = q.ndim, tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const T* qp = q.data + batch_offset(q, bt, b);
  const T* kp = k.data + batch_offset(k, bt, b);
  const T* vp = v.data + batch_offset(v, bt, b);
  const int64_t qrs = q.strides[r - 2], qcs = q.strides[r - 1], krs = k.strides[r - 2], kcs = k.strides[r - 1],
                vrs = v.strides[r - 2], vcs = v.strides[r - 1];
  const MaskAt<T> mk = mask_at(mask, has_mask, bool_mask, bt, b);
  // Rows past L: zeros, never stored.
  stage_rows(qp + row0 * qrs, qrs, qcs, int(L - row0 < kTileRows ? L - row0 : kTileRows), kTileRows, E, qs, E);
  // Row rr of this warp is query row row0 + warp * kRowsPerWarp + rr; its running maximum m,
  // sum l and output acc (element lane + 32 t).
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kHeadSlices];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0;
#pragma unroll
    for (int t = 0; t < kHeadSlices; ++t) acc[rr][t] = 0;
  }
  for (int64_t j0 = 0; j0 < S; j0 += kTileKeys) {
    __syncthreads();  // the previous tile read (and the query rows written, the first time)
    const int keys = int(S - j0 < kTileKeys ? S - j0 : kTileKeys);
    stage_rows(kp + j0 * krs, krs, kcs, keys, kTileKeys, E, kt, ks);
    stage_rows(vp + j0 * vrs, vrs, vcs, keys, kTileKeys, Ev, vt, Ev);
    __syncthreads();
    // This lane's key against the warp's rows.
    float s[kRowsPerWarp];
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) s[rr] = 0;
    for (int e = 0; e < E; ++e) {
      const float kv = kt[lane * ks + e];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) s[rr] += qs[(warp * kRowsPerWarp + rr) * E + e] * kv;
    }
    const int64_t key = j0 + lane;
    float p[kRowsPerWarp];
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int64_t row = row0 + warp * kRowsPerWarp + rr;
      float x = s[rr] * scale;
      if (lane >= keys) {
        x = -INFINITY;  // past the keys: no weight
      } else {
        if (row < L) x = mk.apply(x, row, key);
        if (causal && key > row) x = -INFINITY;
      }
      // The running maximum ignores NaN (fmaxf) as the CPU's row maximum does; a NaN score then
      // makes its weight, the sum and the row NaN. While every score so far is -inf the
      // weights are taken against 0: exp(-inf) = 0 keeps the sum 0 (a fully masked row ends
      // 0 / 0 = NaN, as the CPU's exp(-inf - -inf)), and a NaN score still gives NaN.
      const float m_new = fmaxf(m[rr], warp_max(x));
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;
      p[rr] = lane < keys ? pw::exp_(x - m_use) : 0.0f;
      const float corr = pw::exp_(m[rr] - m_use);
      l[rr] = l[rr] * corr + warp_sum(p[rr]);
      m[rr] = m_new;
#pragma unroll
      for (int t = 0; t < kHeadSlices; ++t) acc[rr][t] *= corr;
    }
    for (int j = 0; j < keys; ++j) {  // the tile's weights times its values (keys: uniform in the warp)
      float pj[kRowsPerWarp];
#pragma unroll
      for (int rr = 0; rr < kRowsPerWarp; ++rr) pj[rr] = __shfl_sync(0xffffffffu, p[rr], j);
#pragma unroll
      for (int t = 0; t < kHeadSlices; ++t) {
        const int e = lane + 32 * t;
        if (e < Ev) {
          const float val = vt[j * Ev + e];
#pragma unroll
          for (int rr = 0; rr < kRowsPerWarp; ++rr) acc[rr][t] += pj[rr] * val;
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t row = row0 + warp * kRowsPerWarp + rr;
    if (row >= L) continue;
    T* orow = out + orows.at(b, row);
#pragma unroll
    for (int t = 0; t < kHeadSlices; ++t) {
      const int e = lane + 32 * t;
      if (e < Ev) orow[e] = cast_value<T>(acc[rr][t] / l[rr]);  // no keys: 0 / 0 = NaN
    }
  }
}

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
