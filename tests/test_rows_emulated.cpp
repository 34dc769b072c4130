// The CUDA backend's row-wise kernels (kernels/cuda/row_kernels.cuh) run on the CPU
// (cuda_emulation.h), without a GPU: the reductions, any, all, cumsum and topk (a thread and a
// block a line, every dtype) against Amber's CPU kernels (NaN, ties, both zeros); softmax,
// log_softmax, layer_norm and add_layer_norm (a block or a warp a row) against double precision:
// rows strided, dense, longer than a block; partial warps; grids smaller than the rows.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/row_kernels.cuh"

namespace {

namespace rows = amber::cuda::rows;
using amber::DimVec;
using amber::DType;
using amber::Tensor;
using amber::emulation::same;
using amber::emulation::view_of;

// The dims as reduce.cu's dims_mask gives them (none: all).
uint32_t mask_of(const DimVec& dims, int ndim) {
  uint32_t m = 0;
  for (int64_t d : dims) m |= 1u << (d < 0 ? d + ndim : d);
  return dims.empty() ? (1u << ndim) - 1 : m;
}

// A kernel a row (Kernel, launched as kernel(x, y, rows) on 2 blocks: the grid-stride loop) from x
// into an output of want's sizes and dtype (filled first with NaN, or -7: what it leaves shows).
template <typename Kernel>
Tensor run_rows(Kernel kernel, const Tensor& x, const Tensor& want, const DimVec* dims) {
  const Tensor y = amber::full(want.sizes(), want.dtype() == DType::i64 ? -7.0 : double(NAN), want.dtype());
  const amber_tensor_view xv = view_of(x), yv = view_of(y);
  const rows::Rows r = dims ? rows::rows_of(xv, yv, mask_of(*dims, x.dim()), false) : rows::flat_rows(xv, yv);
  amber::emulation::launch(kernel, dim3(2), dim3(rows::kThreads), static_cast<const float*>(xv.data),
                           static_cast<float*>(yv.data), r);
  return y;
}

amber_tensor_view view(float* data, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  amber_tensor_view v{};
  v.data = data;
  v.dtype = amber::cuda::kF32;
  v.ndim = int32_t(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) v.sizes[d] = sizes[d], v.strides[d] = strides[d];
  return v;
}

std::vector<float> random_values(size_t n, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& e : v) e = u(rng);
  return v;
}

// |got - want| relative to max(1, |want|); NaN where exactly one is NaN counts as 1e30.
double error(double got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) == std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want)) return got == want ? 0 : 1e30;
  return std::fabs(got - want) / std::max(1.0, std::fabs(want));
}

// softmax or log_softmax of x ([a, n, b] in x_strides, along dim 1) into a dense output, on
// `blocks` blocks; the largest error against double precision.
template <bool Log>
double softmax_case(int64_t a, int64_t n, int64_t b, std::vector<int64_t> x_strides, std::vector<float> x,
                    unsigned blocks) {
  std::vector<float> y(size_t(a * n * b), NAN);
  const amber_tensor_view xv = view(x.data(), {a, n, b}, x_strides), yv = view(y.data(), {a, n, b}, {n * b, b, 1});
  const rows::Rows r = rows::rows_of(xv, yv, 1u << 1, true);
  amber::emulation::launch(&rows::softmax_kernel<float, Log>, dim3(blocks), dim3(rows::kThreads),
                           static_cast<const float*>(x.data()), y.data(), r);
  double worst = 0;
  for (int64_t i = 0; i < a; ++i)
    for (int64_t k = 0; k < b; ++k) {
      auto at = [&](int64_t j) { return double(x[size_t(i * x_strides[0] + j * x_strides[1] + k * x_strides[2])]); };
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) mx = std::isnan(at(j)) || at(j) > mx ? at(j) : mx;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(at(j) - mx);
      for (int64_t j = 0; j < n; ++j) {
        const double want = Log ? at(j) - mx - std::log(sum) : std::exp(at(j) - mx) / sum;
        worst = std::max(worst, error(y[size_t((i * n + j) * b + k)], want));
      }
    }
  return worst;
}

struct NormCase {
  int64_t rows, len;  // x is [rows, len], normalised along its last dim
  bool add, weight, bias;
};

// layer_norm (add_layer_norm with c.add) of dense rows through the block-a-row kernel (Warp 0) or
// the warp-a-row one with Warp elements a lane; the largest error against double precision.
template <int Warp>
double norm_case(const NormCase& c, unsigned seed) {
  const double eps = 1e-5;
  std::vector<float> x = random_values(size_t(c.rows * c.len), seed, 3.0f),
                     other = random_values(size_t(c.rows * c.len), seed + 1, 1.0f),
                     w = random_values(size_t(c.len), seed + 2, 2.0f), b = random_values(size_t(c.len), seed + 3, 1.0f);
  for (float& e : x) e += 5.0f;  // a mean far from zero
  std::vector<float> y(x.size(), NAN);
  const std::vector<int64_t> sizes{c.rows, c.len}, strides{c.len, 1};
  const amber_tensor_view xv = view(x.data(), sizes, strides), yv = view(y.data(), sizes, strides),
                          ov = view(other.data(), sizes, strides), wv = view(w.data(), {c.len}, {1});
  const rows::Rows r = rows::rows_of(xv, yv, 1u << 1, true), orow = c.add ? rows::rows_of(ov, yv, 1u << 1, true) : r;
  const rows::Rows wr = rows::param_rows(xv, c.weight || c.bias ? &wv : nullptr, 1);
  REQUIRE(rows::dense_rows(r, false));
  REQUIRE((!(c.weight || c.bias) || rows::dense_rows(wr, false)));
  const float* op = c.add ? other.data() : nullptr;
  const float* wp = c.weight ? w.data() : nullptr;
  const float* bp = c.bias ? b.data() : nullptr;
  auto launch = [&](auto kernel) {
    if constexpr (Warp == 0)
      amber::emulation::launch(kernel, dim3(2), dim3(rows::kThreads), static_cast<const float*>(x.data()), op, y.data(),
                               wp, bp, r, orow, wr, eps);
    else
      amber::emulation::launch(kernel, dim3(unsigned((c.rows + rows::kRowWarps - 1) / rows::kRowWarps)),
                               dim3(32 * rows::kRowWarps), static_cast<const float*>(x.data()), op, y.data(), wp, bp, r,
                               orow, eps);
  };
  if constexpr (Warp == 0) {
    if (c.add)
      launch(&rows::layer_norm_kernel<float, true>);
    else
      launch(&rows::layer_norm_kernel<float, false>);
  } else {
    REQUIRE(c.len <= 32 * Warp);
    if (c.add)
      launch(&rows::layer_norm_rows_kernel<float, true, Warp>);
    else
      launch(&rows::layer_norm_rows_kernel<float, false, Warp>);
  }
  double worst = 0;
  for (int64_t i = 0; i < c.rows; ++i) {
    // The row as the kernels see it: x + other summed in f32 (as add computes it), then in double.
    std::vector<double> v(size_t(c.len));
    for (int64_t j = 0; j < c.len; ++j) {
      const size_t k = size_t(i * c.len + j);
      v[size_t(j)] = double(c.add ? x[k] + other[k] : x[k]);
    }
    double mu = 0, var = 0;
    for (double e : v) mu += e;
    mu /= double(c.len);
    for (double e : v) var += (e - mu) * (e - mu);
    var /= double(c.len);
    for (int64_t j = 0; j < c.len; ++j) {
      double want = (v[size_t(j)] - mu) / std::sqrt(var + eps);
      if (c.weight) want *= w[size_t(j)];
      if (c.bias) want += b[size_t(j)];
      worst = std::max(worst, error(y[size_t(i * c.len + j)], want));
    }
  }
  std::printf("layer_norm %s[%lld, %lld]%s%s, %s: max relative error %.3g\n", c.add ? "(add) " : "",
              static_cast<long long>(c.rows), static_cast<long long>(c.len), c.weight ? ", weight" : "",
              c.bias ? ", bias" : "",
              Warp == 0   ? "a block a row"
              : Warp == 8 ? "a warp a row, 8 a lane"
                          : "a warp a row, 32 a lane",
              worst);
  return worst;
}

}  // namespace

TEST_CASE("cuda emulated: softmax and log_softmax equal double precision on strided and long rows", "[emulated]") {
  // [3, 7, 5] along dim 1 read through a transposed layout (strides 1, 15, 3: rows of stride 15),
  // 15 rows on 4 blocks (the grid-stride loop); one row holding a NaN, one an infinity.
  std::vector<float> x = random_values(105, 7, 4.0f);
  x[3 + 15 * 2] = NAN;       // row (i 0, k 1) at j 2
  x[2 + 15 * 4] = INFINITY;  // row (i 2, k 0) at j 4: that row's max, its softmax NaN as PyTorch's
  CHECK(softmax_case<false>(3, 7, 5, {1, 15, 3}, x, 4) < 1e-5);
  CHECK(softmax_case<true>(3, 7, 5, {1, 15, 3}, x, 4) < 1e-5);
  // Rows longer than a block's threads (601 elements, dense), values up to 80 (exp overflows f32
  // without the max subtracted; the sum of 601 terms in f32 is what the tolerance allows for).
  const std::vector<float> wide = random_values(2 * 601, 11, 80.0f);
  CHECK(softmax_case<false>(2, 601, 1, {601, 1, 1}, wide, 1) < 1e-5);
  CHECK(softmax_case<true>(2, 601, 1, {601, 1, 1}, wide, 1) < 1e-5);
}

TEST_CASE("cuda emulated: layer_norm and add_layer_norm, a block a row and a warp a row", "[emulated]") {
  // (Rows past the last full warp, lanes past the row's end, a row longer than a block.)
  CHECK(norm_case<0>({5, 300, false, true, true}, 1) < 2e-5);
  CHECK(norm_case<0>({3, 17, true, true, false}, 2) < 2e-5);
  CHECK(norm_case<8>({11, 33, false, true, true}, 3) < 2e-5);
  CHECK(norm_case<8>({9, 256, true, false, true}, 4) < 2e-5);
  CHECK(norm_case<8>({3, 5, false, false, false}, 5) < 2e-5);
  CHECK(norm_case<32>({10, 700, true, true, true}, 6) < 2e-5);
  CHECK(norm_case<32>({2, 1024, false, true, false}, 7) < 2e-5);
}

TEST_CASE("cuda emulated: sum, prod, mean, amax, amin, argmax and argmin equal the CPU's", "[emulated]") {
  // (The emulation meets every barrier with a switch to each of 256 fibers: the shapes keep the rows
  // few.)
  amber::manual_seed(9);
  // Long rows, [3, 4, 300] along the last dim (longer than a block's threads), and short strided
  // ones, [3, 7, 5] along the middle dim; each with a NaN, and a maximum twice (the first index
  // wins).
  Tensor a = amber::randn({3, 4, 300}), b = amber::randn({3, 7, 5});
  float* ap = a.data_ptr<float>();
  ap[(1 * 4 + 2) * 300 + 17] = NAN;
  ap[(2 * 4 + 3) * 300 + 5] = ap[(2 * 4 + 3) * 300 + 250] = 9.0f;
  float* bp = b.data_ptr<float>();
  bp[(1 * 7 + 2) * 5 + 3] = NAN;
  bp[(2 * 7 + 1) * 5 + 4] = bp[(2 * 7 + 5) * 5 + 4] = 9.0f;
  using rows::Fold;
  auto check_all = [](const Tensor& x, const DimVec& dims, bool keep) {
    INFO("dims of " << dims.size() << " (first " << (dims.empty() ? -1 : dims[0]) << "), keepdim " << keep);
    const Tensor near_one = x * 0.05 + 1.0;  // products of up to 3600 terms stay finite
    CHECK(same(run_rows(&rows::fold_kernel<float, Fold::sum>, x, amber::sum(x, dims, keep), &dims),
               amber::sum(x, dims, keep)));
    CHECK(same(run_rows(&rows::fold_kernel<float, Fold::mean>, x, amber::mean(x, dims, keep), &dims),
               amber::mean(x, dims, keep)));
    CHECK(same(run_rows(&rows::fold_kernel<float, Fold::prod>, near_one, amber::prod(near_one, dims, keep), &dims),
               amber::prod(near_one, dims, keep)));
    CHECK(same(run_rows(&rows::extremum_kernel<float, true, false>, x, amber::amax(x, dims, keep), &dims),
               amber::amax(x, dims, keep)));
    CHECK(same(run_rows(&rows::extremum_kernel<float, false, false>, x, amber::amin(x, dims, keep), &dims),
               amber::amin(x, dims, keep)));
  };
  for (bool keep : {false, true}) {
    check_all(a, {2}, keep);
    check_all(a, {0, 2}, keep);
    check_all(a, {}, keep);
    check_all(b, {1}, keep);
  }
  auto check_arg = [](const Tensor& x, int64_t dim, bool keep) {
    INFO("argmax/argmin along " << dim << ", keepdim " << keep);
    const DimVec dims{dim};
    CHECK(same(run_rows(&rows::extremum_kernel<float, true, true>, x, amber::argmax(x, dim, keep), &dims),
               amber::argmax(x, dim, keep)));
    CHECK(same(run_rows(&rows::extremum_kernel<float, false, true>, x, amber::argmin(x, dim, keep), &dims),
               amber::argmin(x, dim, keep)));
  };
  for (bool keep : {false, true}) {
    check_arg(a, 2, keep);
    check_arg(b, 0, keep);
    check_arg(b, 1, keep);
  }
  // Over everything: the NaN's flat index; a finite tensor's minimum.
  CHECK(same(run_rows(&rows::extremum_kernel<float, true, true>, a, amber::argmax(a), nullptr), amber::argmax(a)));
  const Tensor finite = amber::randn({4, 70});
  CHECK(same(run_rows(&rows::extremum_kernel<float, false, true>, finite, amber::argmin(finite), nullptr),
             amber::argmin(finite)));
  // i64 sums of values about 1e18 wrap (two's complement, no overflow), as the CPU's: along the
  // last dim (300 terms) and over everything (the CPU's vectorised runs).
  const Tensor big = (amber::randn({3, 4, 300}) * 1e18).to(DType::i64);
  for (const DimVec& dims : {DimVec{2}, DimVec{}}) {
    INFO("i64 sum over " << dims.size() << " dims");
    const Tensor want = amber::sum(big, dims), y = amber::full(want.sizes(), -7.0, DType::i64);
    const amber_tensor_view xv = view_of(big), yv = view_of(y);
    amber::emulation::launch(&rows::fold_kernel<int64_t, Fold::sum>, dim3(2), dim3(rows::kThreads),
                             static_cast<const int64_t*>(xv.data), static_cast<int64_t*>(yv.data),
                             rows::rows_of(xv, yv, mask_of(dims, 3), false));
    CHECK(same(y, want));
  }
}

TEST_CASE("cuda emulated: topk and cumsum, a thread a line, equal the CPU's", "[emulated]") {
  amber::manual_seed(11);
  // [4, 37, 3] along the middle dim (strided lines), with ties and a NaN; and along the last.
  Tensor x = amber::randn({4, 37, 3});
  float* xp = x.data_ptr<float>();
  xp[(1 * 37 + 5) * 3 + 2] = xp[(1 * 37 + 30) * 3 + 2] = 7.0f;  // a tie for the first place
  xp[(2 * 37 + 9) * 3 + 0] = NAN;
  for (int64_t dim : {1, 2, -1})
    for (int64_t k : {int64_t(1), int64_t(3)})
      for (bool largest : {true, false}) {
        INFO("topk along " << dim << ", k " << k << ", largest " << largest);
        const auto [want_v, want_i] = amber::topk(x, k, dim, largest);
        const Tensor v = amber::full(want_v.sizes(), double(NAN)), ix = amber::full(want_i.sizes(), -7.0, DType::i64);
        const amber_tensor_view xv = view_of(x), vv = view_of(v), iv = view_of(ix);
        const int d = int(dim < 0 ? dim + x.dim() : dim);
        const int64_t n = x.sizes()[size_t(d)], lines = v.numel() / k;
        amber::emulation::launch(&rows::topk_kernel<float>, dim3(2), dim3(64), static_cast<const float*>(xv.data),
                                 static_cast<float*>(vv.data), static_cast<int64_t*>(iv.data),
                                 amber::scan::lines_along(vv, xv, d), amber::scan::lines_along(iv, xv, d), d, n, k,
                                 largest, lines);
        CHECK(same(v, want_v));
        CHECK(same(ix, want_i));
      }
  // cumsum along each dim, of an f32 and of an i64 tensor (wrapping as the CPU's), into a
  // transposed output (strided writes).
  const Tensor xi = (amber::randn({4, 37, 3}) * 1e17).to(DType::i64);
  for (const Tensor& t : {x, xi})
    for (int d = 0; d < 3; ++d) {
      INFO("cumsum along " << d << " of " << (t.dtype() == DType::i64 ? "i64" : "f32"));
      const Tensor want = amber::cumsum(t, d);
      const double fill = t.dtype() == DType::i64 ? -7.0 : double(NAN);
      const Tensor y = amber::full({3, 37, 4}, fill, t.dtype()).permute({2, 1, 0});
      const amber_tensor_view tv = view_of(t), yv = view_of(y);
      const int64_t n = t.sizes()[size_t(d)], lines = t.numel() / n;
      if (t.dtype() == DType::i64)
        amber::emulation::launch(&rows::cumsum_kernel<int64_t>, dim3(2), dim3(64), static_cast<const int64_t*>(tv.data),
                                 static_cast<int64_t*>(yv.data), amber::scan::lines_along(yv, tv, d), tv.strides[d],
                                 yv.strides[d], n, lines);
      else
        amber::emulation::launch(&rows::cumsum_kernel<float>, dim3(2), dim3(64), static_cast<const float*>(tv.data),
                                 static_cast<float*>(yv.data), amber::scan::lines_along(yv, tv, d), tv.strides[d],
                                 yv.strides[d], n, lines);
      CHECK(same(y, want));
    }
}

// cumsum_block_kernel (2 blocks, 3 lines) on the 2-D t along d into a fresh output (transposed
// in memory with transpose_out): the result, to compare with the CPU's.
template <typename T>
Tensor cumsum_by_blocks(const Tensor& t, int d, bool transpose_out = false) {
  const DimVec sizes = t.sizes();
  const Tensor y =
      transpose_out ? amber::full({sizes[1], sizes[0]}, -7.0, t.dtype()).t() : amber::full(sizes, -7.0, t.dtype());
  const amber_tensor_view tv = view_of(t), yv = view_of(y);
  const int64_t n = t.sizes()[size_t(d)], lines = t.numel() / n;
  amber::emulation::launch(&rows::cumsum_block_kernel<T>, dim3(2), dim3(rows::kThreads), static_cast<const T*>(tv.data),
                           static_cast<T*>(yv.data), amber::scan::lines_along(yv, tv, d), tv.strides[d], yv.strides[d],
                           n, lines);
  return y;
}

TEST_CASE("cuda emulated: cumsum a block a line equals the CPU's", "[emulated]") {
  // Lines of 5000 (two whole tiles of 2048 and a part), dense and strided (transposed), into dense
  // and transposed outputs: f32 (sums of f32 in double, exact here: the same as the CPU's order
  // gives), i64 wrapping as the CPU's, f16 as the CPU's f32 result rounded; f64, whose double
  // sums are not exact, within a few units in the last place.
  amber::manual_seed(15);
  const Tensor x = amber::randn({3, 5000});
  CHECK(same(cumsum_by_blocks<float>(x, 1), amber::cumsum(x, 1)));
  CHECK(same(cumsum_by_blocks<float>(x.t(), 0), amber::cumsum(x.t(), 0)));
  CHECK(same(cumsum_by_blocks<float>(x, 1, true), amber::cumsum(x, 1)));
  const Tensor xi = (amber::randn({3, 5000}) * 1e17).to(DType::i64);
  CHECK(same(cumsum_by_blocks<int64_t>(xi, 1), amber::cumsum(xi, 1)));
  const Tensor xh = x.to(DType::f16);
  CHECK(same(cumsum_by_blocks<__half>(xh, 1), amber::cumsum(xh.to(DType::f32), 1).to(DType::f16)));
  const Tensor xd = amber::randn({3, 5000}, DType::f64);
  const Tensor got = cumsum_by_blocks<double>(xd, 1), want = amber::cumsum(xd, 1);
  CHECK(amber::amax(amber::abs(got - want)).item<double>() <= 1e-12 * amber::amax(amber::abs(want)).item<double>());
}

// topk_block_kernel on x along dim (2 blocks: lines outnumber them) against amber::topk; with
// `whole`, topk_sort_kernel instead (for k above kTopkBlockMax: a block a line sorting it whole, a
// stable radix sort in its scratch); with `parts`, each line split into that many parts (or fewer:
// none empty) for topk_split_kernel (3 blocks) and merged by topk_merge_kernel (2 blocks).
template <typename T>
void check_topk_block(const Tensor& x, int64_t dim, int64_t k, bool largest, bool whole = false, int64_t parts = 0) {
  INFO("topk a block a line" << (whole ? ", sorted whole: " : ": ") << amber::dtype_name(x.dtype()) << " of "
                             << x.numel() << " elements along " << dim << ", k " << k << ", largest " << largest
                             << ", parts " << parts);
  const auto [want_v, want_i] = amber::topk(x, k, dim, largest);
  const Tensor v = amber::full(want_v.sizes(), -7.0, x.dtype()), ix = amber::full(want_i.sizes(), -7.0, DType::i64);
  const amber_tensor_view xv = view_of(x), vv = view_of(v), iv = view_of(ix);
  const int d = int(dim < 0 ? dim + x.dim() : dim);
  const int64_t n = x.sizes()[size_t(d)], lines = v.numel() / k;
  const auto xp = static_cast<const T*>(xv.data);
  const auto vp = static_cast<T*>(vv.data);
  const auto ip = static_cast<int64_t*>(iv.data);
  const amber::scan::Lines wv = amber::scan::lines_along(vv, xv, d), wi = amber::scan::lines_along(iv, xv, d);
  using U = rows::topk_rank_t<amber::cuda::compute_t<T>>;
  if (whole) {
    std::vector<double> scratch(2 * rows::topk_sort_block_bytes<U>(n) / sizeof(double) + 1);
    amber::emulation::launch(&rows::topk_sort_kernel<T>, dim3(2), dim3(rows::kThreads), xp, vp, ip, wv, wi, d, n, k,
                             largest, lines, static_cast<void*>(scratch.data()));
  } else if (parts > 0) {
    const int64_t chunk = (n + parts - 1) / parts, used = (n + chunk - 1) / chunk;
    REQUIRE(chunk >= k);  // (reduce.cu's plan makes parts of 4k or more)
    std::vector<double> scratch(rows::topk_split_bytes<U>(lines, used, k) / sizeof(double) + 1, -7.0);
    amber::emulation::launch(&rows::topk_split_kernel<T>, dim3(3), dim3(rows::kThreads), xp, wv, d, n, k, largest,
                             lines, used, chunk, static_cast<void*>(scratch.data()));
    amber::emulation::launch(&rows::topk_merge_kernel<T>, dim3(2), dim3(rows::kThreads), xp, vp, ip, wv, wi, d, k,
                             lines, used, static_cast<const void*>(scratch.data()));
  } else {
    amber::emulation::launch(&rows::topk_block_kernel<T>, dim3(2), dim3(rows::kThreads), xp, vp, ip, wv, wi, d, n, k,
                             largest, lines);
  }
  CHECK(same(v, want_v));
  CHECK(same(ix, want_i));
}
template <typename T>
void check_topk_sort(const Tensor& x, int64_t dim, int64_t k, bool largest) {
  check_topk_block<T>(x, dim, k, largest, true);
}
template <typename T>
void check_topk_split(const Tensor& x, int64_t dim, int64_t k, bool largest, int64_t parts) {
  check_topk_block<T>(x, dim, k, largest, false, parts);
}

// Multiples of 0.5 in [-4, 4] (ties everywhere, zeros of both signs: -0 and +0 tie, by index),
// NaNs at a few places: 3 lines of 1000.
Tensor ties_and_nans() {
  Tensor x = amber::round(amber::randn({3, 1000}) * 3.0) * 0.5;
  float* xp = x.data_ptr<float>();
  xp[17] = -0.0f;
  xp[1000 + 999] = NAN;
  xp[2000 + 0] = NAN;
  xp[2000 + 500] = NAN;
  return x;
}

TEST_CASE("cuda emulated: topk a block a line (radix select, bitonic sort) equals the CPU's", "[emulated]") {
  // ties_and_nans along the last dim and, transposed, strided. k from 1 to the whole line (a
  // sort), each through both orders.
  amber::manual_seed(12);
  const Tensor x = ties_and_nans();
  for (int64_t k : {int64_t(1), int64_t(7), int64_t(300), int64_t(1000)})
    for (bool largest : {true, false}) {
      check_topk_block<float>(x, -1, k, largest);
      check_topk_block<float>(x.t(), 0, k, largest);
    }
  // Distinct values, the largest k (2048) on lines longer than it; 64-bit ranks (f64, i64 with
  // ties and both signs), narrow integers widened, 16-bit floats compared widened; a line just
  // over the threshold (33).
  const Tensor wide = amber::randn({2, 2500});
  check_topk_block<float>(wide, 1, 2048, true);
  check_topk_block<double>(amber::randn({3, 777}, DType::f64), 1, 777, false);
  const Tensor big = (amber::round(amber::randn({4, 301}) * 4.0) * 1e15).to(DType::i64);
  check_topk_block<int64_t>(big, 1, 40, true);
  check_topk_block<int64_t>(big, 1, 301, false);
  const Tensor small = amber::round(amber::randn({5, 257}) * 40.0);
  check_topk_block<int8_t>(small.to(DType::i8), 1, 100, true);
  check_topk_block<uint8_t>(amber::abs(small).to(DType::u8), 1, 9, false);
  check_topk_block<int32_t>((small * 1e6).to(DType::i32), 1, 257, true);
  check_topk_block<int16_t>((small * 100).to(DType::i16), 0, 3, false);
  check_topk_block<__half>(x.to(DType::f16), 1, 50, true);
  check_topk_block<__nv_bfloat16>(x.to(DType::bf16), 1, 50, false);
  check_topk_block<float>(amber::randn({6, 33}), 1, 33, true);
}

TEST_CASE("cuda emulated: topk sorting lines whole (stable radix sort) equals the CPU's", "[emulated]") {
  // ties_and_nans, k from 1 to the whole line, both orders, along the last dim and transposed
  // (strided); then lines longer than a tile and kTopkBlockMax, 64-bit ranks, narrow integers and
  // 16-bit floats widened.
  amber::manual_seed(13);
  const Tensor x = ties_and_nans();
  for (int64_t k : {int64_t(1), int64_t(300), int64_t(1000)})
    for (bool largest : {true, false}) {
      check_topk_sort<float>(x, -1, k, largest);
      check_topk_sort<float>(x.t(), 0, k, largest);
    }
  check_topk_sort<float>(amber::round(amber::randn({3, 4100}) * 50.0), 1, 3000, true);
  check_topk_sort<double>(amber::randn({3, 777}, DType::f64), 1, 777, false);
  const Tensor big = (amber::round(amber::randn({4, 301}) * 4.0) * 1e15).to(DType::i64);
  check_topk_sort<int64_t>(big, 1, 301, true);
  const Tensor small = amber::round(amber::randn({5, 257}) * 40.0);
  check_topk_sort<int8_t>(small.to(DType::i8), 1, 257, false);
  check_topk_sort<uint8_t>(amber::abs(small).to(DType::u8), 1, 100, true);
  check_topk_sort<int32_t>((small * 1e6).to(DType::i32), 0, 5, false);
  check_topk_sort<__half>(x.to(DType::f16), 1, 1000, true);
  check_topk_sort<__nv_bfloat16>(x.to(DType::bf16), 1, 1000, false);
}

TEST_CASE("cuda emulated: topk with each line split into parts, then merged, equals the CPU's", "[emulated]") {
  // ties_and_nans (ties across parts, taken by index), k from 1 to a part's length, 2 to 4 parts,
  // both orders, along the last dim and transposed; a last part shorter than k (its kept ranks
  // padded) on lines of 1000 in 3 parts and of 1001 in 4; a line of NaNs with 100 numbers, whose
  // smallest 333 take 233 NaNs, ranked 0 as the pads are (the merge must take the real ones); then
  // 64-bit ranks, narrow integers and 16-bit floats widened.
  amber::manual_seed(14);
  const Tensor x = ties_and_nans();
  for (int64_t k : {int64_t(1), int64_t(7), int64_t(125), int64_t(250)})
    for (int64_t parts : {int64_t(2), int64_t(3), int64_t(4)})
      for (bool largest : {true, false}) {
        check_topk_split<float>(x, -1, k, largest, parts);
        check_topk_split<float>(x.t(), 0, k, largest, parts);
      }
  check_topk_split<float>(x, 1, 333, true, 3);
  const Tensor odd = amber::round(amber::randn({2, 1001}) * 3.0);
  check_topk_split<float>(odd, 1, 250, false, 4);
  const Tensor nans =
      amber::cat({amber::full({1, 400}, double(NAN)), amber::randn({1, 100}), amber::full({1, 500}, double(NAN))}, 1);
  check_topk_split<float>(nans, 1, 333, false, 3);
  check_topk_split<float>(nans, 1, 333, true, 3);
  const Tensor wide = amber::round(amber::randn({3, 4000}) * 1e3);
  check_topk_split<double>(wide.to(DType::f64), 1, 500, true, 8);
  check_topk_split<int64_t>((wide * 1e12).to(DType::i64), 1, 64, false, 5);
  check_topk_split<int8_t>(amber::clamp(wide * 0.1, -128, 127).to(DType::i8), 1, 100, true, 4);
  check_topk_split<__half>(x.to(DType::f16), 1, 50, true, 4);
  check_topk_split<__nv_bfloat16>(x.to(DType::bf16), 1, 50, false, 2);
}

TEST_CASE("cuda emulated: any and all, a block's vote, equal the CPU's", "[emulated]") {
  // Rows of zeros with a few deciding elements: one at a row's last element (the last thread's
  // second pass), a NaN (true), one in the first thread's first element; and the same rows
  // inverted (ones with zeros there) for all. [3, 4, 300] along the last dim (longer than a block)
  // and the middle dims; [3, 7, 5] along the middle (strided rows).
  Tensor a = amber::zeros({3, 4, 300}), b = amber::zeros({3, 7, 5});
  float* ap = a.data_ptr<float>();
  ap[(0 * 4 + 1) * 300 + 299] = 2.0f;
  ap[(1 * 4 + 0) * 300 + 0] = NAN;
  ap[(2 * 4 + 3) * 300 + 128] = -1.0f;
  float* bp = b.data_ptr<float>();
  bp[(1 * 7 + 6) * 5 + 4] = 3.0f;
  bp[(2 * 7 + 0) * 5 + 0] = NAN;
  auto inverted = [](const Tensor& x) {
    Tensor y = amber::ones(x.sizes());
    const float* xp = x.const_data_ptr<float>();
    float* yp = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) yp[i] = xp[i] != 0.0f ? 0.0f : 1.0f;
    return y;
  };
  // The kernel's output filled first with the opposite of each expected result: a row it leaves
  // unwritten shows.
  auto check = [](const Tensor& x, const DimVec& dims, bool keep) {
    INFO("dims of " << dims.size() << " (first " << (dims.empty() ? -1 : dims[0]) << "), keepdim " << keep);
    const amber_tensor_view xv = view_of(x);
    for (bool any : {true, false}) {
      const Tensor want = any ? amber::any(x, dims, keep) : amber::all(x, dims, keep);
      const Tensor y = want.clone();
      bool* yp = y.data_ptr<bool>();
      for (int64_t i = 0; i < y.numel(); ++i) yp[i] = !yp[i];
      const amber_tensor_view yv = view_of(y);
      const rows::Rows r = rows::rows_of(xv, yv, mask_of(dims, x.dim()), false);
      amber::emulation::launch(any ? &rows::any_all_kernel<float, true> : &rows::any_all_kernel<float, false>, dim3(2),
                               dim3(rows::kThreads), static_cast<const float*>(xv.data), yp, r);
      CHECK(same(y, want));
    }
  };
  for (bool keep : {false, true}) {
    for (const Tensor& x : {a, inverted(a)}) {
      check(x, {2}, keep);
      check(x, {0, 1}, keep);
      check(x, {}, keep);
    }
    for (const Tensor& x : {b, inverted(b)}) check(x, {1}, keep);
  }
}
