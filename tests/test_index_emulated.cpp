// The CUDA backend's gathering and scattering kernels (kernels/cuda/index_kernels.cuh) run on the
// CPU (cuda_emulation.h), without a GPU, against Amber's CPU kernels: embedding, index_select,
// gather, scatter (src, value, add: f32 and wrapping i64 sums; the five reductions of
// scatter_reduce, NaN and wrapping i64 products included), pad (four modes), roll, repeat,
// tril and triu; strided inputs, outputs and indices, i64 and i32 indices, negative dims, and an
// index out of range (zeros, or no write). scripts/gpu_check.sh runs the real kernels.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/index_kernels.cuh"

namespace {

namespace ix = amber::cuda::indexing;
using amber::DimVec;
using amber::DType;
using amber::Tensor;
using amber::emulation::choice;
using amber::emulation::ints_attr;
using amber::emulation::launch_small;
using amber::emulation::reversed_layout;
using amber::emulation::same;
using amber::emulation::view_of;

// An i64 (or i32) tensor of `sizes` whose element at coordinate c is f(c).
Tensor index_tensor(const DimVec& sizes, const std::function<int64_t(const std::vector<int64_t>&)>& f, DType dtype) {
  Tensor t = amber::zeros(sizes, DType::i64);
  int64_t* p = t.data_ptr<int64_t>();
  std::vector<int64_t> c(sizes.size(), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t rest = i;
    for (size_t d = sizes.size(); d-- > 0;) c[d] = rest % sizes[d], rest /= sizes[d];
    p[i] = f(c);
  }
  return t.to(dtype);
}

// An output of want's sizes and dtype in the reversed layout, filled with NaN (or -7).
Tensor output_like(const Tensor& want) {
  const double fill = want.dtype() == DType::f32 ? double(NAN) : -7.0;
  return reversed_layout(amber::full(want.sizes(), fill, want.dtype()));
}

}  // namespace

TEST_CASE("cuda emulated: embedding and index_select equal the CPU's", "[emulated]") {
  amber::manual_seed(21);
  const Tensor w = amber::randn({6, 11}).t();  // [11, 6], column-major
  for (DType dt : {DType::i64, DType::i32}) {
    INFO("indices " << (dt == DType::i64 ? "i64" : "i32"));
    // [3, 4] indices (repeats, the first and last rows), read through a transposed view.
    const Tensor idx = index_tensor(
                           {4, 3}, [](const std::vector<int64_t>& c) { return (c[0] * 3 + c[1] * 5) % 11; }, dt)
                           .t();
    const Tensor want = amber::embedding(w, idx);
    const Tensor y = amber::full(want.sizes(), double(NAN));  // dense: the kernel writes [indices..., dim]
    launch_small(&ix::embedding_kernel<float>, static_cast<const float*>(w.data()), y.data_ptr<float>(),
                 ix::embedding_args(view_of(w), view_of(idx)), y.numel());
    CHECK(same(y, want));
  }
  // Out of range (and negative): a row of zeros, where the CPU reports the index.
  const Tensor bad = index_tensor(
      {3}, [](const std::vector<int64_t>& c) { return c[0] == 0   ? 11
                                                      : c[0] == 1 ? -1
                                                                  : 2; }, DType::i64);
  const Tensor rows = amber::full({3, 6}, double(NAN));
  launch_small(&ix::embedding_kernel<float>, static_cast<const float*>(w.data()), rows.data_ptr<float>(),
               ix::embedding_args(view_of(w), view_of(bad)), rows.numel());
  CHECK(same(rows.slice(0, 0, 2), amber::zeros({2, 6})));
  CHECK(same(rows[2], w[2]));

  const Tensor x = reversed_layout(amber::randn({5, 7, 3}));
  for (int64_t dim : {0, 1, 2, -1, -3})
    for (DType dt : {DType::i64, DType::i32}) {
      INFO("index_select along " << dim << ", index " << (dt == DType::i64 ? "i64" : "i32"));
      const int64_t size = x.sizes()[size_t(dim < 0 ? dim + 3 : dim)];
      // Four picks with a repeat, read through a stride-2 view.
      const Tensor idx = index_tensor(
                             {8}, [&](const std::vector<int64_t>& c) { return (c[0] * 2 + 1) % size; }, dt)
                             .slice(0, 0, 8, 2);
      const Tensor want = amber::index_select(x, dim, idx), y = output_like(want);
      launch_small(&ix::index_select_kernel<float>, static_cast<const float*>(x.data()),
                   static_cast<float*>(const_cast<void*>(y.data())),
                   ix::select_args<float>(view_of(x), view_of(idx), view_of(y), dim), y.numel());
      CHECK(same(y, want));
    }
}

TEST_CASE("cuda emulated: gather equals the CPU's; an index out of range gives zero", "[emulated]") {
  amber::manual_seed(22);
  const Tensor x = reversed_layout(amber::randn({4, 6, 5}));
  for (int64_t dim : {0, 1, 2, -1})
    for (DType dt : {DType::i64, DType::i32}) {
      INFO("gather along " << dim << ", index " << (dt == DType::i64 ? "i64" : "i32"));
      const int64_t d = dim < 0 ? dim + 3 : dim, size = x.sizes()[size_t(d)];
      // An index smaller than x in every dim, 7 long along dim (picks repeat).
      DimVec sizes{3, 4, 2};
      sizes[size_t(d)] = 7;
      const Tensor idx = index_tensor(
          sizes, [&](const std::vector<int64_t>& c) { return (c[0] + 2 * c[1] + 3 * c[2]) % size; }, dt);
      const Tensor want = amber::gather(x, dim, idx), y = output_like(want);
      launch_small(&ix::gather_kernel<float>, ix::gather_args<float>(view_of(x), view_of(idx), view_of(y), dim),
                   y.numel());
      CHECK(same(y, want));
    }
  const Tensor idx = index_tensor(
      {2, 2, 2}, [](const std::vector<int64_t>& c) { return c[2] ? 5 : -1; }, DType::i64);
  const Tensor y = amber::full({2, 2, 2}, double(NAN));
  launch_small(&ix::gather_kernel<float>, ix::gather_args<float>(view_of(x), view_of(idx), view_of(y), 2), y.numel());
  CHECK(same(y, amber::zeros({2, 2, 2})));
}

TEST_CASE("cuda emulated: scatter, scatter.value and scatter_add equal the CPU's", "[emulated]") {
  amber::manual_seed(23);
  const Tensor self = amber::randn({5, 6, 7});
  // src larger than index in every dim, strided; index positions distinct along dim for
  // scatter (2c + other mod an odd size), repeated for scatter_add; sums of whole numbers (exact
  // in any order).
  const Tensor src = reversed_layout(amber::round(amber::randn({5, 7, 7}) * 4.0));
  for (int64_t dim : {0, 2, -1})
    for (DType dt : {DType::i64, DType::i32}) {
      INFO("scatter along " << dim << ", index " << (dt == DType::i64 ? "i64" : "i32"));
      const int64_t d = dim < 0 ? dim + 3 : dim, size = self.sizes()[size_t(d)];
      const DimVec sizes{3, 4, 3};
      const Tensor distinct = index_tensor(
          sizes, [&](const std::vector<int64_t>& c) { return (2 * c[size_t(d)] + c[size_t((d + 1) % 3)]) % size; }, dt);
      const Tensor repeated = index_tensor(
          sizes, [&](const std::vector<int64_t>& c) { return (c[0] + c[1] + c[2]) % 3; }, dt);
      auto run = [&](auto kernel, const Tensor& idx, const Tensor* s, float value) {
        const Tensor y = reversed_layout(self);  // scatter's copy of self, before the kernel
        const amber_tensor_view sv = s ? view_of(*s) : amber_tensor_view{};
        launch_small(kernel, ix::scatter_args<float>(view_of(idx), view_of(y), s ? &sv : nullptr, dim), value,
                     idx.numel());
        return y;
      };
      const Tensor want_src = amber::scatter(self, dim, distinct, src);
      CHECK(same(run(&ix::scatter_kernel<float, ix::ScatterMode::src>, distinct, &src, 0.0f), want_src));
      const Tensor want_value = amber::scatter(self, dim, distinct, 2.5);
      CHECK(same(run(&ix::scatter_kernel<float, ix::ScatterMode::value>, distinct, nullptr, 2.5f), want_value));
      const Tensor whole = amber::round(self), want_add = amber::scatter_add(whole, dim, repeated, src);
      const Tensor y = reversed_layout(whole);
      const amber_tensor_view sv = view_of(src);
      launch_small(&ix::scatter_kernel<float, ix::ScatterMode::add>,
                   ix::scatter_args<float>(view_of(repeated), view_of(y), &sv, dim), 0.0f, repeated.numel());
      CHECK(same(y, want_add));
    }
  // i64 sums wrap (two's complement through the unsigned atomic), as the CPU's: every target
  // gets one or two values of about 4e18 on top of 5e18.
  const Tensor big = index_tensor(
      {4, 3}, [](const std::vector<int64_t>& c) { return int64_t(4e18) + 7 * c[0] + c[1]; }, DType::i64);
  const Tensor base = index_tensor(
      {3, 3}, [](const std::vector<int64_t>& c) { return int64_t(5e18) - 5 * c[0] - c[1]; }, DType::i64);
  const Tensor idx = index_tensor(
      {4, 3}, [](const std::vector<int64_t>& c) { return (c[0] + c[1]) % 3; }, DType::i64);
  const Tensor want = amber::scatter_add(base, 0, idx, big);
  const Tensor y = base.clone();
  const amber_tensor_view bv = view_of(big);
  launch_small(&ix::scatter_kernel<int64_t, ix::ScatterMode::add>,
               ix::scatter_args<int64_t>(view_of(idx), view_of(y), &bv, 0), int64_t(0), idx.numel());
  CHECK(same(y, want));
  // Out of range: no write.
  const Tensor out_of_range = index_tensor(
      {2, 3}, [](const std::vector<int64_t>& c) { return c[1] ? 3 : -1; }, DType::i64);
  const Tensor z = base.clone();
  launch_small(&ix::scatter_kernel<int64_t, ix::ScatterMode::add>,
               ix::scatter_args<int64_t>(view_of(out_of_range), view_of(z), &bv, 0), int64_t(0), int64_t(6));
  CHECK(same(z, base));
}

TEST_CASE("cuda emulated: scatter_reduce's five reductions, with and without self, equal the CPU's", "[emulated]") {
  amber::manual_seed(25);
  // Whole numbers (sums and products exact in any order) and a NaN in src and in self; src
  // larger than the index in every dim and strided; every target hit zero to three times.
  Tensor self = amber::round(amber::randn({5, 6, 7}) * 2.0), src_dense = amber::round(amber::randn({5, 7, 7}) * 2.0);
  self.data_ptr<float>()[17] = NAN;
  src_dense.data_ptr<float>()[9] = NAN;
  const Tensor src = reversed_layout(src_dense);
  const amber_tensor_view sv = view_of(src);
  for (int64_t dim : {0, 2, -1})
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool with_self : {true, false}) {
        INFO("scatter_reduce " << reduce << " along " << dim << (with_self ? "" : " without self"));
        const Tensor idx = index_tensor(
            {3, 4, 3}, [](const std::vector<int64_t>& c) { return (c[0] + c[1] + c[2]) % 3; },
            dim == 2 ? DType::i32 : DType::i64);
        const Tensor want = amber::scatter_reduce(self, dim, idx, src, reduce, with_self);
        const Tensor y = reversed_layout(self);  // scatter_reduce's copy of self, before the kernels
        const auto r = amber::scatter_fold::Reduce(choice("scatter_reduce", "reduce", reduce));
        const ix::Along s = ix::scatter_args<float>(view_of(idx), view_of(y), &sv, dim);
        if (!with_self) launch_small(&ix::scatter_identity_kernel<float>, s, r, idx.numel());
        std::vector<unsigned> count(size_t(y.numel()), 0);  // y's span: a dense permutation
        unsigned* counts = r == amber::scatter_fold::kMean ? count.data() : nullptr;
        launch_small(&ix::scatter_reduce_kernel<float>, s, r, counts, idx.numel());
        if (counts) launch_small(&ix::scatter_mean_kernel<float>, y.data_ptr<float>(), counts, with_self, y.numel());
        CHECK(same(y, want));
      }
  // i64: products wrap (the compare-and-swap on the 64-bit word), means floor.
  const Tensor base = index_tensor(
      {3, 2}, [](const std::vector<int64_t>& c) { return int64_t(3e9) * (c[1] ? 1 : -1) + c[0]; }, DType::i64);
  const Tensor vals = index_tensor(
      {4, 2}, [](const std::vector<int64_t>& c) { return int64_t(5e9) - 3 * c[0] - c[1]; }, DType::i64);
  const Tensor idx = index_tensor(
      {4, 2}, [](const std::vector<int64_t>& c) { return (c[0] + c[1]) % 2; }, DType::i64);
  const amber_tensor_view vv = view_of(vals);
  for (const char* reduce : {"prod", "mean", "amin"}) {
    INFO("i64 scatter_reduce " << reduce);
    const auto r = amber::scatter_fold::Reduce(choice("scatter_reduce", "reduce", reduce));
    const Tensor y = base.clone();
    std::vector<unsigned> count(size_t(y.numel()), 0);
    unsigned* counts = r == amber::scatter_fold::kMean ? count.data() : nullptr;
    launch_small(&ix::scatter_reduce_kernel<int64_t>, ix::scatter_args<int64_t>(view_of(idx), view_of(y), &vv, 0), r,
                 counts, idx.numel());
    if (counts) launch_small(&ix::scatter_mean_kernel<int64_t>, y.data_ptr<int64_t>(), counts, true, y.numel());
    CHECK(same(y, amber::scatter_reduce(base, 0, idx, vals, reduce)));
  }
}

TEST_CASE("cuda emulated: pad, roll, repeat, tril and triu equal the CPU's", "[emulated]") {
  amber::manual_seed(24);
  const Tensor x = reversed_layout(amber::randn({2, 3, 5, 6}));
  const std::vector<int64_t> pads{2, 1, 0, 3};  // last dim 2 before, 1 after; the one before 0, 3
  const amber_attr pad_attr = ints_attr(pads);
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    INFO("pad, " << mode);
    const Tensor want = amber::pad(x, DimVec(pads), mode, 1.5), y = output_like(want);
    const amber_tensor_view yv = view_of(y);
    launch_small(&ix::pad_kernel<float>, static_cast<const float*>(x.data()), static_cast<float*>(yv.data),
                 amber::views::pad_dims(yv, view_of(x), pad_attr), amber::views::PadMode(choice("pad", "mode", mode)),
                 1.5f, y.numel());
    CHECK(same(y, want));
  }
  const std::vector<int64_t> shifts{-2, 7, 1}, dims{3, 1, -1};
  const Tensor rolled = amber::roll(x, DimVec(shifts), DimVec(dims));
  Tensor y = output_like(rolled);
  launch_small(&ix::pad_kernel<float>, static_cast<const float*>(x.data()), static_cast<float*>(view_of(y).data),
               amber::views::roll_dims(view_of(y), view_of(x), ints_attr(shifts), ints_attr(dims)),
               amber::views::kPadCircular, 0.0f, y.numel());
  CHECK(same(y, rolled));
  const Tensor repeated = amber::repeat(x[0], {2, 1, 3, 2});  // a leading new dim
  y = output_like(repeated);
  launch_small(&ix::pad_kernel<float>, static_cast<const float*>(x[0].data()), static_cast<float*>(view_of(y).data),
               amber::views::repeat_dims(view_of(y), view_of(x[0])), amber::views::kPadCircular, 0.0f, y.numel());
  CHECK(same(y, repeated));

  const Tensor m = amber::randn({3, 7, 5}).transpose(1, 2);  // [3, 5, 7], strided matrices
  const Tensor mi = (amber::randn({3, 5, 7}) * 1e6).to(DType::i64);
  for (int64_t diag : {-2, 0, 3}) {
    INFO("diagonal " << diag);
    const Tensor lower = amber::tril(m, diag), upper = amber::triu(m, diag);
    Tensor yl = output_like(lower), yu = output_like(upper);
    launch_small(&ix::triangle_kernel<uint32_t, true>, static_cast<const uint32_t*>(m.data()),
                 static_cast<uint32_t*>(view_of(yl).data), ix::strided_of(view_of(m), view_of(yl)), diag, yl.numel());
    launch_small(&ix::triangle_kernel<uint32_t, false>, static_cast<const uint32_t*>(m.data()),
                 static_cast<uint32_t*>(view_of(yu).data), ix::strided_of(view_of(m), view_of(yu)), diag, yu.numel());
    CHECK(same(yl, lower));
    CHECK(same(yu, upper));
    const Tensor want = amber::triu(mi, diag), yi = output_like(want);
    launch_small(&ix::triangle_kernel<uint64_t, false>, static_cast<const uint64_t*>(mi.data()),
                 static_cast<uint64_t*>(view_of(yi).data), ix::strided_of(view_of(mi), view_of(yi)), diag, yi.numel());
    CHECK(same(yi, want));
  }
}
