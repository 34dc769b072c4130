// The CUDA backend's int8 kernels (kernels/cuda/quantized_kernels.cuh) run on the CPU
// (cuda_emulation.h), without a GPU, against Amber's CPU kernels: quantized_conv2d and its .u8
// overload (groups, stride, padding, dilation; f32 and u8 sources; a NaN image; a 3-D image;
// strided inputs and outputs) and quantized_linear and its .u8 overload (strided rows, a NaN row),
// each activation. Results equal exactly. scripts/gpu_check.sh runs the real kernels.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/quantized_kernels.cuh"

namespace {

namespace qk = amber::cuda::quantized;
using amber::DimVec;
using amber::DType;
using amber::Tensor;
using amber::emulation::ints_attr;
using amber::emulation::launch_small;
using amber::emulation::reversed_layout;
using amber::emulation::same;
using amber::emulation::view_of;

// An f32 source of `sizes` (values around the quantization's range, a few outside it) and its
// uint8 levels.
Tensor f32_source(const DimVec& sizes) { return amber::randn(sizes) * 0.4 + 0.2; }
Tensor u8_source(const DimVec& sizes) {
  return amber::clamp(amber::round(amber::randn(sizes) * 60.0 + 120.0), 0, 255).to(DType::u8);
}

const void* data_of(const Tensor& t) { return t.data(); }
template <typename T>
T* out_of(const Tensor& t) {
  return static_cast<T*>(view_of(t).data);
}

}  // namespace

TEST_CASE("cuda emulated: quantized_conv2d and its .u8 overload equal the CPU's", "[emulated]") {
  amber::manual_seed(31);
  // [2, 6, 7, 9] in 2 groups, 4 output channels, 3x2 kernels, stride (2, 1), padding (1, 0),
  // dilation (1, 2); the weight strided (reversed layout), bias present.
  const Tensor w = reversed_layout(amber::round(amber::randn({4, 3, 3, 2}) * 40.0).to(DType::i8));
  const Tensor ws = amber::rand({4}) * 0.02 + 0.01, bias = amber::randn({4});
  const std::vector<int64_t> stride{2, 1}, padding{1, 0}, dilation{1, 2};
  const double sx = 0.0125, so = 0.05;
  const int64_t zx = 9, zo = 3;
  struct Case {
    bool u8_in, u8_out, image;  // image: one 3-D image
    const char* act;
  };
  const Case cases[] = {
      {false, false, false, "none"},     {false, false, false, "clamp"}, {true, false, false, "silu"},
      {false, true, false, "hardswish"}, {true, true, false, "clamp"},   {false, false, true, "none"},
      {true, true, true, "silu"},
  };
  for (const Case& c : cases) {
    INFO("source " << (c.u8_in ? "u8" : "f32") << ", output " << (c.u8_out ? "u8" : "f32") << ", "
                   << (c.image ? "one image" : "batched") << ", " << c.act);
    const DimVec sizes = c.image ? DimVec{6, 7, 9} : DimVec{2, 6, 7, 9};
    Tensor x = c.u8_in ? u8_source(sizes) : f32_source(sizes);
    if (!c.u8_in && !c.image) x.data_ptr<float>()[6 * 7 * 9 + 40] = NAN;  // image 1 gives NaN (f32 output)
    x = reversed_layout(x);
    const Tensor want = c.u8_out ? amber::quantized_conv2d_u8(x, w, ws, bias, DimVec(stride), DimVec(padding),
                                                              DimVec(dilation), 2, sx, zx, c.act, 0.0, 3.0, so, zo)
                                 : amber::quantized_conv2d(x, w, ws, bias, DimVec(stride), DimVec(padding),
                                                           DimVec(dilation), 2, sx, zx, c.act, 0.0, 3.0);
    const Tensor y = reversed_layout(amber::full(want.sizes(), c.u8_out ? 77.0 : double(NAN), want.dtype()));
    const qk::ConvGeometry g = qk::conv_geometry(view_of(x), view_of(w), view_of(ws), view_of(bias), view_of(y),
                                                 ints_attr(stride), ints_attr(padding), ints_attr(dilation), 2);
    const qk::Quant q =
        qk::make_quant(sx, zx, amber::Act(amber::emulation::choice("quantized_conv2d", "activation", c.act)), 0.0, 3.0,
                       c.u8_out ? so : 0.0, zo);
    const auto* wp = static_cast<const int8_t*>(w.data());
    const auto* sp = static_cast<const float*>(ws.data());
    const auto* bp = static_cast<const float*>(bias.data());
    // An f32 output from an f32 source: the images' NaN flags first, as quantized.cu.
    std::vector<int32_t> flags(size_t(g.n), 0);
    const int32_t* fp = nullptr;
    if (!c.u8_out && !c.u8_in) {
      launch_small(&qk::flag_nan_images<>, static_cast<const float*>(data_of(x)), g, flags.data());
      fp = flags.data();
    }
    if (c.u8_in && c.u8_out)
      launch_small(&qk::quantized_conv_kernel<uint8_t, uint8_t>, static_cast<const uint8_t*>(data_of(x)), wp, sp, bp,
                   out_of<uint8_t>(y), g, q, fp);
    else if (c.u8_in)
      launch_small(&qk::quantized_conv_kernel<uint8_t, float>, static_cast<const uint8_t*>(data_of(x)), wp, sp, bp,
                   out_of<float>(y), g, q, fp);
    else if (c.u8_out)
      launch_small(&qk::quantized_conv_kernel<float, uint8_t>, static_cast<const float*>(data_of(x)), wp, sp, bp,
                   out_of<uint8_t>(y), g, q, fp);
    else
      launch_small(&qk::quantized_conv_kernel<float, float>, static_cast<const float*>(data_of(x)), wp, sp, bp,
                   out_of<float>(y), g, q, fp);
    CHECK(same(y, want));
  }
}

TEST_CASE("cuda emulated: quantized_linear and its .u8 overload equal the CPU's", "[emulated]") {
  amber::manual_seed(32);
  const Tensor w = amber::round(amber::randn({16, 7}) * 40.0).to(DType::i8).t();  // [7, 16], strided
  const Tensor ws = amber::rand({7}) * 0.02 + 0.01, bias = amber::randn({7});
  const double sx = 0.0125, so = 0.05;
  const int64_t zx = 9, zo = 3;
  for (bool u8_in : {false, true})
    for (bool u8_out : {false, true})
      for (const char* act : {"none", "clamp", "silu", "hardswish"}) {
        if (!u8_out && std::string(act) != "none") continue;  // quantized_linear has no activation
        INFO("source " << (u8_in ? "u8" : "f32") << ", output " << (u8_out ? "u8" : "f32") << ", " << act);
        // [3, 5, 16] rows through a transposed view (strided rows and elements); a NaN row.
        Tensor x = u8_in ? u8_source({16, 5, 3}) : f32_source({16, 5, 3});
        if (!u8_in) x.data_ptr<float>()[(4 * 5 + 2) * 3 + 1] = NAN;
        x = x.permute({2, 1, 0});
        const Tensor want = u8_out ? amber::quantized_linear_u8(x, w, ws, bias, sx, zx, act, 0.0, 3.0, so, zo)
                                   : amber::quantized_linear(x, w, ws, bias, sx, zx);
        const Tensor y = amber::full(want.sizes(), u8_out ? 77.0 : double(NAN), want.dtype());  // dense
        int64_t n_rows = 0;
        const qk::Rows rows = qk::linear_rows(view_of(x), n_rows);
        const qk::Quant q =
            qk::make_quant(sx, zx, amber::Act(amber::emulation::choice("quantized_linear.u8", "activation", act)), 0.0,
                           3.0, u8_out ? so : 0.0, zo);
        const amber_tensor_view wv = view_of(w);
        auto run = [&](auto kernel, auto* xp, auto* yp) {
          launch_small(kernel, xp, static_cast<const int8_t*>(wv.data), static_cast<const float*>(ws.data()),
                       static_cast<const float*>(bias.data()), yp, rows, n_rows,
                       qk::LinearGeometry{16, 7, wv.strides[0], wv.strides[1], 1, 1}, q);
        };
        const auto* xu = static_cast<const uint8_t*>(data_of(x));
        const auto* xf = static_cast<const float*>(data_of(x));
        if (u8_in && u8_out)
          run(&qk::quantized_linear_kernel<uint8_t, uint8_t>, xu, out_of<uint8_t>(y));
        else if (u8_in)
          run(&qk::quantized_linear_kernel<uint8_t, float>, xu, out_of<float>(y));
        else if (u8_out)
          run(&qk::quantized_linear_kernel<float, uint8_t>, xf, out_of<uint8_t>(y));
        else
          run(&qk::quantized_linear_kernel<float, float>, xf, out_of<float>(y));
        CHECK(same(y, want));
      }
}
