// The device code of the attention kernels (attention.cu): the tiled kernel with its running
// softmax, its form whose warps split the keys, the row-at-a-time kernel for wide heads, and what
// they share (views, batch offsets, masks, merged heads' rows, staging), in a header of its own
// so that tests/test_attention_emulated.cpp runs it on the CPU (tests/cuda_emulation.h) where no
// GPU is; attention.cu chooses and launches them. Private to libamber_cuda.so.
#pragma once

#include <cstring>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/pointwise_math.h"

namespace amber::cuda::attention {

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
  float* const smem = dynamic_shared();
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

// A thread's walk over a tile's cells (elements, or 16-byte chunks) kThreads apart: its cell's row
// and column, stepping by (kThreads / width, kThreads % width) with one carry.
struct Walk {
  int r, c, dr, dc, width;
  __device__ explicit Walk(int w)
      : r(int(threadIdx.x) / w), c(int(threadIdx.x) % w), dr(kThreads / w), dc(kThreads % w), width(w) {}
  __device__ void next() {
    r += dr;
    c += dc;
    const bool wrap = c >= width;
    c -= wrap ? width : 0;
    r += wrap;
  }
};

// Stages rows [0, count) of a [rows, width] tile (row r at src + r * rs, its elements cs apart)
// into shared memory as floats (row r at dst + r * ds), rows past count as zeros. Each thread
// issues its loads kBatch at a time (rows clamped to the valid ones, so no load waits behind a
// branch) before storing them: a few memory round trips a tile, where a load-then-store loop
// waited for each element in turn. At batch 1 a block is alone on its SM (the transformer's
// 64 blocks on 132 SMs): nothing else hides that latency. (All of a thread's loads at once,
// 32 at the widest head, took 255 registers and spilled.) A thread's elements are kThreads
// apart, so its row and column step with one carry (Walk): no integer division an element (two a
// division, about 20 instructions each, were most of the staging's work).
//
// Where a row's elements are adjacent and every row starts on 16 bytes (a projection's output
// seen as heads: q, k and v of the transformer), the loads are 16 bytes each (stage_rows_16),
// kBatch16 of them at a time: a tile of 32 keys of a 64-wide head is one round trip a thread.
constexpr int kBatch16 = 8;

template <typename T>
__device__ void stage_rows_16(const T* src, int64_t rs, int count, int rows, int width, float* dst, int ds) {
  constexpr int kVec = 16 / sizeof(T);  // elements a load
  const int wv = width / kVec, n = rows * wv;
  Walk at(wv);  // the thread's next load
#pragma unroll 1
  for (int i0 = int(threadIdx.x); i0 < n; i0 += kBatch16 * kThreads) {
    uint4 raw[kBatch16];
    Walk st = at;  // the batch's first load: the stores walk from it again
#pragma unroll
    for (int t = 0; t < kBatch16; ++t, at.next())
      if (i0 + t * kThreads < n)
        raw[t] = *reinterpret_cast<const uint4*>(src + (at.r < count ? at.r : count - 1) * rs + at.c * kVec);
#pragma unroll
    for (int t = 0; t < kBatch16; ++t, st.next()) {
      if (i0 + t * kThreads < n) {
        T v[kVec];
        memcpy(static_cast<void*>(v), &raw[t], sizeof v);  // (void*: T may be a class)
#pragma unroll
        for (int u = 0; u < kVec; ++u) dst[st.r * ds + st.c * kVec + u] = st.r < count ? float(widen(v[u])) : 0.0f;
      }
    }
  }
}

template <typename T>
__device__ void stage_rows(const T* src, int64_t rs, int64_t cs, int count, int rows, int width, float* dst, int ds) {
  constexpr int kVec = 16 / sizeof(T);
  if (width == 0) return;
  if (cs == 1 && width % kVec == 0 && rs % kVec == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0)
    return stage_rows_16(src, rs, count, rows, width, dst, ds);
  constexpr int kBatch = 8;
  const int n = rows * width;
  Walk at(width);  // the thread's next element
#pragma unroll 1
  for (int i0 = int(threadIdx.x); i0 < n; i0 += kBatch * kThreads) {
    float v[kBatch];
    Walk st = at;  // the batch's first element: the stores walk from it again
#pragma unroll
    for (int t = 0; t < kBatch; ++t, at.next()) {
      v[t] = 0.0f;
      if (i0 + t * kThreads < n) {
        const float x = float(widen(src[(at.r < count ? at.r : count - 1) * rs + at.c * cs]));
        v[t] = at.r < count ? x : 0.0f;
      }
    }
#pragma unroll
    for (int t = 0; t < kBatch; ++t, st.next())
      if (i0 + t * kThreads < n) dst[st.r * ds + st.c] = v[t];
  }
}

// Shared memory of the tiled kernel: the block's query rows, a tile of keys (rows of an odd
// stride, so that lanes each reading their own key's row hit distinct banks) and of values.
size_t tiled_smem(int64_t rows, int64_t E, int64_t Ev) {
  return size_t(rows * E + kTileKeys * (E | 1) + kTileKeys * Ev) * sizeof(float);
}

// Batch entry b's q, k and v (where its rows start, their row and element strides) and mask.
template <typename T>
struct Entry {
  const T *q, *k, *v;
  int64_t qrs, qcs, krs, kcs, vrs, vcs;
  MaskAt<T> mask;
  // The score of (row, key) from its scaled product x: -inf past the keys (valid false), else
  // masked (rows past L are never stored and read no mask) and, causal, -inf past the row.
  __device__ float score(float x, bool valid, int64_t row, int64_t key, int64_t L, bool causal) const {
    if (!valid) return -INFINITY;
    if (row < L) x = mask.apply(x, row, key);
    return causal && key > row ? -INFINITY : x;
  }
};
template <typename T>
__device__ Entry<T> entry_at(const View<T>& q, const View<T>& k, const View<T>& v, const View<T>& mask, bool has_mask,
                             bool bool_mask, const Batch& bt, int64_t b) {
  const int r = q.ndim;
  return Entry<T>{q.data + batch_offset(q, bt, b),
                  k.data + batch_offset(k, bt, b),
                  v.data + batch_offset(v, bt, b),
                  q.strides[r - 2],
                  q.strides[r - 1],
                  k.strides[r - 2],
                  k.strides[r - 1],
                  v.strides[r - 2],
                  v.strides[r - 1],
                  mask_at(mask, has_mask, bool_mask, bt, b)};
}

// A warp's running softmax over R query rows, the keys seen up to 32 at a time (one a lane):
// each row's maximum m, sum l and output acc (element lane + 32 t).
template <int R>
struct Running {
  float m[R], l[R], acc[R][kHeadSlices];
  __device__ void init() {
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
      m[rr] = -INFINITY;
      l[rr] = 0;
#pragma unroll
      for (int t = 0; t < kHeadSlices; ++t) acc[rr][t] = 0;
    }
  }
  // Row rr's scores (x, this lane's; a lane past the keys has valid false and x -inf) raise its
  // maximum, rescaling its sum and output; returns this lane's weight. The running maximum
  // ignores NaN (fmaxf) as the CPU's row maximum does; a NaN score then makes its weight, the
  // sum and the row NaN. While every score so far is -inf the weights are taken against 0:
  // exp(-inf) = 0 keeps the sum 0 (a fully masked row ends 0 / 0 = NaN, as the CPU's
  // exp(-inf - -inf)), and a NaN score still gives NaN.
  __device__ float add_scores(int rr, float x, bool valid) {
    const float m_new = fmaxf(m[rr], warp_max(x));
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const float p = valid ? pw::exp_(x - m_use) : 0.0f;
    const float corr = pw::exp_(m[rr] - m_use);
    l[rr] = l[rr] * corr + warp_sum(p);
    m[rr] = m_new;
#pragma unroll
    for (int t = 0; t < kHeadSlices; ++t) acc[rr][t] *= corr;
    return p;
  }
  // The weights p (lane j's for key j < n; n uniform in the warp) times value rows vt + j * Ev.
  __device__ void add_values(const float (&p)[R], const float* vt, int n, int Ev, int lane) {
    for (int j = 0; j < n; ++j) {
      float pj[R];
#pragma unroll
      for (int rr = 0; rr < R; ++rr) pj[rr] = __shfl_sync(0xffffffffu, p[rr], j);
#pragma unroll
      for (int t = 0; t < kHeadSlices; ++t) {
        const int e = lane + 32 * t;
        if (e < Ev) {
          const float val = vt[j * Ev + e];
#pragma unroll
          for (int rr = 0; rr < R; ++rr) acc[rr][t] += pj[rr] * val;
        }
      }
    }
  }
};

// At least four blocks an SM (the bench transformer at batch 8: 512 blocks on 132 SMs, all
// resident): ptxas then keeps every value in registers (127-128 with the 16-byte staging's
// loads in flight, 95-100 before), where its own choice (64-80) spilled 8-16 bytes.
template <typename T, int RowsPerWarp>
__global__ void __launch_bounds__(kThreads, 4)
    sdpa_tiled_kernel(View<T> q, View<T> k, View<T> v, View<T> mask, bool has_mask, bool bool_mask, bool causal,
                      Batch bt, T* out, OutRows orows, int64_t L, int64_t S, int E, int Ev, float scale,
                      int64_t row_tiles) {
  constexpr int kTileRows = RowsPerWarp * kWarps, kRowsPerWarp = RowsPerWarp;
  float* const smem = dynamic_shared();
  const int ks = E | 1;
  float* qs = smem;                 // kTileRows x E
  float* kt = qs + kTileRows * E;   // kTileKeys x ks
  float* vt = kt + kTileKeys * ks;  // kTileKeys x Ev
  const int64_t b = blockIdx.x / row_tiles, row0 = (blockIdx.x % row_tiles) * kTileRows;
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const Entry<T> en = entry_at(q, k, v, mask, has_mask, bool_mask, bt, b);
  // Rows past L: zeros, never stored.
  stage_rows(en.q + row0 * en.qrs, en.qrs, en.qcs, int(L - row0 < kTileRows ? L - row0 : kTileRows), kTileRows, E, qs,
             E);
  // Row rr of this warp's is query row row0 + warp * kRowsPerWarp + rr.
  Running<kRowsPerWarp> run;
  run.init();
  for (int64_t j0 = 0; j0 < S; j0 += kTileKeys) {
    __syncthreads();  // the previous tile read (and the query rows written, the first time)
    const int keys = int(S - j0 < kTileKeys ? S - j0 : kTileKeys);
    stage_rows(en.k + j0 * en.krs, en.krs, en.kcs, keys, kTileKeys, E, kt, ks);
    stage_rows(en.v + j0 * en.vrs, en.vrs, en.vcs, keys, kTileKeys, Ev, vt, Ev);
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
      p[rr] = run.add_scores(rr, en.score(s[rr] * scale, lane < keys, row, key, L, causal), lane < keys);
    }
    run.add_values(p, vt, keys, Ev, lane);  // the tile's weights times its values
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t row = row0 + warp * kRowsPerWarp + rr;
    if (row >= L) continue;
    T* orow = out + orows.at(b, row);
#pragma unroll
    for (int t = 0; t < kHeadSlices; ++t) {
      const int e = lane + 32 * t;
      if (e < Ev) orow[e] = cast_value<T>(run.acc[rr][t] / run.l[rr]);  // no keys: 0 / 0 = NaN
    }
  }
}

// ---- Keys split between a block's warps ----
// Few blocks (the bench transformer at batch 1: 4 heads of 128 rows, 128 blocks of the tiled
// kernel's 4 rows on 132 SMs) leave each SM one block whose warps walk the keys in turn, a tile
// of 32 after another, each tile a round trip to memory and a chain of dependent steps. Here a
// block takes kWarps query rows, every warp all of them, and a round stages kSplitKeys keys at
// once, 32 for each warp: warp w keeps its own running softmax over keys w * 32 + [0, 32) of
// every round, and at the end the warps' maxima, sums and outputs are combined in shared
// memory (each rescaled by exp(its max - the row's max)), warp w finishing row w. The keys
// and then the values share one buffer, so a head up to kSplitMaxHead wide fits the 48 KiB a
// launch gets without opting in.
constexpr int kSplitKeys = kWarps * kTileKeys;
constexpr int kSplitMaxHead = 92;

// The buffer's width: a key row (odd, as the tiled kernel's) or a value row.
__host__ __device__ constexpr int split_width(int E, int Ev) { return (E | 1) > Ev ? (E | 1) : Ev; }
// Shared memory of the split kernel: the query rows, then the buffer. The warps' partial rows
// (kWarps x kWarps rows of Ev + 2) fit in the buffer: 16 (Ev + 2) <= 128 Ev for any Ev >= 1.
constexpr size_t split_smem(int E, int Ev) {
  return size_t(kWarps * E + kSplitKeys * split_width(E, Ev)) * sizeof(float);
}
static_assert(split_smem(kSplitMaxHead, kSplitMaxHead) <= 48 * 1024);
// Whether the split kernel takes heads this wide.
inline bool split_fits(int64_t E, int64_t Ev) { return E <= kSplitMaxHead && Ev <= kSplitMaxHead; }

template <typename T>
__global__ void __launch_bounds__(kThreads, 4)
    sdpa_split_kernel(View<T> q, View<T> k, View<T> v, View<T> mask, bool has_mask, bool bool_mask, bool causal,
                      Batch bt, T* out, OutRows orows, int64_t L, int64_t S, int E, int Ev, float scale,
                      int64_t row_tiles) {
  float* const smem = dynamic_shared();
  const int ks = E | 1;
  float* qs = smem;              // kWarps x E
  float* buf = qs + kWarps * E;  // kSplitKeys x ks (keys), kSplitKeys x Ev (values), partials
  const int64_t b = blockIdx.x / row_tiles, row0 = (blockIdx.x % row_tiles) * kWarps;
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const Entry<T> en = entry_at(q, k, v, mask, has_mask, bool_mask, bt, b);
  stage_rows(en.q + row0 * en.qrs, en.qrs, en.qcs, int(L - row0 < kWarps ? L - row0 : kWarps), kWarps, E, qs, E);
  // Rows row0 + rr over this warp's share of the keys.
  Running<kWarps> run;
  run.init();
  const int first = warp * kTileKeys;  // this warp's first key of a round
  for (int64_t j0 = 0; j0 < S; j0 += kSplitKeys) {
    __syncthreads();  // the previous round's values read (the query rows written, the first time)
    const int keys = int(S - j0 < kSplitKeys ? S - j0 : kSplitKeys);
    const int staged = (keys + kTileKeys - 1) / kTileKeys * kTileKeys;  // whole warps' tiles
    const int mine = keys - first < 0 ? 0 : (keys - first < kTileKeys ? keys - first : kTileKeys);
    stage_rows(en.k + j0 * en.krs, en.krs, en.kcs, keys, staged, E, buf, ks);
    __syncthreads();
    float s[kWarps];
#pragma unroll
    for (int rr = 0; rr < kWarps; ++rr) s[rr] = 0;
    if (mine > 0)
      for (int e = 0; e < E; ++e) {
        const float kv = buf[(first + lane) * ks + e];
#pragma unroll
        for (int rr = 0; rr < kWarps; ++rr) s[rr] += qs[rr * E + e] * kv;
      }
    const int64_t key = j0 + first + lane;
    float p[kWarps];
#pragma unroll
    for (int rr = 0; rr < kWarps; ++rr)
      p[rr] = run.add_scores(rr, en.score(s[rr] * scale, lane < mine, row0 + rr, key, L, causal), lane < mine);
    __syncthreads();  // every warp's keys read
    stage_rows(en.v + j0 * en.vrs, en.vrs, en.vcs, keys, staged, Ev, buf, Ev);
    __syncthreads();
    run.add_values(p, buf + first * Ev, mine, Ev, lane);
  }
  __syncthreads();            // the last values read
  const int part_w = Ev + 2;  // a partial row: m, l, then the output
#pragma unroll
  for (int rr = 0; rr < kWarps; ++rr) {
    float* part = buf + (warp * kWarps + rr) * part_w;
    if (lane == 0) part[0] = run.m[rr], part[1] = run.l[rr];
#pragma unroll
    for (int t = 0; t < kHeadSlices; ++t)
      if (lane + 32 * t < Ev) part[2 + lane + 32 * t] = run.acc[rr][t];
  }
  __syncthreads();
  const int64_t row = row0 + warp;
  if (row >= L) return;
  float top = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) top = fmaxf(top, buf[(w * kWarps + warp) * part_w]);
  const float top_use = top == -INFINITY ? 0.0f : top;
  float f[kWarps], sum = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const float* part = buf + (w * kWarps + warp) * part_w;
    f[w] = pw::exp_(part[0] - top_use);
    sum += part[1] * f[w];
  }
  T* orow = out + orows.at(b, row);
  for (int e = lane; e < Ev; e += 32) {
    float o = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += buf[(w * kWarps + warp) * part_w + 2 + e] * f[w];
    orow[e] = cast_value<T>(o / sum);  // no keys: 0 / 0 = NaN
  }
}

}  // namespace amber::cuda::attention
