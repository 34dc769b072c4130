// Tracer tests: the graphs of DESIGN.md's samples, warnings and strict mode, check_trace on
// a planted data-dependent branch, dynamic batch (and what it refuses), and whole models
// (LeNet, ResNet-18, the transformer encoder) traced at batch 1 and run at batch 1 and 8
// against eager execution; quantize_int8's uint8 chains between int8 layers. Every traced graph
// must print, parse and print to the same text.

#include <sstream>

#include "amber/graph/text.h"
#include "amber/graph/verify.h"
#include "models/programs.h"
#include "models/resnet.h"
#include "models/small.h"
#include "test_util.h"

using namespace amber;

namespace {

void check_round_trip(const graph::Graph& g) {
  const std::string text = graph::to_text(g);
  graph::Graph back = graph::parse_graph(text);
  CHECK(graph::to_text(back) == text);
}

void check_close(const Tensor& a, const Tensor& b, double atol, double rtol, const std::string& what) {
  test::Diff d = test::compare(a, b, atol, rtol);
  INFO(what << ": " << d.message << " (max |diff| " << d.max_abs << ")");
  CHECK(d.ok);
}

TraceOptions quiet() {
  TraceOptions o;
  o.print_warnings = false;
  return o;
}

Tensor two_x_plus_y(const Tensor& x, const Tensor& y) { return 2 * x + y; }

}  // namespace

TEST_CASE("sample 1: the graph of 2*x + y", "[tracer][samples]") {
  TraceOptions o = quiet();
  o.optimize = false;
  TracedModule t = trace(two_x_plus_y, {tensor({1.f, 2.f, 3.f}), tensor({0.5f, -1.f, 4.f})}, o);
  CHECK(graph::to_text(t.graph()) ==
        "graph(%input0 : f32[3], %input1 : f32[3]) {\n"
        "  %0 : f32[3] = mul.Scalar(%input0, other=2)\n"
        "  %1 : f32[3] = add(%0, %input1, alpha=1)\n"
        "  return (output0 = %1)\n"
        "}\n");
  Tensor a = tensor({-1.f, 0.f, 7.f}), b = tensor({2.f, 2.f, 2.f});
  CHECK(test::compare(t.forward({a, b})[0], two_x_plus_y(a, b), 0, 0).ok);
  TracedModule opt = trace(two_x_plus_y, {a, b}, quiet());
  CHECK(opt.graph().num_nodes() == 1);
  CHECK(test::compare(opt.forward({a, b})[0], two_x_plus_y(a, b), 0, 0).ok);
}

TEST_CASE("sample 2: printing inside forward works and the graph is mm + add", "[tracer][samples]") {
  Tensor t = ones({3, 3});
  int prints = 0;
  auto f = [&](const Tensor& x) {
    Tensor y = x.mm(x);
    std::ostringstream os;
    os << y;  // printing is not a host read the trace warns of
    prints += !os.str().empty();
    return y + t;
  };
  TracedModule tr = trace(f, {randn({3, 3})}, quiet());
  CHECK(prints == 1);
  CHECK(tr.warnings().empty());
  std::vector<std::string> ops;
  for (const graph::Node* n : tr.graph().nodes()) ops.push_back(n->op->name);
  CHECK(ops == std::vector<std::string>{"mm", "add"});
  CHECK(tr.graph().constants().size() == 1);
  CHECK(tr.graph().constants()[0]->source.find("test_tracer.cpp:") == 0);  // const_0 names where t was made
  Tensor x = randn({3, 3});
  CHECK(test::compare(tr.forward({x})[0], f(x), 0, 0).ok);
}

TEST_CASE("sample 3: a loop is unrolled", "[tracer][samples]") {
  auto per_row = [](const Tensor& x) {
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < x.size(0); ++i) {
      Tensor r = x.select(0, i).reshape({1, -1});
      rows.push_back(r.mm(r.t()) + 1.0);
    }
    return cat(rows, 0);
  };
  Tensor x = randn({4, 3});
  TracedModule t = trace(per_row, {x}, quiet());
  int mms = 0;
  for (const graph::Node* n : t.graph().nodes()) mms += n->op->name == "mm";
  CHECK(mms == 4);
  Tensor x2 = randn({4, 3});
  CHECK(test::compare(t.forward({x2})[0], per_row(x2), 0, 0).ok);
  AMBER_REQUIRE_ERROR(t.forward({randn({5, 3})}), "input input0: expected f32[4, 3], got f32[5, 3]");
}

TEST_CASE("sample 4: ten muls fuse into one node, bit-identical", "[tracer][samples]") {
  auto ten_mul = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 10; ++i) y = y * y;
    return y;
  };
  Tensor x = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f});
  TracedModule t = trace(ten_mul, {x}, quiet());
  REQUIRE(t.graph().num_nodes() == 1);
  CHECK(t.graph().nodes()[0]->op->name == "fused");
  CHECK(test::compare(t.forward({x})[0], ten_mul(x), 0, 0).ok);
  CHECK(t.recorded_graph().num_nodes() == 10);
}

TEST_CASE("sample 5: pairwise distances by broadcasting", "[tracer][samples]") {
  auto pairwise = [](const Tensor& a, const Tensor& b) {
    Tensor d = a.unsqueeze(1) - b.unsqueeze(0);
    return (d * d).sum({-1});
  };
  Tensor a = randn({100, 2}), b = randn({200, 2});
  TracedModule t = trace(pairwise, {a, b}, quiet());
  check_close(t.forward({a, b})[0], pairwise(a, b), 0, 0, "pairwise");
  check_round_trip(t.graph());
}

TEST_CASE("a data-dependent branch: warning with its line, strict error, check_trace divergence", "[tracer]") {
  int branch_line = 0;
  auto branchy = [&branch_line](const Tensor& x) {
    branch_line = __LINE__ + 1;
    if (x.sum().item<float>() > 0) return x * 2;
    return x * 3;
  };
  Tensor pos = tensor({1.f, 2.f, 3.f}), neg = tensor({-1.f, -2.f, -3.f});
  TracedModule t = trace(branchy, {pos}, quiet());
  REQUIRE(t.warnings().size() == 1);
  CHECK(t.warnings()[0].kind == "host read");
  CHECK(t.warnings()[0].source == str("test_tracer.cpp:", branch_line));
  CHECK_THAT(t.warnings()[0].message, Catch::Matchers::Contains("item()"));
  TraceOptions strict = quiet();
  strict.strict = true;
  AMBER_REQUIRE_ERROR(trace(branchy, {pos}, strict),
                      str("trace (strict): test_tracer.cpp:", branch_line, ": reading tensor data"));
  // Same sign: the trace holds.
  CHECK(check_trace(t, branchy, {tensor({4.f, 5.f, 6.f})}).ok);
  // Other sign: the branch differs at the mul, whose attribute and line are named.
  CheckTraceResult r = check_trace(t, branchy, {neg});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Matchers::Contains("= mul.Scalar (test_tracer.cpp:"));
  CHECK_THAT(r.message, Catch::Matchers::Contains("attribute other was traced as 2 but the code now gives 3"));
}

TEST_CASE("raw pointers to traced values warn: reads are baked in, writes are not recorded", "[tracer]") {
  auto poke = [](const Tensor& x) {
    Tensor y = x * 2;
    y.data_ptr<float>()[0] = 42;  // an in-place write the graph cannot see
    return y + 1;
  };
  TracedModule t = trace(poke, {ones({3})}, quiet());
  REQUIRE(t.warnings().size() == 1);
  CHECK_THAT(t.warnings()[0].message, Catch::Matchers::Contains("in-place write through it is not recorded"));
  CHECK_FALSE(check_trace(t, poke).ok);  // the graph gives 3, eager code 43
}

TEST_CASE("random ops warn and are frozen; input and output names", "[tracer]") {
  auto noisy = [](const Tensor& x) { return std::vector<Tensor>{x + rand({3}), x * 2}; };
  TraceOptions o = quiet();
  o.input_names = {"features"};
  o.output_names = {"noisy", "doubled"};
  TracedModule t = trace(noisy, {ones({3})}, o);
  REQUIRE(t.warnings().size() == 1);
  CHECK(t.warnings()[0].kind == "random");
  const std::string text = graph::to_text(t.graph());
  CHECK(text.rfind("graph(%features : f32[3])", 0) == 0);
  CHECK_THAT(text, Catch::Matchers::Contains("return (noisy = %"));
  CHECK_THAT(text, Catch::Matchers::Contains(", doubled = %"));
  // The random values are a constant: two runs agree.
  CHECK(test::compare(t.forward({ones({3})})[0], t.forward({ones({3})})[0], 0, 0).ok);
  o.strict = true;
  AMBER_REQUIRE_ERROR(trace(noisy, {ones({3})}, o), "rand() creates random values");
}

TEST_CASE("dynamic batch: sizes become expressions in N; what cannot generalise is refused", "[tracer][dynamic]") {
  auto f = [](const Tensor& x) {
    Tensor flat = x.reshape({x.size(0) * 3, -1});
    Tensor z = zeros({x.size(0), 4});
    return std::vector<Tensor>{flat, z + x.sum({1}, true)};
  };
  TraceOptions o = quiet();
  o.dynamic_batch = true;
  TracedModule t = trace(f, {randn({2, 3, 4})}, o);
  const std::string text = graph::to_text(t.graph());
  CHECK(text.rfind("graph(%input0 : f32[N, 3, 4])", 0) == 0);
  CHECK_THAT(text, Catch::Matchers::Contains("shape=[3*N, -1]"));
  CHECK_THAT(text, Catch::Matchers::Contains("size=[N, 4]"));
  check_round_trip(t.graph());
  for (int64_t n : {1, 5}) {
    Tensor x = randn({n, 3, 4});
    auto got = t.forward({x});
    auto want = f(x);
    check_close(got[0], want[0], 0, 0, "reshape");
    check_close(got[1], want[1], 1e-6, 1e-6, "zeros + sum");
  }
  // A size baked in: the model fails at batch 3.
  auto baked = [](const Tensor& x) { return x.reshape({2, 12}); };
  AMBER_REQUIRE_ERROR(trace(baked, {randn({2, 3, 4})}, o), "fails at N=3, so it bakes a size in");
  // A constant sized by the batch, made outside the op table.
  auto captured = [](const Tensor& x) {
    return x + tensor(std::vector<float>(size_t(x.size(0)) * 3, 1.f), {x.size(0), 3});
  };
  AMBER_REQUIRE_ERROR(trace(captured, {randn({2, 3})}, o), "it bakes a dynamic size in");
  // The structure depends on dim 0 (a time loop, not a batch).
  models::ElmanRNN rnn(3, 4, 2);
  AMBER_REQUIRE_ERROR(trace(rnn, {randn({3, 1, 3})}, o), "the model's structure depends on a dynamic size");
  // ... but its batch is dim 1 ([T, N, in]): with batch_dim = 1 it generalises.
  o.batch_dim = 1;
  TracedModule seq = trace(rnn, {randn({3, 1, 3})}, o);
  CHECK(graph::to_text(seq.graph()).rfind("graph(%input0 : f32[3, N, 3])", 0) == 0);
  Tensor x5 = randn({3, 5, 3});
  check_close(seq.forward({x5})[0], rnn(x5), 1e-6, 1e-6, "Elman RNN traced at N=1, run at N=5");
  o.batch_dim = 3;
  AMBER_REQUIRE_ERROR(trace(rnn, {randn({3, 1, 3})}, o), "has no batch dimension 3 to vary");
}

TEST_CASE("named dynamic dims: sizes in N and T, products included; what does not fit is refused",
          "[tracer][dynamic]") {
  const Tensor w = randn({8, 5});
  // x [N, T, 8]: flattened to [N*T, 8] for a matmul, back to [N, T, 5], a T-long
  // position ramp added, then the first T-1 steps and the sum over T.
  auto f = [&](const Tensor& x) {
    const int64_t n = x.size(0), t = x.size(1);
    Tensor y = x.reshape({n * t, 8}).matmul(w).reshape({n, t, 5});
    y = y + arange(int64_t(0), t, int64_t(1), {DType::f32}).reshape({1, t, 1});
    return std::vector<Tensor>{y.slice(1, 0, t - 1), y.sum({1})};
  };
  TraceOptions o = quiet();
  o.dynamic_batch = true;
  o.dynamic_dims = {{0, 1, 'T'}};
  TracedModule t = trace(f, {randn({2, 3, 8})}, o);
  const std::string text = graph::to_text(t.graph());
  INFO(text);
  CHECK(text.rfind("graph(%input0 : f32[N, T, 8])", 0) == 0);
  CHECK_THAT(text, Catch::Matchers::Contains("f32[N*T, 8]"));
  CHECK_THAT(text, Catch::Matchers::Contains("f32[N, T-1, 5]"));
  graph::SymValues traced('N', 2);
  traced.set('T', 3);
  CHECK(t.graph().traced == traced);
  check_round_trip(t.graph());
  const Model m = load(t.save_to_bytes());
  CHECK(m.metadata().format_minor == 2);  // sizes in T and products: format 1.2
  for (auto [n, len] : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {5, 7}, {3, 40}}) {
    const Tensor x = randn({n, len, 8});
    const auto want = f(x);
    const auto got = t.forward({x});
    const auto loaded = m.forward({x});
    for (size_t k = 0; k < 2; ++k) {
      check_close(got[k], want[k], 1e-5, 1e-5, str("traced, N=", n, " T=", len));
      check_close(loaded[k], want[k], 1e-5, 1e-5, str("loaded, N=", n, " T=", len));
    }
  }
  // The inputs must agree with each other: two inputs of one T.
  AMBER_REQUIRE_ERROR(m.forward({randn({2, 3, 9})}), "input0: expected f32[N, T, 8]");
  // A size divided: fits the traces at T=4 and 5, not at 6.
  auto halve = [](const Tensor& x) { return x.slice(1, 0, x.size(1) / 2); };
  TraceOptions ot = quiet();
  ot.dynamic_dims = {{0, 1, 'T'}};
  AMBER_REQUIRE_ERROR(trace(halve, {randn({2, 4})}, ot), "not a sum of products of T (a size divided, squared");
  // Symbols are letters, one size each, at most three.
  ot.dynamic_dims = {{0, 1, 't'}};
  AMBER_REQUIRE_ERROR(trace(halve, {randn({2, 4})}, ot), "one upper-case letter, got 't'");
  ot.dynamic_dims = {{0, 0, 'T'}, {0, 1, 'T'}};
  AMBER_REQUIRE_ERROR(trace(halve, {randn({2, 4})}, ot), "the inputs disagree on the size T: 2 in input 0 dim 0");
  ot.dynamic_dims = {{0, 0, 'A'}, {0, 1, 'B'}, {0, 2, 'C'}, {0, 3, 'D'}};
  AMBER_REQUIRE_ERROR(trace(halve, {randn({2, 4, 1, 1})}, ot), "4 dynamic symbols; at most 3");
}

// ---- whole models, with PyTorch's weights ----

namespace {
template <typename Model>
void check_model_trace(const char* name, Model& model, int64_t b_small, int64_t b_large, double atol, double rtol) {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  model.load_state(dir + "/" + name + ".safetensors");
  model.eval();
  SafetensorsFile io = SafetensorsFile::open(dir + "/" + name + "_io.safetensors");
  const Tensor x1 = io.tensor(str("input.b", b_small)), x8 = io.tensor(str("input.b", b_large));
  TraceOptions o = quiet();
  o.dynamic_batch = true;
  TracedModule t = trace(model, {x1}, o);
  INFO(name);
  CHECK(t.warnings().empty());
  check_round_trip(t.graph());
  check_round_trip(t.recorded_graph());
  check_close(t.forward({x1})[0], model(x1), atol, rtol, str(name, " traced at batch ", b_small));
  const Tensor eager8 = model(x8);
  check_close(t.forward({x8})[0], eager8, atol, rtol, str(name, " traced at batch ", b_small, ", run at ", b_large));
  check_close(t.forward({x8})[0], io.tensor(str("output.b", b_large)), 1e-5, 1e-4, str(name, " vs PyTorch"));
  std::printf("%-12s %3zu nodes recorded, %3zu after passes; dynamic batch; traced == eager at batch %lld and %lld\n",
              name, t.recorded_graph().num_nodes(), t.graph().num_nodes(), (long long)b_small, (long long)b_large);
}
}  // namespace

TEST_CASE("LeNet traced at batch 1 runs at batch 8", "[tracer][models]") {
  models::LeNet net;
  check_model_trace("lenet", net, 1, 8, 1e-5, 1e-5);
}

TEST_CASE("ResNet-18 traced at batch 1 runs at batch 8; batch norms fold; module paths recorded", "[tracer][models]") {
  models::ResNet18 net;
  check_model_trace("resnet18", net, 1, 8, 1e-5, 1e-5);
  TraceOptions o = quiet();
  o.optimize = false;
  TracedModule raw = trace(net, {randn({1, 3, 64, 64})}, o);
  const std::string text = graph::to_text(raw.graph());
  CHECK_THAT(text, Catch::Matchers::Contains("%layer1.0.conv1.weight"));
  CHECK_THAT(text, Catch::Matchers::Contains("@layer1.0.conv1"));
  CHECK_THAT(text, Catch::Matchers::Contains("@layer2.0.downsample.0"));
  TracedModule opt = trace(net, {randn({1, 3, 64, 64})}, quiet());
  int bns = 0;
  for (const graph::Node* n : opt.graph().nodes()) bns += n->op->name == "batch_norm";
  CHECK(bns == 0);
}

TEST_CASE("the transformer encoder traced at batch 1 runs at batch 8", "[tracer][models]") {
  nn::TransformerEncoder enc(models::transformer_options(), models::kTransformerLayers);
  check_model_trace("transformer", enc, 1, 8, 1e-5, 1e-5);
}

TEST_CASE("quantize_int8 keeps activations in uint8 between consecutive int8 layers and their additions",
          "[tracer][quantize]") {
  manual_seed(12);
  const Tensor w0 = randn({8, 3, 3, 3}) * 0.3, b0 = randn({8}) * 0.1, w1 = randn({8, 8, 3, 3}) * 0.2,
               b1 = randn({8}) * 0.1, w2 = randn({8, 8, 3, 3}) * 0.2, b2 = randn({8}) * 0.1,
               w3 = randn({8, 8, 1, 1}) * 0.3, b3 = randn({8}) * 0.1, l1 = randn({16, 72}) * 0.2,
               lb1 = randn({16}) * 0.1, l2 = randn({5, 16}) * 0.3, lb2 = randn({5}) * 0.1;
  auto model = [&](const Tensor& x) {
    const Tensor y0 = relu(conv2d(x, w0, b0, {1}, {1}));                     // read by conv1 and the add: uint8
    const Tensor y1 = relu(conv2d(y0, w1, b1, {1}, {1}));                    // read by conv2 alone: uint8
    const Tensor y2 = conv2d(y1, w2, b2, {1}, {1}) + y0;                     // a residual: quantized_add
    const Tensor y3 = relu(conv2d(y2, w3, b3));                              // uint8 through the pool and flatten
    const Tensor h = relu(linear(max_pool2d(y3, {2}).flatten(1), l1, lb1));  // uint8 in and out
    return linear(h, l2, lb2);                                               // uint8 in, f32 out (the graph's)
  };
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  const Tensor samples = randn({16, 3, 6, 6});
  const Tensor x = randn({3, 3, 6, 6});
  const Tensor want = model(x);

  // As `amber quantize` does: the saved (optimised) archive's graph, rewritten and saved again.
  const std::vector<uint8_t> f32_bytes = trace(model, {randn({1, 3, 6, 6})}, o).save_to_bytes();
  LoadedArchive chained = read_archive(f32_bytes, nullptr);
  const QuantizeReport r = quantize_int8(chained.graph, {samples});
  REQUIRE(r.nodes.size() == 6);
  // A ReLU the quantized node applies: absorbed from the node after it, or a convolution's
  // that the conv-activation fusion put into its fused_conv2d (clamp to [0, inf]) already.
  auto applies_relu = [](const QuantizedNode& n) {
    return n.folded == "relu" || (n.op == "fused_conv2d" && n.folded.empty());
  };
  // input_u8, output_u8, applies a ReLU
  const std::vector<std::array<int, 3>> expect = {{0, 1, 1}, {1, 1, 1}, {1, 1, 0}, {1, 1, 1}, {1, 1, 1}, {1, 0, 0}};
  CHECK(r.additions == 1);
  for (size_t i = 0; i < expect.size(); ++i) {
    INFO("node " << i << " %" << r.nodes[i].value);
    CHECK(r.nodes[i].quantized);
    CHECK(int(r.nodes[i].input_u8) == expect[i][0]);
    CHECK(int(r.nodes[i].output_u8) == expect[i][1]);
    CHECK(int(applies_relu(r.nodes[i])) == expect[i][2]);
  }
  // A reader of uint8 takes its producer's output quantization as its input's.
  CHECK(r.nodes[2].input_scale == r.nodes[1].output_scale);
  CHECK(r.nodes[2].input_zero_point == r.nodes[1].output_zero_point);
  CHECK(r.nodes[4].input_scale == r.nodes[3].output_scale);
  std::vector<std::string> ops;
  for (const graph::Node* n : chained.graph.nodes())
    ops.push_back(str(n->op->name, ":", dtype_name(n->outputs[0]->type.dtype)));
  CHECK(ops == std::vector<std::string>{"quantized_conv2d.u8:u8", "quantized_conv2d.u8:u8", "quantized_conv2d.u8:u8",
                                        "quantized_add:u8", "quantized_conv2d.u8:u8", "max_pool2d:u8", "flatten:u8",
                                        "quantized_linear.u8:u8", "quantized_linear:f32"});
  // The addition reads each operand with its producer's output quantization.
  const graph::Node* add = chained.graph.nodes()[3];
  CHECK(add->attr("self_scale").f() == double(r.nodes[2].output_scale));
  CHECK(add->attr("other_scale").f() == double(r.nodes[0].output_scale));
  CHECK(add->attr("other_zero_point").i() == r.nodes[0].output_zero_point);
  check_round_trip(chained.graph);

  LoadedArchive unchained = read_archive(f32_bytes, nullptr);
  QuantizeOptions no_chain;
  no_chain.chain = false;
  const QuantizeReport u = quantize_int8(unchained.graph, {samples}, no_chain);
  for (const QuantizedNode& n : u.nodes) CHECK((n.quantized && !n.input_u8 && !n.output_u8 && n.folded.empty()));
  const std::vector<uint8_t> chained_bytes = archive_bytes(chained.graph, chained.info),
                             unchained_bytes = archive_bytes(unchained.graph, unchained.info);
  CHECK(read_archive(chained_bytes, nullptr).info.format_minor == 5);  // quantized_add
  CHECK(read_archive(unchained_bytes, nullptr).info.format_minor == 3);
  // Additions kept f32 (`amber quantize --no-int8-add`): the layers they read write f32.
  LoadedArchive f32_adds = read_archive(f32_bytes, nullptr);
  QuantizeOptions no_add;
  no_add.additions = false;
  const QuantizeReport na = quantize_int8(f32_adds.graph, {samples}, no_add);
  CHECK(na.additions == 0);
  const std::vector<std::array<int, 3>> expect_na = {{0, 0, 1}, {0, 1, 1}, {1, 0, 0}, {0, 1, 1}, {1, 1, 1}, {1, 0, 0}};
  REQUIRE(na.nodes.size() == expect_na.size());
  for (size_t i = 0; i < expect_na.size(); ++i) {
    INFO("node " << i << " %" << na.nodes[i].value);
    CHECK(int(na.nodes[i].input_u8) == expect_na[i][0]);
    CHECK(int(na.nodes[i].output_u8) == expect_na[i][1]);
    CHECK(int(applies_relu(na.nodes[i])) == expect_na[i][2]);
  }
  CHECK(read_archive(archive_bytes(f32_adds.graph, f32_adds.info), nullptr).info.format_minor == 4);

  // Chained or not, the same ranges: outputs within a few levels of each other, and near f32.
  const Model chained_m = load(chained_bytes), unchained_m = load(unchained_bytes);
  const Tensor got = chained_m.forward({x})[0];
  const Tensor plain = unchained_m.forward({x})[0];
  double peak = 0;
  for (float v : want.to_vector<float>(SrcLoc::none())) peak = std::max(peak, double(std::fabs(v)));
  check_close(got, graph::run_graph(chained.graph, {x})[0], 1e-5, 1e-5, "loaded vs interpreted");
  check_close(got, plain, 0.02 * peak, 0, "chained vs not");
  check_close(got, want, 0.05 * peak, 0, "int8 vs f32");

  // uint8 holds no NaN: an image with a NaN gives finite outputs through a chain (the NaN
  // quantized as level 0, docs/OPS.md), NaN without one; the other images are untouched.
  Tensor bad = x.clone();
  bad.data_ptr<float>()[40] = std::nanf("");  // image 0
  const Tensor chained_bad = chained_m.forward({bad})[0];
  const Tensor plain_bad = unchained_m.forward({bad})[0];
  for (float v : chained_bad.select(0, 0).to_vector<float>(SrcLoc::none())) CHECK(std::isfinite(v));
  for (float v : plain_bad.select(0, 0).to_vector<float>(SrcLoc::none())) CHECK(std::isnan(v));
  CHECK(test::compare(chained_bad.slice(0, 1, 3, 1), got.slice(0, 1, 3, 1), 0, 0).ok);

  // An addition with an f32 operand (the graph's input) stays f32, and so does the convolution
  // it reads.
  const Tensor w33 = w3.slice(0, 0, 3, 1).slice(1, 0, 3, 1);
  auto residual_on_input = [&](const Tensor& in) { return relu(conv2d(in, w33, {}) + in); };
  LoadedArchive t3 = read_archive(trace(residual_on_input, {randn({1, 3, 6, 6})}, o).save_to_bytes(), nullptr);
  const QuantizeReport r3 = quantize_int8(t3.graph, {samples});
  CHECK((r3.nodes[0].quantized && !r3.nodes[0].output_u8 && r3.additions == 0));

  // A value the graph returns stays f32 (the ReLU is still absorbed into the convolution).
  auto two_outputs = [&](const Tensor& in) {
    const Tensor y0 = relu(conv2d(in, w0, b0, {1}, {1}));
    return std::vector<Tensor>{y0, conv2d(y0, w1, b1)};
  };
  LoadedArchive t2 = read_archive(trace(two_outputs, {randn({1, 3, 6, 6})}, o).save_to_bytes(), nullptr);
  const QuantizeReport r2 = quantize_int8(t2.graph, {samples});
  CHECK((r2.nodes[0].quantized && !r2.nodes[0].output_u8 && applies_relu(r2.nodes[0])));
  CHECK(!r2.nodes[1].input_u8);
  CHECK(t2.graph.outputs()[0].second->type.dtype == DType::f32);
}
