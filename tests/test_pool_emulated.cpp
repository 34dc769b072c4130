// pool_kernels.cuh on the CPU (cuda_emulation.h), without a GPU, against Amber's CPU pooling:
// max_pool2d with and without indices (dilation, padding, ceil_mode, NaN), avg_pool2d
// (count_include_pad, divisor_override, ceil_mode), adaptive_avg_pool2d (uneven bins) and
// max_unpool2d, contiguous and channels-last, one 3-D image, 32- and 64-bit indexing.
// scripts/gpu_check.sh runs the real kernels.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/pool_kernels.cuh"

namespace {

namespace pool = amber::cuda::pool;
using amber::DimVec;
using amber::Tensor;
using amber::emulation::same;
using amber::emulation::unwritten;
using amber::emulation::view_of;

// x's values with channels-last strides (NCHW sizes over NHWC memory).
Tensor channels_last(const Tensor& x) { return x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }

// An output of `like`'s sizes and dtype, NaN or -7 filled, channels-last where asked and 4-D.
Tensor output_like(const Tensor& like, bool cl) { return unwritten(like.sizes(), like.dtype(), cl); }

// The input: [2, 3, 9, 8] (or 3-D [3, 9, 8]) standard normal values with a NaN and an
// infinity, contiguous or channels-last.
Tensor input(bool cl, bool image) {
  amber::manual_seed(3);
  Tensor x = amber::randn({2, 3, 9, 8});
  x.data_ptr<float>()[17] = NAN;
  x.data_ptr<float>()[200] = INFINITY;
  if (image) return x[1].contiguous();
  return cl ? channels_last(x) : x;
}

// The pooling kernel of kind K on x's view into y (and indices), 32-bit indexing where it fits
// and asked for, else 64-bit.
template <pool::Kind K>
void run_kernel(const Tensor& x, const Tensor& y, const Tensor* indices, const pool::Params& p, bool wide) {
  const amber_tensor_view xv = view_of(x), yv = view_of(y);
  const pool::Geometry g = pool::geometry(xv, yv);
  const pool::Indices yi = indices ? pool::indices_of(xv, view_of(*indices)) : pool::Indices{};
  const auto* xp = static_cast<const float*>(x.data());
  auto* yp = static_cast<float*>(const_cast<void*>(y.data()));
  // Three blocks of 256 threads: the grid-stride loop covers the rest.
  if (!wide && pool::fits_32(g, p))
    amber::emulation::launch(&pool::pool_kernel<float, K, int32_t>, dim3(3), dim3(256), xp, yp, g, p, yi);
  else
    amber::emulation::launch(&pool::pool_kernel<float, K, int64_t>, dim3(3), dim3(256), xp, yp, g, p, yi);
}

}  // namespace

TEST_CASE("cuda emulated: max_pool2d and its indices equal the CPU's", "[emulated]") {
  struct Case {
    DimVec k, s, pad, dil;
    bool ceil;
  };
  const Case cases[] = {
      {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false},  // ResNet's stem pool
      {{3, 2}, {2, 1}, {1, 0}, {2, 1}, true},   // dilated, ceil_mode: a last window starting in the padding
      {{2, 2}, {3, 3}, {0, 0}, {1, 1}, true},   // stride over kernel: gaps between windows
  };
  for (const Case& c : cases)
    for (bool cl : {false, true})
      for (bool image : {false, true})
        for (bool wide : {false, true}) {
          INFO("kernel " << c.k[0] << "x" << c.k[1] << ", channels-last " << cl << ", 3-D " << image << ", 64-bit "
                         << wide);
          const Tensor x = input(cl, image);
          const auto [want, want_idx] = amber::max_pool2d_with_indices(x, c.k, c.s, c.pad, c.dil, c.ceil);
          const Tensor y = output_like(want, cl), idx = output_like(want_idx, cl);
          pool::Params p{};
          p.kh = c.k[0], p.kw = c.k[1], p.sh = c.s[0], p.sw = c.s[1], p.ph = c.pad[0], p.pw = c.pad[1];
          p.dh = c.dil[0], p.dw = c.dil[1];
          run_kernel<pool::Kind::max>(x, y, &idx, p, wide);
          CHECK(same(y, want));
          CHECK(same(idx, want_idx));
        }
}

TEST_CASE("cuda emulated: avg_pool2d and adaptive_avg_pool2d equal the CPU's", "[emulated]") {
  struct Case {
    DimVec k, s, pad;
    bool ceil, include_pad;
    std::optional<int64_t> divisor;
  };
  const Case cases[] = {
      {{3, 3}, {2, 2}, {1, 1}, false, true, std::nullopt},
      {{3, 2}, {2, 2}, {1, 1}, true, false, std::nullopt},  // windows past the padding (ceil_mode)
      {{2, 3}, {1, 2}, {0, 1}, true, true, std::nullopt},
      {{2, 2}, {2, 2}, {1, 0}, false, true, int64_t(3)},  // divisor_override
  };
  for (const Case& c : cases)
    for (bool cl : {false, true})
      for (bool wide : {false, true}) {
        INFO("kernel " << c.k[0] << "x" << c.k[1] << ", channels-last " << cl << ", 64-bit " << wide);
        // (no NaN or infinity: a window's mean of them is NaN either way, and hides the others)
        amber::manual_seed(5);
        Tensor x = amber::randn({2, 3, 9, 8});
        if (cl) x = channels_last(x);
        const Tensor want = amber::avg_pool2d(x, c.k, c.s, c.pad, c.ceil, c.include_pad, c.divisor);
        const Tensor y = output_like(want, cl);
        pool::Params p{};
        p.kh = c.k[0], p.kw = c.k[1], p.sh = c.s[0], p.sw = c.s[1], p.ph = c.pad[0], p.pw = c.pad[1];
        p.dh = p.dw = 1;
        p.include_pad = c.include_pad, p.has_override = c.divisor.has_value(), p.override_div = c.divisor.value_or(0);
        run_kernel<pool::Kind::avg>(x, y, nullptr, p, wide);
        CHECK(same(y, want));
      }
  for (const DimVec& size : {DimVec{4, 3}, DimVec{9, 8}, DimVec{1, 1}, DimVec{5, 7}})
    for (bool cl : {false, true}) {
      INFO("adaptive to " << size[0] << "x" << size[1] << ", channels-last " << cl);
      amber::manual_seed(6);
      Tensor x = amber::randn({2, 3, 9, 8});
      if (cl) x = channels_last(x);
      const Tensor want = amber::adaptive_avg_pool2d(x, size);
      const Tensor y = output_like(want, cl);
      run_kernel<pool::Kind::adaptive>(x, y, nullptr, pool::Params{}, false);
      CHECK(same(y, want));
    }
}

TEST_CASE("cuda emulated: max_unpool2d equals the CPU's", "[emulated]") {
  amber::manual_seed(7);
  const Tensor x = amber::randn({2, 3, 8, 6});
  const auto [pooled, idx] = amber::max_pool2d_with_indices(x, {2, 2}, {2, 2});
  const DimVec out_size{9, 7};  // larger than the pooled input's source: zeros where nothing lands
  const Tensor want = amber::max_unpool2d(pooled, idx, out_size);
  const Tensor y = output_like(want, false);
  const amber_tensor_view xv = view_of(pooled), yv = view_of(y), iv = view_of(idx);
  const pool::Geometry g = pool::geometry(xv, yv), gi = pool::geometry(iv, yv);
  auto* yp = static_cast<float*>(const_cast<void*>(y.data()));
  amber::emulation::launch(&pool::unpool_zero_kernel<float>, dim3(2), dim3(256), yp, g);
  amber::emulation::launch(&pool::unpool_kernel<float>, dim3(2), dim3(256), static_cast<const float*>(pooled.data()),
                           static_cast<const int64_t*>(idx.data()), yp, g, gi);
  CHECK(same(y, want));
}
