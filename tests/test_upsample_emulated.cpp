// The CUDA backend's resizing kernels (kernels/cuda/upsample_kernels.cuh) run on the CPU
// (cuda_emulation.h), without a GPU, against Amber's CPU kernels: upsample_nearest2d,
// upsample_bilinear2d and upsample_bicubic2d (plain and antialiased), up and down, with and
// without align_corners and explicit scales, into contiguous and channels-last outputs from
// strided inputs. scripts/gpu_check.sh runs the real kernels.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <vector>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/upsample_kernels.cuh"

namespace {

namespace up = amber::cuda::upsample;
using amber::DimVec;
using amber::Tensor;
using amber::emulation::same;
using amber::emulation::unwritten;
using amber::emulation::view_of;

// An output of want's sizes, NaN-filled, contiguous or channels-last.
Tensor output_like(const Tensor& want, bool channels_last) {
  return unwritten(want.sizes(), amber::DType::f32, channels_last);
}

// The antialiased resize of x into y as upsample.cu's: the windows' tables (its setup's, over
// NaN-filled memory), then its two passes, the columns into a NaN-filled `across`, the rows into y.
template <bool Cubic>
void antialiased(const Tensor& x, const Tensor& y, float rh, float rw) {
  const up::Geometry g = up::geometry(view_of(x), view_of(y));
  const int64_t rows = up::aa_widest<Cubic>(g.oh, g.h, rh), cols = up::aa_widest<Cubic>(g.ow, g.w, rw);
  std::vector<double> memory(up::aa_tables<float>(g, rows, cols, nullptr).bytes / sizeof(double) + 1, NAN);
  const up::AaTables<float> t = up::aa_tables<float>(g, rows, cols, memory.data());
  up::aa_fill<Cubic>(t.rows, g.oh, g.h, rh);
  up::aa_fill<Cubic>(t.cols, g.ow, g.w, rw);
  std::vector<float> across(size_t(g.n * g.c * g.h * g.ow), NAN);
  amber::emulation::launch(&up::aa_columns_kernel<float, float>, dim3(2), dim3(64), static_cast<const float*>(x.data()),
                           g, t.cols, across.data());
  amber::emulation::launch(&up::aa_rows_kernel<float, float>, dim3(2), dim3(64),
                           static_cast<const float*>(across.data()), static_cast<float*>(view_of(y).data), g, t.rows);
}

}  // namespace

TEST_CASE("cuda emulated: upsample nearest, bilinear and bicubic (and antialiased) equal the CPU's", "[emulated]") {
  amber::manual_seed(41);
  // [2, 3, 5, 7] read through a transposed view (H and W swapped in memory).
  const Tensor x = amber::randn({2, 3, 7, 5}).transpose(2, 3);
  struct Case {
    DimVec size;
    std::optional<double> sh, sw;
  };
  const Case cases[] = {
      {{11, 9}, std::nullopt, std::nullopt},  // up, uneven
      {{3, 4}, std::nullopt, std::nullopt},   // down
      {{1, 2}, std::nullopt, std::nullopt},   // far down: the antialiased windows span most of a dim
      // Scales setting the source step (1 / scale) apart from in / out (where F.interpolate's
      // floor(in * scale) truncates they differ; here they differ everywhere).
      {{9, 17}, 2.2, 3.0},
  };
  for (const Case& c : cases)
    for (bool cl : {false, true}) {
      INFO("to " << c.size[0] << "x" << c.size[1] << (c.sh ? " with scales" : "") << (cl ? ", channels-last" : ""));
      const Tensor want = amber::upsample_nearest2d(x, c.size, c.sh, c.sw), y = output_like(want, cl);
      const up::Geometry g = up::geometry(view_of(x), view_of(y));
      amber::emulation::launch(&up::nearest_kernel<float>, dim3(2), dim3(64), static_cast<const float*>(x.data()),
                               static_cast<float*>(view_of(y).data), g, 0.0, c.sh.value_or(0.0), c.sw.value_or(0.0));
      CHECK(same(y, want));
      for (bool corners : {false, true})
        for (bool cubic : {false, true}) {
          INFO((cubic ? "bicubic" : "bilinear") << (corners ? ", align_corners" : ""));
          // align_corners ignores the scales (as ATen).
          const std::optional<double> sh = corners ? std::nullopt : c.sh, sw = corners ? std::nullopt : c.sw;
          const Tensor want_i = cubic ? amber::upsample_bicubic2d(x, c.size, corners, sh, sw)
                                      : amber::upsample_bilinear2d(x, c.size, corners, sh, sw);
          const Tensor yi = output_like(want_i, cl);
          const up::Geometry gi = up::geometry(view_of(x), view_of(yi));
          const float rh = amber::resample::linear_scale<float>(gi.h, gi.oh, corners, sh.value_or(0.0)),
                      rw = amber::resample::linear_scale<float>(gi.w, gi.ow, corners, sw.value_or(0.0));
          amber::emulation::launch(
              cubic ? &up::interpolating_kernel<float, float, true> : &up::interpolating_kernel<float, float, false>,
              dim3(2), dim3(64), static_cast<const float*>(x.data()), static_cast<float*>(view_of(yi).data), gi, 0.f,
              rh, rw, corners, false);
          CHECK(same(yi, want_i));
          // The antialiased form: windows widened by the scale where it downsamples.
          const Tensor want_aa = cubic ? amber::upsample_bicubic2d_aa(x, c.size, corners, sh, sw)
                                       : amber::upsample_bilinear2d_aa(x, c.size, corners, sh, sw);
          const Tensor yaa = output_like(want_aa, cl);
          (cubic ? antialiased<true> : antialiased<false>)(x, yaa, rh, rw);
          INFO("antialiased");
          CHECK(same(yaa, want_aa));
        }
    }
}
