// attention_kernels.cuh on the CPU (cuda_emulation.h), without a GPU: the tiled kernel (one and
// two query rows a warp, keys in tiles of 32 with a running softmax, staged without divisions)
// and the row-at-a-time kernel for heads wider than 128, against attention in double precision:
// odd lengths, partial key tiles, float and causal masks, heads merged into [L, H * Ev] rows.
// scripts/gpu_check.sh runs the real kernels.

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

View<float> dense(const float* data, std::initializer_list<int64_t> sizes) {
  View<float> v{data, int(sizes.size()), {}, {}};
  int d = v.ndim - 1;
  int64_t stride = 1;
  for (auto it = std::rbegin(sizes); it != std::rend(sizes); ++it, --d) {
    v.sizes[d] = *it;
    v.strides[d] = stride;
    stride *= *it;
  }
  return v;
}

struct Shape {
  int batches, L, S, E, Ev;
  bool causal, mask, merged;  // merged: the batch entries are heads of one sequence
};

// The largest |emulated - reference| (NaN counts as 1e30); rows_per_warp 0: the wide-head kernel.
double run(const Shape& s, int rows_per_warp) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> q(size_t(s.batches) * s.L * s.E), k(size_t(s.batches) * s.S * s.E),
      v(size_t(s.batches) * s.S * s.Ev), m(size_t(s.L) * s.S), out(size_t(s.batches) * s.L * s.Ev, NAN);
  for (std::vector<float>* t : {&q, &k, &v, &m})
    for (float& e : *t) e = normal(rng);
  const attention::Batch bt{1, {s.batches}};
  const attention::OutRows rows{s.merged ? s.batches : 1, s.L, s.Ev};
  const float scale = 1.0f / std::sqrt(float(s.E));
  const View<float> qv = dense(q.data(), {s.batches, s.L, s.E}), kv = dense(k.data(), {s.batches, s.S, s.E}),
                    vv = dense(v.data(), {s.batches, s.S, s.Ev}),
                    mv = s.mask ? dense(m.data(), {s.L, s.S}) : View<float>{};
  using amber::emulation::launch_shared;
  if (rows_per_warp == 0) {
    launch_shared(&attention::sdpa_kernel<float>, dim3(unsigned(s.batches * s.L)), dim3(attention::kThreads),
                  size_t(s.S + attention::kThreads) * sizeof(float), qv, kv, vv, mv, s.mask, false, s.causal, bt,
                  out.data(), rows, int64_t(s.L), int64_t(s.S), int64_t(s.E), int64_t(s.Ev), scale);
  } else {
    const int tile_rows = rows_per_warp * attention::kWarps;
    const int64_t row_tiles = (s.L + tile_rows - 1) / tile_rows;
    auto kernel =
        rows_per_warp == 1 ? &attention::sdpa_tiled_kernel<float, 1> : &attention::sdpa_tiled_kernel<float, 2>;
    launch_shared(kernel, dim3(unsigned(s.batches * row_tiles)), dim3(attention::kThreads),
                  attention::tiled_smem(tile_rows, s.E, s.Ev), qv, kv, vv, mv, s.mask, false, s.causal, bt, out.data(),
                  rows, int64_t(s.L), int64_t(s.S), s.E, s.Ev, scale, row_tiles);
  }
  double worst = 0;
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
        const double err = std::fabs(out[at] - acc / sum);
        worst = std::isnan(err) ? 1e30 : std::max(worst, err);
      }
    }
  std::printf("attention %s: %d x [%d, %d] keys %d, values %d%s%s%s: max |error| %.3g\n",
              rows_per_warp ? (rows_per_warp == 1 ? "tiled, 1 row a warp" : "tiled, 2 rows a warp") : "wide heads",
              s.batches, s.L, s.E, s.S, s.Ev, s.causal ? ", causal" : "", s.mask ? ", masked" : "",
              s.merged ? ", heads merged" : "", worst);
  return worst;
}

}  // namespace

TEST_CASE("cuda emulated: the attention kernels equal attention in double precision", "[emulated]") {
  const Shape tiled[] = {
      {2, 13, 45, 16, 24, false, true, false},   // partial key tile, float mask
      {1, 9, 33, 64, 64, true, false, false},    // causal, one key past a tile
      {3, 5, 70, 128, 100, false, false, true},  // the widest tiled head, heads merged
      {1, 17, 7, 37, 5, true, true, false},      // fewer keys than a tile, odd widths
      {2, 8, 64, 20, 128, false, true, true},    // whole tiles, the widest values
  };
  for (const Shape& s : tiled)
    for (int rows_per_warp : {1, 2}) {
      INFO("L " << s.L << ", S " << s.S << ", E " << s.E << ", Ev " << s.Ev << ", rows a warp " << rows_per_warp);
      CHECK(run(s, rows_per_warp) < 1e-5);
    }
  const Shape wide[] = {{2, 3, 29, 160, 136, true, true, true}, {1, 4, 300, 130, 7, false, false, false}};
  for (const Shape& s : wide) {
    INFO("L " << s.L << ", S " << s.S << ", E " << s.E << ", Ev " << s.Ev << ", wide heads");
    CHECK(run(s, 0) < 1e-5);
  }
}
