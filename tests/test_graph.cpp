// Graph IR tests: text round trips, parser and verifier errors, each pass text-in/text-out
// with the verifier after it (and numerically equal before and after), the memory plan,
// and the interpreter on symbolic graphs.

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "amber/graph/interpreter.h"
#include "amber/graph/passes.h"
#include "amber/graph/text.h"
#include "amber/graph/verify.h"
#include "amber/schema/eager.h"
#include "amber/schema/fused_program.h"
#include "test_util.h"

using namespace amber;
using namespace amber::graph;

namespace {

// Trims each line's indentation so expected texts can be written inline.
std::string dedent(const std::string& s) {
  std::string out, line;
  std::istringstream in(s);
  bool first = true;
  while (std::getline(in, line)) {
    if (first && line.empty()) {
      first = false;
      continue;
    }
    first = false;
    size_t k = line.find_first_not_of(' ');
    const bool top = line.rfind("graph(", k) == k || line.substr(k == std::string::npos ? 0 : k) == "}";
    if (k == std::string::npos) continue;  // blank lines (the closing one of a raw string)
    out += (top ? "" : "  ") + line.substr(k) + "\n";
  }
  return out;
}

Graph parsed(const std::string& text) {
  Graph g = parse_graph(text);
  verify_or_throw(g);
  return g;
}

// Runs a pass and checks: the verifier passes, the text is as expected, the results agree.
template <typename Pass>
void check_pass(const std::string& in_text, Pass pass, const std::string& expected, const std::vector<Tensor>& inputs,
                double tol = 0) {
  Graph g = parsed(dedent(in_text));
  std::vector<Tensor> before = run_graph(g, inputs);
  pass(g);
  verify_or_throw(g, "the graph after the pass");
  CHECK(to_text(g) == dedent(expected));
  std::vector<Tensor> after = run_graph(g, inputs);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) CHECK(test::compare(after[i], before[i], tol, tol).ok);
}

}  // namespace

TEST_CASE("graph text round-trips", "[graph][text]") {
  const std::string text = dedent(R"TXT(
    graph(%x : f32[N, 3], %idx : i64[4]) {
      const %w : f32[2, 3] = [1.0, -2.5, 0.1, 1e-08, inf, nan]
      const %big : f32[40]  # model.cpp:12
      const %flags : bool[2] = [true, false]
      %1 : f32[N, 2] = linear(%x, %w, None)  # model.cpp:20 @layer1.0.fc
      %2 : f32[2*N, 1] = reshape(%1, shape=[2*N, -1])
      %3 : f32[N, 1], %4 : f32[N, 1] = split_with_sizes(%1, split_sizes=[1, 1], dim=1)
      %5 : f32[N, 2] = cat([%3, %4], dim=1)
      %6 : f32[N, 2] = gelu(%5, approximate="tanh")
      %7 : f32[N+1, 2] = cat([%6, %w.t], dim=0)
      return (out = %6, other = %2)
    }
  )TXT");
  // %w.t is not defined: the parser says so with the line.
  AMBER_REQUIRE_ERROR(parse_graph(text), "graph text line 10: value %w.t is used before it is defined");
  std::string ok = text;
  ok.replace(ok.find("  %7"), ok.find("  return") - ok.find("  %7"), "");
  Graph g = parsed(ok);
  CHECK(g.is_dynamic());
  CHECK(to_text(g) == ok);
  CHECK(to_text(parse_graph(to_text(g))) == ok);
  CHECK(g.find("w")->data.to_vector<float>()[1] == -2.5f);
  CHECK(g.find("1")->producer->scope == "layer1.0.fc");
  // Instantiation evaluates the symbolic dims and attributes.
  Graph g3 = g.instantiate(graph::SymValues('N', 3));
  CHECK(!g3.is_dynamic());
  CHECK(to_text(g3).find("%2 : f32[6, 1] = reshape(%1, shape=[6, -1])") != std::string::npos);
}

TEST_CASE("graph parser errors name the line and the problem", "[graph][text]") {
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : f32[3]) {\n  %1 : f32[3] = nosuchop(%x)\n  return (y = %1)\n}\n"),
                      "graph text line 2: unknown op 'nosuchop'");
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : q8[3]) {\n}\n"), "graph text line 1: unknown dtype 'q8'");
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : f32[3]) {\n  %1 : f32[3] = add(%x, %x, beta=2)\n}\n"),
                      "op add has no attribute 'beta'");
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : f32[3]) {\n  %1 : f32[3] = mul.Scalar(%x)\n}\n"),
                      "is missing attribute 'other'");
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : f32[3], %x : f32[3]) {\n}\n"), "value %x is defined twice");
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : f32[3]) {\n  const %c : f32[2] = [1.0]\n}\n"),
                      "inline constant holds the wrong number of values");
}

TEST_CASE("the verifier reports every problem at once", "[graph][verify]") {
  Graph g = parse_graph(dedent(R"TXT(
    graph(%x : f32[2, 3]) {
      %1 : f32[2, 4] = relu(%x)
      %2 : i64[2, 3] = exp(%x)
      %3 : f32[3] = add(%x)
      return (y = %1)
    }
  )TXT"));
  const auto problems = verify(g);
  REQUIRE(problems.size() == 1);  // arity first; types are checked once the graph is well formed
  CHECK_THAT(problems[0], Catch::Matchers::Contains("node %3 = add: expected 2 tensor inputs, got 1"));
  Graph h = parse_graph(dedent(R"TXT(
    graph(%x : f32[2, 3]) {
      %1 : f32[2, 4] = relu(%x)
      %2 : i64[2, 3] = exp(%x)
      %3 : f32[2, 3] = mm(%x, %x)
      return (y = %1)
    }
  )TXT"));
  const auto p2 = verify(h);
  REQUIRE(p2.size() == 3);
  CHECK_THAT(p2[0], Catch::Matchers::Contains("output %1 is recorded as f32[2, 4] but inference gives f32[2, 3]"));
  CHECK_THAT(p2[1], Catch::Matchers::Contains("output %2 is recorded as i64[2, 3] but inference gives f32[2, 3]"));
  CHECK_THAT(p2[2], Catch::Matchers::Contains("mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"));
  AMBER_REQUIRE_ERROR(verify_or_throw(h), "graph is invalid (3 problems)");
}

TEST_CASE("dead code elimination", "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[3]) {
      const %unused : f32[1] = [1.0]
      %1 : f32[3] = exp(%x)
      %2 : f32[3] = tanh(%1)
      %3 : f32[3] = neg(%x)
      return (y = %3)
    }
  )TXT",
             eliminate_dead_code, R"TXT(
    graph(%x : f32[3]) {
      %3 : f32[3] = neg(%x)
      return (y = %3)
    }
  )TXT",
             {tensor({1.f, 2.f, 3.f})});
}

TEST_CASE("identity removal: dropout in eval, zero pads and one-tensor cats are bypassed, unless graph outputs",
          "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[3]) {
      %1 : f32[3] = dropout(%x, p=0.1, train=false)
      %2 : f32[3] = neg(%1)
      %3 : f32[3] = dropout(%2, p=0.0, train=false)
      return (y = %3)
    }
  )TXT",
             remove_identities, R"TXT(
    graph(%x : f32[3]) {
      %2 : f32[3] = neg(%x)
      %3 : f32[3] = dropout(%2, p=0.0, train=false)
      return (y = %3)
    }
  )TXT",
             {tensor({1.f, 2.f, 3.f})});
  check_pass(R"TXT(
    graph(%x : f32[1, 2, 3]) {
      %1 : f32[1, 2, 3] = pad(%x, pad=[0, 0, 0, 0], mode="constant", value=0.0)
      %2 : f32[1, 2, 3] = cat([%1], dim=1)
      %3 : f32[1, 2, 5] = pad(%2, pad=[1, 1], mode="reflect", value=0)
      %4 : f32[1, 2, 5] = cat([%3], dim=0)
      return (y = %4)
    }
  )TXT",
             remove_identities, R"TXT(
    graph(%x : f32[1, 2, 3]) {
      %3 : f32[1, 2, 5] = pad(%x, pad=[1, 1], mode="reflect", value=0)
      %4 : f32[1, 2, 5] = cat([%3], dim=0)
      return (y = %4)
    }
  )TXT",
             {randn({1, 2, 3})});
}

TEST_CASE("common subexpression elimination", "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[3]) {
      %1 : f32[3] = exp(%x)
      %2 : f32[3] = exp(%x)
      %3 : f32[3] = mul.Scalar(%x, other=2)
      %4 : f32[3] = mul.Scalar(%x, other=3)
      %5 : f32[3] = add(%1, %2, alpha=1)
      %6 : f32[3] = add(%3, %4, alpha=1)
      %7 : f32[3] = add(%5, %6, alpha=1)
      return (y = %7)
    }
  )TXT",
             eliminate_common_subexpressions, R"TXT(
    graph(%x : f32[3]) {
      %1 : f32[3] = exp(%x)
      %3 : f32[3] = mul.Scalar(%x, other=2)
      %4 : f32[3] = mul.Scalar(%x, other=3)
      %5 : f32[3] = add(%1, %1, alpha=1)
      %6 : f32[3] = add(%3, %4, alpha=1)
      %7 : f32[3] = add(%5, %6, alpha=1)
      return (y = %7)
    }
  )TXT",
             {tensor({1.f, 2.f, 3.f})});
}

TEST_CASE("constant folding", "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[2, 3]) {
      const %w : f32[3, 2] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
      %1 : f32[2, 3] = transpose(%w, dim0=0, dim1=1)
      %2 : f32[2, 3] = mul.Scalar(%1, other=0.5)
      %3 : f32[2, 3] = add(%x, %2, alpha=1)
      %4 : f32[1000] = full(size=[1000], fill_value=0.0, dtype=None)
      %5 : f32[] = sum(%4, dim=None, keepdim=false, dtype=None)
      %6 : f32[2, 3] = add(%3, %5, alpha=1)
      return (y = %6)
    }
  )TXT",
             [](Graph& g) { fold_constants(g); }, R"TXT(
    graph(%x : f32[2, 3]) {
      const %w.transpose.mul.Scalar : f32[2, 3] = [0.5, 1.5, 2.5, 1.0, 2.0, 3.0]
      const %const.full.sum : f32[] = [0.0]
      %3 : f32[2, 3] = add(%x, %w.transpose.mul.Scalar, alpha=1)
      %6 : f32[2, 3] = add(%3, %const.full.sum, alpha=1)
      return (y = %6)
    }
  )TXT",
             {tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3})});
}

TEST_CASE("batch-norm folding into the preceding convolution", "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[1, 1, 3, 3]) {
      const %w : f32[2, 1, 1, 1] = [2.0, -1.0]
      const %b : f32[2] = [0.5, 1.0]
      const %gamma : f32[2] = [1.5, 0.5]
      const %beta : f32[2] = [0.1, -0.2]
      const %mean : f32[2] = [0.25, -0.5]
      const %var : f32[2] = [4.0, 0.25]
      %1 : f32[1, 2, 3, 3] = conv2d(%x, %w, %b, stride=[1], padding=[0], dilation=[1], groups=1)  # net.cpp:3 @conv
      %2 : f32[1, 2, 3, 3] = batch_norm(%1, %gamma, %beta, %mean, %var, training=false, momentum=0.1, eps=1e-05)
      return (y = %2)
    }
  )TXT",
             fold_batch_norm, R"TXT(
    graph(%x : f32[1, 1, 3, 3]) {
      const %w.bn_folded : f32[2, 1, 1, 1] = [1.4999982, -0.99998]
      const %b.bn_folded : f32[2] = [0.2874998, 1.2999699]
      %3 : f32[1, 2, 3, 3] = conv2d(%x, %w.bn_folded, %b.bn_folded, stride=[1], padding=[0], dilation=[1], groups=1)  # net.cpp:3 @conv
      return (y = %3)
    }
  )TXT",
             {arange(0, 9, 1, {DType::f32}).reshape({1, 1, 3, 3})}, 1e-6);
}

TEST_CASE("linear-bias folding: an added constant of out_features values becomes the linear layer's bias",
          "[graph][passes]") {
  // Either operand order, a [1, 1, out] bias; a second product read twice, one whose added
  // constant has the wrong size, and a bias add that broadcasts the product stay as they are.
  check_pass(R"TXT(
    graph(%x : f32[N, 3, 4]) {
      const %w : f32[2, 4] = [1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.25, 2.0]
      const %b : f32[2] = [0.5, -1.5]
      const %b3 : f32[1, 1, 2] = [2.0, 3.0]
      const %wide : f32[3, 2] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
      const %row : f32[4, 1, 1, 2] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
      %1 : f32[N, 3, 2] = linear(%x, %w, None)  # net.cpp:7 @fc1
      %2 : f32[N, 3, 2] = add(%b, %1, alpha=1)
      %3 : f32[N, 3, 2] = linear(%x, %w, None)
      %4 : f32[N, 3, 2] = add(%3, %b3, alpha=1)
      %5 : f32[N, 3, 2] = linear(%x, %w, None)
      %6 : f32[N, 3, 2] = add(%5, %b, alpha=1)
      %7 : f32[N, 3, 2] = mul(%5, %6)
      %8 : f32[N, 3, 2] = linear(%x, %w, None)
      %9 : f32[N, 3, 2] = add(%8, %wide, alpha=1)
      %10 : f32[N, 3, 2] = linear(%x, %w, None)
      %11 : f32[4, N, 3, 2] = add(%10, %row, alpha=1)
      %12 : f32[N, 3, 2] = linear(%x, %w, None)
      %13 : f32[N, 3, 2] = add(%12, %b, alpha=2)
      return (a = %2, b = %4, c = %7, d = %9, e = %11, f = %13)
    }
  )TXT",
             fold_linear_bias, R"TXT(
    graph(%x : f32[N, 3, 4]) {
      const %w : f32[2, 4] = [1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.25, 2.0]
      const %b : f32[2] = [0.5, -1.5]
      const %wide : f32[3, 2] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
      const %row : f32[4, 1, 1, 2] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
      const %b3.bias : f32[2] = [2.0, 3.0]
      %14 : f32[N, 3, 2] = linear(%x, %w, %b)  # net.cpp:7 @fc1
      %15 : f32[N, 3, 2] = linear(%x, %w, %b3.bias)
      %5 : f32[N, 3, 2] = linear(%x, %w, None)
      %6 : f32[N, 3, 2] = add(%5, %b, alpha=1)
      %7 : f32[N, 3, 2] = mul(%5, %6)
      %8 : f32[N, 3, 2] = linear(%x, %w, None)
      %9 : f32[N, 3, 2] = add(%8, %wide, alpha=1)
      %10 : f32[N, 3, 2] = linear(%x, %w, None)
      %11 : f32[4, N, 3, 2] = add(%10, %row, alpha=1)
      %12 : f32[N, 3, 2] = linear(%x, %w, None)
      %13 : f32[N, 3, 2] = add(%12, %b, alpha=2)
      return (a = %14, b = %15, c = %7, d = %9, e = %11, f = %13)
    }
  )TXT",
             {randn({2, 3, 4})}, 1e-6);
}

TEST_CASE("attention written as matmul, softmax and matmul becomes scaled_dot_product_attention", "[graph][passes]") {
  // The 1/sqrt(E) scale on q, k given transposed by a permute (ONNX exporters' form).
  check_pass(R"TXT(
    graph(%q : f32[2, 3, 4], %k : f32[2, 5, 4], %v : f32[2, 5, 6]) {
      const %c : f32[] = [2.0]
      %1 : f32[2, 4, 5] = permute(%k, dims=[0, 2, 1])
      %2 : f32[2, 3, 4] = div(%q, %c, rounding_mode=None)
      %3 : f32[2, 3, 5] = matmul(%2, %1)
      %4 : f32[2, 3, 5] = softmax(%3, dim=-1, dtype=None)
      %5 : f32[2, 3, 6] = matmul(%4, %v)
      return (y = %5)
    }
  )TXT",
             fuse_attention, R"TXT(
    graph(%q : f32[2, 3, 4], %k : f32[2, 5, 4], %v : f32[2, 5, 6]) {
      %1 : f32[2, 4, 5] = permute(%k, dims=[0, 2, 1])
      %6 : f32[2, 5, 4] = permute(%1, dims=[0, 2, 1])
      %7 : f32[2, 3, 6] = scaled_dot_product_attention(%q, %6, %v, None, dropout_p=0.0, is_causal=false)
      return (y = %7)
    }
  )TXT",
             {randn({2, 3, 4}), randn({2, 5, 4}), randn({2, 5, 6})}, 1e-6);
  // The scale on the scores, and a causal mask as where(masked, -inf, scores): the mask
  // becomes the kept positions.
  check_pass(R"TXT(
    graph(%q : f32[2, 3, 4], %kt : f32[2, 4, 3], %v : f32[2, 3, 6]) {
      const %fill : f32[] = [-inf]
      const %masked : bool[3, 3] = [false, true, true, false, false, true, false, false, false]
      %1 : f32[2, 3, 3] = matmul(%q, %kt)
      %2 : f32[2, 3, 3] = mul.Scalar(%1, other=0.5)
      %3 : f32[2, 3, 3] = where(%masked, %fill, %2)
      %4 : f32[2, 3, 3] = softmax(%3, dim=-1, dtype=None)
      %5 : f32[2, 3, 6] = matmul(%4, %v)
      return (y = %5)
    }
  )TXT",
             fuse_attention, R"TXT(
    graph(%q : f32[2, 3, 4], %kt : f32[2, 4, 3], %v : f32[2, 3, 6]) {
      const %6 : bool[3, 3] = [true, false, false, true, true, false, true, true, true]
      %7 : f32[2, 3, 4] = permute(%kt, dims=[0, 2, 1])
      %8 : f32[2, 3, 6] = scaled_dot_product_attention(%q, %7, %v, %6, dropout_p=0.0, is_causal=false)
      return (y = %8)
    }
  )TXT",
             {randn({2, 3, 4}), randn({2, 4, 3}), randn({2, 3, 6})}, 1e-6);
  // Left alone: a scale other than 1/sqrt(E), and a where() mask hiding a whole row.
  const std::string other_scale = R"TXT(
    graph(%q : f32[2, 3, 4], %kt : f32[2, 4, 5], %v : f32[2, 5, 6]) {
      %1 : f32[2, 3, 5] = matmul(%q, %kt)
      %2 : f32[2, 3, 5] = mul.Scalar(%1, other=0.3)
      %3 : f32[2, 3, 5] = softmax(%2, dim=-1, dtype=None)
      %4 : f32[2, 3, 6] = matmul(%3, %v)
      return (y = %4)
    }
  )TXT";
  check_pass(other_scale, fuse_attention, other_scale, {randn({2, 3, 4}), randn({2, 4, 5}), randn({2, 5, 6})});
  const std::string masked_row = R"TXT(
    graph(%q : f32[1, 2, 4], %kt : f32[1, 4, 2], %v : f32[1, 2, 3]) {
      const %fill : f32[] = [-1e+38]
      const %masked : bool[2, 2] = [true, true, false, true]
      %1 : f32[1, 2, 2] = matmul(%q, %kt)
      %2 : f32[1, 2, 2] = div.Scalar(%1, other=2, rounding_mode=None)
      %3 : f32[1, 2, 2] = where(%masked, %fill, %2)
      %4 : f32[1, 2, 2] = softmax(%3, dim=-1, dtype=None)
      %5 : f32[1, 2, 3] = matmul(%4, %v)
      return (y = %5)
    }
  )TXT";
  check_pass(masked_row, fuse_attention, masked_row, {randn({1, 2, 4}), randn({1, 4, 2}), randn({1, 2, 3})});
}

TEST_CASE("layer norm written as mean, sub, pow, mean, add, sqrt, div (* gamma + beta) becomes layer_norm",
          "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[N, 3, 5]) {
      const %eps : f32[] = [1e-05]
      const %gamma : f32[5] = [1.0, 2.0, 0.5, -1.0, 0.25]
      const %beta : f32[5] = [0.0, 0.1, 0.2, 0.3, 0.4]
      %1 : f32[N, 3, 1] = mean(%x, dim=[-1], keepdim=true, dtype=None)
      %2 : f32[N, 3, 5] = sub(%x, %1, alpha=1)
      %3 : f32[N, 3, 5] = pow.Scalar(%2, exponent=2.0)
      %4 : f32[N, 3, 1] = mean(%3, dim=[-1], keepdim=true, dtype=None)
      %5 : f32[N, 3, 1] = add(%4, %eps, alpha=1)
      %6 : f32[N, 3, 1] = sqrt(%5)
      %7 : f32[N, 3, 5] = div(%2, %6, rounding_mode=None)
      %8 : f32[N, 3, 5] = mul(%7, %gamma)
      %9 : f32[N, 3, 5] = add(%8, %beta, alpha=1)
      return (y = %9)
    }
  )TXT",
             fuse_layer_norm, R"TXT(
    graph(%x : f32[N, 3, 5]) {
      const %gamma : f32[5] = [1.0, 2.0, 0.5, -1.0, 0.25]
      const %beta : f32[5] = [0.0, 0.1, 0.2, 0.3, 0.4]
      %10 : f32[N, 3, 5] = layer_norm(%x, %gamma, %beta, normalized_shape=[5], eps=1e-05)
      return (y = %10)
    }
  )TXT",
             {randn({2, 3, 5})}, 1e-5);
  // d * d as the square, eps as a number, no affine part.
  const std::string plain = R"TXT(
    graph(%x : f32[4, 6]) {
      %1 : f32[4, 1] = mean(%x, dim=[1], keepdim=true, dtype=None)
      %2 : f32[4, 6] = sub(%x, %1, alpha=1)
      %3 : f32[4, 6] = mul(%2, %2)
      %4 : f32[4, 1] = mean(%3, dim=[1], keepdim=true, dtype=None)
      %5 : f32[4, 1] = add.Scalar(%4, other=0.001, alpha=1)
      %6 : f32[4, 1] = sqrt(%5)
      %7 : f32[4, 6] = div(%2, %6, rounding_mode=None)
      return (y = %7)
    }
  )TXT";
  check_pass(plain, fuse_layer_norm, R"TXT(
    graph(%x : f32[4, 6]) {
      %8 : f32[4, 6] = layer_norm(%x, None, None, normalized_shape=[6], eps=0.001)
      return (y = %8)
    }
  )TXT",
             {randn({4, 6})}, 1e-5);
  // Left alone: the centred values read elsewhere too (a graph output).
  std::string shared = plain;
  shared.replace(shared.find("return (y = %7)"), 15, "return (y = %7, d = %2)");
  check_pass(shared, fuse_layer_norm, shared, {randn({4, 6})});
}

TEST_CASE("GELU written as x * (erf(x / sqrt(2)) + 1) * 0.5 becomes gelu", "[graph][passes]") {
  // As torch.onnx.export writes nn.GELU(): numbers as constants, the division, x first.
  const std::string exported = R"TXT(
    graph(%x : f32[N, 3, 5]) {
      const %s2 : f32[] = [1.4142135]
      const %one : f32[] = [1.0]
      const %half : f32[] = [0.5]
      %1 : f32[N, 3, 5] = div(%x, %s2, rounding_mode=None)
      %2 : f32[N, 3, 5] = erf(%1)
      %3 : f32[N, 3, 5] = add(%2, %one, alpha=1)
      %4 : f32[N, 3, 5] = mul(%x, %3)
      %5 : f32[N, 3, 5] = mul(%4, %half)
      return (y = %5)
    }
  )TXT";
  check_pass(exported, fuse_gelu, R"TXT(
    graph(%x : f32[N, 3, 5]) {
      %6 : f32[N, 3, 5] = gelu(%x, approximate="none")
      return (y = %6)
    }
  )TXT",
             {randn({2, 3, 5})}, 1e-6);
  // .Scalar operands, a product with 1 / sqrt(2), the 0.5 on x first, the last product swapped.
  const std::string scalars = R"TXT(
    graph(%x : f32[4, 6]) {
      %1 : f32[4, 6] = mul.Scalar(%x, other=0.7071067811865476)
      %2 : f32[4, 6] = erf(%1)
      %3 : f32[4, 6] = add.Scalar(%2, other=1.0, alpha=1)
      %4 : f32[4, 6] = mul.Scalar(%x, other=0.5)
      %5 : f32[4, 6] = mul(%3, %4)
      return (y = %5)
    }
  )TXT";
  check_pass(scalars, fuse_gelu, R"TXT(
    graph(%x : f32[4, 6]) {
      %6 : f32[4, 6] = gelu(%x, approximate="none")
      return (y = %6)
    }
  )TXT",
             {randn({4, 6})}, 1e-6);
  // Left alone: the erf read elsewhere too (a graph output), and a division by 2 instead.
  std::string shared = scalars;
  shared.replace(shared.find("return (y = %5)"), 15, "return (y = %5, e = %2)");
  check_pass(shared, fuse_gelu, shared, {randn({4, 6})});
  std::string by_two = exported;
  by_two.replace(by_two.find("[1.4142135]"), 11, "[2.0]");
  check_pass(by_two, fuse_gelu, by_two, {randn({2, 3, 5})});
}

TEST_CASE("layer_norm of a residual sum becomes add_layer_norm; shared, scaled or broadcast sums stay",
          "[graph][passes]") {
  const std::string residual = R"TXT(
    graph(%x : f32[N, 3, 5], %r : f32[N, 3, 5]) {
      const %gamma : f32[5] = [1.0, 2.0, 0.5, -1.0, 0.25]
      const %beta : f32[5] = [0.0, 0.1, 0.2, 0.3, 0.4]
      %1 : f32[N, 3, 5] = add(%x, %r, alpha=1)
      %2 : f32[N, 3, 5] = layer_norm(%1, %gamma, %beta, normalized_shape=[5], eps=1e-05)
      return (y = %2)
    }
  )TXT";
  check_pass(residual, fuse_residual_norm, R"TXT(
    graph(%x : f32[N, 3, 5], %r : f32[N, 3, 5]) {
      const %gamma : f32[5] = [1.0, 2.0, 0.5, -1.0, 0.25]
      const %beta : f32[5] = [0.0, 0.1, 0.2, 0.3, 0.4]
      %3 : f32[N, 3, 5] = add_layer_norm(%x, %r, %gamma, %beta, normalized_shape=[5], eps=1e-05)
      return (y = %3)
    }
  )TXT",
             {randn({2, 3, 5}), randn({2, 3, 5})}, 0);
  // Two dims normalised, no affine part, one operand twice.
  check_pass(R"TXT(
    graph(%x : f32[4, 3, 6]) {
      %1 : f32[4, 3, 6] = add(%x, %x, alpha=1)
      %2 : f32[4, 3, 6] = layer_norm(%1, None, None, normalized_shape=[3, 6], eps=0.001)
      return (y = %2)
    }
  )TXT",
             fuse_residual_norm, R"TXT(
    graph(%x : f32[4, 3, 6]) {
      %3 : f32[4, 3, 6] = add_layer_norm(%x, %x, None, None, normalized_shape=[3, 6], eps=0.001)
      return (y = %3)
    }
  )TXT",
             {randn({4, 3, 6})}, 0);
  // Left alone: the sum a graph output too; alpha 2; a broadcast operand.
  std::string shared = residual;
  shared.replace(shared.find("return (y = %2)"), 15, "return (y = %2, s = %1)");
  check_pass(shared, fuse_residual_norm, shared, {randn({2, 3, 5}), randn({2, 3, 5})});
  std::string scaled = residual;
  scaled.replace(scaled.find("alpha=1"), 7, "alpha=2");
  check_pass(scaled, fuse_residual_norm, scaled, {randn({2, 3, 5}), randn({2, 3, 5})});
  std::string broadcast = residual;
  broadcast.replace(broadcast.find("%r : f32[N, 3, 5]"), 17, "%r : f32[5]");
  check_pass(broadcast, fuse_residual_norm, broadcast, {randn({2, 3, 5}), randn({5})});
}

TEST_CASE("attention whose heads are transposed back and reshaped becomes attention_merge_heads; others stay",
          "[graph][passes]") {
  const std::string heads = R"TXT(
    graph(%q : f32[N, 4, 6, 8], %k : f32[N, 4, 7, 8], %v : f32[N, 4, 7, 5]) {
      %1 : f32[N, 4, 6, 5] = scaled_dot_product_attention(%q, %k, %v, None, dropout_p=0.0, is_causal=false)
      %2 : f32[N, 6, 4, 5] = transpose(%1, dim0=1, dim1=2)
      %3 : f32[N, 6, 20] = reshape(%2, shape=[N, 6, 20])
      return (y = %3)
    }
  )TXT";
  const std::vector<Tensor> in{randn({2, 4, 6, 8}), randn({2, 4, 7, 8}), randn({2, 4, 7, 5})};
  check_pass(heads, merge_attention_heads, R"TXT(
    graph(%q : f32[N, 4, 6, 8], %k : f32[N, 4, 7, 8], %v : f32[N, 4, 7, 5]) {
      %4 : f32[N, 6, 20] = attention_merge_heads(%q, %k, %v, None, dropout_p=0.0, is_causal=false)
      return (y = %4)
    }
  )TXT",
             in, 0);
  // The permute spelling, negative dims, flatten, a causal mask, no batch symbol.
  check_pass(R"TXT(
    graph(%q : f32[3, 6, 8], %k : f32[3, 6, 8], %v : f32[3, 6, 8]) {
      %1 : f32[3, 6, 8] = scaled_dot_product_attention(%q, %k, %v, None, dropout_p=0.0, is_causal=true)
      %2 : f32[6, 3, 8] = permute(%1, dims=[-2, 0, 2])
      %3 : f32[6, 24] = flatten(%2, start_dim=-2, end_dim=-1)
      return (y = %3)
    }
  )TXT",
             merge_attention_heads, R"TXT(
    graph(%q : f32[3, 6, 8], %k : f32[3, 6, 8], %v : f32[3, 6, 8]) {
      %4 : f32[6, 24] = attention_merge_heads(%q, %k, %v, None, dropout_p=0.0, is_causal=true)
      return (y = %4)
    }
  )TXT",
             {randn({3, 6, 8}), randn({3, 6, 8}), randn({3, 6, 8})}, 0);
  // Sequence-first, as nn.MultiheadAttention exports: heads folded into the batch ([N * H, L, E],
  // here N = 2, H = 4), the output moved to [L, N * H, Ev] and reshaped to [L * N, H * Ev]: the
  // merged [L, N * H * Ev] rows, then the reshape as a view of them.
  check_pass(R"TXT(
    graph(%q : f32[8, 6, 4], %k : f32[8, 5, 4], %v : f32[8, 5, 4]) {
      %1 : f32[8, 6, 4] = scaled_dot_product_attention(%q, %k, %v, None, dropout_p=0.0, is_causal=false)
      %2 : f32[6, 8, 4] = permute(%1, dims=[1, 0, 2])
      %3 : f32[12, 16] = reshape(%2, shape=[12, 16])
      return (y = %3)
    }
  )TXT",
             merge_attention_heads, R"TXT(
    graph(%q : f32[8, 6, 4], %k : f32[8, 5, 4], %v : f32[8, 5, 4]) {
      %4 : f32[6, 32] = attention_merge_heads(%q, %k, %v, None, dropout_p=0.0, is_causal=false)
      %3 : f32[12, 16] = reshape(%4, shape=[12, 16])
      return (y = %3)
    }
  )TXT",
             {randn({8, 6, 4}), randn({8, 5, 4}), randn({8, 5, 4})}, 0);
  // Left alone: the transposed heads read twice; another transpose; a flatten to another shape.
  std::string shared = heads;
  shared.replace(shared.find("return (y = %3)"), 15, "return (y = %3, t = %2)");
  check_pass(shared, merge_attention_heads, shared, in);
  std::string other_dims = heads;
  other_dims.replace(other_dims.find("%2 : f32[N, 6, 4, 5] = transpose(%1, dim0=1, dim1=2)"), 52,
                     "%2 : f32[N, 4, 5, 6] = transpose(%1, dim0=2, dim1=3)");
  other_dims.replace(other_dims.find("%3 : f32[N, 6, 20] = reshape(%2, shape=[N, 6, 20])"), 50,
                     "%3 : f32[N, 4, 30] = reshape(%2, shape=[N, 4, 30])");
  check_pass(other_dims, merge_attention_heads, other_dims, in);
  std::string other_flatten = heads;
  other_flatten.replace(other_flatten.find("%3 : f32[N, 6, 20] = reshape(%2, shape=[N, 6, 20])"), 50,
                        "%3 : f32[N, 120] = flatten(%2, start_dim=1, end_dim=-1)");
  check_pass(other_flatten, merge_attention_heads, other_flatten, in);
}

TEST_CASE("max_pool2d of a channel cat becomes a cat of pools; other cats stay", "[graph][passes]") {
  Tensor a = randn({1, 3, 7, 9});
  a.data_ptr<float>()[10] = std::nanf("");  // pooled alike either way
  // Rewritten: a cat along the channels (dim 1 or -3) that only the pool reads. Kept: a cat
  // along the width, and one that another node reads too.
  check_pass(R"TXT(
    graph(%a : f32[1, 3, 7, 9], %b : f32[1, 2, 7, 9]) {
      %1 : f32[1, 5, 7, 9] = cat([%a, %b], dim=1)
      %2 : f32[1, 5, 3, 4] = max_pool2d(%1, kernel_size=[3], stride=[2], padding=[0], dilation=[1], ceil_mode=false)
      %3 : f32[1, 3, 7, 18] = cat([%a, %a], dim=-1)
      %4 : f32[1, 3, 3, 8] = max_pool2d(%3, kernel_size=[3], stride=[2], padding=[0], dilation=[1], ceil_mode=false)
      %5 : f32[1, 5, 7, 9] = cat([%a, %b], dim=-3)
      %6 : f32[1, 5, 4, 5] = max_pool2d(%5, kernel_size=[2], stride=[2], padding=[0], dilation=[1], ceil_mode=true)
      %7 : f32[1, 5, 7, 9] = neg(%5)
      %8 : f32[1, 5, 7, 9] = cat([%b, %a], dim=-3)
      %9 : f32[1, 5, 4, 5] = max_pool2d(%8, kernel_size=[2], stride=[2], padding=[0], dilation=[1], ceil_mode=true)
      return (y = %2, z = %4, w = %6, v = %7, u = %9)
    }
  )TXT",
             pool_before_cat, R"TXT(
    graph(%a : f32[1, 3, 7, 9], %b : f32[1, 2, 7, 9]) {
      %10 : f32[1, 3, 3, 4] = max_pool2d(%a, kernel_size=[3], stride=[2], padding=[0], dilation=[1], ceil_mode=false)
      %11 : f32[1, 2, 3, 4] = max_pool2d(%b, kernel_size=[3], stride=[2], padding=[0], dilation=[1], ceil_mode=false)
      %12 : f32[1, 5, 3, 4] = cat([%10, %11], dim=1)
      %3 : f32[1, 3, 7, 18] = cat([%a, %a], dim=-1)
      %4 : f32[1, 3, 3, 8] = max_pool2d(%3, kernel_size=[3], stride=[2], padding=[0], dilation=[1], ceil_mode=false)
      %5 : f32[1, 5, 7, 9] = cat([%a, %b], dim=-3)
      %6 : f32[1, 5, 4, 5] = max_pool2d(%5, kernel_size=[2], stride=[2], padding=[0], dilation=[1], ceil_mode=true)
      %7 : f32[1, 5, 7, 9] = neg(%5)
      %13 : f32[1, 2, 4, 5] = max_pool2d(%b, kernel_size=[2], stride=[2], padding=[0], dilation=[1], ceil_mode=true)
      %14 : f32[1, 3, 4, 5] = max_pool2d(%a, kernel_size=[2], stride=[2], padding=[0], dilation=[1], ceil_mode=true)
      %15 : f32[1, 5, 4, 5] = cat([%13, %14], dim=-3)
      return (y = %12, z = %4, w = %6, v = %7, u = %15)
    }
  )TXT",
             {a, randn({1, 2, 7, 9})});
  // Kept: a cat with a constant input (constant folding has run; its pool would run every call).
  const std::string with_constant = R"TXT(
    graph(%a : f32[1, 1, 2, 2]) {
      const %c : f32[1, 1, 2, 2] = [1.0, -2.0, 3.0, 0.5]
      %1 : f32[1, 2, 2, 2] = cat([%a, %c], dim=1)
      %2 : f32[1, 2, 1, 1] = max_pool2d(%1, kernel_size=[2], stride=[2], padding=[0], dilation=[1], ceil_mode=false)
      return (y = %2)
    }
  )TXT";
  check_pass(with_constant, pool_before_cat, with_constant, {randn({1, 1, 2, 2})});
}

TEST_CASE("pointwise fusion", "[graph][passes]") {
  // A chain fuses; an intermediate with a second consumer (mm) stays materialised.
  check_pass(R"TXT(
    graph(%x : f32[3, 3], %y : f32[3]) {
      %1 : f32[3, 3] = mul.Scalar(%x, other=2)
      %2 : f32[3, 3] = add(%1, %y, alpha=0.5)
      %3 : f32[3, 3] = gelu(%2, approximate="none")
      %4 : f32[3, 3] = mm(%3, %3)
      %5 : f32[3, 3] = rsub.Scalar(%4, other=1, alpha=2)
      %6 : f32[3, 3] = clamp(%5, min=None, max=0.25)
      %7 : f32[3, 3] = add(%6, %3, alpha=1)
      return (y = %7)
    }
  )TXT",
             fuse_pointwise, R"TXT(
    graph(%x : f32[3, 3], %y : f32[3]) {
      %8 : f32[3, 3] = fused([%x, %y], program="mul(i0, 2.0); mul(i1, 0.5); add(t0, t1); gelu(t2)")
      %4 : f32[3, 3] = mm(%8, %8)
      %9 : f32[3, 3] = fused([%4, %8], program="mul(i0, 2.0); sub(1.0, t0); clamp_max(t1, 0.25); add(t2, i1)")
      return (y = %9)
    }
  )TXT",
             {randn({3, 3}), randn({3})}, 1e-6);  // erf: libmvec's vector and scalar forms differ by ulps
  // Not fused: integer ops, true-division rounding modes, graph outputs in the middle.
  const std::string keep = R"TXT(
    graph(%x : i64[3], %y : f32[3]) {
      %1 : i64[3] = mul.Scalar(%x, other=2)
      %2 : i64[3] = neg(%1)
      %3 : f32[3] = div.Scalar(%y, other=2, rounding_mode="floor")
      %4 : f32[3] = exp(%y)
      %5 : f32[3] = exp(%4)
      return (a = %2, b = %3, c = %4, d = %5)
    }
  )TXT";
  check_pass(keep, fuse_pointwise, keep, {tensor({int64_t(1), int64_t(2), int64_t(3)}), randn({3})});
}

TEST_CASE("ten chained muls become one node whose results are bit-identical", "[graph][passes]") {
  std::string text = "graph(%x : f32[N]) {\n";
  std::string prev = "x";
  for (int i = 1; i <= 10; ++i) {
    text += str("  %", i, " : f32[N] = mul(%", prev, ", %", prev, ")\n");
    prev = std::to_string(i);
  }
  text += "  return (y = %10)\n}\n";
  Graph g = parsed(text);
  Tensor x = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f, -1.02f, 0.0f});
  Tensor before = run_graph(g, {x})[0];
  optimize(g);
  verify_or_throw(g);
  CHECK(g.num_nodes() == 1);
  CHECK(g.nodes()[0]->op->name == "fused");
  CHECK(test::compare(run_graph(g, {x})[0], before, 0, 0).ok);
}

TEST_CASE("every one-tensor op of the instruction list fuses and computes what the op computes", "[graph][passes]") {
  const Tensor mixed =
      tensor({-4.5f, -3.0f, -2.5f, -1.0f, -0.5f, -0.0f, 0.0f, 0.3f, 0.5f, 1.5f, 2.5f, 3.7f, 6.5f, 10.0f});
  const Tensor positive = tensor({0.01f, 0.3f, 0.5f, 1.0f, 1.5f, 2.5f, 3.7f, 10.0f});
  int checked = 0;
  for (const FusedOpInfo& o : kFusedOps) {
    if (o.kind == FusedOpKind::none || o.kind == FusedOpKind::binary) continue;
    const std::string op = o.name;
    const bool domain = op == "log" || op == "sqrt" || op == "rsqrt" || op == "log1p";
    const Tensor x = domain ? positive : mixed;
    const std::string t = str("f32[", x.numel(), "]");
    // Ops with Scalar attributes: given values (they become the instruction's immediates).
    static const std::map<std::string, std::string> attrs = {
        {"leaky_relu", ", negative_slope=0.2"}, {"elu", ", alpha=0.7"},
        {"softplus", ", beta=2, threshold=3"},  {"hardshrink", ", lambd=1.5"},
        {"softshrink", ", lambd=1.5"},          {"threshold", ", threshold=0.5, value=-2"}};
    const std::string given = attrs.count(op) ? attrs.at(op) : "";
    CHECK((o.kind == FusedOpKind::floating_attrs) == !given.empty());
    Graph g = parsed(str("graph(%x : ", t, ") {\n  %1 : ", t, " = ", op, "(%x", given, ")\n  %2 : ", t,
                         " = mul.Scalar(%1, other=3)\n  %3 : ", t, " = add(%2, %x, alpha=1)\n  return (y = %3)\n}\n"));
    const Tensor before = run_graph(g, {x})[0];
    optimize(g);
    verify_or_throw(g);
    INFO(op);
    REQUIRE(g.num_nodes() == 1);
    CHECK(g.nodes()[0]->op->name == "fused");
    // Bit for bit but for libmvec's vector and scalar forms of exp, log, tanh and erf.
    CHECK(test::compare(run_graph(g, {x})[0], before, 1e-6, 1e-6).ok);
    ++checked;
  }
  CHECK(checked == 41);
}

TEST_CASE("every two-tensor op of the instruction list fuses, broadcasting, and computes what the op computes",
          "[graph][passes]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = tensor({-2.0f, nan, 0.5f, -0.0f, 3.0f, 1.0f}).reshape({2, 3});
  const Tensor b = tensor({0.0f, 1.0f, nan});  // broadcast over a's rows
  int checked = 0;
  for (const FusedOpInfo& o : kFusedOps) {
    if (o.kind != FusedOpKind::binary) continue;
    INFO(o.name);
    Graph g = parsed(str("graph(%a : f32[2, 3], %b : f32[3]) {\n  %1 : f32[2, 3] = ", o.name,
                         "(%a, %b)\n  %2 : f32[2, 3] = mul.Scalar(%1, other=3)\n  %3 : f32[2, 3] = ", o.name,
                         "(%b, %2)\n  return (y = %3)\n}\n"));
    const Tensor before = run_graph(g, {a, b})[0];
    optimize(g);
    verify_or_throw(g);
    REQUIRE(g.num_nodes() == 1);
    CHECK(g.nodes()[0]->op->name == "fused");
    const Tensor after = run_graph(g, {a, b})[0];
    CHECK(test::compare(after, before, 0, 0).ok);  // NaN where either operand is NaN, in both
    const std::vector<float> v = after.to_vector<float>(SrcLoc::none());
    CHECK(std::isnan(v[1]));  // a's NaN
    CHECK(std::isnan(v[2]));  // b's NaN
    CHECK(std::isnan(v[5]));
    CHECK(v[0] == (o.name == std::string("maximum") ? 0.0f : -6.0f));
    ++checked;
  }
  CHECK(checked == 2);
}

TEST_CASE("liveness-based memory planning shares buffers", "[graph][passes][memory]") {
  Graph g = parsed(dedent(R"TXT(
    graph(%x : f32[64]) {
      %1 : f32[64] = exp(%x)
      %2 : f32[64] = tanh(%1)
      %3 : f32[8, 8] = view(%2, size=[8, 8])
      %4 : f32[8, 8] = relu(%3)
      %5 : f32[64] = neg(%x)
      %6 : f32[8, 8] = add(%4, %3, alpha=1)
      %7 : f32[8, 8] = mul(%6, %6)
      return (y = %7)
    }
  )TXT"));
  const MemoryPlan p = plan_memory(g);
  // tanh writes in place of exp's output and add in place of relu's; relu cannot (%3 is read
  // again by add), nor neg (its input is the caller's) nor mul (its output is).
  CHECK(to_text(p) ==
        "%1: offset 0, 256 bytes, nodes [0, 5]\n"
        "%4: offset 256, 256 bytes, nodes [3, 6]\n"
        "%5: offset 512, 256 bytes, nodes [4, 4]\n"
        "%2: in place of %1\n"
        "%3: view of %1\n"
        "%6: in place of %4\n"
        "arena 768 bytes for 3 buffers (768 bytes without sharing)\n");
  // No two buffers live at the same time overlap.
  for (const auto& a : p.buffers)
    for (const auto& b : p.buffers)
      if (&a != &b && a.first <= b.last && b.first <= a.last)
        CHECK((a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset));
}

TEST_CASE("pointwise outputs go in place only of same-layout inputs nothing else reads", "[graph][passes][memory]") {
  Graph g = parsed(dedent(R"TXT(
    graph(%x : f32[8, 8], %r : f32[1, 8]) {
      %1 : f32[8, 8] = exp(%x)
      %2 : f32[8, 8] = transpose(%1, dim0=0, dim1=1)
      %3 : f32[8, 8] = add(%1, %2, alpha=1)
      %4 : f32[1, 8] = neg(%r)
      %5 : f32[8, 8] = mul(%4, %3)
      %6 : bool[8, 8] = gt(%5, %x)
      %7 : f32[8, 8] = where(%6, %5, %x)
      return (y = %7)
    }
  )TXT"));
  // add reads %1 also transposed (%2); mul's broadcast input has another layout but %3 dies
  // there; gt's output has another element size; where's output is the caller's.
  CHECK(to_text(plan_memory(g)) ==
        "%1: offset 0, 256 bytes, nodes [0, 2]\n"
        "%3: offset 256, 256 bytes, nodes [2, 6]\n"
        "%4: offset 0, 64 bytes, nodes [3, 4]\n"
        "%6: offset 0, 64 bytes, nodes [5, 6]\n"
        "%2: view of %1\n"
        "%5: in place of %3\n"
        "arena 512 bytes for 4 buffers (640 bytes without sharing)\n");
}

TEST_CASE("the interpreter instantiates symbolic graphs per batch size", "[graph][interpreter]") {
  Graph g = parsed(dedent(R"TXT(
    graph(%x : f32[N, 2]) {
      %1 : f32[2*N] = reshape(%x, shape=[2*N])
      %2 : f32[N, 3] = full(size=[N, 3], fill_value=1.5, dtype=None)
      %3 : f32[N] = sum(%2, dim=[1], keepdim=false, dtype=None)
      return (flat = %1, s = %3)
    }
  )TXT"));
  for (int64_t n : {1, 4, 7}) {
    auto out = run_graph(g, {ones({n, 2})});
    CHECK(out[0].sizes() == DimVec{2 * n});
    CHECK(out[1].sizes() == DimVec{n});
    CHECK(out[1].at<float>({n - 1}) == 4.5f);
  }
  AMBER_REQUIRE_ERROR(run_graph(g, {ones({3, 3})}), "input x: expected f32[N, 2] (f32[3, 2] at N=3), got f32[3, 3]");
  AMBER_REQUIRE_ERROR(run_graph(g, {}), "expected 1 inputs (x), got 0");
}

TEST_CASE("type promotion becomes explicit `to` nodes", "[graph][passes]") {
  check_pass(R"TXT(
    graph(%x : f32[3], %i : i64[3]) {
      %1 : f32[3] = add(%x, %i, alpha=1)
      %2 : f32[3] = mul(%1, %x)
      return (y = %2)
    }
  )TXT",
             materialize_casts, R"TXT(
    graph(%x : f32[3], %i : i64[3]) {
      %3 : f32[3] = to(%i, dtype=f32)
      %1 : f32[3] = add(%x, %3, alpha=1)
      %2 : f32[3] = mul(%1, %x)
      return (y = %2)
    }
  )TXT",
             {tensor({1.f, 2.f, 3.f}), tensor(std::vector<int64_t>{4, 5, 6})});
}

TEST_CASE("the whole model in bf16: weights rounded, values stored in 16 bits, signature unchanged",
          "[graph][passes]") {
  // linear and fused take bf16; the lone add becomes a one-node fused program first; the
  // explicit conversion to f32 stays, so that program's inputs are mixed, it gives f32, and its
  // result is stored in bf16 again; argmax's i64 output keeps its type; outputs leave in f32.
  check_pass(R"TXT(
    graph(%x : f32[N, 3]) {
      const %w : f32[2, 3] = [1.0, -2.5, 0.1, 0.3, 2.0, -1.0]
      const %b : f32[2] = [0.5, -0.5]
      %1 : f32[N, 2] = linear(%x, %w, %b)
      %2 : f32[N, 2] = fused([%1], program="relu(i0)")
      %3 : f32[N, 2] = to(%2, dtype=f32)
      %4 : f32[N, 2] = add(%2, %3, alpha=1)
      %5 : i64[N] = argmax(%4, dim=1, keepdim=false)
      return (y = %4, i = %5, z = %2)
    }
  )TXT",
             [](Graph& g) { half_model(g, DType::bf16); }, R"TXT(
    graph(%x : f32[N, 3]) {
      const %w : bf16[2, 3] = [1.0, -2.5, 0.10009765625, 0.30078125, 2.0, -1.0]
      const %b : bf16[2] = [0.5, -0.5]
      %7 : bf16[N, 3] = to(%x, dtype=bf16)
      %1 : bf16[N, 2] = linear(%7, %w, %b)
      %2 : bf16[N, 2] = fused([%1], program="relu(i0)")
      %3 : f32[N, 2] = to(%2, dtype=f32)
      %6 : f32[N, 2] = fused([%2, %3], program="add(i0, i1)")
      %8 : bf16[N, 2] = to(%6, dtype=bf16)
      %5 : i64[N] = argmax(%8, dim=1, keepdim=false)
      %9 : f32[N, 2] = to(%8, dtype=f32)
      %10 : f32[N, 2] = to(%2, dtype=f32)
      return (y = %9, i = %5, z = %10)
    }
  )TXT",
             {tensor({0.1f, 0.2f, 0.3f, -1.f, 2.f, 0.5f}).reshape({2, 3})}, 2e-2);
}

TEST_CASE("the whole model in f16: a weight beyond f16's range stays f32, its reader computes in f32",
          "[graph][passes]") {
  // %w holds 1e5 (f16 would make it Inf): it stays f32, and its linear runs in f32 between
  // conversions; %v becomes f16 as usual.
  check_pass(R"TXT(
    graph(%x : f32[N, 2]) {
      const %w : f32[2, 2] = [100000.0, 0.5, -0.25, 1.0]
      const %v : f32[2, 2] = [1.0, 2.0, 3.0, 4.0]
      %1 : f32[N, 2] = linear(%x, %w, None)
      %2 : f32[N, 2] = linear(%1, %v, None)
      return (y = %2)
    }
  )TXT",
             [](Graph& g) { half_model(g, DType::f16); }, R"TXT(
    graph(%x : f32[N, 2]) {
      const %w : f32[2, 2] = [1e+05, 0.5, -0.25, 1.0]
      const %v : f16[2, 2] = [1.0, 2.0, 3.0, 4.0]
      %3 : f16[N, 2] = to(%x, dtype=f16)
      %4 : f32[N, 2] = to(%3, dtype=f32)
      %1 : f32[N, 2] = linear(%4, %w, None)
      %5 : f16[N, 2] = to(%1, dtype=f16)
      %2 : f16[N, 2] = linear(%5, %v, None)
      %6 : f32[N, 2] = to(%2, dtype=f32)
      return (y = %6)
    }
  )TXT",
             {tensor({1e-3f, 2.f, -1e-3f, 0.5f}).reshape({2, 2})}, 1e-2);
}
