// attention_kernels.cuh on the CPU (cuda_emulation.h), without a GPU: the tiled kernel (one and
// two query rows a warp), the kernel whose warps split the keys, and the row-at-a-time kernel for
// wide heads, against attention in double precision: odd lengths, partial key tiles, no keys,
// float and causal masks, a fully masked row, merged heads, operands dense, packed as a
// projection's columns (16-byte loads) or off 16 bytes; f32 and bf16. gpu_check runs the real ones.

#include <catch2/catch.hpp>

#include <cstdio>
#include <random>
#include <vector>

#include "cuda_emulation.h"
// After the emulation's macros:
#include "amber/kernels/cuda/attention_kernels.cuh"

namespace {

namespace attention = amber::cuda::attention;
using attention::View;

template <typename T>
View<T> dense(const T* data, std::initializer_list<int64_t> sizes) {
  View<T> v{data, int(sizes.size()), {}, {}};
  int d = v.ndim - 1;
  int64_t stride = 1;
  for (auto it = std::rbegin(sizes); it != std::rend(sizes); ++it, --d) {
    v.sizes[d] = *it;
    v.strides[d] = stride;
    stride *= *it;
  }
  return v;
}

// Where the kernels find q, k and v: dense [batches, rows, width]; packed, as the columns of one
// projection's output [rows, 3 * batches * widest] (entry b of operand `slot` at column
// (slot * batches + b) * widest: the transformer's heads); or dense from one float past a
// 16-byte boundary (every row misaligned, so the staging takes its element-by-element path).
enum class Layout { kDense, kPacked, kShifted };

template <typename T>
struct Operand {
  std::vector<T> store;
  View<T> view;
};
template <typename T>
Operand<T> place(const std::vector<T>& t, int batches, int rows, int width, Layout layout, int slot, int widest) {
  Operand<T> o;
  if (layout == Layout::kPacked) {
    const int64_t pitch = int64_t(3) * batches * widest;
    o.store.assign(size_t(rows * pitch + 1), T(NAN));
    T* base = o.store.data() + int64_t(slot) * batches * widest;
    for (int b = 0; b < batches; ++b)
      for (int i = 0; i < rows; ++i)
        for (int e = 0; e < width; ++e)
          base[i * pitch + int64_t(b) * widest + e] = t[(size_t(b) * rows + i) * width + e];
    o.view = View<T>{base, 3, {batches, rows, width}, {widest, pitch, 1}};
  } else {
    const size_t shift = layout == Layout::kShifted ? 1 : 0;
    o.store.assign(t.size() + 1, T(NAN));
    std::copy(t.begin(), t.end(), o.store.begin() + ptrdiff_t(shift));
    o.view = dense(o.store.data() + shift, {batches, rows, width});
  }
  return o;
}

struct Shape {
  int batches, L, S, E, Ev;
  bool causal, mask, merged;  // merged: the batch entries are heads of one sequence
  Layout layout = Layout::kDense;
  int dead_row = -1;  // a query row whose mask is -inf everywhere (NaN out)
  float slope = 0;    // added to the mask times the key's index: scores far apart between warps
};

// Which kernel runs a shape.
enum class Kernel { kTiled1, kTiled2, kSplit, kWide };
const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::kTiled1:
      return "tiled, 1 row a warp";
    case Kernel::kTiled2:
      return "tiled, 2 rows a warp";
    case Kernel::kSplit:
      return "keys split between warps";
    case Kernel::kWide:
      return "wide heads";
  }
  return "?";
}

// The largest |emulated - reference| over its bound (below 1 passes): 1e-5 in f32; in bf16 (the
// operands rounded to bf16 first, the reference computed from them) one rounding of the output,
// 2^-8 of it, plus 1e-5. A NaN where the reference is NaN (a fully masked row, no keys) counts
// 0, a NaN anywhere else 1e30.
template <typename T>
double run(const Shape& s, Kernel which) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> q(size_t(s.batches) * s.L * s.E), k(size_t(s.batches) * s.S * s.E),
      v(size_t(s.batches) * s.S * s.Ev), m(size_t(s.L) * s.S);
  std::vector<T> out(size_t(s.batches) * s.L * s.Ev, T(NAN));
  for (std::vector<float>* t : {&q, &k, &v, &m})
    for (float& e : *t) e = normal(rng);
  for (int i = 0; i < s.L; ++i)
    for (int j = 0; j < s.S; ++j) m[size_t(i) * s.S + j] += s.slope * float(j);
  if (s.dead_row >= 0)
    for (int j = 0; j < s.S; ++j) m[size_t(s.dead_row) * s.S + j] = -INFINITY;
  const auto typed = [](std::vector<float>& t) {  // t rounded to T, and its T copy
    std::vector<T> r(t.size());
    for (size_t i = 0; i < t.size(); ++i) t[i] = float(r[i] = T(t[i]));
    return r;
  };
  const std::vector<T> qt = typed(q), kt = typed(k), vt = typed(v), mt = typed(m);
  constexpr bool kF32 = std::is_same_v<T, float>;
  const attention::Batch bt{1, {s.batches}};
  const attention::OutRows rows{s.merged ? s.batches : 1, s.L, s.Ev};
  const float scale = 1.0f / std::sqrt(float(s.E));
  const int widest = std::max(s.E, s.Ev);
  const Operand<T> qo = place(qt, s.batches, s.L, s.E, s.layout, 0, widest),
                   ko = place(kt, s.batches, s.S, s.E, s.layout, 1, widest),
                   vo = place(vt, s.batches, s.S, s.Ev, s.layout, 2, widest);
  const View<T>&qv = qo.view, &kv = ko.view, &vv = vo.view;
  const View<T> mv = s.mask ? dense(mt.data(), {s.L, s.S}) : View<T>{};
  using amber::emulation::launch_shared;
  if (which == Kernel::kWide) {
    launch_shared(&attention::sdpa_kernel<T>, dim3(unsigned(s.batches * s.L)), dim3(attention::kThreads),
                  size_t(s.S + attention::kThreads) * sizeof(float), qv, kv, vv, mv, s.mask, false, s.causal, bt,
                  out.data(), rows, int64_t(s.L), int64_t(s.S), int64_t(s.E), int64_t(s.Ev), scale);
  } else if (which == Kernel::kSplit) {
    const int64_t row_tiles = (s.L + attention::kWarps - 1) / attention::kWarps;
    launch_shared(&attention::sdpa_split_kernel<T>, dim3(unsigned(s.batches * row_tiles)), dim3(attention::kThreads),
                  attention::split_smem(s.E, s.Ev), qv, kv, vv, mv, s.mask, false, s.causal, bt, out.data(), rows,
                  int64_t(s.L), int64_t(s.S), s.E, s.Ev, scale, row_tiles);
  } else {
    const int tile_rows = (which == Kernel::kTiled1 ? 1 : 2) * attention::kWarps;
    const int64_t row_tiles = (s.L + tile_rows - 1) / tile_rows;
    auto kernel = which == Kernel::kTiled1 ? &attention::sdpa_tiled_kernel<T, 1> : &attention::sdpa_tiled_kernel<T, 2>;
    launch_shared(kernel, dim3(unsigned(s.batches * row_tiles)), dim3(attention::kThreads),
                  attention::tiled_smem(tile_rows, s.E, s.Ev), qv, kv, vv, mv, s.mask, false, s.causal, bt, out.data(),
                  rows, int64_t(s.L), int64_t(s.S), s.E, s.Ev, scale, row_tiles);
  }
  double worst = 0, worst_bound = 0;
  for (int b = 0; b < s.batches; ++b)
    for (int i = 0; i < s.L; ++i) {
      std::vector<double> p(size_t(s.S));
      double top = -INFINITY, sum = 0;
      for (int j = 0; j < s.S; ++j) {
        double d = 0;
        for (int e = 0; e < s.E; ++e)
          d += double(q[(size_t(b) * s.L + i) * s.E + e]) * k[(size_t(b) * s.S + j) * s.E + e];
        d = d * scale + (s.mask ? m[size_t(i) * s.S + j] : 0.0);
        p[size_t(j)] = s.causal && j > i ? -INFINITY : d;
        top = std::max(top, p[size_t(j)]);
      }
      for (double& e : p) sum += (e = std::exp(e - top));
      for (int e = 0; e < s.Ev; ++e) {
        double acc = 0;
        for (int j = 0; j < s.S; ++j) acc += p[size_t(j)] * v[(size_t(b) * s.S + j) * s.Ev + e];
        const size_t at = s.merged ? (size_t(i) * s.batches + b) * s.Ev + e : (size_t(b) * s.L + i) * s.Ev + e;
        const double want = acc / sum, got = float(out[at]);
        const double err = std::isnan(want) && std::isnan(got)   ? 0.0
                           : std::isnan(want) || std::isnan(got) ? 1e30
                                                                 : std::fabs(got - want);
        worst = std::max(worst, err);
        worst_bound = std::max(worst_bound, err / (kF32 ? 1e-5 : 0x1p-8 * std::fabs(want) + 1e-5));
      }
    }
  std::printf("attention %s%s: %d x [%d, %d] keys %d, values %d%s%s%s%s%s: max |error| %.3g\n", kernel_name(which),
              kF32 ? "" : ", bf16", s.batches, s.L, s.E, s.S, s.Ev, s.causal ? ", causal" : "",
              s.mask ? ", masked" : "", s.dead_row >= 0 ? " (a row fully)" : "", s.merged ? ", heads merged" : "",
              s.layout == Layout::kPacked    ? ", packed"
              : s.layout == Layout::kShifted ? ", shifted"
                                             : "",
              worst);
  return worst_bound;
}

// Each thread writes dynamic shared memory at its index, plus `offset` in block `block` (the
// emulation's guard test).
__global__ void write_shared(unsigned block, int offset) {
  dynamic_shared()[threadIdx.x + (blockIdx.x == block ? offset : 0)] = 1.0f;
}

// Lane 0 waits at the block's barrier while the others shuffle (a hang on a GPU).
__global__ void mismatched_barriers(float* out) {
  if (threadIdx.x == 0)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_sync(~0u, float(threadIdx.x), 0);
}

}  // namespace

TEST_CASE("cuda emulation: threads waiting at different barriers fail the launch", "[emulated]") {
  std::vector<float> out(32);
  CHECK_THROWS_WITH(amber::emulation::launch(&mismatched_barriers, dim3(1), dim3(32), out.data()),
                    Catch::Matchers::StartsWith("emulated launch: the block's threads wait at different barriers"));
  // The emulation runs on: a launch after it.
  CHECK_NOTHROW(amber::emulation::launch_shared(&write_shared, dim3(2), dim3(32), 32 * sizeof(float), 1u, 0));
}

TEST_CASE("cuda emulation: a block writing past its dynamic shared memory fails the launch", "[emulated]") {
  using amber::emulation::launch_shared;
  CHECK_NOTHROW(launch_shared(&write_shared, dim3(3), dim3(32), 32 * sizeof(float), 1u, 0));
  // One word past the end, in the second block only.
  CHECK_THROWS_WITH(launch_shared(&write_shared, dim3(3), dim3(32), 32 * sizeof(float), 1u, 1),
                    "emulated launch: block 1 wrote past its 128 bytes of dynamic shared memory");
}

TEST_CASE("cuda emulated: the attention kernels equal attention in double precision", "[emulated]") {
  const Shape tiled[] = {
      {2, 13, 45, 16, 24, false, true, false},                            // partial key tile, float mask
      {1, 9, 33, 64, 64, true, false, false},                             // causal, one key past a tile
      {3, 5, 70, 128, 100, false, false, true},                           // the widest tiled head, heads merged
      {1, 17, 7, 37, 5, true, true, false},                               // fewer keys than a tile, odd widths
      {2, 8, 64, 20, 128, false, true, true},                             // whole tiles, the widest values
      {2, 6, 40, 24, 8, false, true, false, Layout::kPacked, 3},          // packed, a fully masked row
      {1, 6, 128, 16, 16, false, true, false, Layout::kDense, -1, 1.5f},  // steep scores
      {1, 7, 50, 16, 16, true, false, false, Layout::kShifted},           // misaligned rows
      {2, 3, 0, 16, 8, false, false, false},                              // no keys: NaN
  };
  for (const Shape& s : tiled)
    for (Kernel which : {Kernel::kTiled1, Kernel::kTiled2}) {
      INFO("L " << s.L << ", S " << s.S << ", E " << s.E << ", Ev " << s.Ev << ", " << kernel_name(which));
      CHECK(run<float>(s, which) < 1);
    }
  // The split kernel: heads up to kSplitMaxHead; rounds of 128 keys, warps with no keys in a
  // round (S = 45: warps 2 and 3; S = 300: the third round's 44 keys), 4-row tiles past L.
  const Shape split[] = {
      {4, 128, 128, 64, 64, false, false, true, Layout::kPacked},  // the bench transformer's heads
      {2, 13, 45, 16, 24, false, true, false},
      {1, 9, 300, 64, 64, true, false, false, Layout::kPacked},  // causal over three rounds
      {3, 6, 161, 92, 92, false, true, true},                    // the widest split head
      {1, 17, 7, 37, 5, true, true, false},                      // fewer keys than a warp's tile
      {2, 5, 130, 36, 12, false, true, false, Layout::kShifted, 2},
      // The last warp's scores about 140 above the first's: the combination must rescale by the
      // row's maximum (exp(140) is past float's range).
      {1, 6, 128, 16, 16, false, true, false, Layout::kDense, -1, 1.5f},
      {2, 3, 0, 16, 8, false, false, false},
  };
  for (const Shape& s : split) {
    INFO("L " << s.L << ", S " << s.S << ", E " << s.E << ", Ev " << s.Ev << ", keys split");
    CHECK(run<float>(s, Kernel::kSplit) < 1);
  }
  const Shape wide[] = {{2, 3, 29, 160, 136, true, true, true}, {1, 4, 300, 130, 7, false, false, false}};
  for (const Shape& s : wide) {
    INFO("L " << s.L << ", S " << s.S << ", E " << s.E << ", Ev " << s.Ev << ", wide heads");
    CHECK(run<float>(s, Kernel::kWide) < 1);
  }
  // 16-bit operands (a model in bf16): eight elements a 16-byte load where rows allow (E and Ev
  // multiples of 8, aligned), element by element elsewhere; computed in f32, rounded once.
  const Shape half[] = {
      {4, 128, 128, 64, 64, false, false, true, Layout::kPacked},
      {2, 6, 40, 24, 8, false, true, false, Layout::kPacked, 3},
      {2, 5, 130, 36, 12, false, true, false, Layout::kShifted, 2},
      {1, 9, 70, 64, 64, true, false, false, Layout::kShifted},
  };
  for (const Shape& s : half)
    for (Kernel which : {Kernel::kTiled1, Kernel::kTiled2, Kernel::kSplit}) {
      INFO("L " << s.L << ", S " << s.S << ", E " << s.E << ", Ev " << s.Ev << ", " << kernel_name(which) << ", bf16");
      CHECK(run<__nv_bfloat16>(s, which) < 1);
    }
}
