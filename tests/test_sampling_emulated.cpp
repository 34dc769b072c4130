// The CUDA backend's sampling kernels (kernels/cuda/sampling_kernels.cuh) run on the CPU
// (cuda_emulation.h), without a GPU, against Amber's CPU kernels: grid_sample in each mode,
// padding and corner rule from strided inputs and grids into contiguous and channels-last
// outputs, and roi_align with and without alignment, adaptive and fixed sampling, boxes off the
// image and one whose batch index is out of range (zeros). scripts/gpu_check.sh runs the real ones.

#include "cuda_emulation.h"
// After the emulation's macros, and before Amber's eager API, whose floor, ceil and fmod of
// tensors would hide the C library's from the headers' unqualified calls:
#include "amber/kernels/cuda/sampling_kernels.cuh"
//
#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "emulated_vs_cpu.h"

namespace {

namespace grid = amber::grid;
namespace roi = amber::roi;
using amber::Tensor;
using amber::emulation::same;
using amber::emulation::unwritten;
using amber::emulation::view_of;

// The kernel's views of input x, grid g and output y (as grid_sample.cu's views_of reads them).
grid::Views grid_views(const Tensor& x, const Tensor& g, const Tensor& y) {
  grid::Views v{y.sizes()[1], x.sizes()[2], x.sizes()[3], {}, {}, {}};
  for (int d = 0; d < 4; ++d)
    v.xs[d] = x.strides()[size_t(d)], v.gs[d] = g.strides()[size_t(d)], v.ys[d] = y.strides()[size_t(d)];
  return v;
}

// roi_align's arguments for input x, boxes b and output y (as roi_align.cu's args_of reads them).
roi::Args roi_args(const Tensor& x, const Tensor& b, const Tensor& y, double scale, int64_t ratio, bool aligned) {
  roi::Args r{};
  r.n = x.sizes()[0], r.c = x.sizes()[1], r.h = x.sizes()[2], r.w = x.sizes()[3];
  r.k = y.sizes()[0], r.oh = y.sizes()[2], r.ow = y.sizes()[3];
  for (int d = 0; d < 4; ++d) r.xs[d] = x.strides()[size_t(d)], r.ys[d] = y.strides()[size_t(d)];
  r.bs[0] = b.strides()[0], r.bs[1] = b.strides()[1];
  r.spatial_scale = scale;
  r.sampling_ratio = ratio;
  r.aligned = aligned;
  return r;
}

}  // namespace

TEST_CASE("cuda emulated: grid_sample equals the CPU's in every mode, padding and corner rule", "[emulated]") {
  amber::manual_seed(43);
  // [2, 3, 5, 7] read through a transposed view; a [2, 4, 6, 2] grid in reversed memory order,
  // reaching past [-1, 1] (samples off the image: each padding's rule).
  const Tensor x = amber::randn({2, 3, 7, 5}).transpose(2, 3);
  const Tensor g = amber::emulation::reversed_layout(amber::rand({2, 4, 6, 2}) * 2.6f - 1.3f);
  const struct {
    const char* name;
    grid::Mode mode;
  } modes[] = {{"bilinear", grid::Mode::bilinear}, {"nearest", grid::Mode::nearest}, {"bicubic", grid::Mode::bicubic}};
  const struct {
    const char* name;
    grid::Padding padding;
  } paddings[] = {
      {"zeros", grid::Padding::zeros}, {"border", grid::Padding::border}, {"reflection", grid::Padding::reflection}};
  for (const auto& m : modes)
    for (const auto& p : paddings)
      for (bool corners : {false, true})
        for (bool cl : {false, true}) {
          INFO(m.name << ", " << p.name << (corners ? ", align_corners" : "") << (cl ? ", channels-last" : ""));
          const Tensor want = amber::grid_sample(x, g, m.name, p.name, corners);
          const Tensor y = unwritten(want.sizes(), amber::DType::f32, cl);
          amber::emulation::launch(&amber::cuda::sampling::grid_sample_kernel<float>, dim3(2), dim3(64),
                                   static_cast<const float*>(x.data()), static_cast<const float*>(g.data()),
                                   static_cast<float*>(view_of(y).data), grid_views(x, g, y),
                                   grid::Params{m.mode, p.padding, corners}, int64_t(2), int64_t(4), int64_t(6));
          CHECK(same(y, want));
        }
}

TEST_CASE("cuda emulated: roi_align equals the CPU's; a box of no batch gives zeros", "[emulated]") {
  amber::manual_seed(44);
  // [2, 4, 9, 11] read through a transposed view; five boxes (batch index, x1, y1, x2, y2) in a
  // column-major [5, 5]: inside, partly off the image, tiny, reversed, of the second image.
  const Tensor x = amber::randn({2, 4, 11, 9}).transpose(2, 3);
  const std::vector<float> rows = {0,    1.5f, 2.0f, 14.0f, 12.5f, 0,    -3.0f, -2.0f, 8.0f, 30.0f, 1,     4.0f, 4.0f,
                                   4.5f, 4.2f, 1,    9.0f,  7.0f,  3.0f, 2.0f,  1,     0.0f, 0.0f,  21.0f, 17.0f};
  const Tensor boxes = amber::emulation::reversed_layout(amber::tensor(rows, {5, 5}));
  for (bool aligned : {false, true})
    for (int64_t ratio : {int64_t(-1), int64_t(2)})
      for (bool cl : {false, true}) {
        INFO((aligned ? "aligned" : "not aligned") << ", sampling ratio " << ratio << (cl ? ", channels-last" : ""));
        const Tensor want = amber::roi_align(x, boxes, {3, 4}, 0.5, ratio, aligned);
        const Tensor y = unwritten(want.sizes(), amber::DType::f32, cl);
        amber::emulation::launch(&amber::cuda::sampling::roi_align_kernel<float>, dim3(2), dim3(64),
                                 static_cast<const float*>(x.data()), static_cast<const float*>(boxes.data()),
                                 static_cast<float*>(view_of(y).data), roi_args(x, boxes, y, 0.5, ratio, aligned));
        CHECK(same(y, want));
      }
  // A batch index past the batch: the CPU refuses the call; the CUDA kernel writes zeros there.
  const Tensor bad = amber::tensor(std::vector<float>{0, 1, 1, 6, 6, 2, 1, 1, 6, 6}, {2, 5});
  const Tensor want = amber::roi_align(x, bad.slice(0, 0, 1), {3, 4}, 1.0, 2, false);
  const Tensor y = unwritten({2, 4, 3, 4}, amber::DType::f32, false);
  amber::emulation::launch(&amber::cuda::sampling::roi_align_kernel<float>, dim3(2), dim3(64),
                           static_cast<const float*>(x.data()), static_cast<const float*>(bad.data()),
                           static_cast<float*>(view_of(y).data), roi_args(x, bad, y, 1.0, 2, false));
  CHECK(same(y.slice(0, 0, 1), want));
  CHECK(same(y.slice(0, 1, 2), amber::zeros({1, 4, 3, 4})));
}
