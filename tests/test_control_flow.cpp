// Control flow that survives tracing (schema/control_flow.h): amber::loop run eagerly, traced
// into one node with a body, printed and parsed back, verified, saved (format 1.1) and loaded;
// eager == traced == loaded at several trip counts, for x = x * x with the count as an input,
// an Elman RNN over a variable number of steps, nested loops and a dynamic batch; and the
// errors a user or a hostile archive meets.

#include "amber/graph/interpreter.h"
#include "amber/graph/text.h"
#include "amber/graph/verify.h"
#include "amber/loader/model.h"
#include "amber/schema/control_flow.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"
#include "amber/tracer/trace.h"
#include "test_util.h"

using namespace amber;

namespace {

Tensor count_of(int64_t n) { return full({}, n, {DType::i64}); }

void check_close(const Tensor& a, const Tensor& b, const std::string& what, double atol = 1e-5) {
  const test::Diff d = test::compare(a, b, atol, 1e-5);
  INFO(what << ": " << d.message << " (max |diff| " << d.max_abs << ")");
  CHECK(d.ok);
}

size_t count_ops(const graph::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const graph::Node* node : g.nodes()) n += node->op->name == op;
  return n;
}

void check_round_trip(const graph::Graph& g) {
  const std::string text = graph::to_text(g);
  const graph::Graph back = graph::parse_graph(text);
  CHECK(graph::to_text(back) == text);
  CHECK(graph::verify(back).empty());
}

// x = x * x, n times: the seeds' loop, with the count an input.
Tensor square_n(const Tensor& x, const Tensor& n) {
  return loop(n, x, [](const Tensor&, const Tensor& s) { return s * s; });
}

// An Elman RNN over the first n steps of x [T, B, d] (padded to T): h = tanh(W x_i + U h + b).
struct Elman {
  Tensor w = randn({6, 4}) * 0.5f, u = randn({6, 6}) * 0.5f, b = randn({6}) * 0.1f;
  Tensor step(const Tensor& xi, const Tensor& h) const { return tanh(linear(xi, w, b) + linear(h, u)); }
  Tensor forward(const Tensor& x, const Tensor& n) const {
    const Tensor h0 = zeros({x.size(1), 6});
    return loop(n, h0, [&](const Tensor& i, const Tensor& h) {
      return step(index_select(x, 0, i.reshape({1})).squeeze(0), h);
    });
  }
  Tensor unrolled(const Tensor& x, int64_t n) const {
    Tensor h = zeros({x.size(1), 6});
    for (int64_t i = 0; i < n; ++i) h = step(x.select(0, i), h);
    return h;
  }
};

}  // namespace

TEST_CASE("loop runs its body n times eagerly", "[control_flow]") {
  const Tensor x = tensor(std::vector<float>{1.01f, 0.9f, -1.1f});
  for (int64_t n : {0, 1, 3}) {
    Tensor want = x;
    for (int64_t i = 0; i < n; ++i) want = want * want;
    check_close(square_n(x, count_of(n)), want, str("n=", n));
  }
  // The index counts 0..n-1; several state tensors.
  const auto out = loop(4, {zeros({}), ones({2})}, [](const Tensor& i, const std::vector<Tensor>& s) {
    return std::vector<Tensor>{s[0] + i.to(DType::f32), s[1] * 2.0f};
  });
  CHECK(out[0].item<float>() == 6.0f);
  CHECK(out[1][1].item<float>() == 16.0f);
}

TEST_CASE("loop refuses a wrong count, state or body result", "[control_flow]") {
  const Tensor x = ones({3});
  AMBER_REQUIRE_ERROR(square_n(x, full({}, -1, {DType::i64})), "trip count is -1");
  AMBER_REQUIRE_ERROR(square_n(x, ones({2}, {DType::i64})), "must be a 0-d i64 or i32 tensor");
  AMBER_REQUIRE_ERROR(square_n(x, ones({})), "must be a 0-d i64 or i32 tensor");
  AMBER_REQUIRE_ERROR(loop(2, x,
                           [](const Tensor&, const Tensor& s) {
                             return s.reshape({1, 3});
                           }),
                      "state is f32[3] (every step must keep");
  AMBER_REQUIRE_ERROR(loop(2, {x},
                           [](const Tensor&, const std::vector<Tensor>& s) {
                             return std::vector<Tensor>{s[0], s[0]};
                           }),
                      "returned 2 tensors for a state of 1");
  // The op has no kernel: only amber::loop, the interpreter and the loader run it.
  const Tensor n = count_of(1);
  const Tensor* ins[] = {&n, &x};
  const Attr attrs[] = {Attr(int64_t(1))};
  AMBER_REQUIRE_ERROR(dispatch(op_schema("loop"), ins, attrs, SrcLoc::none()), "a control-flow op has no kernel");
}

TEST_CASE("a traced loop is one node whose count is data: eager == traced == loaded", "[control_flow]") {
  const Tensor x = tensor(std::vector<float>{1.01f, 0.9f, -1.1f, 0.5f});
  TraceOptions o;
  o.input_names = {"x", "n"};
  const TracedModule t = trace(square_n, {x, count_of(3)}, o);
  REQUIRE(count_ops(t.graph(), "loop") == 1);
  CHECK(t.graph().num_nodes() == 1);
  const graph::Node* node = t.graph().nodes()[0];
  REQUIRE(node->bodies.size() == 1);
  CHECK(count_ops(*node->bodies[0], "mul") == 1);
  CHECK(node->source.find("test_control_flow.cpp") != std::string::npos);
  check_round_trip(t.graph());
  CHECK(graph::to_text(t.graph()).find("    graph(%i : i64[], %s0 : f32[4])") != std::string::npos);

  const std::vector<uint8_t> bytes = t.save_to_bytes();
  const Model m = load(std::span<const uint8_t>(bytes));
  CHECK(m.metadata().format_major == 1);
  CHECK(m.metadata().format_minor == 1);
  for (int64_t n : {0, 1, 2, 5}) {
    const Tensor want = square_n(x, count_of(n));
    check_close(t.forward({x, count_of(n)})[0], want, str("traced n=", n));
    check_close(m.forward({x, count_of(n)})[0], want, str("loaded n=", n));
  }
  // i32 counts run too; the archive does not grow with the count it was traced at.
  check_close(m.forward({x, full({}, 2, {DType::i64})})[0], square_n(x, count_of(2)), "i64 again");
  CHECK(trace(square_n, {x, count_of(40)}, o).save_to_bytes().size() == bytes.size());
  // An archive without control flow stays format 1.0 (readable by 1.0 readers).
  const auto plain = trace([](const Tensor& a) { return a * a; }, {x}).save_to_bytes();
  CHECK(load(std::span<const uint8_t>(plain)).metadata().format_minor == 0);
}

TEST_CASE("an Elman RNN over a variable number of steps: weights captured, eager == traced == loaded",
          "[control_flow]") {
  Elman rnn;
  const Tensor x = randn({7, 3, 4});
  auto f = [&](const Tensor& xs, const Tensor& n) { return rnn.forward(xs, n); };
  const TracedModule t = trace(f, {x, count_of(4)});
  REQUIRE(count_ops(t.graph(), "loop") == 1);
  const graph::Node* node = t.graph().nodes().back();
  // The body reads x and the weights from outside: they are the node's inputs after the state.
  CHECK(node->inputs.size() >= 4);
  CHECK(node->bodies[0]->constants().empty());
  check_round_trip(t.graph());
  const std::vector<uint8_t> bytes = t.save_to_bytes();
  const Model m = load(std::span<const uint8_t>(bytes));
  for (int64_t n : {0, 1, 4, 7}) {
    const Tensor want = rnn.unrolled(x, n);
    check_close(rnn.forward(x, count_of(n)), want, str("eager n=", n));
    check_close(t.forward({x, count_of(n)})[0], want, str("traced n=", n));
    check_close(m.forward({x, count_of(n)})[0], want, str("loaded n=", n));
  }
  // A dynamic batch too (x is [T, N, in]; the 0-d count has no batch dim and stays as it is):
  // one archive for every batch and every count.
  TraceOptions dyn;
  dyn.dynamic_batch = true;
  dyn.batch_dim = 1;
  const TracedModule td = trace(f, {x, count_of(4)}, dyn);
  CHECK(td.graph().inputs()[0]->type.shape[1] == graph::SymInt::symbol('N'));
  CHECK(graph::is_static(td.graph().inputs()[1]->type.shape));
  const Model md = load(td.save_to_bytes());
  for (int64_t batch : {1, 5})
    for (int64_t n : {0, 6}) {
      const Tensor xb = randn({7, batch, 4});
      check_close(md.forward({xb, count_of(n)})[0], rnn.unrolled(xb, n), str("dynamic batch ", batch, " n=", n));
    }
  // Past the padded length: the index is out of range, an error naming the op.
  AMBER_REQUIRE_ERROR(m.forward({x, count_of(8)}), "index_select");
  // The call's bound on body runs.
  LoadOptions lo;
  lo.max_loop_trips = 3;
  const Model capped = load(std::span<const uint8_t>(bytes), lo);
  check_close(capped.forward({x, count_of(3)})[0], rnn.unrolled(x, 3), "capped n=3");
  AMBER_REQUIRE_ERROR(capped.forward({x, count_of(4)}), "LoadOptions::max_loop_trips");
}

TEST_CASE("nested loops capture the outer body's values; the dynamic batch reaches bodies", "[control_flow]") {
  // y = sum over i < n of (x * (i + 1)) applied m times inside: nested, with a capture of a
  // value computed in the outer body.
  auto f = [](const Tensor& x, const Tensor& n, const Tensor& m) {
    return loop(n, zeros_like(x), [&](const Tensor& i, const Tensor& acc) {
      const Tensor scale = i.to(DType::f32) + 1.0f;
      const Tensor inner = loop(m, x, [&](const Tensor&, const Tensor& s) { return s * scale * 0.5f; });
      return acc + inner;
    });
  };
  auto reference = [](const Tensor& x, int64_t n, int64_t m) {
    Tensor acc = zeros_like(x);
    for (int64_t i = 0; i < n; ++i) {
      Tensor s = x;
      for (int64_t j = 0; j < m; ++j) s = s * float(i + 1) * 0.5f;
      acc = acc + s;
    }
    return acc;
  };
  const Tensor x = randn({2, 3});
  const TracedModule t = trace(f, {x, count_of(2), count_of(3)});
  REQUIRE(count_ops(t.graph(), "loop") == 1);
  const graph::Graph& outer = *t.graph().nodes().back()->bodies[0];
  REQUIRE(count_ops(outer, "loop") == 1);
  check_round_trip(t.graph());
  const std::vector<uint8_t> bytes = t.save_to_bytes();
  const Model m = load(std::span<const uint8_t>(bytes));
  for (auto [n, k] : {std::pair<int64_t, int64_t>{0, 2}, {3, 1}, {2, 4}}) {
    const Tensor want = reference(x, n, k);
    check_close(t.forward({x, count_of(n), count_of(k)})[0], want, str("traced n=", n, " m=", k));
    check_close(m.forward({x, count_of(n), count_of(k)})[0], want, str("loaded n=", n, " m=", k));
  }
  // A dynamic batch (every input has one, so the counts are numbers here): the bodies' shapes
  // follow N too.
  TraceOptions o;
  o.dynamic_batch = true;
  auto g = [&](const Tensor& xb) { return f(xb, count_of(3), count_of(2)); };
  const TracedModule d = trace(g, {x}, o);
  CHECK(d.graph().is_dynamic());
  CHECK(d.graph().nodes().back()->bodies[0]->is_dynamic());
  check_round_trip(d.graph());
  const std::vector<uint8_t> dbytes = d.save_to_bytes();
  const Model dm = load(std::span<const uint8_t>(dbytes));
  for (int64_t batch : {1, 5}) {
    const Tensor xb = randn({batch, 3});
    check_close(d.forward({xb})[0], reference(xb, 3, 2), str("traced b=", batch));
    check_close(dm.forward({xb})[0], reference(xb, 3, 2), str("loaded b=", batch));
  }
}

TEST_CASE("the verifier and the reader refuse malformed bodies", "[control_flow]") {
  const std::string good =
      "graph(%x : f32[3], %n : i64[]) {\n"
      "  %1 : f32[3] = loop([%n, %x], num_state=1)\n"
      "      graph(%i : i64[], %s0 : f32[3]) {\n"
      "        %0 : f32[3] = mul(%s0, %s0)\n"
      "        return (s0 = %0)\n"
      "      }\n"
      "  return (output0 = %1)\n"
      "}\n";
  const graph::Graph g = graph::parse_graph(good);
  CHECK(graph::verify(g).empty());
  const Tensor x = tensor(std::vector<float>{1, 2, 3});
  check_close(graph::run_graph(g, {x, count_of(2)})[0], x * x * x * x, "parsed");
  auto problems_of = [](const std::string& text) {
    std::string all;
    for (const std::string& p : graph::verify(graph::parse_graph(text))) all += p + "\n";
    return all;
  };
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK(problems_of(with("return (s0 = %0)", "return (s0 = %i)")).find("body output s0 is i64[]") != std::string::npos);
  CHECK(problems_of(with("%i : i64[], ", "")).find("body 0 has 1 inputs, fewer than the 2 it must take") !=
        std::string::npos);
  CHECK(problems_of(with("%i : i64[]", "%i : f32[]")).find("(the index) is f32[], expected i64[]") !=
        std::string::npos);
  // No body at all, and a body under an op that is not control flow.
  CHECK(problems_of("graph(%x : f32[3], %n : i64[]) {\n  %1 : f32[3] = loop([%n, %x], num_state=1)\n"
                    "  return (output0 = %1)\n}\n")
            .find("expected 1 body, got 0") != std::string::npos);
  CHECK(problems_of("graph(%x : f32[3]) {\n  %1 : f32[3] = neg(%x)\n    graph(%i : i64[]) {\n      return ()\n    }\n"
                    "  return (output0 = %1)\n}\n")
            .find("holds bodies, but the op is not control flow") != std::string::npos);
  // Nesting deeper than kMaxBodyDepth is refused by the parser.
  std::string deep = "graph(%x : f32[3], %n : i64[]) {\n";
  for (int d = 0; d <= kMaxBodyDepth; ++d)
    deep += "  %1 : f32[3] = loop([%n, %x], num_state=1)\n  graph(%i : i64[], %x : f32[3], %n : i64[]) {\n";
  AMBER_REQUIRE_ERROR(graph::parse_graph(deep), "bodies nested more than");
}

TEST_CASE("while_loop: eager, traced into one node with two bodies, loaded; a runaway loop is bounded",
          "[control_flow]") {
  // Doubles x until its sum reaches the limit; the limit is data.
  auto f = [](const Tensor& x, const Tensor& limit) {
    return while_loop([&](const std::vector<Tensor>& s) { return lt(s[0].sum(), limit); },
                      [](const std::vector<Tensor>& s) {
                        return std::vector<Tensor>{s[0] * 2.0f, s[1] + 1};
                      },
                      {x, zeros({}, {DType::i64})});
  };
  const Tensor x = tensor(std::vector<float>{0.5f, 0.25f});
  auto limit = [](float v) { return full({}, v, {DType::f32}); };
  auto eager = f(x, limit(10));
  CHECK(eager[1].item<int64_t>() == 4);  // 0.75 -> 1.5 -> 3 -> 6 -> 12
  const TracedModule t = trace([&](const Tensor& a, const Tensor& l) { return f(a, l); }, {x, limit(10)});
  REQUIRE(count_ops(t.graph(), "while_loop") == 1);
  CHECK(t.graph().nodes().back()->bodies.size() == 2);
  check_round_trip(t.graph());
  const std::vector<uint8_t> bytes = t.save_to_bytes();
  LoadOptions lo;
  lo.max_loop_trips = 100;
  const Model m = load(std::span<const uint8_t>(bytes), lo);
  for (float l : {0.5f, 3.0f, 100.0f}) {
    const auto want = f(x, limit(l));
    for (const auto& got : {t.forward({x, limit(l)}), m.forward({x, limit(l)})}) {
      check_close(got[0], want[0], str("limit ", l));
      CHECK(got[1].item<int64_t>() == want[1].item<int64_t>());
    }
  }
  // A condition that never turns false: the call's bound fails it, naming the node.
  AMBER_REQUIRE_ERROR(m.forward({zeros({2}), limit(1)}), "LoadOptions::max_loop_trips");
  // (The interpreter counts against kDefaultMaxLoopTrips through the same code,
  // graph::run_control_flow; 2^20 iterations are too slow to run here under sanitizers.)
  // The condition must give a 0-d bool.
  AMBER_REQUIRE_ERROR(while_loop([](const std::vector<Tensor>& s) { return s[0]; },
                                 [](const std::vector<Tensor>& s) { return s; }, {x}),
                      "the condition's result must be a 0-d bool tensor, got f32[2]");
}

TEST_CASE("cond: eager, traced with both branches, loaded; the predicate is data", "[control_flow]") {
  const Tensor w = tensor(std::vector<float>{1, 2, 3});
  // Adds w when the sum is positive, else negates: the branches read w and nothing.
  auto f = [&](const Tensor& x) {
    return cond(
        gt(x.sum(), 0.0), [&](const Tensor& v) { return v + w; }, [](const Tensor& v) { return -v; }, x);
  };
  const Tensor pos = tensor(std::vector<float>{1, 1, 1}), neg = tensor(std::vector<float>{-1, -1, 0});
  check_close(f(pos), pos + w, "eager then");
  check_close(f(neg), -neg, "eager else");
  const TracedModule t = trace(f, {pos});
  REQUIRE(count_ops(t.graph(), "cond") == 1);
  const graph::Node* node = t.graph().nodes().back();
  REQUIRE(node->bodies.size() == 2);
  CHECK(node->bodies[0]->inputs().size() == 2);  // the operand and w
  CHECK(node->bodies[1]->inputs().size() == 1);
  check_round_trip(t.graph());
  const Model m = load(t.save_to_bytes());
  for (const Tensor& x : {pos, neg}) {
    check_close(t.forward({x})[0], f(x), "traced");
    check_close(m.forward({x})[0], f(x), "loaded");
  }
  AMBER_REQUIRE_ERROR(cond(
                          ones({}), [](const Tensor& v) { return v; }, [](const Tensor& v) { return v; }, pos),
                      "the predicate must be a 0-d bool tensor, got f32[]");
  // The branches may give other types than the operands (here a sum), but the same as each
  // other: eagerly only the taken branch runs; a trace runs both and compares them.
  auto total = [](const Tensor& v) {
    return cond(
        gt(v.sum(), 0.0), [](const Tensor& a) { return a.sum(); }, [](const Tensor& a) { return -a.sum(); }, v);
  };
  CHECK(total(neg).item<float>() == 2.0f);
  const Model tm = load(trace(total, {pos}).save_to_bytes());
  CHECK(tm.forward({neg})[0].item<float>() == 2.0f);
  CHECK(tm.forward({pos})[0].item<float>() == 3.0f);
  auto mismatched = [](const Tensor& v) {
    return cond(
        gt(v.sum(), 0.0), [](const Tensor& a) { return a.sum(); }, [](const Tensor& a) { return a; }, v);
  };
  CHECK(mismatched(pos).dim() == 0);  // eagerly fine: only the then branch ran
  AMBER_REQUIRE_ERROR(trace(mismatched, {pos}),
                      "output 0 is f32[] from the then branch but f32[3] from the else branch");
}

TEST_CASE("a call's own loop bound, and a warm-up that a never-ending loop does not hold up", "[control_flow]") {
  const Tensor x = ones({3});
  const TracedModule t = trace(square_n, {x, count_of(3)});
  const Model m = load(t.save_to_bytes());
  CHECK(m.forward({x, count_of(3)}, CallOptions{.max_loop_trips = 3}).size() == 1);
  AMBER_REQUIRE_ERROR(m.forward({x, count_of(3)}, CallOptions{.max_loop_trips = 2}), "CallOptions::max_loop_trips");
  // A condition zeros never end: load's warm-up (on zeros) stops after a few iterations.
  auto forever = [](const Tensor& v) {
    return while_loop([](const std::vector<Tensor>& s) { return ge(s[0].sum(), 0.0); },
                      [](const std::vector<Tensor>& s) { return std::vector<Tensor>{s[0] * 2.0f}; }, {v})[0];
  };
  const TracedModule w = trace([&](const Tensor& v) { return forever(-v); }, {x});
  const Model wm = load(w.save_to_bytes(), LoadOptions{.max_loop_trips = 100000});
  CHECK(wm.forward({x})[0].sum().item<float>() == -3.0f);  // -x is negative: no iteration
  AMBER_REQUIRE_ERROR(wm.forward({zeros({3})}), "LoadOptions::max_loop_trips");
}
