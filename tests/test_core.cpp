// Tests of core/ and the dispatcher against PyTorch where PyTorch defines the answer (type
// promotion, printing, seeded random numbers) and of Amber's own contracts: storage sharing
// and views, ownership of external memory, large blocks, read-only storage, element access,
// the dispatcher hook (outermost ops only, source lines), threads and error messages.

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "amber/core/parallel.h"
#include "amber/core/random.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"
#include "amber/serialize/safetensors.h"
#include "test_util.h"

using namespace amber;
using Json = nlohmann::json;

namespace {
SafetensorsFile core_reference() {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  return SafetensorsFile::open(dir + "/core.safetensors");
}
}  // namespace

TEST_CASE("promote_types matches torch for every dtype pair", "[core][dtype]") {
  SafetensorsFile ref = core_reference();
  const Json table = Json::parse(ref.metadata().at("promote_types"));
  int n = 0;
  for (auto& [key, value] : table.items()) {
    const auto comma = key.find(',');
    const DType a = *dtype_from_name(key.substr(0, comma)), b = *dtype_from_name(key.substr(comma + 1));
    INFO(key);
    CHECK(dtype_name(promote_types(a, b)) == value.get<std::string>());
    ++n;
  }
  CHECK(n == kNumDTypes * kNumDTypes);
}

TEST_CASE("result type with numbers and zero-dim tensors matches torch", "[core][dtype]") {
  SafetensorsFile ref = core_reference();
  for (const Json& r : Json::parse(ref.metadata().at("result_type"))) {
    ResultType rt;
    rt.add(*dtype_from_name(r["tensor"].get<std::string>()), Priority::dimensioned);
    if (r.contains("number")) {
      const Json& num = r["number"];
      const Scalar s = num.is_boolean()          ? Scalar(num.get<bool>())
                       : num.is_number_integer() ? Scalar(num.get<int64_t>())
                                                 : Scalar(num.get<double>());
      rt.add(s.wrapped_dtype(), Priority::wrapped);
    } else {
      rt.add(*dtype_from_name(r["zero_dim"].get<std::string>()), Priority::zero_dim);
    }
    INFO(r.dump());
    CHECK(dtype_name(rt.result()) == r["result"].get<std::string>());
  }
}

TEST_CASE("printing matches torch's str()", "[core][print]") {
  SafetensorsFile ref = core_reference();
  const std::pair<const char*, const char*> names[] = {
      {"torch.float64", "f64"}, {"torch.int32", "i32"}, {"torch.int64", "i64"}, {"torch.float16", "f16"}};
  for (const Json& p : Json::parse(ref.metadata().at("printed"))) {
    std::string expected = p["text"];
    for (auto [from, to] : names) expected = std::regex_replace(expected, std::regex(from), to);
    const Tensor t = ref.tensor("print." + p["name"].get<std::string>());
    INFO(p["name"].get<std::string>());
    CHECK(t.str() == expected);
  }
}

TEST_CASE("rand and randn reproduce torch after manual_seed", "[core][random]") {
  SafetensorsFile ref = core_reference();
  for (const Json& r : Json::parse(ref.metadata().at("randoms"))) {
    const uint64_t seed = r["seed"];
    const int64_t n = r["n"];
    INFO("seed " << seed << " n " << n);
    manual_seed(seed);
    test::Diff d = test::compare(rand({n}), ref.tensor("rand." + std::to_string(seed)), 0, 0);
    CHECK(d.ok);  // bit-exact
    manual_seed(seed);
    d = test::compare(randn({n}), ref.tensor("randn." + std::to_string(seed)), 1e-6, 1e-5);
    INFO(d.message);
    CHECK(d.ok);
    manual_seed(seed);
    d = test::compare(rand({n}, DType::f64), ref.tensor("rand_f64." + std::to_string(seed)), 0, 0);
    CHECK(d.ok);
  }
  Generator g(5);
  Tensor a = rand({7}, {}, &g);
  g.manual_seed(5);
  Tensor b = rand({7}, {}, &g);
  CHECK(test::compare(a, b, 0, 0).ok);
}

TEST_CASE("copies share storage; views alias; reshape copies only when it must", "[core][views]") {
  Tensor x = arange(0, 12, 1, {DType::f32}).reshape({3, 4});
  Tensor copy = x;
  CHECK(copy.is_same(x));
  Tensor v = x.view({4, 3});
  CHECK(v.storage().is_same(x.storage()));
  Tensor p = x.permute({1, 0});
  CHECK(p.storage().is_same(x.storage()));
  CHECK_FALSE(p.is_contiguous());
  CHECK(p.strides() == DimVec{1, 4});
  Tensor s = x.slice(1, 1, 4, 2);
  CHECK(s.storage_offset() == 1);
  CHECK(s.sizes() == DimVec{3, 2});
  CHECK(s.at<float>({2, 1}) == 11.0f);
  Tensor r = p.reshape({12});  // not viewable: a copy
  CHECK_FALSE(r.storage().is_same(x.storage()));
  CHECK(r.to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(x.reshape({2, 6}).storage().is_same(x.storage()));
  CHECK(x.contiguous().is_same(x));
  CHECK(x.to(DType::f32).is_same(x));
  Tensor e = x.select(0, 1).unsqueeze(0).expand({5, 4});
  CHECK(e.strides() == DimVec{0, 1});
  CHECK(e.at<float>({4, 3}) == 7.0f);
  CHECK(x.flatten().sizes() == DimVec{12});
  CHECK(x.t().sizes() == DimVec{4, 3});
  CHECK(x[2].to_vector<int64_t>() == std::vector<int64_t>{8, 9, 10, 11});
}

TEST_CASE("from_blob: borrowed memory, owned memory with a deleter, bounds", "[core][storage]") {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  {
    Tensor t = from_blob(buf, {2, 3});
    CHECK(t.data() == buf);
    CHECK(t.at<float>({1, 2}) == 6.0f);
    Tensor y = t * 2;
    CHECK(y.to_vector<float>() == std::vector<float>{2, 4, 6, 8, 10, 12});
  }
  CHECK(buf[0] == 1.0f);
  int deleted = 0;
  {
    auto* owned = new float[4]{1, 2, 3, 4};
    Tensor t = from_blob(owned, {4}, [&deleted](void* p) {
      delete[] static_cast<float*>(p);
      ++deleted;
    });
    Tensor view = t.slice(0, 1, 3);
    t = Tensor();
    CHECK(deleted == 0);  // the view keeps the storage alive
    CHECK(view.to_vector<float>() == std::vector<float>{2, 3});
  }
  CHECK(deleted == 1);
  AMBER_REQUIRE_ERROR(from_blob(buf, {2, 3}, {3, -1}, {}), "negative strides");
  float small[4] = {};
  AMBER_REQUIRE_ERROR(
      Tensor::make(Storage::wrap(small, sizeof small, Device::cpu(), nullptr, false), {2, 3}, {3, 1}, 0, DType::f32),
      "outside its storage of 4 elements");
}

TEST_CASE("short-lived CPU blocks from 32 MiB up: mapped, aligned, whole, released at their size", "[core][storage]") {
  for (const size_t bytes : {(size_t(32) << 20) - 64, size_t(32) << 20, (size_t(32) << 20) + 13}) {
    Storage s = Storage::allocate(bytes, Device::cpu());
    REQUIRE(s.data());
    CHECK(reinterpret_cast<uintptr_t>(s.data()) % kCpuAlignment == 0);
    char* p = static_cast<char*>(s.data());
    p[0] = 1;
    p[bytes - 1] = 2;
    CHECK(p[0] + p[bytes - 1] == 3);
  }
  // An eager op's 32 MiB output (cat of two [2048, 2048] blocks), its values at both ends.
  Tensor a = full({2048, 2048}, 1.5), b = arange(0, 2048 * 2048, 1, {DType::f32}).reshape({2048, 2048});
  Tensor c = cat({a, b}, 0);
  REQUIRE(c.sizes() == DimVec{4096, 2048});
  CHECK(c.at<float>({0, 0}) == 1.5f);
  CHECK(c.at<float>({2047, 2047}) == 1.5f);
  CHECK(c.at<float>({2048, 0}) == 0.0f);
  CHECK(c.at<float>({4095, 2047}) == float(2048 * 2048 - 1));
}

TEST_CASE("read-only storage refuses writes but reads and clones", "[core][storage]") {
  float data[3] = {1, 2, 3};
  Tensor t = Tensor::make(Storage::wrap(data, sizeof data, Device::cpu(), nullptr, /*read_only=*/true), {3}, {1}, 0,
                          DType::f32);
  CHECK(t.is_read_only());
  CHECK(t.const_data_ptr<float>()[1] == 2.0f);
  AMBER_REQUIRE_ERROR(t.data_ptr<float>(), "read-only");
  Tensor c = t.clone();
  CHECK_FALSE(c.is_read_only());
  c.data_ptr<float>()[0] = 9;
  CHECK(data[0] == 1.0f);
  CHECK((t + 1).to_vector<float>() == std::vector<float>{2, 3, 4});
}

TEST_CASE("element access errors", "[core][access]") {
  Tensor t = tensor({1.5f, -2.0f, 3.25f}, {3});
  AMBER_REQUIRE_ERROR(t.item<float>(), "expected a tensor with one element, got shape [3]");
  AMBER_REQUIRE_ERROR(t.at<float>({3}), "index 3 is out of range for dimension 0 of size 3");
  AMBER_REQUIRE_ERROR(t.at<float>({0, 0}), "got 2 indices for a tensor of shape [3]");
  CHECK(t.at<int64_t>({-1}) == 3);
  CHECK(t.at<bool>({1}) == true);
  CHECK(tensor({7}, {1}).item<double>() == 7.0);
  AMBER_REQUIRE_ERROR(t.data_ptr<double>(), "data_ptr<f64>(): the tensor has dtype f32");
}

TEST_CASE("the seed examples run eagerly", "[core][seed]") {
  // 2*x + y on two 3-vectors
  Tensor x = tensor({1.0f, 2.0f, 3.0f}), y = tensor({0.5f, 0.25f, -1.0f});
  CHECK((2 * x + y).to_vector<float>() == std::vector<float>{2.5f, 4.25f, 5.0f});
  // y = x.mm(x); return y + t
  Tensor m = tensor({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  Tensor t = ones({2, 2});
  CHECK((m.mm(m) + t).to_vector<float>() == std::vector<float>{8, 11, 16, 23});
  // Operators keep PyTorch's promotion: int tensors stay int with int scalars.
  Tensor i = tensor({1, 2, 3}, {3});
  CHECK(i.dtype() == DType::i32);
  CHECK((i * 2).dtype() == DType::i32);
  CHECK((i / 2).dtype() == DType::f32);
  CHECK((i + 0.5).dtype() == DType::f32);
  CHECK((2 - i).to_vector<int32_t>() == std::vector<int32_t>{1, 0, -1});
  CHECK((6 / tensor({2.0f, 4.0f})).to_vector<float>() == std::vector<float>{3.0f, 1.5f});
  CHECK((-x).to_vector<float>() == std::vector<float>{-1, -2, -3});
}

namespace {
struct RecordingHook : DispatchHook {
  std::vector<std::string> ops;
  std::vector<int> lines;
  std::vector<std::string> reads;
  void on_op(const OpSchema& op, std::span<const Tensor* const>, std::span<const Attr>, std::span<const Tensor>,
             SrcLoc loc) override {
    ops.push_back(op.name);
    lines.push_back(loc.line);
  }
  void on_host_read(const Tensor&, const char* what, SrcLoc loc) override { reads.push_back(str(what, "@", loc.line)); }
  void on_random(const Tensor&, const char* what, SrcLoc) override { reads.push_back(what); }
};
}  // namespace

TEST_CASE("the dispatcher hook sees outermost ops with the caller's line", "[core][hook]") {
  RecordingHook hook;
  Tensor a = tensor({1, 2, 3}, {3});  // i32
  Tensor b = tensor({0.5f, 1.5f, 2.5f});
  int line_add = 0, line_read = 0;
  {
    DispatchHookGuard guard(&hook);
    line_add = __LINE__ + 1;
    Tensor c = add(a, b);  // promotion casts a inside: not recorded
    Tensor d = c.unsqueeze(0).expand({2, 3}).transpose(0, 1).contiguous();
    line_read = __LINE__ + 1;
    (void)d.sum().item<float>();
    (void)rand({2});
  }
  (void)(a + a);  // after the guard: not recorded
  CHECK(hook.ops == std::vector<std::string>{"add", "unsqueeze", "expand", "transpose", "contiguous", "sum"});
  CHECK(hook.lines[0] == line_add);
  REQUIRE(hook.reads.size() == 2);
  CHECK(hook.reads[0] == str("item()@", line_read));
  CHECK(hook.reads[1] == "rand()");
}

TEST_CASE("parallel_for covers the range once, gives distinct slots and propagates exceptions", "[core][threads]") {
  set_num_threads(std::max(2, available_cores()));
  std::vector<std::atomic<int>> seen(100003);
  parallel_for(int64_t(seen.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) seen[size_t(i)]++;
  });
  bool once = true;
  for (auto& s : seen) once &= s.load() == 1;
  CHECK(once);
  CHECK_THROWS_AS(parallel_for(100000, 10,
                               [](int64_t b, int64_t) {
                                 if (b > 0) throw Error("boom");
                               }),
                  Error);
  {
    ThreadLimit limit(1);
    CHECK(get_num_threads() == 1);
  }
  // Slots: below the thread count, never two chunks on one slot at once, 0 when inline.
  for (int threads : {1, 2, 4}) {
    ThreadLimit limit(threads);
    std::vector<std::atomic<int>> busy(static_cast<size_t>(threads)), covered(1009);
    std::atomic<bool> bad{false};
    parallel_for_slots(1009, 1, [&](int slot, int64_t b, int64_t e) {
      if (slot < 0 || slot >= threads || busy[size_t(slot)].fetch_add(1) != 0) {
        bad = true;
        return;
      }
      for (int64_t i = b; i < e; ++i) covered[size_t(i)]++;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // chunks overlap in time
      busy[size_t(slot)]--;
    });
    CHECK_FALSE(bad.load());
    bool each_once = true;
    for (auto& c : covered) each_once &= c.load() == 1;
    CHECK(each_once);
  }
  parallel_for_slots(5, 10, [](int slot, int64_t b, int64_t e) { CHECK((slot == 0 && b == 0 && e == 5)); });
  AMBER_REQUIRE_ERROR(set_num_threads(0), "at least 1 thread");
  // Results do not depend on the thread count for elementwise ops.
  Tensor x = randn({200000});
  Tensor y1, y4;
  {
    ThreadLimit one(1);
    y1 = exp(x) * 3 + x;
  }
  {
    ThreadLimit four(4);
    y4 = exp(x) * 3 + x;
  }
  CHECK(test::compare(y1, y4, 0, 0).ok);
}

TEST_CASE("channels-last flows from conv2d through pointwise, norm and pooling ops", "[core][layout]") {
  manual_seed(3);
  Tensor x = randn({2, 3, 9, 9});
  Tensor w = randn({4, 3, 3, 3});
  Tensor y = conv2d(x, w, {}, {1}, {1});
  CHECK(y.is_channels_last());
  CHECK(y.sizes() == DimVec{2, 4, 9, 9});
  Tensor z = relu(y + 1.0) * y;
  CHECK(z.is_channels_last());
  Tensor bn = batch_norm(z, ones({4}), ones({4}), ones({4}), zeros({4}));
  CHECK(bn.is_channels_last());
  Tensor p = max_pool2d(bn, {2});
  CHECK(p.is_channels_last());
  // Mixing layouts gives contiguous results with the same values.
  Tensor mixed = p + p.contiguous();
  CHECK(mixed.is_contiguous());
  CHECK(test::compare(mixed, p.contiguous() * 2, 0, 0).ok);
  // flatten of a channels-last tensor copies into NCHW order, as the values demand.
  Tensor f = p.flatten(1);
  CHECK(test::compare(f, p.contiguous().flatten(1), 0, 0).ok);
  // The same values as computing in NCHW all along.
  Tensor ref = max_pool2d(
      batch_norm(relu(y.contiguous() + 1.0) * y.contiguous(), ones({4}), ones({4}), ones({4}), zeros({4})), {2});
  CHECK(test::compare(p, ref, 0, 0).ok);
}

TEST_CASE("inference-only and Amber-specific errors", "[core][errors]") {
  Tensor x = randn({2, 3, 4, 4});
  AMBER_REQUIRE_ERROR(batch_norm(x, zeros({3}), ones({3}), {}, {}, /*training=*/true),
                      "batch_norm: training mode is not supported");
  AMBER_REQUIRE_ERROR(dropout(x, 0.5, /*train=*/true), "dropout: training mode is not supported");
  AMBER_REQUIRE_ERROR(dropout(x, 1.5), "dropout probability has to be between 0 and 1");
  Tensor q = randn({1, 3, 4});
  AMBER_REQUIRE_ERROR(scaled_dot_product_attention(q, q, q, {}, 0.1), "dropout_p must be 0");
  AMBER_REQUIRE_ERROR(scaled_dot_product_attention(q, q, q, ones({3, 3}, DType::b8), 0.0, true),
                      "is_causal and attn_mask cannot both be set");
  AMBER_REQUIRE_ERROR(where(ones({3}, DType::u8), ones({3}), zeros({3})), "where: expected condition to be a bool");
  AMBER_REQUIRE_ERROR(conv2d(x, randn({5, 3, 3, 3}), randn({4})), "conv2d: bias must have shape [5]");
  AMBER_REQUIRE_ERROR(embedding(randn({4, 2}), ones({3})), "embedding: indices must be i64 or i32");
  AMBER_REQUIRE_ERROR(gelu(ones({3}, DType::i64)), "gelu: dtype i64 is not supported");
}

TEST_CASE("errors name the op, the shapes and the expectation", "[core][errors]") {
  // 16-bit floats run every op that computes in f32 (docs/OPS.md); f64 products do not exist.
  Tensor h = ones({3}).to(DType::f16);
  CHECK(exp(h).dtype() == DType::f16);
  AMBER_REQUIRE_ERROR(mm(ones({2, 2}, DType::f64), ones({2, 2}, DType::f64)),
                      "mm: dtype f64 is not supported (supported: f32, f16, bf16)");
  AMBER_REQUIRE_ERROR(ones({2, 3}).view({4, 2}), "view: shape [4, 2] is invalid for input of size 6");
  AMBER_REQUIRE_ERROR(ones({2, 3}).permute({0}), "permute: number of dims in permutation [0]");
  AMBER_REQUIRE_ERROR(ones({2, 3}).transpose(0, 2), "transpose: dimension 2 is out of range for a tensor of rank 2");
  AMBER_REQUIRE_ERROR(ones({2, 3}).t().view({6}), "view:");
  AMBER_REQUIRE_ERROR(div(tensor({1, 2}), tensor({1, 0}), "trunc"), "div: integer division by zero");
  AMBER_REQUIRE_ERROR(zeros({-1}), "full: negative dimension -1");
  AMBER_REQUIRE_ERROR(ones({1, 1, 1, 1, 1, 1, 1, 1, 1}), "rank 9 exceeds the maximum of 8");
  AMBER_REQUIRE_ERROR(ones({1LL << 40, 1LL << 40}), "overflows");
  AMBER_REQUIRE_ERROR(Device::parse("gpu"), "invalid device 'gpu'");
  AMBER_REQUIRE_ERROR(ones({2}, Device::cuda(4096)), "device cuda:4096 requested but");  // with a GPU or without
  AMBER_REQUIRE_ERROR(op_schema("no_such_op"), "unknown op 'no_such_op'");
  const OpSchema& add_op = op_schema("add");
  Tensor a = ones({2});
  AMBER_REQUIRE_ERROR(dispatch(add_op, std::vector<const Tensor*>{&a}, {}, SrcLoc::none()),
                      "add: expected 2 tensor arguments, got 1");
  AMBER_REQUIRE_ERROR(
      dispatch(add_op, std::vector<const Tensor*>{&a, &a}, std::vector<Attr>{Attr("x")}, SrcLoc::none()),
      "add: attribute 'alpha' expects Scalar, got str");
}
