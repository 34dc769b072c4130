// Kernel benchmarks for [cpu-ops]: eager per-op overhead, sgemm and ResNet-18's
// convolutions in GFLOP/s next to this machine's fp32 peak, measured in the same run by an
// FMA loop; max pooling, image resizing, topk and common eager ops in time. Prints numbers;
// asserts nothing.
// Usage: bench_kernels [threads] (default 2).

#include <immintrin.h>
#include <omp.h>

#include <amber/amber.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench_util.h"

using namespace amber;
using Clock = std::chrono::steady_clock;

namespace {

double time_median(const std::function<void()>& f, int reps, int rounds = 5) {
  return bench::median_seconds(f, reps, rounds);
}

// Peak fp32 FLOP/s of `threads` threads running independent FMA chains.
__attribute__((target("avx512f"))) double fma_loop_512(int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (int64_t k = 0; k < iters; ++k)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  float sink = 0;
  float tmp[16];
  for (int i = 0; i < 12; ++i) {  // (_mm512_reduce_add_ps trips GCC 12's -Wuninitialized)
    _mm512_storeu_ps(tmp, acc[i]);
    for (float v : tmp) sink += v;
  }
  return double(sink);
}
__attribute__((target("avx2,fma"))) double fma_loop_256(int64_t iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (int64_t k = 0; k < iters; ++k)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  float sink = 0;
  float tmp[8];
  for (int i = 0; i < 12; ++i) {
    _mm256_storeu_ps(tmp, acc[i]);
    for (float v : tmp) sink += v;
  }
  return double(sink);
}

double peak_gflops(int threads, bool avx512) {
  const int64_t iters = 20'000'000;
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    volatile double sink = 0;
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
    { sink = sink + (avx512 ? fma_loop_512(iters) : fma_loop_256(iters)); }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, double(threads) * iters * 12 * (avx512 ? 16 : 8) * 2 / s / 1e9);
  }
  return best;
}

// A read-only copy of t, as load_state() gives (lets conv2d cache reordered weights).
Tensor read_only(const Tensor& t) {
  auto owner = std::make_shared<Tensor>(t.contiguous());
  return Tensor::make(Storage::wrap(const_cast<void*>(owner->data()), owner->nbytes(), Device::cpu(), owner, true),
                      t.sizes(), contiguous_strides(t.sizes()), 0, t.dtype());
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  set_num_threads(threads);
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f");
  const double peak256 = peak_gflops(threads, false);
  const double peak512 = has512 ? peak_gflops(threads, true) : 0;
  const double peak = std::max(peak256, peak512);
  std::printf("machine peak fp32 with %d threads (FMA loop): AVX2 %.0f GFLOP/s", threads, peak256);
  if (has512) std::printf(", AVX-512 %.0f GFLOP/s", peak512);
  std::printf(" -> peak %.0f GFLOP/s\n\n", peak);

  // Eager per-op overhead: add on 5-element tensors, the whole dispatch path.
  {
    Tensor a = ones({5}), b = ones({5});
    const double s = time_median([&] { (void)add(a, b); }, 200000);
    Tensor x = ones({5});
    const double s10 = time_median(
        [&] {
          Tensor y = x;
          for (int i = 0; i < 10; ++i) y = y * y;
        },
        20000);
    std::printf("eager per-op overhead: add on 5 elements %.3f us/op (target <= 0.4; libtorch ATen ~0.8)\n", s * 1e6);
    std::printf("eager ten-mul sample (x = x * x, 10 times, 5 elements): %.3f us/call\n\n", s10 * 1e6);
  }

  // sgemm 1024^3 through the mm op.
  {
    manual_seed(0);
    Tensor a = randn({1024, 1024}), b = randn({1024, 1024});
    const double s = time_median([&] { (void)mm(a, b); }, 5);
    const double gf = 2.0 * 1024 * 1024 * 1024 / s / 1e9;
    std::printf("sgemm 1024x1024x1024 (mm): %.2f ms, %.0f GFLOP/s = %.0f%% of peak (target >= 60%%)\n\n", s * 1e3, gf,
                100 * gf / peak);
  }

  // ResNet-18's convolutions at batch 1 (channels-last activations, read-only weights).
  struct Conv {
    int64_t c, h, oc, k, stride;
  } convs[] = {{64, 56, 64, 3, 1},   {64, 56, 128, 3, 2},  {128, 28, 128, 3, 1}, {128, 28, 256, 3, 2},
               {256, 14, 256, 3, 1}, {256, 14, 512, 3, 2}, {512, 7, 512, 3, 1},  {3, 224, 64, 7, 2}};
  std::printf("%-28s %10s %10s %8s\n", "conv2d (batch 1, NHWC)", "ms", "GFLOP/s", "% peak");
  double flops3x3 = 0, s3x3 = 0;
  for (const Conv& c : convs) {
    manual_seed(1);
    Tensor x = conv2d(randn({1, c.c, c.h, c.h}), read_only(ones({c.c, c.c, 1, 1})));  // channels-last input
    Tensor w = read_only(randn({c.oc, c.c, c.k, c.k}));
    Tensor bias = read_only(randn({c.oc}));
    const int64_t pad = c.k / 2;
    const int64_t oh = (c.h + 2 * pad - c.k) / c.stride + 1;
    const double flops = 2.0 * c.oc * oh * oh * c.c * c.k * c.k;
    const double s = time_median([&] { (void)conv2d(x, w, bias, {c.stride}, {pad}); }, std::max(3, int(2e8 / flops)));
    std::printf("%3lldx%3lld c%-3lld -> %-3lld k%lld s%lld     %10.3f %10.0f %7.0f%%\n", (long long)c.h, (long long)c.h,
                (long long)c.c, (long long)c.oc, (long long)c.k, (long long)c.stride, s * 1e3, flops / s / 1e9,
                100 * flops / s / 1e9 / peak);
    if (c.k == 3) {
      flops3x3 += flops;
      s3x3 += s;
    }
  }
  std::printf("all 3x3 convolutions above: %.0f GFLOP/s = %.0f%% of peak (target >= 60%%)\n", flops3x3 / s3x3 / 1e9,
              100 * flops3x3 / s3x3 / 1e9 / peak);

  // ResNet-18's max pool (3x3, stride 2, padding 1) of its first convolution's output, in f32
  // and in uint8 (an int8 model's activations), against a copy of the same bytes.
  std::printf("\n%-36s %10s %10s\n", "max_pool2d 3x3 s2 p1 (batch 1, NHWC)", "us", "GB/s");
  manual_seed(2);
  const Tensor act = conv2d(randn({1, 3, 224, 224}), read_only(randn({64, 3, 7, 7})), {}, {2}, {3});
  for (DType t : {DType::f32, DType::u8}) {
    const Tensor x = t == DType::f32 ? act : clamp(act.abs() * 40.0, Scalar(0.0), Scalar(255.0)).to(t);
    const double s = time_median([&] { (void)max_pool2d(x, {3}, {2}, {1}); }, 200);
    const double bytes = double(x.nbytes() + x.nbytes() / 4);
    const double c = time_median([&] { (void)relu(x); }, 200);
    std::printf("64x112x112 %-3s (strides %s) %10.1f %10.1f   (relu of the input: %.1f us)\n", dtype_name(t).data(),
                str(x.strides()).c_str(), s * 1e6, bytes / s / 1e9, c * 1e6);
  }

  // Resizing 3-channel f32 images (batch 1, NCHW): torchvision's antialiased downscale of a
  // 1024 x 1024 picture to 224 x 224, and 2x upsampling of a 224 x 224 one.
  std::printf("\n%-44s %10s\n", "interpolate (batch 1, 3 channels, f32)", "ms");
  manual_seed(3);
  const Tensor picture = randn({1, 3, 1024, 1024}), crop = randn({1, 3, 224, 224});
  const struct {
    const char* what;
    const Tensor& x;
    InterpolateOptions options;
  } resizes[] = {
      {"1024 -> 224 bilinear, antialias", picture, {.size = {224, 224}, .mode = "bilinear", .antialias = true}},
      {"1024 -> 224 bicubic, antialias", picture, {.size = {224, 224}, .mode = "bicubic", .antialias = true}},
      {"1024 -> 224 bilinear", picture, {.size = {224, 224}, .mode = "bilinear"}},
      {"224 -> 448 bilinear, antialias", crop, {.size = {448, 448}, .mode = "bilinear", .antialias = true}},
      {"224 -> 448 bilinear", crop, {.size = {448, 448}, .mode = "bilinear"}},
      {"224 -> 448 nearest", crop, {.size = {448, 448}}},
  };
  for (const auto& r : resizes)
    std::printf("%-44s %10.3f\n", r.what, time_median([&] { (void)interpolate(r.x, r.options); }, 20) * 1e3);

  // topk of logits (8 lines of a 32000-word vocabulary, f32): a sampler's top 50, and its sort of
  // the whole line (k = n) before a top-p cut.
  std::printf("\n%-44s %10s\n", "topk (8 x 32000 f32, along the last dim)", "ms");
  const Tensor logits = randn({8, 32000});
  for (int64_t k : {int64_t(50), int64_t(32000)})
    std::printf("k = %-40lld %10.3f\n", (long long)k, time_median([&] { (void)topk(logits, k); }, 20) * 1e3);

  // Common eager ops on mid-sized f32 tensors; bench/torch_ops.py times PyTorch's on the same
  // shapes, in the same order.
  std::printf("\n%-44s %10s\n", "eager ops (f32)", "ms");
  const Tensor a = randn({64, 256, 256}), b = randn({64, 256, 256}), rows = randn({4096, 1024});
  const Tensor wide = randn({8192, 512}), gamma = randn({512}), beta = randn({512}), lines = randn({64, 16384});
  const Tensor table = randn({50000, 256}), picks = (rand({4096}) * 49999.0).to(DType::i64);
  const Tensor across = (rand({4096, 64}) * 1023.0).to(DType::i64), square = randn({2048, 2048});
  const Tensor maps = randn({32, 256, 28, 28}), planes = randn({8, 64, 112, 112}), mask = gt(a, 0.0);
  const Tensor feat = randn({32, 512, 7, 7}), rm = randn({64}), rv = rand({64}) + 0.5, gw = randn({64}),
               gb = randn({64}), half = randn({8, 64, 56, 56}), gamma256 = randn({256}), small = randn({8, 64, 28, 28}),
               tw = randn({64, 32, 4, 4}), rows64 = randn({4096, 64}), q = randn({64, 128, 64}),
               k = randn({64, 64, 128});
  const std::vector<Tensor> parts = {randn({1024, 1024}), randn({1024, 1024}), randn({1024, 1024}),
                                     randn({1024, 1024})};
  const struct {
    const char* what;
    std::function<void()> f;
  } ops[] = {
      {"add [64, 256, 256]", [&] { (void)add(a, b); }},
      {"gelu [64, 256, 256]", [&] { (void)gelu(a); }},
      {"gelu tanh [64, 256, 256]", [&] { (void)gelu(a, "tanh"); }},
      {"where [64, 256, 256]", [&] { (void)where(mask, a, b); }},
      {"softmax [8192, 512] last dim", [&] { (void)softmax(wide, -1); }},
      {"layer_norm [8192, 512]", [&] { (void)layer_norm(wide, {512}, gamma, beta); }},
      {"sum [4096, 1024] last dim", [&] { (void)sum(rows, {-1}); }},
      {"sum [4096, 1024] first dim", [&] { (void)sum(rows, DimVec{0}); }},
      {"mean [32, 256, 28, 28] over H, W",
       [&] {
         (void)mean(maps, {2, 3});
       }},
      {"amax [4096, 1024] last dim", [&] { (void)amax(rows, {-1}); }},
      {"argmax [4096, 1024] last dim", [&] { (void)argmax(rows, -1); }},
      {"cumsum [64, 16384] last dim", [&] { (void)cumsum(lines, 1); }},
      {"index_select 4096 rows of [50000, 256]", [&] { (void)index_select(table, 0, picks); }},
      {"embedding 4096 rows of [50000, 256]", [&] { (void)embedding(table, picks); }},
      {"gather [4096, 64] of [4096, 1024]", [&] { (void)gather(rows, 1, across); }},
      {"cat 4 x [1024, 1024] along dim 1", [&] { (void)cat(parts, 1); }},
      {"[2048, 2048] transposed, contiguous", [&] { (void)square.transpose(0, 1).contiguous(); }},
      {"max_pool2d 3x3 s2 p1 [8, 64, 112, 112]",
       [&] {
         (void)max_pool2d(planes, {3, 3}, {2, 2}, {1, 1});
       }},
      {"avg_pool2d 3x3 s2 p1 [8, 64, 112, 112]",
       [&] {
         (void)avg_pool2d(planes, {3, 3}, {2, 2}, {1, 1});
       }},
      {"avg_pool2d 2x2 [8, 64, 112, 112]",
       [&] {
         (void)avg_pool2d(planes, {2, 2});
       }},
      {"max_pool2d_with_indices 2x2 [8, 64, 112, 112]",
       [&] {
         (void)max_pool2d_with_indices(planes, {2, 2});
       }},
      {"adaptive_avg_pool2d 1 [32, 512, 7, 7]", [&] { (void)adaptive_avg_pool2d(feat, {1}); }},
      {"batch_norm [8, 64, 112, 112]", [&] { (void)batch_norm(planes, rm, rv, gw, gb); }},
      {"softmax [64, 256, 256] dim 1", [&] { (void)softmax(a, 1); }},
      {"log_softmax [8192, 512] last dim", [&] { (void)log_softmax(wide, -1); }},
      {"upsample_nearest2d x2 [8, 64, 56, 56]",
       [&] {
         (void)upsample_nearest2d(half, {112, 112});
       }},
      {"pad 1 [8, 64, 112, 112]",
       [&] {
         (void)pad(planes, {1, 1, 1, 1});
       }},
      {"flip last dim [64, 256, 256]", [&] { (void)flip(a, {-1}); }},
      {"roll 7 last dim [64, 256, 256]", [&] { (void)roll(a, {7}, {-1}); }},
      {"repeat [1, 4, 1] of [64, 256, 256]",
       [&] {
         (void)repeat(a, {1, 4, 1});
       }},
      {"tril [2048, 2048]", [&] { (void)tril(square); }},
      {"to f16 [64, 256, 256]", [&] { (void)a.to(DType::f16); }},
      {"mul by a row [64, 256, 256] x [256]", [&] { (void)mul(a, gamma256); }},
      {"sigmoid [64, 256, 256]", [&] { (void)sigmoid(a); }},
      {"prod [4096, 1024] last dim", [&] { (void)prod(rows, {-1}); }},
      {"conv_transpose2d 64->32 k4 s2 [8, 64, 28, 28]", [&] { (void)conv_transpose2d(small, tw, {}, {2}, {1}); }},
      {"scatter_add [4096, 64] into [4096, 1024]", [&] { (void)scatter_add(rows, 1, across, rows64); }},
      {"bmm [64, 128, 64] x [64, 64, 128]", [&] { (void)bmm(q, k); }},
  };
  for (const auto& o : ops) std::printf("%-44s %10.3f\n", o.what, time_median(o.f, 20) * 1e3);
  return 0;
}
