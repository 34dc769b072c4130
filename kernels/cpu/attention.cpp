// CPU kernels for scaled_dot_product_attention and attention_merge_heads (the same, each head's
// output rows written into [*, L, H * Ev] at the head's columns): for each batch entry, blocks
// of query rows are processed by one thread each: scores = q k^T / sqrt(E), the mask or causal
// mask applied, a softmax per row, then scores v. Scores never exceed a block of rows at a time,
// so memory stays bounded for long sequences; each thread's scores and dense copies live in
// its slot of the step's workspace. The two products run on single-threaded
// oneDNN matmul primitives made for the shapes and strides at hand (by the step's setup, at
// load; kept in its state): oneDNN's sgemm would generate its whole kernel set on first use, 35-40 ms
// of a transformer's load here, where a matmul primitive generates only what it needs.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/onednn.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/row_ops.h"
#include "amber/kernels/cpu/vec_math.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

using namespace onednn;

// Rows of queries per task, from the shapes alone (so any thread count computes the same
// blocks): as many as keep a block's scores within 256 KiB (at least 64, at most 256 rows),
// the rows split evenly over the blocks that takes. Fixed blocks of 64 left ViT-B/16's 197
// rows a last block of 5 and cost two products per 64 rows: its attention 13.6 -> 11.9 ms a
// call, the zoo's encoder (128 rows) 0.664 -> 0.632 ms (2 threads, per-node profile, three
// alternating runs each).
int64_t row_block(int64_t L, int64_t S) {
  const int64_t cap = std::clamp<int64_t>(65536 / std::max<int64_t>(S, 1), 64, 256);
  const int64_t blocks = (std::max<int64_t>(L, 1) + cap - 1) / cap;
  return (std::max<int64_t>(L, 1) + blocks - 1) / blocks;
}

// c[m, n] = alpha a[m, k] b[k, n]: a and b with the given strides, c dense rows.
struct MmShape {
  int64_t m, n, k, a_rs, a_cs, b_rs, b_cs;
  float alpha;
};
struct MmPrim {
  std::unique_ptr<Primitive> prim;
  memory::desc a, b, c;
};

// The primitive for `shape`, made for one thread (it runs inside a worker of parallel_for), on
// oneDNN's brgemm kernels when they take it (dense operands): its default for some shapes,
// the sgemm-based one, would bring back sgemm's one-time kernel generation.
std::unique_ptr<MmPrim> matmul_prim(const MmShape& key) {
  std::lock_guard creating(creation_mutex());
  struct OneThread {
    int previous = omp_get_max_threads();
    OneThread() { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(previous); }
  } one_thread;
  auto stride = [](int64_t size, int64_t s) { return size == 1 ? 1 : s; };
  const memory::desc a({key.m, key.k}, memory::data_type::f32, Dims{stride(key.m, key.a_rs), stride(key.k, key.a_cs)});
  const memory::desc b({key.k, key.n}, memory::data_type::f32, Dims{stride(key.k, key.b_rs), stride(key.n, key.b_cs)});
  const memory::desc c({key.m, key.n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::primitive_attr attr = user_scratchpad();
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  // oneDNN 2.x has brgemm matmuls on AVX-512 only. Elsewhere its first choice, without walking its
  // implementations: on an AVX2 processor that walk faulted inside oneDNN under ASan
  // (dnnl_primitive_desc_iterator_next, a read of an unmapped address, 2026-11-30).
  const auto make = [&] { return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine()); };
  const dnnl::matmul::primitive_desc pd = cpu_isa() == Isa::avx512 ? prefer_impl(make, "brg") : make();
  auto p = std::make_unique<MmPrim>();
  p->prim = std::make_unique<Primitive>(dnnl::matmul(pd), pd.scratchpad_desc());
  p->a = pd.src_desc();
  p->b = pd.weights_desc();
  p->c = pd.dst_desc();
  return p;
}

// One thread's scratch, in floats: a block's scores [block, S], and dense copies of its
// queries [block, E] and of a head's keys [S, E] and values [S, Ev], each starting on a
// 64-byte boundary; with the heads merged also the block's output [block, Ev], copied from
// there into its rows (oneDNN's brgemm matmul takes only a dense destination: given the merged
// rows' stride it falls back to the sgemm-based one, 40 ms more of the encoder's load).
struct Slot {
  int64_t scores, q, k, v, out, floats;
  Slot(int64_t block, int64_t S, int64_t E, int64_t Ev, bool merged) {
    auto up = [](int64_t f) { return (f + 15) / 16 * 16; };
    scores = 0;
    q = up(block * S);
    k = q + up(block * E);
    v = k + up(S * E);
    out = v + up(S * Ev);
    floats = out + (merged ? up(block * Ev) : 0);
  }
};

// The state of one attention step: the two products for a full block of rows and for the
// last, shorter one, and the workspace its threads' slots take (the products run inside
// workers, on their own oneDNN scratchpads).
struct SdpaState {
  std::unique_ptr<MmPrim> qk[2], sv[2];
  size_t ws = 0;
  size_t workspace_bytes() const { return ws; }
};

template <bool Merged>
std::unique_ptr<SdpaState> sdpa_state(const amber_kernel_args* a) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2];
  const int r = q.ndim;
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  auto st = std::make_unique<SdpaState>();
  if (S == 0 || L == 0) return st;
  const float scale = float(1.0 / std::sqrt(double(E)));
  const int64_t block = row_block(L, S), tail = L - (L - 1) / block * block;
  st->ws = size_t(std::max(1, a->num_threads)) * size_t(Slot(block, S, E, Ev, Merged).floats) * sizeof(float);
  for (int i = 0; i < 2; ++i) {
    const int64_t rows = i == 0 ? block : tail;
    if (i == 1 && tail == block) continue;
    st->qk[i] = matmul_prim({rows, S, E, E, 1, 1, E, scale});
    st->sv[i] = matmul_prim({rows, Ev, S, S, 1, Ev, 1, 1.0f});
  }
  return st;
}

// In place over a contiguous row: softmax.
struct SoftmaxInPlace {
  static void run(char* const* p, const int64_t*, int64_t n, const void*) {
    float* r = reinterpret_cast<float*>(p[0]);
    const float mx = row_max(r, n);
    for (int64_t i = 0; i < n; ++i) r[i] = vexp(r[i] - mx);
    const float inv = 1.0f / row_sum(r, n);
    for (int64_t i = 0; i < n; ++i) r[i] *= inv;
  }
};

// Offsets of batch entry b of a view whose last two dims are matrices (batch dims of the
// view may broadcast against `bsizes`: size-1 dims get stride 0).
int64_t batch_offset(const amber_tensor_view& v, const int64_t* bsizes, int nb, int64_t b) {
  int64_t off = 0;
  for (int d = nb - 1; d >= 0; --d) {
    const int64_t i = b % bsizes[d];
    b /= bsizes[d];
    const int vd = d - (nb - (v.ndim - 2));
    if (vd >= 0 && v.sizes[vd] != 1) off += i * v.strides[vd];
  }
  return off;
}

// The [rows, cols] matrix at p (strides rs, cs) as dense rows: p itself when already dense,
// else a copy in buf (rows * cols floats).
const float* dense_rows(const float* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, float* buf) {
  if (cs == 1 && (rs == cols || rows == 1)) return p;
  for (int64_t i = 0; i < rows; ++i) {
    float* dst = buf + i * cols;
    if (cs == 1)  // a head's rows inside a wider product's (q, k and v of one QKV product)
      std::memcpy(dst, p + i * rs, size_t(cols) * sizeof(float));
    else
      for (int64_t j = 0; j < cols; ++j) dst[j] = p[i * rs + j * cs];
  }
  return buf;
}

static_assert(op_attrs::scaled_dot_product_attention::is_causal == op_attrs::attention_merge_heads::is_causal);

template <bool Merged>
int sdpa(const amber_kernel_args* a) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2], &mask = a->inputs[3];
  const amber_tensor_view& out = a->outputs[0];
  const bool causal = attr_bool(a, op_attrs::scaled_dot_product_attention::is_causal);
  const int r = q.ndim;
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  int64_t batches = 1, bsizes[AMBER_MAX_DIMS];
  for (int d = 0; d < r - 2; ++d) batches *= (bsizes[d] = q.sizes[d]);
  if (L == 0 || Ev == 0 || batches == 0) return 0;
  // Per block of rows (row_block, and a shorter last block), on dense operands (oneDNN's
  // brgemm matmul wants them dense; copying a head's k and v costs little next to the
  // products): scores[rows, S] = scale q[rows, E] k^T[E, S]; out[rows, Ev] = scores v[S, Ev].
  std::unique_ptr<SdpaState> own;  // a call without setup: a state for this call alone
  const SdpaState* st = static_cast<const SdpaState*>(a->state);
  if (!st) st = (own = sdpa_state<Merged>(a)).get();
  // Batch entry b's output rows: b's own [L, Ev] block, or with the heads merged (b = outer * H
  // + h) the columns [h * Ev, (h + 1) * Ev) of outer's [L, H * Ev] rows.
  const int64_t heads = Merged ? q.sizes[r - 3] : 1, ors = heads * Ev;
  const float* qp = static_cast<const float*>(q.data);
  const float* kp = static_cast<const float*>(k.data);
  const float* vp = static_cast<const float*>(v.data);
  float* op = static_cast<float*>(out.data);
  const bool has_mask = present(mask);
  const bool bool_mask = has_mask && mask.dtype == int32_t(DType::b8);
  const int64_t msr = has_mask && mask.ndim >= 2 && mask.sizes[mask.ndim - 2] != 1 ? mask.strides[mask.ndim - 2] : 0;
  const int64_t msc = has_mask && mask.ndim >= 1 && mask.sizes[mask.ndim - 1] != 1 ? mask.strides[mask.ndim - 1] : 0;
  static const InnerFn softmax_row = IsaVariants<SoftmaxInPlace>::pick();
  const int64_t block = row_block(L, S), blocks = (L + block - 1) / block;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int threads = std::max(1, a->num_threads);
  ThreadLimit limit(threads);
  std::atomic<bool> failed{false};  // a product threw (its block is left unwritten)
  const Slot slot(block, S, E, Ev, Merged);
  CallScratch scratch(a);
  float* slots = scratch.take_array<float>(size_t(threads) * size_t(slot.floats));
  parallel_for_slots(batches * blocks, 1, [&](int slot_index, int64_t t0, int64_t t1) {
    float* mine = slots + int64_t(slot_index) * slot.floats;
    float *scores = mine + slot.scores, *qbuf = mine + slot.q, *kbuf = mine + slot.k, *vbuf = mine + slot.v,
          *obuf = mine + slot.out;
    int64_t kv_batch = -1;
    const float *kd = nullptr, *vd = nullptr;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / blocks, row0 = (t % blocks) * block, rows = std::min(block, L - row0);
      float* orow = op + (b / heads) * L * ors + (b % heads) * Ev + row0 * ors;
      if (S == 0) {
        for (int64_t i = 0; i < rows; ++i) std::fill_n(orow + i * ors, Ev, std::nanf(""));
        continue;
      }
      const int which = rows == block ? 0 : 1;
      const MmPrim &pqk = *st->qk[which], &psv = *st->sv[which];
      const float* qd = dense_rows(qp + batch_offset(q, bsizes, r - 2, b) + row0 * q.strides[r - 2], rows, E,
                                   q.strides[r - 2], q.strides[r - 1], qbuf);
      if (b != kv_batch) {  // a thread's blocks run in order: each head's k and v are made dense once
        kd = dense_rows(kp + batch_offset(k, bsizes, r - 2, b), S, E, k.strides[r - 2], k.strides[r - 1], kbuf);
        vd = dense_rows(vp + batch_offset(v, bsizes, r - 2, b), S, Ev, v.strides[r - 2], v.strides[r - 1], vbuf);
        kv_batch = b;
      }
      try {
        pqk.prim->execute({{DNNL_ARG_SRC, &pqk.a, qd}, {DNNL_ARG_WEIGHTS, &pqk.b, kd}, {DNNL_ARG_DST, &pqk.c, scores}});
      } catch (const dnnl::error&) {
        failed.store(true, std::memory_order_relaxed);
        continue;
      }
      if (has_mask) {
        const int64_t mo = batch_offset(mask, bsizes, r - 2, b);
        for (int64_t i = 0; i < rows; ++i) {
          float* s = scores + i * S;
          const int64_t base = mo + (row0 + i) * msr;
          if (bool_mask) {
            const bool* m = static_cast<const bool*>(mask.data) + base;
            for (int64_t j = 0; j < S; ++j) s[j] = m[j * msc] ? s[j] : neg_inf;
          } else {
            const float* m = static_cast<const float*>(mask.data) + base;
            for (int64_t j = 0; j < S; ++j) s[j] += m[j * msc];
          }
        }
      }
      if (causal)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = row0 + i + 1; j < S; ++j) scores[i * S + j] = neg_inf;
      for (int64_t i = 0; i < rows; ++i) {
        char* p[1] = {reinterpret_cast<char*>(scores + i * S)};
        softmax_row(p, nullptr, S, nullptr);
      }
      try {
        psv.prim->execute({{DNNL_ARG_SRC, &psv.a, scores},
                           {DNNL_ARG_WEIGHTS, &psv.b, vd},
                           {DNNL_ARG_DST, &psv.c, Merged ? obuf : orow}});
      } catch (const dnnl::error&) {
        failed.store(true, std::memory_order_relaxed);
        continue;
      }
      if (Merged)
        for (int64_t i = 0; i < rows; ++i) std::memcpy(orow + i * ors, obuf + i * Ev, size_t(Ev) * sizeof(float));
    }
  });
  return failed.load() ? fail(a, "oneDNN matmul failed") : 0;
}

template <bool Merged>
int sdpa_run(const amber_kernel_args* a) {
  return guarded_onednn(a, "oneDNN matmul failed", [&] { return sdpa<Merged>(a); });
}

AMBER_CPU_KERNELS(attention) {
  using State = StateOf<SdpaState, sdpa_state<false>>;
  using MergedState = StateOf<SdpaState, sdpa_state<true>>;
  register_kernel("scaled_dot_product_attention", DType::f32,
                  amber_kernel{sdpa_run<false>, State::setup, State::destroy, nullptr});
  register_kernel("attention_merge_heads", DType::f32,
                  amber_kernel{sdpa_run<true>, MergedState::setup, MergedState::destroy, nullptr});
}

}  // namespace
}  // namespace amber::cpu
