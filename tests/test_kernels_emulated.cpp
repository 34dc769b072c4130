// The CUDA backend's kernel files that call no library (tests/CMakeLists.txt lists them), compiled
// for the CPU with cuda_emulation.h and registering as in the library, serve Device::cuda(0) from
// host memory: every case of tests/gen_reference.py whose op has such a kernel, through the
// dispatcher, and models of those ops loaded there (unfused; optimised into fused programs, in f32
// and half_model's 16-bit precisions) must equal the CPU, and refuse at load what it refuses.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "amber/core/backend_registry.h"
#include "amber/graph/text.h"
#include "amber/kernels/cuda/device_memory.h"
#include "amber/kernels/cuda/registry.h"
#include "amber/schema/dispatcher.h"
#include "amber/serialize/archive.h"
#include "amber/serialize/archive_writer.h"
#include "ref_cases.h"
#include "test_util.h"

namespace {

using namespace amber;

// The emulated device: host memory, copies and fills done at once, the default stream alone; its
// kernels are the registry's (the kernel files register theirs at start-up).
int32_t emulated_count() { return 1; }
void* emulated_allocate(int32_t, size_t nbytes, uint32_t) {
  return std::aligned_alloc(256, std::max<size_t>(256, (nbytes + 255) / 256 * 256));
}
void emulated_deallocate(int32_t, void* p, size_t, uint32_t) { std::free(p); }
int emulated_copy(void* dst, int32_t, int32_t, const void* src, int32_t, int32_t, size_t nbytes, void*) {
  if (nbytes) std::memcpy(dst, src, nbytes);
  return 0;
}
int emulated_fill(int32_t, void* p, int value, size_t nbytes, void*) {
  std::memset(p, value, nbytes);
  return 0;
}
int emulated_stream_create(int32_t, void** stream) {
  *stream = nullptr;
  return 0;
}
void emulated_stream_destroy(int32_t, void*) {}
int emulated_synchronize(int32_t, void*) { return 0; }
const amber_kernel* emulated_lookup(const char* op, int32_t version, int32_t dtype) {
  return cuda::find_kernel(op, version, dtype);
}
const char* emulated_last_error() { return ""; }

// No graphs, memory statistics, page-locked memory, events or scopes: those entries stay null.
amber_backend emulated_backend() {
  amber_backend b{};
  b.abi_version = AMBER_BACKEND_ABI_VERSION;
  b.struct_size = sizeof(amber_backend);
  b.name = "cuda (emulated on the CPU)";
  b.device_count = emulated_count;
  b.allocate = emulated_allocate;
  b.deallocate = emulated_deallocate;
  b.copy = emulated_copy;
  b.fill = emulated_fill;
  b.stream_create = emulated_stream_create;
  b.stream_destroy = emulated_stream_destroy;
  b.synchronize = emulated_synchronize;
  b.lookup_kernel = emulated_lookup;
  b.last_error = emulated_last_error;
  return b;
}
const amber_backend kEmulated = emulated_backend();

// cuda:0, served by the emulated device (registered on first use; this process loads no other).
Device emulated_cuda() {
  static std::once_flag once;
  std::call_once(once, [] {
    // fused.cu's programs interpreted, not handed to NVRTC (whose cubin the emulation cannot run:
    // test_fused_rtc and test_fused_rtc_emulated test that route); set it to 1 to run the fallback.
    setenv("AMBER_CUDA_FUSED_RTC", "0", 0);
    register_backend(DeviceType::cuda, &kEmulated);
  });
  REQUIRE(&backend(Device::cuda(0)) == &kEmulated);
  return Device::cuda(0);
}

// Whether the registry holds a kernel of op for any dtype.
bool has_kernel(const OpSchema& op) {
  bool found = false;
  op.dtypes.for_each([&](DType t) { found = found || cuda::find_kernel(op.name, op.version, int(t)) != nullptr; });
  return found;
}

// AMBER_CASE_SHARD=k/n (0 <= k < n): the op-case test runs only the cases whose position among
// those with a kernel is k modulo n, so ctest can run the shards side by side (tests/CMakeLists.txt
// registers two; under ASan the whole took 504 s of two cores' 865 s stage). Unset: every case.
struct Shard {
  int k = 0, n = 1;
};
Shard case_shard() {
  Shard s;
  const char* v = std::getenv("AMBER_CASE_SHARD");
  if (!v || !*v) return s;
  char slash = 0, rest = 0;
  const int got = std::sscanf(v, "%d%c%d%c", &s.k, &slash, &s.n, &rest);
  if (got != 3 || slash != '/' || s.n < 1 || s.k < 0 || s.k >= s.n)
    FAIL("AMBER_CASE_SHARD is '" << v << "': expected k/n with 0 <= k < n");
  return s;
}

}  // namespace

TEST_CASE("cuda emulated: every kernel of the emulated files equals the CPU on every op case", "[emulated][op_cases]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest (the refdata fixture generates it)");
  const Device device = emulated_cuda();
  const Shard shard = case_shard();

  SafetensorsFile file = SafetensorsFile::open(dir + "/ops.safetensors");
  const nlohmann::json cases = nlohmann::json::parse(file.metadata().at("cases"));
  std::map<std::string, test::OpStats> ran;
  std::map<std::string, int> in_all_shards;  // cases of each op with a kernel, this shard's or not
  int position = 0;
  for (const nlohmann::json& c : cases) {
    if (!c["error"].is_null()) continue;
    const std::string name = c["name"], opname = c["op"];
    const OpSchema& op = op_schema(opname);
    if (!has_kernel(op)) continue;
    ++in_all_shards[opname];
    if (position++ % shard.n != shard.k) continue;
    INFO("case " << name << " (op " << opname << ")");
    test::OpStats& st = ran[opname];
    ++st.cases;
    test::check_against_cpu(op, c, file, device, c["atol"].get<double>(), c["rtol"].get<double>(), st);
  }
  // Every op with an emulated kernel has cases (else it would pass untested); a shard may hold
  // none of an op's, which another shard then runs.
  int n = 0;
  for (const OpSchema* op : all_ops())
    if (has_kernel(*op)) {
      INFO("op " << op->name << " has an emulated CUDA kernel");
      CHECK(in_all_shards.count(op->name) == 1);
    }
  for (auto& [op, st] : ran) n += st.cases;
  std::printf("%zu ops (%d cases, shard %d/%d) on the emulated CUDA kernels against the CPU:\n", ran.size(), n, shard.k,
              shard.n);
  std::printf("  %-20s %6s %12s %12s\n", "op", "cases", "max |diff|", "max rel");
  for (auto& [op, st] : ran) std::printf("  %-20s %6d %12.3g %12.3g\n", op.c_str(), st.cases, st.max_abs, st.max_rel);
}

// The archive's model loaded on the CPU and on the emulated device at `precision`: equal over
// three calls of new inputs (made by make_inputs(call)), given on the host and on the device.
template <typename MakeInputs>
void check_model(const std::vector<uint8_t>& bytes, MakeInputs make_inputs, double atol, double rtol,
                 Precision precision = Precision::f32) {
  const Model cpu = load(bytes, LoadOptions{.precision = precision});
  const Model dev = load(bytes, LoadOptions{.device = emulated_cuda(), .precision = precision});
  INFO("precision " << precision_name(precision));
  for (int64_t call = 0; call < 3; ++call) {
    const std::vector<Tensor> inputs = make_inputs(call);
    std::vector<Tensor> on_device;
    for (const Tensor& t : inputs) on_device.push_back(t.to(emulated_cuda()));
    const std::vector<Tensor> want = cpu.forward(inputs);
    for (const bool device_inputs : {false, true}) {
      INFO("call " << call << ", inputs " << (device_inputs ? "on the device" : "on the host"));
      const std::vector<Tensor> got = dev.forward(device_inputs ? on_device : inputs);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        CHECK(got[k].device() == emulated_cuda());
        const test::Diff d = test::compare(got[k].to(Device::cpu()), want[k], atol, rtol);
        INFO("output " << k << ": " << d.message);
        CHECK(d.ok);
      }
    }
  }
}

int count_nodes(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (const graph::Node* node : g.nodes()) n += node->op->name == op;
  return n;
}

TEST_CASE("cuda emulated: a loaded model of these kernels equals the CPU, inputs on either side", "[emulated]") {
  manual_seed(5);
  const Tensor table = randn({11, 6});
  // Pointwise steps, pooling, layer norm, softmax over a flattened view, a gather from a weight.
  auto f = [&table](const Tensor& x, const Tensor& idx) {
    const Tensor p = max_pool2d(relu(x * 2 + 1) - x.sigmoid(), {2, 2});
    return std::vector<Tensor>{softmax(layer_norm(p, {4}).flatten(1), 1), embedding(table, idx) * 3};
  };
  TraceOptions unfused;  // (the fused programs: the next case)
  unfused.optimize = false;
  unfused.print_warnings = false;
  const Tensor x = randn({2, 3, 8, 8}), idx = tensor<int64_t>({4, 0, 10, 4, 7});
  check_model(
      trace(f, {x, idx}, unfused).save_to_bytes(),
      [](int64_t call) {
        return std::vector<Tensor>{randn({2, 3, 8, 8}), tensor<int64_t>({call, 10 - call, 3, 3, 5})};
      },
      1e-6, 1e-5);
}

// topk past kTopkBlockMax sorts each line whole in the workspace its setup asked for (a block a
// line; row_kernels.cuh's topk_sort_kernel): eager on the device and a loaded model, both orders,
// ties by index.
TEST_CASE("cuda emulated: topk of k above a block's share sorts in the workspace its setup asks", "[emulated]") {
  const Device device = emulated_cuda();
  manual_seed(6);
  const Tensor x = round(randn({3, 2600}) * 20.0);
  for (bool largest : {true, false}) {
    INFO("largest " << largest);
    const auto [v, i] = topk(x.to(device), 2500, 1, largest);
    const auto [want_v, want_i] = topk(x, 2500, 1, largest);
    CHECK(test::compare(v.to(Device::cpu()), want_v, 0, 0).ok);
    CHECK(test::compare(i.to(Device::cpu()), want_i, 0, 0).ok);
  }
  auto f = [](const Tensor& t) {
    auto [v, i] = topk(t, 2049, 0, true);
    return std::vector<Tensor>{v, i};
  };
  TraceOptions quiet;
  quiet.print_warnings = false;
  check_model(
      trace(f, {x.t()}, quiet).save_to_bytes(),
      [&](int64_t call) { return std::vector<Tensor>{(x * double(call)).t()}; }, 0, 0);
}

// topk of few long lines (no more than the emulated device's 4 multiprocessors): each line's
// parts selected a block each into the workspace the setup asks, then merged (row_kernels.cuh's
// topk_split_kernel and topk_merge_kernel; 8 parts of 2500 for the first, 2 of 4500 for the
// second): eager on the device and a loaded model, both orders, ties by index.
TEST_CASE("cuda emulated: topk of a few long lines splits each among blocks", "[emulated]") {
  const Device device = emulated_cuda();
  manual_seed(16);
  const Tensor one = round(randn({1, 20000}) * 50.0), three = round(randn({3, 9000}) * 50.0);
  for (bool largest : {true, false}) {
    INFO("largest " << largest);
    for (const auto& [x, k] : {std::pair{one, int64_t(50)}, std::pair{three, int64_t(1000)}}) {
      const auto [v, i] = topk(x.to(device), k, 1, largest);
      const auto [want_v, want_i] = topk(x, k, 1, largest);
      CHECK(test::compare(v.to(Device::cpu()), want_v, 0, 0).ok);
      CHECK(test::compare(i.to(Device::cpu()), want_i, 0, 0).ok);
    }
  }
  auto f = [](const Tensor& t) {
    auto [v, i] = topk(t, 40, 0, false);
    return std::vector<Tensor>{v, i};
  };
  TraceOptions quiet;
  quiet.print_warnings = false;
  check_model(
      trace(f, {one.t()}, quiet).save_to_bytes(),
      [&](int64_t call) { return std::vector<Tensor>{(one * double(call - 1)).t()}; }, 0, 0);
}

// cumsum of long lines a block a line (row_kernels.cuh's cumsum_block_kernel): dense lines, and
// strided ones no more than twice the emulated device's 4 multiprocessors; short lines a thread
// each: eager on the device against the CPU, f32 (exact: the double sums are) and i64.
TEST_CASE("cuda emulated: cumsum of long lines runs a block a line", "[emulated]") {
  const Device device = emulated_cuda();
  manual_seed(17);
  const Tensor x = randn({2, 5000}), strided = randn({3000, 4}), shorter = randn({6, 100});
  CHECK(test::compare(cumsum(x.to(device), 1).to(Device::cpu()), cumsum(x, 1), 0, 0).ok);
  CHECK(test::compare(cumsum(strided.to(device), 0).to(Device::cpu()), cumsum(strided, 0), 0, 0).ok);
  CHECK(test::compare(cumsum(shorter.to(device), 1).to(Device::cpu()), cumsum(shorter, 1), 0, 0).ok);
  const Tensor xi = (x * 1e17).to(DType::i64);
  CHECK(test::compare(cumsum(xi.to(device), 1).to(Device::cpu()), cumsum(xi, 1), 0, 0).ok);
}

// The antialiased resizes: the windows' tables in device memory their setup's state owns, two
// passes, the columns' into the workspace the setup asks: eager on the device and a loaded model,
// down and up, strided input, equal to the CPU.
TEST_CASE("cuda emulated: antialiased resizes run from the tables their setup made", "[emulated]") {
  const Device device = emulated_cuda();
  manual_seed(7);
  const Tensor x = randn({2, 3, 29, 37}).transpose(2, 3);  // [2, 3, 37, 29], H and W swapped in memory
  auto f = [](const Tensor& t) {
    return std::vector<Tensor>{upsample_bicubic2d_aa(t, {9, 7}, false, std::nullopt, std::nullopt),
                               upsample_bilinear2d_aa(t, {50, 11}, true, std::nullopt, std::nullopt)};
  };
  const std::vector<Tensor> want = f(x), got = f(x.to(device));
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("output " << k);
    CHECK(test::compare(got[k].to(Device::cpu()), want[k], 0, 0).ok);
  }
  TraceOptions quiet;
  quiet.print_warnings = false;
  check_model(
      trace(f, {x}, quiet).save_to_bytes(),
      [&](int64_t call) { return std::vector<Tensor>{(x * double(call + 1)).contiguous()}; }, 0, 0);
}

// device_memory.h: what a setup keeps in its state on the device (here the antialiased resizes'
// window tables) comes from the backend's allocator, so it counts in what Amber holds there while
// the model lives (amber::device_memory's figures on a GPU) and goes back when the model goes.
TEST_CASE("cuda emulated: a setup's device memory is counted as held while its model lives", "[emulated]") {
  const Device device = emulated_cuda();
  manual_seed(8);
  const Tensor x = randn({1, 2, 40, 30});
  auto f = [](const Tensor& t) {
    return std::vector<Tensor>{upsample_bicubic2d_aa(t, {9, 7}, false, std::nullopt, std::nullopt)};
  };
  TraceOptions quiet;
  quiet.print_warnings = false;
  const std::vector<uint8_t> bytes = trace(f, {x}, quiet).save_to_bytes();
  const size_t before = cuda::held_bytes(0, false).held;
  {
    const Model m = load(bytes, LoadOptions{.device = device});
    CHECK(test::compare(m.forward({x})[0].to(Device::cpu()), f(x)[0], 0, 0).ok);
    const cuda::HeldBytes during = cuda::held_bytes(0, false);
    CHECK(during.held > before);
    CHECK(during.peak >= during.held);
    CHECK(during.limit == 0);  // (test_kernels_emulated_memory_cap runs with one)
  }
  CHECK(cuda::held_bytes(0, false).held == before);
}

// Run as its own ctest entry (test_kernels_emulated_memory_cap) under AMBER_CUDA_MEMORY_LIMIT=256:
// a setup's state memory is under the cap like a tensor's; running out is an amber::Error naming
// the op, what the memory was for, the bytes asked, free under the cap and held, at the eager call
// or at load, and the next call that fits works.
TEST_CASE("cuda emulated: a setup's device memory is under AMBER_CUDA_MEMORY_LIMIT", "[.][emulated][memory_cap]") {
  const char* limit = std::getenv("AMBER_CUDA_MEMORY_LIMIT");
  if (!limit || std::string(limit) != "256")
    FAIL("run with AMBER_CUDA_MEMORY_LIMIT=256 (ctest's test_kernels_emulated_memory_cap sets it)");
  const Device device = emulated_cuda();
  manual_seed(9);
  const Tensor big = randn({1, 2, 40, 30}), small = randn({1, 2, 4, 4});
  auto f = [](const Tensor& t, std::vector<int64_t> size) {
    return upsample_bicubic2d_aa(t, size, false, std::nullopt, std::nullopt);
  };
  AMBER_REQUIRE_ERROR(f(big.to(device), {9, 7}),
                      "upsample_bicubic2d_aa: window tables: out of memory on cuda:0: asked for ");
  AMBER_REQUIRE_ERROR(f(big.to(device), {9, 7}),
                      " bytes; 256 of AMBER_CUDA_MEMORY_LIMIT's 256 bytes free, 0 held by Amber");
  TraceOptions quiet;
  quiet.print_warnings = false;
  const std::vector<uint8_t> bytes = trace(
                                         [&](const Tensor& t) {
                                           return std::vector<Tensor>{f(t, {9, 7})};
                                         },
                                         {big}, quiet)
                                         .save_to_bytes();
  AMBER_REQUIRE_ERROR(load(bytes, LoadOptions{.device = device}).forward({big}), "AMBER_CUDA_MEMORY_LIMIT's 256 bytes");
  CHECK(cuda::held_bytes(0, false).held == 0);
  // 2x2 from 4x4: per dim 2 starts and 2 counts (16 bytes each) and 2 windows of 4 f32 weights.
  CHECK(test::compare(f(small.to(device), {2, 2}).to(Device::cpu()), f(small, {2, 2}), 0, 0).ok);
  CHECK(cuda::held_bytes(0, false).held == 2 * (16 + 16 + 32));  // (the dispatcher keeps eager states)
}

// fused.cu's host half: each step's program checked and given slots at setup, then the kernel
// chosen by the operands (dense and aligned: several elements a thread; a broadcast weight: one),
// by the slots the program needs (more live values than kSlots: a slot an instruction) and by the
// storage (f32; bf16 and f16 computed in f32, the models loaded with half_model's precisions).
TEST_CASE("cuda emulated: an optimised model's fused programs equal the CPU", "[emulated]") {
  manual_seed(6);
  const Tensor bias = randn({3, 1, 1});
  auto f = [&bias](const Tensor& x, const Tensor& y) {
    const Tensor dense = (x.tanh() * y + 1).exp() - y.sigmoid();  // two dense inputs
    const Tensor broadcast = relu(x * 2 + bias) * y;              // a weight broadcast along x
    std::vector<Tensor> terms;                                    // 24 values live at once before they are summed
    for (int i = 0; i < 24; ++i) terms.push_back(x * float(i + 1));
    Tensor wide = y;
    for (int i = 0; i < 24; ++i) wide = wide + terms[i];
    return std::vector<Tensor>{dense, broadcast, wide};
  };
  TraceOptions options;
  options.print_warnings = false;
  const Tensor x = randn({2, 3, 20, 24}), y = randn({2, 3, 20, 24});
  const TracedModule traced = trace(f, {x, y}, options);
  INFO(graph::to_text(traced.graph()));
  REQUIRE(count_nodes(traced.graph(), "fused") >= 3);
  const std::vector<uint8_t> bytes = traced.save_to_bytes();
  auto inputs = [](int64_t) { return std::vector<Tensor>{randn({2, 3, 20, 24}), randn({2, 3, 20, 24})}; };
  check_model(bytes, inputs, 1e-5, 1e-5);
  // The same programs on 16-bit storage: the emulated kernels round as the CPU's do.
  check_model(bytes, inputs, 1e-2, 1e-2, Precision::bf16_model);
  check_model(bytes, inputs, 1e-3, 1e-3, Precision::f16_model);
}

// quantized.cu's setups: a loaded model's constant weight scales and bias held to the CPU's rule
// (quant::scale_error), so that an archive with a negative or NaN scale or an infinite bias is
// refused at load on either device; the unchanged archive runs and equals the CPU.
TEST_CASE("cuda emulated: a quantized archive's bad weight scale or bias is refused at load, as on the CPU",
          "[emulated]") {
  const test::Int8Layers layers(41);
  const Tensor &w = layers.w, &ws = layers.ws, &b = layers.b, &lw = layers.lw, &ls = layers.ls;
  auto f = [&](const Tensor& x) {
    const Tensor y = quantized_conv2d(x, w, ws, b, {1}, {1}, {1}, 1, 0.02, 100, "none", 0, 6);
    return quantized_linear(y.flatten(1), lw, ls, {}, 0.03, 7);
  };
  TraceOptions o;
  o.print_warnings = false;
  const std::vector<uint8_t> bytes = trace(f, {randn({1, 2, 2, 2})}, o).save_to_bytes();
  check_model(
      bytes,
      [](int64_t) {
        return std::vector<Tensor>{randn({1, 2, 2, 2})};
      },
      1e-5, 1e-5);
  // The archive with input k of every `op` node replaced: element 1 set to v.
  auto changed = [&](const std::string& op, size_t k, float v) {
    LoadedArchive a = read_archive(bytes, nullptr);
    for (graph::Node* n : a.graph.nodes())
      if (n->op->name == op) {
        std::vector<float> e = n->inputs[k]->data.to_vector<float>(SrcLoc::none());
        e[1] = v;
        n->inputs[k]->data = tensor(e, {int64_t(e.size())});
      }
    return archive_bytes(a.graph, a.info);
  };
  const struct {
    std::vector<uint8_t> bytes;
    const char* error;
  } bad[] = {{changed("quantized_conv2d", 2, -0.5f), "quantized_conv2d: weight_scale[1] is -0.5"},
             {changed("quantized_linear", 2, NAN), "the scales must be finite and non-negative"},
             {changed("quantized_conv2d", 3, INFINITY), "bias[1] is inf; a quantized op's bias must be finite"}};
  for (const auto& c : bad) {
    AMBER_REQUIRE_ERROR(load(c.bytes), c.error);
    AMBER_REQUIRE_ERROR(load(c.bytes, LoadOptions{.device = emulated_cuda()}), c.error);
  }
}
