// The CUDA backend's own f32 convolution (kernels/cuda/conv_direct_kernels.cuh) run on the CPU
// (cuda_emulation.h), without a GPU: each of its three tiles against a convolution in double
// precision on odd shapes (strides, dilations, padding, partial row and column tiles, one to many
// slices of the sum, bias with a stride, clamp), through the same launch policy the backend uses
// (fits, split, workspace, grids); its stores' banks. scripts/gpu_check.sh runs the real kernels.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda_emulation.h"
// After the emulation's macros:
#include "amber/kernels/cuda/conv_direct_kernels.cuh"

namespace {

using amber::Act;
using amber::cuda::DirectConv;
namespace direct = amber::cuda::direct;

DirectConv shape(int n, int h, int w, int c, int k, int r, int s, int sh, int sw, int ph, int pw, int dh, int dw) {
  DirectConv d;
  d.n = n, d.h = h, d.w = w, d.c = c, d.k = k, d.r = r, d.s = s;
  d.stride[0] = sh, d.stride[1] = sw, d.pad[0] = ph, d.pad[1] = pw, d.dilation[0] = dh, d.dilation[1] = dw;
  d.p = (h + 2 * ph - dh * (r - 1) - 1) / sh + 1;
  d.q = (w + 2 * pw - dw * (s - 1) - 1) / sw + 1;
  return d;
}

// The largest |emulated - reference| over the output (the output's untouched NaN counts as 1e30).
double run(DirectConv d, int sms, bool with_bias, int64_t bias_stride, Act act, float lo, float hi) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(d.n) * d.h * d.w * d.c), w(size_t(d.k) * d.r * d.s * d.c),
      bias(size_t(d.k) * size_t(bias_stride));
  for (std::vector<float>* v : {&x, &w, &bias})
    for (float& e : *v) e = u(rng);
  REQUIRE(direct::fits(d));
  direct::split(d, sms);
  std::vector<float> y(size_t(d.n) * d.p * d.q * d.k, NAN), partials(direct::workspace(d) / sizeof(float) + 1, NAN);
  direct::enqueue(
      d, direct::launch_of(d),
      [](auto kernel, dim3 grid, dim3 block, auto... args) { amber::emulation::launch(kernel, grid, block, args...); },
      x.data(), w.data(), with_bias ? bias.data() : nullptr, bias_stride, act, lo, hi, y.data(), partials.data());
  double worst = 0;
  for (int n = 0; n < d.n; ++n)
    for (int p = 0; p < d.p; ++p)
      for (int q = 0; q < d.q; ++q)
        for (int k = 0; k < d.k; ++k) {
          double sum = with_bias ? bias[size_t(k) * size_t(bias_stride)] : 0.0;
          for (int r = 0; r < d.r; ++r)
            for (int s = 0; s < d.s; ++s) {
              const int ih = p * d.stride[0] - d.pad[0] + r * d.dilation[0],
                        iw = q * d.stride[1] - d.pad[1] + s * d.dilation[1];
              if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
              for (int c = 0; c < d.c; ++c)
                sum += double(x[((size_t(n) * d.h + ih) * d.w + iw) * d.c + c]) *
                       w[((size_t(k) * d.r + r) * d.s + s) * d.c + c];
            }
          if (act == Act::clamp) sum = std::min<double>(std::max<double>(sum, lo), hi);
          const double got = y[((size_t(n) * d.p + p) * d.q + q) * d.k + k], e = std::fabs(got - sum);
          worst = std::isnan(e) ? 1e30 : std::max(worst, e);
        }
  std::printf("%dx%d tiles, %d slices, x [%d, %d, %d, %d] w [%d, %d, %d, %d]: max |error| %.3g\n", d.tile_m, d.tile_n,
              d.splits, d.n, d.c, d.h, d.w, d.k, d.c, d.r, d.s, worst);
  return worst;
}

}  // namespace

TEST_CASE("cuda emulated: the own convolution kernel equals a convolution in double precision", "[emulated]") {
  struct Case {
    DirectConv d;
    int sms;
    bool bias;
    int64_t bias_stride;
    Act act;
    float lo, hi;
  };
  const Case cases[] = {
      // Strided, padded, one row tile; split where the sum is long enough.
      {shape(2, 7, 5, 8, 12, 3, 3, 2, 2, 1, 1, 1, 1), 132, true, 1, Act::none, 0, 0},
      // Dilated unevenly, a partial column tile of 68 channels, clamp, a bias with a stride.
      {shape(1, 9, 6, 36, 68, 3, 2, 1, 1, 1, 0, 2, 1), 132, true, 2, Act::clamp, 0, 6},
      // Two images over several row tiles (partial ones), 136 channels, unsplit on one SM.
      {shape(2, 12, 11, 8, 136, 3, 3, 1, 1, 1, 1, 1, 1), 1, true, 1, Act::clamp, -1, 1},
      // A 1x1 stride-2 projection, four channels.
      {shape(3, 11, 13, 4, 4, 1, 1, 2, 2, 0, 0, 1, 1), 4, false, 1, Act::none, 0, 0},
      // A deep sum over few pixels (ResNet's last layers at batch 1, smaller): many slices.
      {shape(1, 5, 5, 96, 64, 3, 3, 1, 1, 1, 1, 1, 1), 132, false, 1, Act::clamp, 0, INFINITY},
      // Fewer channels than a step's terms (4 and 12 against 8 or 16): a step's loads cross
      // several (r, s) positions, and slices start mid-position.
      {shape(2, 6, 7, 4, 8, 3, 3, 1, 2, 1, 1, 1, 1), 132, true, 1, Act::none, 0, 0},
      {shape(1, 7, 6, 12, 20, 3, 2, 1, 1, 2, 1, 2, 1), 132, true, 1, Act::none, 0, 0},
  };
  const int tiles[3][2] = {{64, 64}, {128, 64}, {128, 128}};
  for (const Case& c : cases)
    for (const auto& t : tiles) {
      DirectConv d = c.d;
      d.tile_m = t[0], d.tile_n = t[1];
      INFO("tile " << t[0] << "x" << t[1] << ", input [" << d.n << ", " << d.c << ", " << d.h << ", " << d.w
                   << "], weight [" << d.k << ", " << d.c << ", " << d.r << ", " << d.s << "]");
      CHECK(run(d, c.sms, c.bias, c.bias_stride, c.act, c.lo, c.hi) < 2e-5);
    }
}

TEST_CASE("cuda emulated: the own convolution's launch policy", "[emulated]") {
  // ResNet-18's layer4 at batch 1 on 132 multiprocessors: 8 column tiles of 64, the sum split
  // until there are two blocks a multiprocessor (288 steps of 16 terms, 9 a slice).
  DirectConv d = shape(1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1, 1, 1);
  REQUIRE(direct::fits(d));
  direct::split(d, 132);
  CHECK(d.splits == 32);
  CHECK(direct::workspace(d) == size_t(32) * 49 * 512 * sizeof(float));
  const direct::Launch l = direct::launch_of(d);
  CHECK((l.grid.x == 1 && l.grid.y == 8 && l.grid.z == 32));
  CHECK(l.g.steps_per_split == 9);
  // At batch 64 the output alone fills the GPU: no split, no workspace.
  DirectConv big = shape(64, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1);
  big.tile_m = 128;
  direct::split(big, 132);
  CHECK(big.splits == 1);
  CHECK(direct::workspace(big) == 0);
  // What the kernel does not take: channels not in fours, a zero stride.
  CHECK_FALSE(direct::fits(shape(1, 8, 8, 3, 16, 3, 3, 1, 1, 1, 1, 1, 1)));
  CHECK_FALSE(direct::fits(shape(1, 8, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1)));
  DirectConv zero = shape(1, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  zero.stride[0] = 0;
  CHECK_FALSE(direct::fits(zero));
}

namespace {
// How many of a warp's 32 shared-memory stores of one operand row (term lt + k of the thread's
// four, at its pixel or channel lr) fall in the busiest bank: 1 is conflict-free.
template <int W, int BK>
int busiest_bank(int warp, int k) {
  int hits[32] = {};
  for (int t = 32 * warp; t < 32 * warp + 32; ++t) {
    const int lr = t / (BK / 4), lt = t % (BK / 4) * 4;
    if (lr >= W) continue;  // (a 128 x 64 tile's channel rows: half the threads store)
    ++hits[(direct::row_at<W, BK>(lt + k) + lr) % 32];
  }
  return *std::max_element(hits, hits + 32);
}
}  // namespace

TEST_CASE("cuda emulated: the own convolution's operand stores are free of bank conflicts", "[emulated]") {
  // The emulation cannot see banks: the layout's arithmetic (direct::row_at) is checked here for
  // each tile's operands (16 terms a step for 64 rows, 8 for 128), every warp and each of a
  // thread's four stores. Rows W + 4 apart alone would put a 64 x 64 tile's rows 0 and 8 (4 and
  // 12) in the same banks: two-way conflicts.
  for (int warp = 0; warp < direct::kThreads / 32; ++warp)
    for (int k = 0; k < 4; ++k) {
      INFO("warp " << warp << ", store " << k);
      CHECK(busiest_bank<64, 16>(warp, k) == 1);
      CHECK(busiest_bank<128, 8>(warp, k) == 1);
      CHECK(busiest_bank<64, 8>(warp, k) <= 1);  // (warps 4 to 7 store none)
    }
}
