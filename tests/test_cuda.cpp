// CUDA device tests (label `gpu`; without a GPU each case says why it skips, and the refusal of a
// CUDA device is checked). On a GPU, against the CPU: LeNet with inputs and outputs on either
// side, 8 threads, a steady state that allocates nothing, small host inputs copied in or read in
// place, device_memory, out of memory (one call fails alone), weights too large, a bad index,
// replicas, bf16 / f16, 16-bit convolutions, fused programs, recording streams kept, large host
// inputs and outputs through page-locked memory.

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <tuple>

#include "amber/core/backend_registry.h"
#include "amber/core/devices.h"
#include "amber/graph/text.h"
#include "amber/kernels/cuda/capture_lock.h"
#include "amber/loader/replicas.h"
#include "models/small.h"
#include "test_util.h"

using namespace amber;

namespace {

// Why the GPU cases cannot run here ("" when they can).
const std::string& no_gpu() {
  static const std::string why = [] {
    try {
      (void)backend(Device::cuda(0));
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return why;
}

bool skip(const char* what) {
  if (no_gpu().empty()) return false;
  std::printf("SKIPPED (no GPU here): %s: %s\n", what, no_gpu().c_str());
  return true;
}

const std::vector<uint8_t>& lenet_archive() {
  static const std::vector<uint8_t> bytes = [] {
    manual_seed(7);
    models::LeNet net;
    net.eval();
    TraceOptions o;
    o.print_warnings = false;
    o.dynamic_batch = true;
    return trace(net, {randn({1, 1, 32, 32})}, o).save_to_bytes();
  }();
  return bytes;
}

Tensor input(int64_t batch, uint64_t seed = 11) {
  manual_seed(seed);
  return randn({batch, 1, 32, 32});
}

void check_close(const Tensor& got, const Tensor& want, const std::string& what, double rtol = 1e-4) {
  const test::Diff d = test::compare(got.to(Device::cpu()), want, 1e-5, rtol);
  INFO(what << ": " << d.message);
  CHECK(d.ok);
}

TraceOptions quiet() {
  TraceOptions o;
  o.print_warnings = false;
  return o;
}

// A traced graph loaded on cuda:0 and on the CPU at `precision`: its first outputs on `inputs`
// agree (for a model in 16 bits, within one 16-bit step: both compute in f32 and round once,
// and the f32 results may straddle a rounding boundary).
void check_loaded(const TracedModule& traced, const std::vector<Tensor>& inputs, const std::string& what,
                  Precision precision = Precision::f32) {
  INFO(what << " (" << precision_name(precision) << "):\n" << graph::to_text(traced.graph()));
  const std::vector<uint8_t> bytes = traced.save_to_bytes();
  const double rtol = precision == Precision::bf16_model  ? 1e-4 + 0x1p-7
                      : precision == Precision::f16_model ? 1e-4 + 0x1p-10
                                                          : 1e-4;
  check_close(load(bytes, {.device = Device::cuda(0), .precision = precision}).forward(inputs)[0],
              load(bytes, {.precision = precision}).forward(inputs)[0], what, rtol);
}
void check_traced(const TraceFn& fn, const std::vector<Tensor>& inputs, const std::string& what,
                  Precision precision = Precision::f32) {
  check_loaded(trace_function(fn, inputs, quiet()), inputs, what, precision);
}

}  // namespace

TEST_CASE("cuda: without a GPU, one clear error and the CPU unaffected", "[cuda][gpu]") {
  AMBER_CASE("gpu.no-device");
  if (!no_gpu().empty()) {
    std::printf("cuda: not available here: %s\n", no_gpu().c_str());
    AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.device = Device::cuda(0)}), "cuda:0 requested but");
    AMBER_REQUIRE_ERROR(ones({2}, Device::cuda(0)), "cuda:0 requested but");
    const Model cpu = load(lenet_archive());
    CHECK(cpu.forward({input(1)})[0].sizes() == DimVec{1, 10});
    return;
  }
  const int32_t n = backend(Device::cuda(0)).device_count();
  AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.device = Device::cuda(n)}),
                      str("cuda:", n, " requested but only ", n));
}

TEST_CASE("cuda: a loaded model equals the CPU, inputs and outputs on either side", "[cuda][gpu]") {
  if (skip("loaded model vs CPU")) return;
  const Model cpu = load(lenet_archive());
  const Model gpu = load(lenet_archive(), LoadOptions{.device = Device::cuda(0)});
  for (int64_t batch : {1, 8, 3}) {
    const Tensor x = input(batch), want = cpu.forward({x})[0];
    const Tensor out = gpu.forward({x})[0];
    CHECK(out.device() == Device::cuda(0));
    check_close(out, want, str("batch ", batch));
    check_close(gpu.forward({x.to(Device::cuda(0))})[0], want, "device input");
    check_close(gpu.forward({x}, CallOptions{.outputs_on_host = true})[0], want, "host output");
  }
}

TEST_CASE("cuda: large host inputs and outputs through page-locked memory equal the CPU", "[cuda][gpu]") {
  // Plan::upload's chunks (5.06 MiB: two of 4 MiB, copied in by the call's threads, each sent
  // from page-locked memory while the next is copied in) and a 5.06 MiB output asked on the host
  // (copied into a page-locked block, then out after the call synchronises); three calls each
  // (run directly, recorded, replayed), then 4 threads at once (a block each).
  if (skip("large host inputs and outputs")) return;
  const auto f = [](const Tensor& big, const Tensor& small) { return relu(big * 2 + 1) + small.sum(); };
  const std::vector<int64_t> shape{3, 7, 250, 253};
  manual_seed(3);
  const std::vector<uint8_t> bytes = trace(f, {randn(shape), randn({5})}, quiet()).save_to_bytes();
  const Model cpu = load(bytes), gpu = load(bytes, LoadOptions{.device = Device::cuda(0)});
  for (uint64_t call = 0; call < 3; ++call) {
    manual_seed(40 + call);
    const Tensor big = randn(shape), small = randn({5}), want = cpu.forward({big, small})[0];
    check_close(gpu.forward({big, small})[0], want, str("device output, call ", call));
    const Tensor host = gpu.forward({big, small}, CallOptions{.outputs_on_host = true})[0];
    REQUIRE(host.device().is_cpu());
    check_close(host, want, str("host output, call ", call));
  }
  std::vector<Tensor> bigs, smalls, wants;  // (made here: the random generator is not shared across threads)
  for (int t = 0; t < 4; ++t) {
    manual_seed(70 + uint64_t(t));
    bigs.push_back(randn(shape));
    smalls.push_back(randn({5}));
    wants.push_back(cpu.forward({bigs.back(), smalls.back()})[0]);
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < bigs.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i)
        if (!test::compare(gpu.forward({bigs[t], smalls[t]}, CallOptions{.outputs_on_host = true})[0], wants[t], 1e-5,
                           1e-4)
                 .ok)
          ++bad;
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
}

TEST_CASE("cuda: 8 threads x calls on one model", "[cuda][gpu][threads]") {
  AMBER_CASE("conc.forward");
  if (skip("8 threads on one model")) return;
  const Model gpu = load(lenet_archive(), LoadOptions{.device = Device::cuda(0)});
  std::vector<Tensor> inputs, want;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(input(1 + i % 2 * 3, 100 + i));
    want.push_back(gpu.forward({inputs.back()}, CallOptions{.outputs_on_host = true})[0]);
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const size_t k = size_t(t + i) % inputs.size();
        if (!test::compare(gpu.forward({inputs[k]}, CallOptions{.outputs_on_host = true})[0], want[k], 0, 0).ok) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
}

// One traced `fused` node on the GPU against the CPU: dense inputs of one and two operands at
// every tail length (eight elements a thread with 16-byte loads, and the last partial group), a
// source sliced one element in (not 16-byte aligned: the four-wide kernel), broadcast and strided
// operands, and a program keeping more results alive than the kernel's slots (its
// one-element-a-thread form).
// Each program also in a model loaded in bf16 and f16, where the fused kernel reads and writes
// 16-bit values (eight a thread dense, four strided) and the CPU runs its f32 kernel between
// conversions.
TEST_CASE("cuda: fused programs equal the CPU: dense, broadcast, many results kept, 16-bit", "[cuda][gpu]") {
  if (skip("fused programs")) return;
  auto check_fused = [&](auto fn, const std::vector<Tensor>& inputs, const std::string& what, size_t nodes = 1) {
    const TracedModule traced = trace(fn, inputs, quiet());
    INFO(what << ":\n" << graph::to_text(traced.graph()));
    REQUIRE(traced.graph().num_nodes() == nodes);
    for (Precision p : {Precision::f32, Precision::bf16_model, Precision::f16_model})
      check_loaded(traced, inputs, what, p);
  };
  manual_seed(3);
  check_fused([](const Tensor& x) { return relu(x * 2 + 1); }, {randn({4099})}, "dense, odd length");
  for (int64_t n : {3, 8, 4100, 4103})
    check_fused([](const Tensor& a, const Tensor& b) { return relu(a * b + 1); }, {randn({n}), randn({n})},
                str("two dense inputs, length ", n));
  // add(i0, 1); mul(i0, i1); mul(t1, t0); sub(t2, i1): t0 is read two instructions on, from a slot.
  check_fused([](const Tensor& a, const Tensor& b) { return (a * b) * (a + 1) - b; }, {randn({1027}), randn({1027})},
              "two dense inputs, a result kept");
  check_fused([](const Tensor& x) { return relu(x.slice(0, 1, 4098) * 2 + 1); }, {randn({4099})},
              "a source one element in", 2);
  check_fused([](const Tensor& a, const Tensor& b, const Tensor& c) { return sigmoid(a * b + c) - a; },
              {randn({5, 37}), randn({37}), randn({5, 1})}, "broadcast");
  check_fused(
      [](const Tensor& a, const Tensor& b) {
        std::vector<Tensor> kept;
        for (int i = 0; i < 20; ++i) kept.push_back(a * float(i + 1) + b);
        Tensor s = kept[0];
        for (int i = 1; i < 20; ++i) s = s - kept[i];
        return s;
      },
      {randn({3, 1001}), randn({1001})}, "20 results kept");
}

// A call whose inputs are all small and on the host stages them in page-locked memory, and the
// recording copies them in: by a kernel up to 16 KiB an input (staging_copy.h), by the copy
// engine beyond; or, where only fused programs of the inputs' size read them (a * b + 1), its
// kernels read that memory in place (AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED). a.sum() beside
// it makes the copies. Inputs of 20 and 148 bytes (a 16-byte group and a tail of 4), 16 KiB
// exactly (the kernel's most) and 16 KiB and 16 bytes, new values each call: a replay that read
// stale or misplaced bytes shows. The harness was checked on sim:0.
TEST_CASE("cuda: small host inputs copied in by the recording (a kernel up to 16 KiB) or read in place",
          "[cuda][gpu]") {
  if (skip("staged host inputs")) return;
  const auto in_place = [](const Tensor& a, const Tensor& b) { return a * b + 1; };
  const auto copied = [](const Tensor& a, const Tensor& b) { return (a * b + 1) * a.sum(); };
  for (int64_t n : {5, 37, 4096, 4100})
    for (bool read_in_place : {true, false}) {
      manual_seed(uint64_t(n));
      const std::vector<uint8_t> bytes = read_in_place
                                             ? trace(in_place, {randn({n}), randn({n})}, quiet()).save_to_bytes()
                                             : trace(copied, {randn({n}), randn({n})}, quiet()).save_to_bytes();
      const Model cpu = load(bytes), gpu = load(bytes, {.device = Device::cuda(0)});
      for (int call = 0; call < 4; ++call) {
        const std::vector<Tensor> x = {randn({n}), randn({n})};
        check_close(gpu.forward(x)[0], cpu.forward(x)[0],
                    str(n, " elements an input, ", read_in_place ? "read in place" : "copied in", ", call ", call));
      }
    }
}

// scaled_dot_product_attention on the GPU against the CPU, traced alone: heads of 64 in several
// key tiles of 32 with a partial last one and query rows not a multiple of 8 (the tiled
// kernel), float masks broadcast over the batch dims and rows, causal with more and fewer
// queries than keys, a head-split input as a transformer makes it (a transposed view), a bool
// mask with a fully masked row (NaN on both devices), a NaN in one query (its row NaN), and
// heads of 160 (the one-row-a-block kernel); each also in a model loaded in bf16 and f16, where
// the kernels read and write 16-bit values and compute in f32. The harness was checked on sim:0.
TEST_CASE("cuda: attention equals the CPU: key tiles, broadcast, masks, causal, special rows", "[cuda][gpu]") {
  if (skip("attention")) return;
  for (Precision p : {Precision::f32, Precision::bf16_model, Precision::f16_model}) {
    auto check_sdpa = [&](const std::vector<Tensor>& qkvm, bool causal, const std::string& what) {
      const bool masked = qkvm.size() == 4;
      check_traced(
          [&](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{
                scaled_dot_product_attention(in[0], in[1], in[2], masked ? in[3] : Tensor(), 0.0, causal)};
          },
          qkvm, what, p);
    };
    manual_seed(5);
    check_sdpa({randn({2, 3, 37, 64}), randn({2, 3, 77, 64}), randn({2, 3, 77, 48})}, false, "E 64, 77 keys");
    check_sdpa({randn({2, 4, 19, 64}), randn({2, 4, 40, 64}), randn({2, 4, 40, 64}), randn({19, 40})}, false,
               "a float mask over the batch dims");
    check_sdpa({randn({2, 4, 19, 64}), randn({2, 4, 40, 64}), randn({2, 4, 40, 64}), randn({2, 1, 1, 40})}, false,
               "a float mask per batch entry, over the heads and rows");
    check_sdpa({randn({1, 2, 45, 32}), randn({1, 2, 33, 32}), randn({1, 2, 33, 32})}, true, "causal, 45 queries");
    check_sdpa({randn({1, 2, 20, 32}), randn({1, 2, 70, 32}), randn({1, 2, 70, 32})}, true, "causal, 20 queries");
    check_traced(  // [B, T, H * E] split into heads inside the graph: [B, H, T, E] views with strides
        [](const std::vector<Tensor>& in) {
          const Tensor heads = in[0].reshape({2, 50, 4, 64}).transpose(1, 2);
          return std::vector<Tensor>{scaled_dot_product_attention(heads, heads, heads, Tensor(), 0.0, false)};
        },
        {randn({2, 50, 4 * 64})}, "head-split views", p);
    Tensor keep = gt(randn({2, 9, 40}), -0.5);
    bool* kp = keep.data_ptr<bool>();
    for (int64_t j = 0; j < 40; ++j) kp[3 * 40 + j] = false;  // row 3 of entry 0: every key masked
    check_sdpa({randn({2, 9, 16}), randn({2, 40, 16}), randn({2, 40, 16}), keep}, false, "a fully masked row");
    Tensor q = randn({1, 6, 16});
    q.data_ptr<float>()[2 * 16 + 5] = std::nanf("");
    check_sdpa({q, randn({1, 50, 16}), randn({1, 50, 16})}, false, "a NaN in query row 2");
    check_sdpa({randn({2, 5, 160}), randn({2, 40, 160}), randn({2, 40, 160})}, false, "heads of 160");
  }
}

// Matrix products on the GPU against the CPU where cuBLASLt's heuristic must respect the
// operands' alignment (a slice one element in: 4-byte aligned, 2-byte in 16 bits) and may use
// its workspace (a short, deep product: split-K), traced alone; each also in a model loaded in
// bf16 and f16, where cuBLASLt multiplies the 16-bit operands and rounds its output once. The
// harness was checked on sim:0.
TEST_CASE("cuda: matrix products on misaligned and deep operands equal the CPU, also in 16 bits", "[cuda][gpu]") {
  if (skip("matrix products")) return;
  manual_seed(9);
  const Tensor w = randn({33, 65}), b = randn({33});
  const Tensor x1 = randn({37, 66}), x2 = randn({30, 17}), y2 = randn({17, 9}), x3 = randn({3, 5, 7}),
               y3 = randn({3, 7, 12}), x4 = randn({8, 4096}), y4 = randn({4096, 16});
  for (Precision p : {Precision::f32, Precision::bf16_model, Precision::f16_model}) {
    check_traced(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{linear(in[0].slice(1, 1, 66), w, b)}; }, {x1},
        "linear on a slice one element in", p);
    check_traced([](const std::vector<Tensor>& in) { return std::vector<Tensor>{mm(in[0].slice(0, 1, 30), in[1])}; },
                 {x2, y2}, "mm on a slice one row in", p);
    check_traced([](const std::vector<Tensor>& in) { return std::vector<Tensor>{bmm(in[0], in[1].slice(2, 1, 12))}; },
                 {x3, y3}, "bmm on a slice one column in", p);
    check_traced([](const std::vector<Tensor>& in) { return std::vector<Tensor>{mm(in[0], in[1])}; }, {x4, y4},
                 "a short, deep product", p);
  }
}

// Precision::bf16 and f16 (convolutions and linear layers in 16 bits, f32 accumulation): LeNet
// within each one's bound of the CPU's f32 at three batches, and not equal to CUDA's f32 (the
// 16-bit path ran); a linear layer with a weight beyond f16's range (1e5) keeps f32 under f16.
TEST_CASE("cuda: bf16 and f16 products within their bounds; a weight beyond f16 keeps its layer f32", "[cuda][gpu]") {
  if (skip("bf16 and f16 products")) return;
  const Model cpu = load(lenet_archive());
  const Model f32 = load(lenet_archive(), LoadOptions{.device = Device::cuda(0)});
  const uint32_t flags = backend(Device::cuda(0)).flags;
  for (const auto& [precision, flag, bound] :
       {std::tuple{Precision::bf16, AMBER_BACKEND_BF16, 2e-2}, std::tuple{Precision::f16, AMBER_BACKEND_F16, 5e-3}}) {
    if (!(flags & flag)) {
      std::printf("SKIPPED: %s: this GPU has no such tensor cores\n", precision_name(precision));
      continue;
    }
    const Model gpu = load(lenet_archive(), LoadOptions{.device = Device::cuda(0), .precision = precision});
    for (int64_t batch : {1, 8, 3}) {
      const Tensor x = input(batch), want = cpu.forward({x})[0];
      double ref_max = 0;
      for (double v : want.to_vector<double>(SrcLoc::none())) ref_max = std::max(ref_max, std::fabs(v));
      const Tensor got = gpu.forward({x}, CallOptions{.outputs_on_host = true})[0];
      const test::Diff d = test::compare(got, want, bound * ref_max, 0);
      INFO(precision_name(precision) << " batch " << batch << ": " << d.message);
      CHECK(d.ok);
      const Tensor plain = f32.forward({x}, CallOptions{.outputs_on_host = true})[0];
      CHECK_FALSE(test::compare(got, plain, 0, 0).ok);
    }
  }
  if (!(flags & AMBER_BACKEND_F16)) return;
  manual_seed(5);
  std::vector<float> wv = randn({7, 33}).to_vector<float>(SrcLoc::none());
  wv[40] = 1e5f;
  const Tensor w = tensor(wv, {7, 33}), b = randn({7}), x = randn({4, 33});
  const std::vector<uint8_t> bytes =
      trace([&](const Tensor& in) { return linear(in, w, b); }, {x}, quiet()).save_to_bytes();
  const Tensor want = load(bytes).forward({x})[0];
  const Tensor got = load(bytes, LoadOptions{.device = Device::cuda(0), .precision = Precision::f16})
                         .forward({x})[0]
                         .to(Device::cpu());
  check_close(got, want, "f16 with a weight of 1e5: the layer stays f32");
}

// Precision::bf16 and f16 on single layers of odd shapes, each against the CPU's f32 within the
// precision's bound: 3 input channels with stride and padding (ResNet's first layer), no bias
// with dilation, fused_conv2d's three activations, an NCHW input (converted as it enters), a
// linear layer on a transposed 3-D input; a depthwise convolution stays f32 (equal to CUDA's
// f32). Where the channels are multiples of 8, the 16-bit path must have run (the result differs
// from CUDA's f32); elsewhere cuDNN may keep a layer f32, and the case says which happened.
TEST_CASE("cuda: 16-bit convolutions and linear layers on odd shapes", "[cuda][gpu]") {
  if (skip("16-bit layers on odd shapes")) return;
  const uint32_t flags = backend(Device::cuda(0)).flags;
  manual_seed(21);
  const Tensor w3 = randn({5, 3, 3, 3}), b5 = randn({5}), w8 = randn({16, 8, 3, 3}), b16 = randn({16}),
               wd = randn({8, 1, 3, 3}), wl = randn({40, 29}), bl = randn({40});
  struct Layer {
    const char* what;
    std::function<Tensor(const Tensor&)> fn;
    Tensor x;
    enum { may_stay_f32, runs_16_bit, stays_f32 } expect;
  };
  const std::vector<Layer> layers = {
      {"conv2d, 3 input channels, bias, stride 2, padding 1",
       [&](const Tensor& x) { return conv2d(x, w3, b5, {2}, {1}); }, randn({2, 3, 17, 15}), Layer::may_stay_f32},
      {"conv2d without bias, padding 2, dilation 2", [&](const Tensor& x) { return conv2d(x, w8, {}, {1}, {2}, {2}); },
       randn({1, 8, 13, 11}), Layer::runs_16_bit},
      {"fused_conv2d clamp [0, 6]",
       [&](const Tensor& x) { return fused_conv2d(x, w8, b16, {1}, {1}, {1}, 1, "clamp", 0.0, 6.0); },
       randn({3, 8, 9, 9}), Layer::runs_16_bit},
      {"fused_conv2d silu", [&](const Tensor& x) { return fused_conv2d(x, w8, b16, {1}, {1}, {1}, 1, "silu"); },
       randn({1, 8, 7, 12}), Layer::runs_16_bit},
      {"fused_conv2d hardswish, stride 2",
       [&](const Tensor& x) { return fused_conv2d(x, w8, b16, {2}, {0}, {1}, 1, "hardswish"); }, randn({2, 8, 11, 9}),
       Layer::runs_16_bit},
      {"depthwise conv2d", [&](const Tensor& x) { return conv2d(x, wd, {}, {1}, {1}, {1}, 8); }, randn({1, 8, 10, 10}),
       Layer::stays_f32},
      {"linear on a transposed 3-D input", [&](const Tensor& x) { return linear(x.transpose(0, 1), wl, bl); },
       randn({7, 3, 29}), Layer::runs_16_bit},
  };
  for (const auto& [precision, flag, bound] :
       {std::tuple{Precision::bf16, AMBER_BACKEND_BF16, 2e-2}, std::tuple{Precision::f16, AMBER_BACKEND_F16, 5e-3}}) {
    if (!(flags & flag)) {
      std::printf("SKIPPED: %s: this GPU has no such tensor cores\n", precision_name(precision));
      continue;
    }
    for (const Layer& l : layers) {
      const std::vector<uint8_t> bytes = trace(l.fn, {l.x}, quiet()).save_to_bytes();
      const Tensor want = load(bytes).forward({l.x})[0];
      const Tensor plain = load(bytes, LoadOptions{.device = Device::cuda(0)}).forward({l.x})[0].to(Device::cpu());
      const Tensor got = load(bytes, LoadOptions{.device = Device::cuda(0), .precision = precision})
                             .forward({l.x})[0]
                             .to(Device::cpu());
      double ref_max = 0;
      for (double v : want.to_vector<double>(SrcLoc::none())) ref_max = std::max(ref_max, std::fabs(v));
      const test::Diff d = test::compare(got, want, bound * ref_max, 0);
      const bool ran_16_bit = !test::compare(got, plain, 0, 0).ok;
      std::printf("cuda %s: %s: max |diff| %.3g of max |ref| %.3g, %s\n", precision_name(precision), l.what, d.max_abs,
                  ref_max, ran_16_bit ? "ran in 16 bits" : "stayed f32");
      INFO(precision_name(precision) << ", " << l.what << ": " << d.message);
      CHECK(d.ok);
      if (l.expect == Layer::runs_16_bit) CHECK(ran_16_bit);
      if (l.expect == Layer::stays_f32) check_close(got, plain, "stays f32");
    }
  }
}

// conv2d and fused_conv2d on 16-bit tensors (conv.cu's own 16-bit path). Loaded whole in bf16
// and f16 (bf16-model, f16-model: cuDNN on the 16-bit tensors, its output rounded, then bias and
// activation, rounded again) against the CPU's model in 16 bits within 2e-2 / 5e-3 of max |ref|:
// an NCHW input (copied to channels-last as it enters), a channels-last one (the previous
// layer's output), odd channels (cuDNN may keep those in f32, the kernel's other path), each
// activation. And eager calls on bf16 / f16 CUDA tensors, weight and bias given per call (the
// f32 path: widened, convolved in f32, rounded once) within one 16-bit step of the CPU's: 4-D
// with bias, fused silu, an unbatched 3-D input, a transposed convolution in two groups. The
// harness was checked on sim:0.
TEST_CASE("cuda: convolutions on 16-bit tensors", "[cuda][gpu]") {
  if (skip("convolutions on 16-bit tensors")) return;
  manual_seed(23);
  const Tensor w3 = randn({5, 3, 3, 3}), b5 = randn({5}), w5 = randn({16, 5, 3, 3}), w8 = randn({16, 8, 3, 3}),
               b16 = randn({16}), w16 = randn({8, 16, 1, 1}), b8 = randn({8});
  const TraceFn odd = [&](const std::vector<Tensor>& in) {
    const Tensor h = conv2d(in[0], w3, b5, {2}, {1});
    return std::vector<Tensor>{fused_conv2d(h, w5, b16, {1}, {1}, {1}, 1, "silu")};
  };
  const TraceFn by_eight = [&](const std::vector<Tensor>& in) {
    const Tensor h = fused_conv2d(in[0], w8, b16, {1}, {1}, {1}, 1, "clamp", 0.0, 6.0);
    const Tensor g = fused_conv2d(h, w16, b8, {1}, {0}, {1}, 1, "hardswish");
    return std::vector<Tensor>{conv2d(g, w8, {}, {1}, {2}, {2})};
  };
  const uint32_t flags = backend(Device::cuda(0)).flags;
  for (const auto& [precision, flag, bound] : {std::tuple{Precision::bf16_model, AMBER_BACKEND_BF16, 2e-2},
                                               std::tuple{Precision::f16_model, AMBER_BACKEND_F16, 5e-3}}) {
    if (!(flags & flag)) {
      std::printf("SKIPPED: %s: this GPU has no such tensor cores\n", precision_name(precision));
      continue;
    }
    for (const auto& [what, fn, x] :
         {std::tuple{"3 -> 5 -> 16 channels, stride 2, silu", odd, randn({2, 3, 17, 15})},
          std::tuple{"8 -> 16 -> 8 -> 16 channels, clamp, hardswish, dilation 2", by_eight, randn({3, 8, 13, 11})}}) {
      const std::vector<uint8_t> bytes = trace_function(fn, {x}, quiet()).save_to_bytes();
      const Tensor want = load(bytes, {.precision = precision}).forward({x})[0];
      const Tensor got =
          load(bytes, {.device = Device::cuda(0), .precision = precision}).forward({x})[0].to(Device::cpu());
      double ref_max = 0;
      for (double v : want.to_vector<double>(SrcLoc::none())) ref_max = std::max(ref_max, std::fabs(v));
      const test::Diff d = test::compare(got, want, bound * ref_max, 0);
      std::printf("cuda %s: %s: max |diff| %.3g of max |ref| %.3g\n", precision_name(precision), what, d.max_abs,
                  ref_max);
      INFO(precision_name(precision) << ", " << what << ": " << d.message);
      CHECK(d.ok);
    }
  }
  for (const auto& dtype_step : {std::pair{DType::bf16, 0x1p-7}, std::pair{DType::f16, 0x1p-10}}) {
    const DType dtype = dtype_step.first;  // (clang 14's lambdas cannot capture structured bindings)
    const double step = dtype_step.second;
    const Tensor x = randn({2, 8, 9, 10}).to(dtype), w = w8.to(dtype), b = b16.to(dtype),
                 u = randn({8, 7, 6}).to(dtype);
    const Device g = Device::cuda(0);
    const auto same = [&](const Tensor& got, const Tensor& want, const char* what) {
      const test::Diff d = test::compare(got.to(Device::cpu()).to(DType::f32), want.to(DType::f32), 1e-5, 1e-4 + step);
      INFO(dtype << " eager, " << what << ": " << d.message);
      CHECK(d.ok);
      CHECK(got.dtype() == dtype);
    };
    same(conv2d(x.to(g), w.to(g), b.to(g), {1}, {1}), conv2d(x, w, b, {1}, {1}), "conv2d with bias");
    same(fused_conv2d(x.to(g), w.to(g), b.to(g), {2}, {1}, {1}, 1, "silu"),
         fused_conv2d(x, w, b, {2}, {1}, {1}, 1, "silu"), "fused_conv2d silu, stride 2");
    same(conv2d(u.to(g), w.to(g), {}, {1}, {0}), conv2d(u, w, {}, {1}, {0}), "an unbatched input, no bias");
    // Transposed: [in 8, out 16 / 2, 3, 3] weights, groups 2, stride 2, output padding 1.
    const Tensor wt = randn({8, 8, 3, 3}).to(dtype), bt = b16.to(dtype);
    same(conv_transpose2d(x.to(g), wt.to(g), bt.to(g), {2}, {1}, {1}, 2), conv_transpose2d(x, wt, bt, {2}, {1}, {1}, 2),
         "conv_transpose2d, groups 2, stride 2");
  }
}

// fused_linear on CUDA against the CPU: its ReLU (clamp to [0, inf], as the fusion pass makes
// it) takes cuBLASLt's ReLU epilogue only where that keeps NaN (gemm.cu's relu_keeps_nan, asked
// on a geometry's first call); the other activations run as a pass after the product. Rows
// holding NaN and infinities, eager (with and without bias, 2-D and 3-D rows) and loaded (its
// warm-up probes the epilogue, then a captured graph replays it), f32 and a model in bf16.
TEST_CASE("cuda: fused_linear's activations keep NaN, with or without cuBLASLt's ReLU epilogue", "[cuda][gpu]") {
  if (skip("fused_linear")) return;
  manual_seed(23);
  const Tensor w = randn({24, 40}) * 0.3, b = randn({24}), w2 = randn({16, 24}) * 0.3;
  Tensor x = randn({3, 10, 40});
  float* p = x.data_ptr<float>();
  p[7] = std::nanf("");  // row 0
  p[40 * 13 + 2] = INFINITY;
  p[x.numel() - 5] = std::nanf("");  // the last row
  const Device g = Device::cuda(0);
  struct Act {
    const char* name;
    double lo, hi;
  };
  for (const Act& act :
       {Act{"clamp", 0.0, double(INFINITY)}, Act{"clamp", -0.5, 1.5}, Act{"silu", 0, 6}, Act{"hardswish", 0, 6}}) {
    for (const Tensor& bias : {b, Tensor()}) {
      for (const Tensor& rows : {x, x.reshape({30, 40})}) {
        const Tensor want = fused_linear(rows, w, bias, act.name, act.lo, act.hi);
        const Tensor got =
            fused_linear(rows.to(g), w.to(g), bias.defined() ? bias.to(g) : bias, act.name, act.lo, act.hi);
        check_close(got, want,
                    str("eager fused_linear ", act.name, " [", act.lo, ", ", act.hi, "]",
                        bias.defined() ? "" : " without bias", ", rows ", rows.sizes()));
      }
    }
  }
  const auto mlp = [&](const Tensor& in) { return linear(relu(linear(in, w, b)), w2); };
  const TracedModule t = trace(mlp, {x}, quiet());
  const std::vector<uint8_t> bytes = t.save_to_bytes();
  CHECK(load(bytes).graph_text().find("= fused_linear(") != std::string::npos);
  const Tensor want = load(bytes).forward({x})[0];
  const Model m = load(bytes, LoadOptions{.device = g});
  for (int call = 0; call < 3; ++call) check_close(m.forward({x})[0], want, str("loaded, call ", call + 1));
  if (backend(g).flags & AMBER_BACKEND_BF16) {
    const Tensor got = load(bytes, LoadOptions{.device = g, .precision = Precision::bf16_model}).forward({x})[0];
    const test::Diff d = test::compare(got.to(Device::cpu()).to(DType::f32), want, 0.05, 0.05);
    INFO("bf16 model: " << d.message);
    CHECK(d.ok);
  }
}

TEST_CASE("cuda: device_memory counts Amber's allocations, its peak, and the device's memory", "[cuda][gpu]") {
  if (skip("device memory")) return;
  const Device d = Device::cuda(0);
  synchronize(d);
  reset_peak_device_memory(d);
  const DeviceMemory m0 = device_memory(d);
  CHECK(m0.device_total_bytes > 0);
  CHECK(m0.device_free_bytes <= m0.device_total_bytes);
  const uint64_t mib4 = uint64_t(4) << 20;
  uint64_t with_a = 0;
  {
    const Tensor a = ones({int64_t(1) << 20}, d);  // 4 MiB (and whatever the fill's kernel keeps)
    const DeviceMemory m1 = device_memory(d);
    with_a = m1.held_bytes;
    CHECK(m1.held_bytes >= m0.held_bytes + mib4);
    CHECK(m1.peak_held_bytes >= m1.held_bytes);
    synchronize(d);
  }
  const DeviceMemory m2 = device_memory(d);
  CHECK(m2.held_bytes + mib4 <= with_a);  // the tensor's memory went back
  CHECK(m2.peak_held_bytes >= with_a);
  reset_peak_device_memory(d);
  CHECK(device_memory(d).peak_held_bytes == device_memory(d).held_bytes);
  // A model's memory, with what its kernels' setups keep (packed weights: device_memory.h's
  // DeviceBuffer), is counted while it lives and all goes back with it.
  const uint64_t before = device_memory(d).held_bytes;
  {
    const Model m = load(lenet_archive(), LoadOptions{.device = d});
    (void)m.forward({input(1)});
    CHECK(device_memory(d).held_bytes > before);
  }
  synchronize(d);
  CHECK(device_memory(d).held_bytes == before);
}

TEST_CASE("cuda: a recording stream outlives its recording and records again", "[cuda][gpu]") {
  // backend.cpp keeps recording streams (a cuDNN handle's next cudnnSetStream touches the stream
  // it last ran on): a recording after another gets the same stream, and a stream still
  // recording is never handed out twice. The recording thread makes no other CUDA call until its
  // recording ends (on 2026-11-30 an H200 refused to end a recording during which this thread had
  // destroyed the other thread's graph: the likely cause, not yet confirmed).
  // Where recordings take cuDNN's turn (AMBER_CUDA_CONV_PLANS, AMBER_CUDA_CUDNN_ATTENTION), a
  // second thread's recording waits for the first to end: that part is left out there.
  if (skip("recording streams")) return;
  const bool turns = amber::cuda::cudnn_takes_turns();  // (the backend's own rule, capture_lock.h)
  const amber_backend& b = backend(Device::cuda(0));
  void *first = nullptr, *again = nullptr, *other = nullptr, *graph = nullptr, *other_graph = nullptr;
  REQUIRE(b.capture_begin(0, &first) == 0);
  REQUIRE(b.capture_end(0, first, &graph) == 0);
  b.graph_destroy(0, graph);
  REQUIRE(b.capture_begin(0, &again) == 0);
  CHECK(again == first);
  int other_rc = 0;
  std::string other_error;
  if (!turns)
    std::thread([&] {  // another thread's recording while `again` records
      other_rc = b.capture_begin(0, &other);
      if (other_rc == 0) other_rc = b.capture_end(0, other, &other_graph);
      if (other_rc != 0) other_error = b.last_error();
    })
        .join();
  const int again_rc = b.capture_end(0, again, &graph);
  INFO("ending the recording: " << (again_rc == 0 ? "" : b.last_error()));
  REQUIRE(again_rc == 0);
  b.graph_destroy(0, graph);
  if (!turns) {
    INFO("the other thread's recording: " << other_error);
    REQUIRE(other_rc == 0);
    CHECK(other != again);
    b.graph_destroy(0, other_graph);
  }
  CHECK(b.synchronize(0, first) == 0);  // still a stream
}

// Runs as its own ctest entry (test_cuda_oom) under AMBER_CUDA_MEMORY_LIMIT=1G: the cap is
// how a service bounds Amber's share of a GPU, and it makes running out reachable on any card.
TEST_CASE("cuda: out of memory fails the call alone; weights that do not fit are refused", "[.][cuda][gpu][oom]") {
  if (skip("out of memory")) return;
  const char* limit = std::getenv("AMBER_CUDA_MEMORY_LIMIT");
  if (!limit || !*limit) FAIL("run with AMBER_CUDA_MEMORY_LIMIT set (ctest's test_cuda_oom sets 1G)");
  AMBER_CASE("gpu.call-oom");
  const Model gpu = load(lenet_archive(), LoadOptions{.device = Device::cuda(0)});
  // A batch whose intermediates cannot fit under the cap (conv1's output alone is 1.2 GB):
  // the call fails naming bytes, and the next one works.
  AMBER_REQUIRE_ERROR(gpu.forward({input(1).to(Device::cuda(0)).expand({int64_t(1) << 16, 1, 32, 32})}), "bytes");
  check_close(gpu.forward({input(2)})[0], load(lenet_archive()).forward({input(2)})[0], "the call after");
  AMBER_REQUIRE_ERROR(empty({int64_t(1) << 45}, {DType::f32, Device::cuda(0)}), "out of memory");
}

TEST_CASE("cuda: replicas over every GPU present", "[cuda][gpu][replicas]") {
  if (skip("replicas")) return;
  ReplicaOptions ro;
  const int32_t n = backend(Device::cuda(0)).device_count();
  for (int32_t i = 0; i < std::max(n, 2); ++i) ro.devices.push_back(Device::cuda(i % n));
  const Replicas r = Replicas::load(lenet_archive(), ro);
  const Tensor x = input(7);
  check_close(r.forward({x})[0], load(lenet_archive()).forward({x})[0], "split batch");
}
