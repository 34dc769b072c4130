// Loader tests: samples and models saved, loaded and run by the planned executor equal eager
// execution (and PyTorch); dynamic batch through per-size plans; input errors; outputs owned
// by the caller; anomaly mode; the profile; many threads on one model (bitwise identical, loop
// and while_loop models too) with handles dropped and failing calls alongside; a call too
// large for memory fails alone; the warm-up, recycled output buffers, per-step threads.

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "amber/graph/graph.h"
#include "amber/loader/buffer_cache.h"
#include "amber/loader/step_cost.h"
#include "models/control.h"
#include "models/programs.h"
#include "models/resnet.h"
#include "models/small.h"
#include "test_util.h"

using namespace amber;
namespace fs = std::filesystem;

namespace {

TraceOptions quiet(bool dynamic = false) {
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = dynamic;
  return o;
}

// A file in this run's scratch directory, removed when the tests exit.
std::string temp(const std::string& name) {
  static const test::ScratchDir dir("amber_test_loader");
  return dir.file(name);
}

void check_close(const Tensor& a, const Tensor& b, double atol, double rtol, const std::string& what) {
  test::Diff d = test::compare(a, b, atol, rtol);
  INFO(what << ": " << d.message << " (max |diff| " << d.max_abs << ")");
  CHECK(d.ok);
}

// Saves t to a file and to bytes, loads both, and checks both against want on inputs.
void check_loaded(const TracedModule& t, const std::vector<Tensor>& inputs, const std::vector<Tensor>& want,
                  double atol, double rtol, const std::string& what) {
  const std::string path = temp("model.amber");
  t.save(path);
  Model from_file = load(path);
  Model from_bytes = load(t.save_to_bytes());
  const auto a = from_file.forward(inputs), b = from_bytes.forward(inputs), traced = t.forward(inputs);
  REQUIRE(a.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    check_close(a[i], want[i], atol, rtol, what + " (loaded from a file) vs eager");
    check_close(b[i], a[i], 0, 0, what + " (loaded from memory) vs from a file");
    check_close(a[i], traced[i], atol, rtol, what + " (loaded) vs traced");
  }
}

}  // namespace

TEST_CASE("samples 1-5 and 7: loaded == eager", "[loader][samples]") {
  using models::ten_mul, models::two_x_plus_y;
  Tensor x = tensor({1.f, 2.f, 3.f}), y = tensor({0.5f, -1.f, 4.f});
  check_loaded(trace(two_x_plus_y, {x, y}, quiet()), {x, y}, {two_x_plus_y(x, y)}, 0, 0, "2*x + y");

  Tensor t = ones({3, 3});
  auto mm_add = [&](const Tensor& a) { return models::mm_add(a, t); };
  Tensor m = randn({3, 3});
  check_loaded(trace(mm_add, {m}, quiet()), {m}, {mm_add(m)}, 0, 0, "mm + add");

  Tensor t11 = ones({1, 1});
  auto per_row = [&](const Tensor& a) { return models::loop_rows(a, t11); };
  Tensor r = randn({4, 3});
  check_loaded(trace(per_row, {r}, quiet()), {r}, {per_row(r)}, 0, 0, "loop over rows");

  Tensor v = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f});
  check_loaded(trace(ten_mul, {v}, quiet()), {v}, {ten_mul(v)}, 0, 0, "ten muls");

  auto& pairwise = models::pairwise_sq_dist;
  Tensor pa = randn({100, 2}), pb = randn({200, 2});
  check_loaded(trace(pairwise, {pa, pb}, quiet()), {pa, pb}, {pairwise(pa, pb)}, 0, 0, "pairwise");

  manual_seed(3);
  models::ElmanRNN rnn(3, 5, 2);
  Tensor seq = randn({6, 2, 3});
  check_loaded(trace(rnn, {seq}, quiet()), {seq}, {rnn(seq)}, 1e-6, 1e-6, "Elman RNN");
}

TEST_CASE("type promotion, views of inputs and constants, and outputs the caller owns", "[loader]") {
  // int64 + float promotes (a cast node at load); outputs that are an input, a constant,
  // or a view of one are copies the caller may write.
  Tensor w = randn({2, 3});
  auto f = [&](const Tensor& x, const Tensor& i) {
    return std::vector<Tensor>{x + i, x, w, w.t(), x.reshape({3, 2}), (x * 2).view({6})};
  };
  Tensor x = randn({2, 3}), i = tensor(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  TracedModule t = trace(f, {x, i}, quiet());
  Model m = load(t.save_to_bytes());
  auto out = m.forward({x, i});
  auto want = f(x, i);
  REQUIRE(out.size() == want.size());
  for (size_t k = 0; k < out.size(); ++k) check_close(out[k], want[k], 0, 0, str("output ", k));
  for (const Tensor& o : out) CHECK_FALSE(o.is_read_only());
  CHECK_FALSE(out[1].storage().is_same(x.storage()));
  out[2].data_ptr<float>()[0] = 42.f;  // writing an output never reaches the model
  check_close(m.forward({x, i})[2], w, 0, 0, "constant output after a write to an earlier one");
  // Non-contiguous inputs are accepted.
  Tensor xt = randn({3, 2}).t();
  check_close(m.forward({xt, i})[0], xt + i, 0, 0, "transposed input");
}

TEST_CASE("an op with two outputs of different dtypes (topk) traces, saves and loads", "[loader]") {
  // Both outputs used downstream, and one returned directly.
  auto f = [](const Tensor& x) {
    const auto [values, indices] = topk(x * 2, 3, 1);
    return std::vector<Tensor>{values + 1, indices, indices.to(DType::f32) * values};
  };
  Tensor x = randn({4, 9});
  TracedModule t = trace(f, {x}, quiet());
  check_loaded(t, {x}, f(x), 0, 0, "topk");
}

TEST_CASE("the eager compositions trace, save and load as the ops they call", "[loader]") {
  // where with a number, sort, conv1d and conv2d with kSame (an odd total: a pad node),
  // group_norm and instance_norm, interpolate (2-D, 1-D, 3-D, nearest-exact, antialiased) and
  // conv_transpose2d, in one graph.
  manual_seed(21);
  const Tensor w1 = randn({4, 3, 4}), b1 = randn({4}), w2 = randn({2, 4, 2, 2}), gw = randn({2}), gb = randn({2}),
               wt = randn({2, 3, 3, 3}), bt = randn({3});
  auto f = [&](const Tensor& x) {
    const Tensor c = conv1d(x, w1, b1, {1}, kSame);                // [2, 4, 7]
    const Tensor d = conv2d(c.unsqueeze(-1), w2, {}, {1}, kSame);  // [2, 2, 7, 1]
    const Tensor g = group_norm(d, 1, gw, gb) + instance_norm(d);  // [2, 2, 7, 1]
    const auto [values, indices] = sort(g.squeeze(-1), -1, true);  // [2, 2, 7]
    const Tensor up = interpolate(d, {.scale_factor = {1.5, 3}, .mode = "bilinear"}) +
                      interpolate(d, {.size = {10, 3}});          // upsample_bilinear2d + upsample_nearest2d
    const Tensor t = conv_transpose2d(d, wt, bt, {2}, {1}, {1});  // [2, 3, 14, 2]
    // 3-D input (linear: an unsqueeze, upsample_bilinear2d, a squeeze) and nearest-exact
    // (index_select of constant source indices).
    const Tensor line = interpolate(c, {.scale_factor = {1.7}, .mode = "linear"}) +
                        interpolate(c, {.size = {11}, .mode = "nearest-exact"});  // [2, 4, 11]
    const Tensor exact = interpolate(d, {.size = {5, 2}, .mode = "nearest-exact"});
    const Tensor aa =  // upsample_bilinear2d_aa + upsample_bicubic2d_aa, [2, 2, 3, 1]
        interpolate(d, {.size = {3, 1}, .mode = "bilinear", .antialias = true}) +
        interpolate(d, {.scale_factor = {0.5, 1}, .mode = "bicubic", .antialias = true});
    const Tensor vol =  // upsample_trilinear3d + upsample_nearest3d + area, [2, 2, 2, 5, 3]
        interpolate(d.unsqueeze(2), {.size = {2, 5, 3}, .mode = "trilinear"}) +
        interpolate(d.unsqueeze(2), {.size = {2, 5, 3}}) +
        interpolate(d.unsqueeze(2), {.size = {2, 5, 3}, .mode = "area"});  // adaptive_avg_pool3d's two
    return std::vector<Tensor>{where(gt(values, Scalar(0)), values, 0.5), indices, up, t, line, exact, aa, vol};
  };
  const Tensor x = randn({2, 3, 7});
  TracedModule t = trace(f, {x}, quiet());
  check_loaded(t, {x}, f(x), 1e-6, 1e-5, "compositions");
}

TEST_CASE("pointwise steps write in place only where no other reader sees it", "[loader][memory]") {
  // relu's output is read by the add both directly and transposed: writing the add's result
  // in place of it would change what the transposed view reads. The chain after it may
  // work in place; the results must match eager bit for bit either way.
  auto f = [](const Tensor& x) {
    Tensor a = relu(x);
    Tensor c = a + a.t();
    Tensor d = neg(c * c);
    return std::vector<Tensor>{d + a.sum(), c.t() * 3};
  };
  Tensor x = randn({9, 9});
  TracedModule t = trace(f, {x}, quiet());
  Model m = load(t.save_to_bytes());
  auto out = m.forward({x});
  auto want = f(x);
  for (size_t k = 0; k < out.size(); ++k) check_close(out[k], want[k], 0, 0, str("output ", k));
}

TEST_CASE("bad inputs, bad handles and bad archives get clear errors", "[loader][errors]") {
  TracedModule t = trace([](const Tensor& x) { return x.relu(); }, {randn({2, 3})}, quiet(true));
  Model m = load(t.save_to_bytes());
  AMBER_REQUIRE_ERROR(m.forward({}), "forward: expected 1 inputs (input0), got 0");
  AMBER_REQUIRE_ERROR(m.forward({randn({2, 3}), randn({2, 3})}), "expected 1 inputs (input0), got 2");
  AMBER_REQUIRE_ERROR(m.forward({zeros({2, 3}, DType::i64)}), "input input0: expected f32[N, 3]");
  AMBER_REQUIRE_ERROR(m.forward({randn({2, 3, 1})}), "got f32[2, 3, 1]");
  AMBER_REQUIRE_ERROR(m.forward({randn({2, 4})}), "input input0: expected f32[N, 3] (f32[2, 3] at N=2), got f32[2, 4]");
  AMBER_REQUIRE_ERROR(m.forward({Tensor()}), "input input0: the tensor is undefined");
  AMBER_REQUIRE_ERROR(Model().forward({}), "the handle is empty");
  AMBER_REQUIRE_ERROR(load("/nonexistent/model.amber"), "cannot open '/nonexistent/model.amber'");
  AMBER_REQUIRE_ERROR(load(std::vector<uint8_t>{1, 2, 3}), "<buffer>");
  LoadOptions neg;
  neg.num_threads = -1;
  AMBER_REQUIRE_ERROR(load(t.save_to_bytes(), neg), "num_threads must be >= 0");
  LoadOptions cuda;
  cuda.device = Device::cuda(4096);  // no such GPU, whether this machine has any or not
  AMBER_REQUIRE_ERROR(load(t.save_to_bytes(), cuda), "device cuda:4096 requested but");
  // The model still works after all of that.
  Tensor x = randn({5, 3});
  check_close(m.forward({x})[0], x.relu(), 0, 0, "after errors");
}

TEST_CASE("model metadata: names, symbolic shapes, graph text, memory", "[loader]") {
  TraceOptions o = quiet(true);
  o.input_names = {"image"};
  o.output_names = {"logits"};
  models::LeNet net;
  net.eval();
  TracedModule t = trace(net, {randn({2, 1, 32, 32})}, o);
  Model m = load(t.save_to_bytes());
  REQUIRE(m.inputs().size() == 1);
  CHECK(m.inputs()[0].name == "image");
  CHECK(m.inputs()[0].shape == "[N, 1, 32, 32]");
  CHECK(m.inputs()[0].dynamic);
  CHECK(m.inputs()[0].sizes_at(5) == DimVec{5, 1, 32, 32});
  CHECK(m.outputs()[0].name == "logits");
  CHECK(m.outputs()[0].shape == "[N, 10]");
  CHECK(m.traced_batch() == 2);
  CHECK(m.metadata().example_input_shapes == std::vector<DimVec>{DimVec{2, 1, 32, 32}});
  CHECK_THAT(m.graph_text(), Catch::Matchers::Contains("conv2d("));
  CHECK(m.workspace_bytes(64) > m.workspace_bytes(1));
  Model copy = m;  // handles share the model
  CHECK(&copy.graph() == &m.graph());
}

TEST_CASE("models with PyTorch weights: loaded == eager == PyTorch at batch 1 and 8", "[loader][models]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  auto check = [&](const char* name, auto& model, double atol, double rtol) {
    model.load_state(dir + "/" + name + ".safetensors");
    model.eval();
    SafetensorsFile io = SafetensorsFile::open(dir + "/" + name + "_io.safetensors");
    TracedModule t = trace(model, {io.tensor("input.b1")}, quiet(true));
    Model m = load(t.save_to_bytes());
    for (int b : {1, 8}) {
      const Tensor x = io.tensor(str("input.b", b));
      const Tensor got = m.forward({x})[0];
      check_close(got, model(x), atol, rtol, str(name, " loaded vs eager at batch ", b));
      check_close(got, io.tensor(str("output.b", b)), 1e-5, 1e-4, str(name, " loaded vs PyTorch at batch ", b));
    }
    std::printf("%-12s loaded == eager == PyTorch at batch 1 and 8 (%zu nodes, %s per call at batch 8)\n", name,
                m.graph().num_nodes(), str(m.workspace_bytes(8) >> 10, " KiB").c_str());
  };
  models::LeNet lenet;
  check("lenet", lenet, 1e-5, 1e-5);
  models::ResNet18 resnet;
  check("resnet18", resnet, 1e-5, 1e-5);
  nn::TransformerEncoder enc(models::transformer_options(), models::kTransformerLayers);
  check("transformer", enc, 1e-5, 1e-5);
}

TEST_CASE("plans per batch size: many sizes, the cache stays bounded, results stay right", "[loader][dynamic]") {
  auto f = [](const Tensor& x) { return (x * 2).sum({1}); };
  TracedModule t = trace(f, {randn({2, 5})}, quiet(true));
  Model m = load(t.save_to_bytes());
  for (int round = 0; round < 2; ++round)
    for (int64_t n = 0; n < 20; ++n) {  // more sizes than the plan cache holds
      Tensor x = randn({n, 5});
      check_close(m.forward({x})[0], f(x), 1e-6, 1e-6, str("batch ", n));
    }
}

TEST_CASE("anomaly mode names the first node producing NaN or Inf", "[loader][anomaly]") {
  const int line = __LINE__ + 1;
  auto f = [](const Tensor& x) { return x.log() * 2 + 1; };
  TracedModule t = trace(f, {rand({4})}, quiet());
  LoadOptions o;
  o.anomaly_mode = true;
  Model checked = load(t.save_to_bytes(), o);
  Model plain = load(t.save_to_bytes());
  Tensor bad = tensor({1.f, -1.f, 2.f, 3.f});
  CHECK(std::isnan(plain.forward({bad})[0].to_vector<float>()[1]));
  AMBER_REQUIRE_ERROR(checked.forward({bad}), "produced NaN");
  AMBER_REQUIRE_ERROR(checked.forward({bad}), str("test_loader.cpp:", line));
  Tensor good = tensor({1.f, 0.5f, 2.f, 3.f});
  check_close(checked.forward({good})[0], f(good), 1e-6, 1e-6, "finite inputs pass");
  AMBER_REQUIRE_ERROR(checked.forward({tensor({1.f, 0.f, 2.f, 3.f})}), "produced Inf");
}

TEST_CASE("the profile counts every node of every call", "[loader][profile]") {
  models::LeNet net;
  net.eval();
  TracedModule t = trace(net, {randn({1, 1, 32, 32})}, quiet(true));
  LoadOptions o;
  o.profile = true;
  Model m = load(t.save_to_bytes(), o);
  for (int i = 0; i < 3; ++i) m.forward({randn({1, 1, 32, 32})});
  m.forward({randn({4, 1, 32, 32})});
  std::vector<NodeProfile> p = m.profile();
  REQUIRE_FALSE(p.empty());
  for (const NodeProfile& n : p) {
    INFO(n.node);
    CHECK(n.calls == 4);
    CHECK(n.bytes > 0);
    CHECK(n.total_ms >= 0);
  }
  CHECK(p[0].op == "fused_conv2d");  // conv1 and its ReLU
  CHECK_THAT(p[0].source, Catch::Matchers::Contains("@conv1"));
  m.reset_profile();
  for (const NodeProfile& n : m.profile()) CHECK(n.calls == 0);
  Model unprofiled = load(t.save_to_bytes());
  unprofiled.forward({randn({1, 1, 32, 32})});
  for (const NodeProfile& n : unprofiled.profile()) CHECK(n.calls == 0);
}

TEST_CASE("8 threads x 500 calls on one ResNet-18: every output bitwise identical", "[loader][threads]") {
  AMBER_CASE("conc.forward");
  manual_seed(7);
  models::ResNet18 net;
  net.eval();
  Tensor x = randn({1, 3, 64, 64});
  TracedModule t = trace(net, {x}, quiet());
  LoadOptions pinned;
  pinned.num_threads = 1;  // deterministic kernels for one intra-op thread count
  Model m = load(t.save_to_bytes(), pinned);
  const Tensor single = m.forward({x})[0];
  check_close(single, net(x), 1e-5, 1e-5, "loaded vs eager");
#ifdef AMBER_SANITIZER_BUILD
  constexpr int kThreads = 8, kCalls = 40;  // the sanitizers slow every call 5-20x
#else
  constexpr int kThreads = 8, kCalls = 500;
#endif
  std::atomic<int> mismatches{0}, errors{0}, failing_calls_ok{0};
  std::vector<std::thread> threads;
  {
    Model dropped = m;  // a handle destroyed while calls on others run
    threads.emplace_back([dropped = std::move(dropped), &failing_calls_ok]() mutable {
      for (int i = 0; i < 50; ++i) {
        try {
          dropped.forward({randn({1, 3, 65, 64})});  // the wrong shape: fails alone
        } catch (const Error& e) {
          failing_calls_ok += std::string(e.what()).find("input input0") != std::string::npos;
        }
      }
      dropped = Model();
    });
  }
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([&] {
      try {
        for (int i = 0; i < kCalls; ++i) {
          const Tensor y = m.forward({x})[0];
          if (std::memcmp(y.data(), single.data(), single.nbytes()) != 0) ++mismatches;
        }
      } catch (const std::exception& e) {
        ++errors;
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(mismatches == 0);
  CHECK(failing_calls_ok == 50);
  std::printf("%d threads x %d ResNet-18 calls (1x3x64x64): all %d outputs bitwise identical\n", kThreads, kCalls,
              kThreads * kCalls);
  // Sharing the cores: without pinning, concurrent calls still agree with a lone call.
  Model shared = load(t.save_to_bytes());
  const Tensor lone = shared.forward({x})[0];
  std::vector<std::thread> more;
  std::atomic<int> far{0};
  for (int k = 0; k < 4; ++k)
    more.emplace_back([&] {
      for (int i = 0; i < 20; ++i)
        if (!test::compare(shared.forward({x})[0], lone, 1e-5, 1e-5).ok) ++far;
    });
  for (std::thread& th : more) th.join();
  CHECK(far == 0);
}

TEST_CASE("dynamic int8 under concurrent calls of batch 1 and 2: each agrees with a lone call",
          "[loader][threads][precision]") {
  // Lazily made primitive variants (a signed source's zero point, other thread counts) and
  // the per-image loop, raced by calls that share the cores.
  manual_seed(9);
  models::ResNet18 net;
  net.eval();
  const auto bytes = trace(net, {randn({1, 3, 64, 64})}, quiet(true)).save_to_bytes();
  Model m;
  try {
    m = load(bytes, LoadOptions{.precision = Precision::dynamic_int8});
  } catch (const Error& e) {
    WARN("dynamic int8 not checked: " << e.what());
    return;
  }
  const std::vector<Tensor> inputs = {randn({1, 3, 64, 64}), randn({2, 3, 64, 64})};
  std::vector<Tensor> lone;
  for (const Tensor& x : inputs) lone.push_back(m.forward({x})[0]);
  CHECK(!test::compare(lone[0], load(bytes).forward({inputs[0]})[0], 1e-5, 1e-5).ok);  // int8 really ran
  // Sources are quantized per image (convolutions) and per row (linear layers): an image's
  // outputs do not depend on its batchmates.
  check_close(lone[1].slice(0, 1, 2), m.forward({inputs[1].slice(0, 1, 2)})[0], 1e-5, 1e-5, "image 1 of 2 alone");
#ifdef AMBER_SANITIZER_BUILD
  constexpr int kCalls = 4;
#else
  constexpr int kCalls = 20;
#endif
  std::atomic<int> far{0}, errors{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      try {
        for (int i = 0; i < kCalls; ++i) {
          const size_t j = size_t((k + i) % 2);
          if (!test::compare(m.forward({inputs[j]})[0], lone[j], 1e-5, 1e-5).ok) ++far;
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(far == 0);
}

TEST_CASE("4 threads calling loop and while_loop models with their own counts: each equals a lone call",
          "[loader][threads]") {
  const models::LoopGRU gru = models::random_loop_gru();
  const models::GreedyDecoder decoder = models::random_greedy_decoder();
  const Tensor x = randn({12, 2, 4});
  auto scalar = [](int64_t v) { return full({}, v, {DType::i64}); };
  TraceOptions o;
  o.print_warnings = false;
  const Model rnn = load(
      trace([&](const Tensor& xs, const Tensor& n) { return gru.forward(xs, n); }, {x, scalar(3)}, o).save_to_bytes(),
      LoadOptions{.num_threads = 2});
  const Model dec =
      load(trace([&](const Tensor& s, const Tensor& m) { return decoder.forward(s, m); }, {scalar(1), scalar(12)}, o)
               .save_to_bytes(),
           LoadOptions{.num_threads = 2});
  std::vector<std::vector<float>> want_rnn;
  std::vector<std::vector<int64_t>> want_dec;
  for (int64_t n = 0; n < 12; ++n) {
    want_rnn.push_back(rnn.forward({x, scalar(n)})[0].to_vector<float>());
    want_dec.push_back(dec.forward({scalar(n % 10), scalar(n)})[0].to_vector<int64_t>());
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 24; ++i) {
        const int64_t n = (t * 5 + i) % 12;
        if (rnn.forward({x, scalar(n)})[0].to_vector<float>() != want_rnn[size_t(n)]) ++mismatches;
        if (dec.forward({scalar(n % 10), scalar(n)})[0].to_vector<int64_t>() != want_dec[size_t(n)]) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}

TEST_CASE("concurrent loads of one archive; the last handle dropped while another thread runs", "[loader][threads]") {
  AMBER_CASE("conc.loads");
  manual_seed(8);
  models::LeNet net;
  net.eval();
  const Tensor x = randn({3, 1, 32, 32});
  const std::vector<uint8_t> bytes = trace(net, {x}, quiet(true)).save_to_bytes();
  const std::string path = temp("concurrent.amber");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  LoadOptions one;
  one.num_threads = 1;
  const Tensor want = load(bytes, one).forward({x})[0];
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 6; ++k)
    threads.emplace_back([&, k] {
      try {
        for (int i = 0; i < 5; ++i) {
          Model m = k % 2 ? load(path, one) : load(bytes, one);  // from the file and from memory
          Model copy = m;
          std::thread other([copy] { (void)copy.forward({randn({2, 1, 32, 32})}); });
          m = Model();  // this handle goes while `other` still calls through its copy
          const Tensor y = copy.forward({x})[0];
          if (std::memcmp(y.data(), want.data(), want.nbytes()) != 0) ++wrong;
          other.join();
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(wrong == 0);
}

TEST_CASE("a call too large for memory fails alone; the next call works", "[loader][resources]") {
  // [N, 4] -> [N, 4, kWide] materialised: at N = 2^20 that is 16 TiB (4 TiB under the sanitizers,
  // still over their allocators' 1 TiB; their 10-20x slower passes over a smaller batch row keep
  // this case to seconds: at 2^20 it took 79 s under ASan).
#ifdef AMBER_SANITIZER_BUILD
  constexpr int64_t kWide = 1 << 18;
#else
  constexpr int64_t kWide = 1 << 20;
#endif
  auto f = [](const Tensor& x) { return (x.unsqueeze(2).expand({x.size(0), 4, kWide}) + 1).sum({2}); };
  TracedModule t = trace(f, {randn({2, 4})}, quiet(true));
  Model m = load(t.save_to_bytes());
  AMBER_CASE("res.call-memory");
  AMBER_REQUIRE_ERROR(m.forward({randn({1 << 20, 4})}), "bytes");
  Tensor x = randn({3, 4});
  check_close(m.forward({x})[0], f(x), 1e-3, 1e-5, "after the failed call");
  {
    // Over-memory calls while four other threads keep calling: theirs all succeed, exactly.
    AMBER_CASE("conc.failing-call");
    const Tensor want = m.forward({x})[0];
    std::atomic<bool> stop{false};
    std::atomic<int> wrong{0}, calls{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
      threads.emplace_back([&] {
        while (!stop) {
          try {
            const Tensor y = m.forward({x})[0];
            if (std::memcmp(y.data(), want.data(), want.nbytes()) != 0) ++wrong;
          } catch (const std::exception&) {
            ++wrong;
          }
          ++calls;
        }
      });
    const Tensor huge = randn({1 << 20, 4});
    for (int i = 0; i < 20; ++i) AMBER_REQUIRE_ERROR(m.forward({huge}), "bytes of intermediate memory");
    while (calls < 100) std::this_thread::yield();
    stop = true;
    for (std::thread& th : threads) th.join();
    CHECK(wrong == 0);
  }
  // An explicit cap: each batch row needs 16 * kWide bytes of intermediates (a [4, kWide] f32 sum
  // operand): 16 MiB at 2^20.
  const int64_t row = 16 * kWide;
  LoadOptions capped;
  capped.max_workspace_bytes = size_t(20 * kWide);
  AMBER_REQUIRE_ERROR(load(t.save_to_bytes(), capped),
                      "this call needs " + std::to_string(2 * row) +
                          " bytes of intermediate memory, over the limit of " + std::to_string(20 * kWide) +
                          " (LoadOptions::max_workspace_bytes)");  // at the traced batch, 2
  capped.max_workspace_bytes = size_t(40 * kWide);
  Model c = load(t.save_to_bytes(), capped);
  AMBER_REQUIRE_ERROR(c.forward({randn({3, 4})}), "needs " + std::to_string(3 * row));
  check_close(c.forward({x.slice(0, 0, 2)})[0], f(x.slice(0, 0, 2)), 1e-3, 1e-5, "within the cap");
}

TEST_CASE("load warms the model up on zeros; a model whose kernels reject zeros loads all the same",
          "[loader][warmup]") {
  // Integer division: the warm-up on zeros divides by zero and fails; load must not.
  auto f = [](const Tensor& x) { return div(x * 6, x, "trunc"); };
  const Tensor x = arange(int64_t(1), int64_t(8));
  TracedModule t = trace(f, {x}, quiet());
  for (bool warm : {true, false}) {
    LoadOptions o;
    o.warm_up = warm;
    o.profile = true;
    Model m = load(t.save_to_bytes(), o);
    for (const NodeProfile& n : m.profile()) CHECK(n.calls == 0);  // the warm-up is not a call
    check_close(m.forward({x})[0], full({7}, int64_t(6), TensorOptions{DType::i64}), 0, 0, "x * 6 / x");
    AMBER_REQUIRE_ERROR(m.forward({zeros({7}, TensorOptions{DType::i64})}), "integer division by zero");
  }
}

TEST_CASE("output buffers are recycled once the caller drops them; outputs outlive the model", "[loader]") {
  TracedModule t = trace([](const Tensor& x) { return (x * 2).relu(); }, {randn({64, 300})}, quiet());
  Tensor kept;
  {
    Model m = load(t.save_to_bytes());
    const Tensor x = randn({64, 300});
    const void* first = nullptr;
    {
      const Tensor y = m.forward({x})[0];
      first = y.data();
    }
    const Tensor again = m.forward({x})[0];  // the same size: the dropped buffer comes back
    CHECK(again.data() == first);
    const Tensor other = m.forward({x})[0];  // `again` is still held: a different buffer
    CHECK(other.data() != again.data());
    check_close(other, (x * 2).relu(), 0, 0, "a recycled buffer's result");
    kept = m.forward({x})[0];
  }
  CHECK(kept.sum().item<float>() > 0);  // the model and its cache are gone; the output is not
}

TEST_CASE("BufferCache: exact sizes, bounded idle blocks, storage keeping the cache alive", "[loader]") {
  auto cache = std::make_shared<loader::BufferCache>(Device::cpu(), 2);
  const void* used[2] = {};
  {
    Storage a = cache->take(1000), b = cache->take(1000), c = cache->take(2000), d = cache->take(3000);
    used[0] = a.data();
    used[1] = b.data();
    CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
  }
  CHECK(cache->idle_count() == 3);  // one in the slot, two in the list, the fourth freed
  Storage again = cache->take(1000);
  CHECK((again.data() == used[0] || again.data() == used[1]));
  Storage fresh = cache->take(1500);  // no exact fit: new memory; the idle ones stay
  CHECK(cache->idle_count() == 2);
  Storage outlives = cache->take(4096);
  std::memset(outlives.data(), 7, 4096);
  std::weak_ptr<loader::BufferCache> watch = cache;
  cache.reset();
  CHECK_FALSE(watch.expired());  // the storages keep it
  CHECK(static_cast<unsigned char*>(outlives.data())[4095] == 7);
  again = Storage();
  fresh = Storage();
  outlives = Storage();
  CHECK(watch.expired());
}

TEST_CASE("steps too small for the thread pool run on the calling thread", "[loader]") {
  auto view = [](std::initializer_list<int64_t> sizes) {
    amber_tensor_view v{};
    v.dtype = int32_t(DType::f32);
    for (int64_t s : sizes) v.sizes[v.ndim++] = s;
    return v;
  };
  auto conv_ns = [&](int64_t n, int64_t c, int64_t k, int64_t hw_out, int64_t kernel) {
    const amber_tensor_view in[3] = {view({n, c, hw_out, hw_out}), view({k, c, kernel, kernel}), view({k})};
    const amber_tensor_view out = view({n, k, hw_out, hw_out});
    return loader::estimate_step_ns(op_schema("conv2d").cost, in, 3, &out, 1);
  };
  CHECK(conv_ns(1, 6, 16, 13, 3) < loader::kParallelMinNs);          // LeNet's conv2 at batch 1
  CHECK(conv_ns(64, 6, 16, 13, 3) > loader::kParallelMinNs);         // ... at batch 64
  CHECK(conv_ns(1, 512, 512, 7, 3) > 100 * loader::kParallelMinNs);  // ResNet-18's last convs
  const amber_tensor_view fc_in[3] = {view({1, 576}), view({120, 576}), view({120})}, fc_out = view({1, 120});
  CHECK(loader::estimate_step_ns(op_schema("linear").cost, fc_in, 3, &fc_out, 1) < loader::kParallelMinNs);
  const amber_tensor_view big_in[2] = {view({128, 256}), view({256, 256})}, big_out = view({128, 256});
  CHECK(loader::estimate_step_ns(op_schema("matmul").cost, big_in, 2, &big_out, 1) > loader::kParallelMinNs);
  const amber_tensor_view small = view({6, 30, 30}), large = view({64, 256, 56, 56});
  CHECK(loader::estimate_step_ns(op_schema("relu").cost, &small, 1, &small, 1) < loader::kParallelMinNs);
  CHECK(loader::estimate_step_ns(op_schema("relu").cost, &large, 1, &large, 1) > loader::kParallelMinNs);
  // The cost kinds are the table's.
  CHECK(op_schema("conv2d").cost == OpCost::conv);
  CHECK(op_schema("conv_transpose2d").cost == OpCost::conv_transpose);
  for (const char* op : {"linear", "matmul", "mm", "bmm"}) CHECK(op_schema(op).cost == OpCost::matmul);
  CHECK(op_schema("scaled_dot_product_attention").cost == OpCost::attention);
  CHECK(op_schema("add").cost == OpCost::memory);
  for (const char* op : {"max_pool2d", "max_pool2d_with_indices", "avg_pool2d"})
    CHECK(op_schema(op).cost == OpCost::window);
  // A pooling window's comparisons count, and so do the bytes it reads and writes: 3 x 3
  // over 64 x 56 x 56 outputs; LeNet's 2 x 2 pool at batch 64 is worth the pool (its bytes:
  // counted by comparisons alone it ran on one thread, twice as slow).
  const amber_tensor_view pool_in = view({1, 64, 112, 112}), pool_out = view({1, 64, 56, 56});
  CHECK(loader::estimate_step_ns(OpCost::window, &pool_in, 1, &pool_out, 1, 9) ==
        Approx(64 * 56 * 56 * 9 / 40.0 + (64 * 112 * 112 + 64 * 56 * 56) * 4 / 8.0));
  const amber_tensor_view lenet_in = view({64, 6, 30, 30}), lenet_out = view({64, 6, 15, 15});
  CHECK(loader::estimate_step_ns(OpCost::window, &lenet_in, 1, &lenet_out, 1, 4) > loader::kParallelMinNs);
}

// What the product-activation fusion tests check of model f traced on x: the loaded graph has
// `count` nodes of `op` and each of `attrs`; loaded equals eager (the unfused ops) at batch 1
// and 3, also with a NaN, an infinity and a negative infinity at offsets `bad` of the input (the
// last counted from its end), where the first output must hold NaN; and in bf16 and dynamic int8,
// where the processor offers them, within their e2e bounds of the eager (f32) outputs. Returns
// the model loaded in f32.
Model check_product_fusion(const std::function<std::vector<Tensor>(const Tensor&)>& f, const Tensor& x, const char* op,
                           size_t count, const std::vector<std::string>& attrs, const std::array<int64_t, 3>& bad) {
  const TracedModule t = trace(f, {x}, quiet(true));
  const std::vector<uint8_t> bytes = t.save_to_bytes();
  Model m = load(bytes);
  const std::string text = m.graph_text(), node = str("= ", op, "(");
  INFO(text);
  size_t fused = 0;
  for (size_t at = text.find(node); at != std::string::npos; at = text.find(node, at + 1)) ++fused;
  CHECK(fused == count);
  for (const std::string& a : attrs) CHECK(text.find(a) != std::string::npos);
  for (int64_t n : {int64_t(1), int64_t(3)}) {
    Tensor xs = x.slice(0, 0, n).clone();
    check_loaded(t, {xs}, f(xs), 2e-5, 2e-5, "batch " + std::to_string(n));
    float* p = xs.data_ptr<float>();
    p[bad[0]] = std::nanf("");
    p[bad[1]] = INFINITY;
    p[xs.numel() - bad[2]] = -INFINITY;
    const std::vector<Tensor> want = f(xs), got = m.forward({xs});
    size_t nans = 0;
    for (double v : want[0].to_vector<double>(SrcLoc::none())) nans += std::isnan(v);
    CHECK(nans > 0);
    for (size_t i = 0; i < want.size(); ++i) check_close(got[i], want[i], 2e-5, 2e-5, "non-finite input");
  }
  const std::vector<Tensor> want = f(x);
  for (const auto& [precision, bound] : {std::pair{Precision::bf16, 2e-2}, std::pair{Precision::dynamic_int8, 4e-2}}) {
    Model reduced;
    try {
      reduced = load(bytes, LoadOptions{.precision = precision});
    } catch (const Error& e) {
      WARN(op << " in " << precision_name(precision) << " not checked: " << e.what());
      continue;
    }
    const std::vector<Tensor> got = reduced.forward({x});
    for (size_t i = 0; i < want.size(); ++i) {
      const double ref_max = amax(abs(want[i]), {}).item<double>();
      const double err = amax(abs(got[i] - want[i]), {}).item<double>();
      INFO(precision_name(precision) << " output " << i << ": max |diff| " << err << " against max |ref| " << ref_max);
      CHECK(err <= bound * ref_max);
    }
  }
  return m;
}

TEST_CASE("product-activation fusion: relu, relu6, clamp, silu and hardswish after linear layers; NaN kept",
          "[loader][fusion]") {
  // Odd sizes; linear layers with and without bias over 2-D and 3-D rows, each followed by an
  // activation the pass fuses into a fused_linear (format 1.8); a layer read twice and one
  // whose output is the graph's stay apart; checked as check_product_fusion says.
  Generator gen(17);
  auto init = [&](const DimVec& shape, double scale) { return randn(shape, {}, &gen) * scale; };
  Tensor w1 = init({12, 7}, 0.6), b1 = init({12}, 0.5), w2 = init({9, 12}, 0.4), w3 = init({10, 9}, 0.4);
  Tensor b3 = init({10}, 0.2), w4 = init({6, 10}, 0.4), w5 = init({5, 6}, 0.4);
  auto f = [&](const Tensor& x) {
    Tensor h = relu6(linear(x, w1, b1));
    h = clamp(linear(h, w2), -0.75, 1.25);
    h = sigmoid(linear(h, w3, b3)) * linear(h, w3, b3);  // x * sigmoid(x): silu (after CSE)
    const Tensor c = linear(h, w4);                      // read twice: apart
    const Tensor y = hardswish(linear(relu(c) + c, w5));
    return std::vector<Tensor>{y, relu(linear(h, w4, b3.slice(0, 0, 6))), linear(y, w5.slice(1, 0, 5))};
  };
  const Model m = check_product_fusion(f, randn({3, 4, 7}, {}, &gen), "fused_linear", 5,
                                       {"activation=\"clamp\", min_val=-0.75, max_val=1.25",
                                        "activation=\"clamp\", min_val=0.0, max_val=inf", "activation=\"silu\""},
                                       {3, 9, 2});
  CHECK(m.metadata().format_minor == 8);
}

TEST_CASE("product-activation fusion: relu, relu6, clamp, silu and hardswish after convolutions; NaN kept",
          "[loader][fusion]") {
  // Odd sizes; a plain, a depthwise, a strided grouped and a 1x1 convolution, each followed by
  // an activation the pass fuses, with weights large enough that clamp's upper bound bites;
  // a convolution read twice stays apart, one followed by relu and one by a one-sided clamp
  // fuse (docs/OPS.md, "Convolutions and linear layers with their activation"); checked as
  // check_product_fusion says.
  Generator gen(13);
  auto init = [&](const DimVec& shape, double scale) { return randn(shape, {}, &gen) * scale; };
  Tensor w1 = init({8, 3, 3, 3}, 2.0), b1 = init({8}, 1.0), w2 = init({8, 1, 3, 3}, 0.5), w3 = init({6, 4, 3, 3}, 0.3);
  Tensor b3 = init({6}, 0.3), w4 = init({5, 6, 1, 1}, 0.5), w5 = init({5, 5, 1, 1}, 0.5), w6 = init({4, 5, 1, 1}, 0.5);
  auto f = [&](const Tensor& x) {
    Tensor h = relu6(conv2d(x, w1, b1, {1}, {1}));                            // clamp(0, 6)
    h = hardtanh(conv2d(h, w2, {}, {1}, {1}, {1}, /*groups=*/8), -2.5, 4.0);  // depthwise, clamp
    h = silu(conv2d(h, w3, b3, {2}, {1}, {1}, /*groups=*/2));                 // strided, grouped
    const Tensor c = conv2d(h, w4);                                           // read twice: apart
    Tensor y = hardswish(conv2d(relu(c) + c, w5));                            // 1x1, hardswish
    return std::vector<Tensor>{y, sigmoid(conv2d(y, w5)) * conv2d(y, w5),     // x * sigmoid(x): silu
                               relu(conv2d(y, w6)),
                               clamp(conv2d(y, w6, b3.slice(0, 0, 4)), -1.0)};  // [0, inf], [-1, inf]
  };
  check_product_fusion(
      f, randn({3, 3, 11, 9}, {}, &gen), "fused_conv2d", 7,
      {"activation=\"clamp\", min_val=-2.5, max_val=4.0", "activation=\"clamp\", min_val=0.0, max_val=inf",
       "activation=\"clamp\", min_val=-1.0, max_val=inf"},
      {5, 40, 3});
}

TEST_CASE("precision bf16: convolutions and linear layers in bf16 near f32; products of inputs stay f32",
          "[loader][precision]") {
  // Odd sizes, a grouped and a transposed convolution, a linear layer with and without bias,
  // and a product whose weight is an input (mutable: never converted).
  // Weights scaled as PyTorch initialises them (1 / sqrt(fan-in)), from a fixed seed.
  Generator gen(11);
  auto init = [&](const DimVec& shape, double fan_in) { return randn(shape, {}, &gen) * (1 / std::sqrt(fan_in)); };
  Tensor w1 = init({6, 3, 3, 3}, 27), b1 = init({6}, 27), w2 = init({6, 2, 3, 3}, 18), wt = init({6, 4, 2, 2}, 24);
  Tensor w3 = init({5, 4 * 10 * 8}, 320), b3 = init({5}, 320), w4 = init({7, 5}, 5);
  auto f = [&](const Tensor& x, const Tensor& a, const Tensor& m) {
    Tensor h = relu(conv2d(x, w1, b1, {1}, {1}));
    h = conv2d(h, w2, {}, {2}, {1}, {1}, /*groups=*/3);
    h = conv_transpose2d(h, wt, {}, {2});
    Tensor y = linear(linear(h.flatten(1), w3, b3), w4);
    return std::vector<Tensor>{y, matmul(a, m)};
  };
  const Tensor x = randn({2, 3, 9, 7}, {}, &gen), a = randn({3, 11}, {}, &gen), m = randn({11, 4}, {}, &gen);
  const std::vector<Tensor> want = f(x, a, m);
  const auto bytes = trace(f, {x, a, m}, quiet()).save_to_bytes();
  const Model f32 = load(bytes);
  Model bf16;
  try {
    bf16 = load(bytes, LoadOptions{.precision = Precision::bf16});
  } catch (const Error& e) {  // a processor without AVX512-BF16: the refusal is the contract
    CHECK_THAT(e.what(), Catch::Matchers::Contains("precision bf16 is not offered by the cpu backend") &&
                             Catch::Matchers::Contains("AVX512-BF16"));
    WARN("precision bf16 not checked: " << e.what());
    return;
  }
  const auto got32 = f32.forward({x, a, m}), got16 = bf16.forward({x, a, m});
  double ref_max = 0, err = 0, moved = 0;
  const auto ref = want[0].to_vector<double>(SrcLoc::none()), g16 = got16[0].to_vector<double>(SrcLoc::none()),
             g32 = got32[0].to_vector<double>(SrcLoc::none());
  for (size_t i = 0; i < ref.size(); ++i) {
    ref_max = std::max(ref_max, std::fabs(ref[i]));
    err = std::max(err, std::fabs(g16[i] - ref[i]));
    moved = std::max(moved, std::fabs(g16[i] - g32[i]));
  }
  INFO("bf16 max |diff| " << err << " against max |ref| " << ref_max << "; from the f32 load " << moved);
  CHECK(err <= 2e-2 * ref_max);   // bf16's 8 significant bits through four products
  CHECK(moved > 1e-4 * ref_max);  // and the products really ran in bf16
  check_close(got32[0], want[0], 1e-4, 1e-4, "f32 load");
  check_close(got16[1], got32[1], 0, 0, "a product of two inputs (not converted)");
}

TEST_CASE("precision dynamic int8: convolutions and linear layers in int8 near f32; zeros, NaN; the rest stays f32",
          "[loader][precision]") {
  // Odd sizes; a convolution of a signed source (a zero point) with bias and one of a ReLU's
  // output (none) without, a depthwise one (stays f32); linear layers with and without bias,
  // over 2-D and 3-D inputs, one with more rows than the matmul threshold (192); and a
  // product of two inputs (stays f32 bit for bit). Weights scaled as PyTorch initialises them.
  Generator gen(12);
  auto init = [&](const DimVec& shape, double fan_in) { return randn(shape, {}, &gen) * (1 / std::sqrt(fan_in)); };
  Tensor wc = init({6, 3, 3, 3}, 27), bc = init({6}, 27), wc2 = init({5, 6, 3, 3}, 54), wd = init({5, 1, 3, 3}, 9);
  Tensor w1 = init({37, 5 * 5 * 6}, 150), b1 = init({37}, 150), w2 = init({9, 37}, 37);
  Tensor w3 = init({515, 33}, 33), b3 = init({515}, 33);
  auto f = [&](const Tensor& x, const Tensor& s, const Tensor& a, const Tensor& m) {
    Tensor h = conv2d(relu(conv2d(x, wc, bc, {1}, {1})), wc2, {}, {1}, {1});
    Tensor d = conv2d(h, wd, {}, {1}, {1}, {1}, /*groups=*/5);
    Tensor y = linear(relu(linear(relu(d).flatten(1), w1, b1)), w2);
    return std::vector<Tensor>{y, linear(s, w3, b3), h, matmul(a, m)};
  };
  Tensor x = randn({3, 3, 5, 6}, {}, &gen), s = randn({2, 101, 33}, {}, &gen);
  const Tensor a = randn({3, 11}, {}, &gen), m = randn({11, 4}, {}, &gen);
  const auto bytes = trace(f, {x, s, a, m}, quiet()).save_to_bytes();
  Model int8;
  try {
    int8 = load(bytes, LoadOptions{.precision = Precision::dynamic_int8});
  } catch (const Error& e) {  // a processor without AVX512-VNNI: the refusal is the contract
    CHECK_THAT(e.what(), Catch::Matchers::Contains("precision dynamic-int8 is not offered by the cpu backend") &&
                             Catch::Matchers::Contains("AVX512-VNNI"));
    WARN("precision dynamic-int8 not checked: " << e.what());
    return;
  }
  const Model f32 = load(bytes);
  // A row of zeros gives the bias alone, exactly; a row holding NaN gives NaN.
  float* sp = s.data_ptr<float>();  // [2, 101, 33], contiguous
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t j = 0; j < 33; ++j) sp[(n * 101 + 7) * 33 + j] = 0.0f;
  sp[(1 * 101 + 3) * 33 + 5] = std::nanf("");
  const std::vector<Tensor> want = f(x, s, a, m);
  const auto got32 = f32.forward({x, s, a, m}), got8 = int8.forward({x, s, a, m});
  for (int k : {0, 1, 2}) {
    double ref_max = 0, err = 0, moved = 0;
    const auto ref = want[size_t(k)].to_vector<double>(SrcLoc::none()),
               g8 = got8[size_t(k)].to_vector<double>(SrcLoc::none()),
               g32 = got32[size_t(k)].to_vector<double>(SrcLoc::none());
    for (size_t i = 0; i < ref.size(); ++i) {
      if (std::isnan(ref[i])) {
        CHECK(std::isnan(g8[i]));
        continue;
      }
      ref_max = std::max(ref_max, std::fabs(ref[i]));
      err = std::max(err, std::fabs(g8[i] - ref[i]));
      moved = std::max(moved, std::fabs(g8[i] - g32[i]));
    }
    INFO("output " << k << ": int8 max |diff| " << err << " against max |ref| " << ref_max << "; from the f32 load "
                   << moved);
    CHECK(err <= 4e-2 * ref_max);   // 8-bit sources and channels through up to five products
    CHECK(moved > 1e-4 * ref_max);  // and the products really ran in int8
  }
  check_close(got8[1].select(1, 7), b3.expand({2, 515}), 0, 0, "rows of zeros: the bias");
  check_close(got8[3], got32[3], 0, 0, "a product of two inputs (not converted)");
  // A convolution's source holding an infinity or NaN runs that call in f32: the f32 load's
  // outputs, NaN where they are NaN.
  Tensor xn = x.clone();
  xn.data_ptr<float>()[7] = std::nanf("");
  const auto n8 = int8.forward({xn, s, a, m})[2].to_vector<double>(SrcLoc::none()),
             n32 = f32.forward({xn, s, a, m})[2].to_vector<double>(SrcLoc::none());
  size_t finite = 0;
  for (size_t i = 0; i < n8.size(); ++i) {
    if (std::isnan(n32[i])) {
      CHECK(std::isnan(n8[i]));
    } else {
      CHECK(n8[i] == n32[i]);
      ++finite;
    }
  }
  CHECK(finite > 0);
}

TEST_CASE("quantized_conv2d and quantized_linear: an infinity saturates, an image or row holding a NaN is NaN",
          "[eager][precision]") {
  // Eagerly (a state per call) and loaded (the state of setup): an image (a row) holding a NaN
  // gives NaN in all its outputs, an infinity quantizes as the largest finite value would,
  // and the other images (rows) are untouched.
  const test::Int8Layers layers(31);
  const Tensor &w = layers.w, &ws = layers.ws, &b = layers.b, &lw = layers.lw, &ls = layers.ls;
  auto conv = [&](const Tensor& x) { return quantized_conv2d(x, w, ws, b, {1}, {1}, {1}, 1, 0.02, 100, "none", 0, 6); };
  auto lin = [&](const Tensor& x) { return quantized_linear(x, lw, ls, {}, 0.03, 7); };
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = true;
  const Model conv_m = load(trace(conv, {randn({1, 2, 5, 5})}, o).save_to_bytes());
  const Model lin_m = load(trace(lin, {randn({1, 16})}, o).save_to_bytes());
  const Tensor x = randn({3, 2, 5, 5}), m = randn({4, 16});
  Tensor xn = x.clone(), xs = x.clone(), mn = m.clone(), ms = m.clone();
  xn.data_ptr<float>()[50 + 13] = std::nanf("");  // image 1
  xn.data_ptr<float>()[100 + 7] = INFINITY;       // image 2
  xs.data_ptr<float>()[100 + 7] = 1e30f;
  mn.data_ptr<float>()[16 + 3] = std::nanf("");  // row 1
  mn.data_ptr<float>()[32 + 9] = -INFINITY;      // row 2
  ms.data_ptr<float>()[32 + 9] = -1e30f;
  auto exact = [](const Tensor& got, const Tensor& want, const char* what) {
    const test::Diff d = test::compare(got, want, 0, 0);
    INFO(what << ": " << d.message);
    CHECK(d.ok);
  };
  for (bool loaded : {false, true}) {
    INFO((loaded ? "loaded" : "eager"));
    const Tensor y = loaded ? conv_m.forward({xn})[0] : conv(xn), ys = conv(xs);
    exact(y.select(0, 0), ys.select(0, 0), "image 0");
    exact(y.select(0, 2), ys.select(0, 2), "image 2: the infinity saturates");
    for (float v : y.select(0, 1).to_vector<float>(SrcLoc::none())) CHECK(std::isnan(v));
    const Tensor z = loaded ? lin_m.forward({mn})[0] : lin(mn), zs = lin(ms);
    exact(z.select(0, 0), zs.select(0, 0), "row 0");
    exact(z.select(0, 3), zs.select(0, 3), "row 3");
    exact(z.select(0, 2), zs.select(0, 2), "row 2: the infinity saturates");
    for (float v : z.select(0, 1).to_vector<float>(SrcLoc::none())) CHECK(std::isnan(v));
  }
}

TEST_CASE("quantized ops with weights, scales or bias computed per call: set up from shapes only, checked per call",
          "[loader][precision]") {
  // A step's setup sees only the constants' contents (the others' data is null): weights,
  // scales or bias computed in the graph are read, and checked, on each call instead.
  const test::Int8Layers layers(37);
  const Tensor &w = layers.w, &ws = layers.ws, &b = layers.b, &lw = layers.lw, &ls = layers.ls;
  auto conv = [&](const Tensor& x, const Tensor& s) {
    return quantized_conv2d(x, w, ws * s, b + s, {1}, {1}, {1}, 1, 0.02, 100, "none", 0, 6);
  };
  auto lin = [&](const Tensor& x, const Tensor& s) {
    return quantized_linear(x, (lw.to(DType::f32) * s).to(DType::i8), ls * s, {}, 0.03, 7);
  };
  const Tensor x = randn({2, 2, 5, 5}), m = randn({3, 16}), one = ones({1});
  const Model conv_m = load(trace(conv, {x, one}, quiet()).save_to_bytes());
  const Model lin_m = load(trace(lin, {m, one}, quiet()).save_to_bytes());
  for (double s : {1.0, 0.5}) {
    const Tensor st = full({1}, s);
    check_close(conv_m.forward({x, st})[0], conv(x, st), 0, 0, "conv, scale " + std::to_string(s));
    check_close(lin_m.forward({m, st})[0], lin(m, st), 0, 0, "linear, scale " + std::to_string(s));
  }
  const Tensor negative = full({1}, -1.0);
  AMBER_REQUIRE_ERROR(conv_m.forward({x, negative}), "the scales must be finite and non-negative");
  AMBER_REQUIRE_ERROR(conv(x, negative), "the scales must be finite and non-negative");
  AMBER_REQUIRE_ERROR(lin_m.forward({m, negative}), "the scales must be finite and non-negative");
  AMBER_REQUIRE_ERROR(lin(m, negative), "the scales must be finite and non-negative");
  check_close(conv_m.forward({x, one})[0], conv(x, one), 0, 0, "conv after the refusal");
}
