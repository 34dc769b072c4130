// Op libraries (schema/op_library.h) in process: a library's op runs eagerly through
// call_op, is traced, printed and parsed as graph text, saved and loaded; every refusal
// (namespace, signature, kernels, ABI versions, clashes, a failing registration) names the
// problem and registers nothing. samples/custom_op (tests/check_custom_op.sh) covers dlopen.

#include "amber/schema/op_library.h"

#include <cmath>
#include <stdexcept>

#include "amber/amber.h"
#include "amber/graph/text.h"
#include "amber/graph/verify.h"
#include "test_util.h"

using namespace amber;
using graph::parse_graph;
using graph::to_text;

namespace {

void infer_same(InferCtx& c) { c.add_output(c.in(0).dtype, c.in(0).sizes); }

// y = f(x) elementwise for an f32 input of any strides.
template <typename F>
int map_f32(const amber_kernel_args* args, F f) {
  const amber_tensor_view& x = args->inputs[0];
  const amber_tensor_view& y = args->outputs[0];
  int64_t n = 1, index[AMBER_MAX_DIMS] = {};
  for (int d = 0; d < y.ndim; ++d) n *= y.sizes[d];
  for (int64_t k = 0; k < n; ++k) {
    int64_t xo = 0, yo = 0;
    for (int d = 0; d < y.ndim; ++d) xo += index[d] * x.strides[d], yo += index[d] * y.strides[d];
    static_cast<float*>(y.data)[yo] = f(static_cast<const float*>(x.data)[xo]);
    for (int d = y.ndim - 1; d >= 0 && ++index[d] == y.sizes[d]; --d) index[d] = 0;
  }
  return 0;
}

// testops::affine(x, a, b) = a * x + b, f32 only, contiguous or not.
constexpr char kAffine[] = "testops::affine(Tensor x, float a, float b=0.0) -> Tensor";
constexpr int kA = attr_index(kAffine, "a"), kB = attr_index(kAffine, "b");
int affine_f32(const amber_kernel_args* args) {
  const double a = args->attrs[kA].f, b = args->attrs[kB].f;
  return map_f32(args, [&](float v) { return float(a * v + b); });
}

// testops::shift(x, by) = x + by's position among its choices: a kernel reading a str{...}.
constexpr char kShift[] = "testops::shift(Tensor x, str{none,one,two} by=\"one\") -> Tensor";
int shift_f32(const amber_kernel_args* args) {
  const int64_t by = args->attrs[attr_index(kShift, "by")].i;
  return map_f32(args, [&](float v) { return v + float(by); });
}

void register_testops(OpLibrary& lib) {
  lib.def({kAffine, dtypes::floating, infer_same});
  lib.kernel("testops::affine", DeviceType::cpu, DType::f32, affine_f32);
  lib.def({kShift, dtypes::floating, infer_same});
  lib.kernel("testops::shift", DeviceType::cpu, DType::f32, shift_f32);
}
const amber_op_library_info kTestops{AMBER_OP_LIBRARY_ABI_VERSION, AMBER_BACKEND_ABI_VERSION, "testops",
                                     &register_testops};

Tensor affine(const Tensor& x, double a, double b) { return call_op("testops::affine", {x}, {{"a", a}, {"b", b}})[0]; }

}  // namespace

TEST_CASE("an op library's op runs eagerly, traces, prints, parses, saves and loads", "[op_library]") {
  register_op_library(kTestops, "this test");
  register_op_library(kTestops, "this test");  // again: nothing happens
  CHECK(op_library_origin("testops") == "this test");
  const OpSchema* op = find_op("testops::affine");
  REQUIRE(op);
  CHECK(op_namespace(op->name) == "testops");
  CHECK(op_namespace("add.Scalar").empty());

  const Tensor x = tensor({1.0f, -2.0f, 3.5f, 0.25f, 8.0f, -1.0f}).reshape({2, 3});
  const Tensor eager = affine(x.t(), 2.0, 0.5);  // a non-contiguous input
  CHECK(test::compare(eager, x.t() * 2.0 + 0.5, 0, 0).ok);
  CHECK(test::compare(call_op("testops::affine", {x}, {{"a", 3.0}})[0], x * 3.0, 0, 0).ok);  // b's default

  TraceOptions o;
  o.print_warnings = false;
  TracedModule traced = trace([](const Tensor& in) { return affine(relu(in), -1.5, 2.0); }, {x}, o);
  const std::string text = to_text(traced.graph());
  CHECK_THAT(text, Catch::Matchers::Contains("testops::affine(%"));
  CHECK(to_text(parse_graph(text)) == text);
  const Model loaded = load(traced.save_to_bytes());
  const Tensor want = affine(relu(x), -1.5, 2.0);
  CHECK(test::compare(traced.forward({x})[0], want, 0, 0).ok);
  CHECK(test::compare(loaded.forward({x})[0], want, 0, 0).ok);

  // 16 bits through the library's f32 kernel (docs/OPS.md, "16-bit floats"): the op lists f32,
  // so it lists f16 and bf16; computed in f32 on the widened values, rounded once.
  CHECK(op->dtypes.contains(DType::bf16));
  const Tensor xh = x.t().to(DType::bf16);
  const Tensor yh = affine(xh, 2.0, 0.5);
  CHECK(yh.dtype() == DType::bf16);
  CHECK(test::compare(yh, (xh.to(DType::f32) * 2.0 + 0.5).to(DType::bf16), 0, 0).ok);

  // A dtype the op lists but the library has no kernel for, and a device it has none for.
  AMBER_REQUIRE_ERROR(affine(x.to(DType::f64), 1, 0),
                      "testops::affine: op library testops (this test) has no cpu kernel for dtype f64");
  AMBER_REQUIRE_ERROR(load(traced.save_to_bytes(), LoadOptions{.device = Device::sim(0)}),
                      "op library testops (this test) has no sim kernel for dtype f32");
}

TEST_CASE("attr_index finds each attribute where the table puts it", "[op_library]") {
  static_assert(kA == 0 && kB == 1);
  static_assert(
      attr_index("ns::f(Tensor x, int[] d=[1, 2], str m=\"a,)b\", Tensor? w=None, float k=1.0) -> Tensor", "k") == 2);
  static_assert(attr_index("ns::f(Tensor x, str{a,b}? m=None, float k=1.0) -> Tensor", "k") == 1);
  int checked = 0;
  for (const OpSchema* op : all_ops())  // every built-in op's signature, against the parser's positions
    for (int i = 0; i < op->num_attrs(); ++i, ++checked) {
      INFO(op->signature);
      CHECK(attr_index(op->signature, op->attr_spec(i).name) == i);
    }
  CHECK(checked > 150);  // 172 attributes when written
  AMBER_REQUIRE_ERROR(attr_index(kAffine, "c"),
                      "'testops::affine(Tensor x, float a, float b=0.0) -> Tensor' has no attribute named 'c'");
  AMBER_REQUIRE_ERROR(attr_index(kAffine, "x"), "has no attribute named 'x'");  // a tensor is no attribute
}

TEST_CASE("call_op names the op and the attribute it cannot use", "[op_library]") {
  register_op_library(kTestops, "this test");
  const Tensor x = ones({3});
  AMBER_REQUIRE_ERROR(call_op("testops::affine", {x}, {{"scale", 1.0}}),
                      "testops::affine: no attribute named 'scale' (testops::affine(Tensor x, float a, float b=0.0)");
  AMBER_REQUIRE_ERROR(call_op("testops::affine", {x}, {}), "testops::affine: attribute 'a' is required");
  AMBER_REQUIRE_ERROR(call_op("testops::affine", {x}, {{"a", 1.0}, {"a", 2.0}}), "attribute 'a' given twice");
  AMBER_REQUIRE_ERROR(call_op("nolib::f", {x}), "unknown op 'nolib::f' (namespace nolib is an op library's");
  AMBER_REQUIRE_ERROR(parse_graph("graph(%x : f32[3]) {\n  %1 : f32[3] = nolib::f(%x)\n  return (y = %1)\n}\n"),
                      "unknown op 'nolib::f': namespace nolib is an op library's");
}

TEST_CASE("a str{...} attribute holds one of its strings, which kernels read as its position", "[op_library]") {
  register_op_library(kTestops, "this test");
  const Tensor x = tensor({1.0f, -2.0f, 3.5f});
  auto shift = [](const Tensor& t, const char* by) { return call_op("testops::shift", {t}, {{"by", by}})[0]; };
  CHECK(test::compare(shift(x, "two"), x + 2.0, 0, 0).ok);
  CHECK(test::compare(shift(x, "none"), x, 0, 0).ok);
  CHECK(test::compare(call_op("testops::shift", {x}, {})[0], x + 1.0, 0, 0).ok);  // the default, "one"
  AMBER_REQUIRE_ERROR(shift(x, "three"), "testops::shift: by must be none, one or two, got 'three'");
  AMBER_REQUIRE_ERROR(shift(x, "One"), "by must be none, one or two, got 'One'");

  // Traced, saved and loaded: the loader's plan hands the kernel the position too.
  TraceOptions o;
  o.print_warnings = false;
  TracedModule traced = trace([&](const Tensor& in) { return shift(in, "two"); }, {x}, o);
  CHECK(test::compare(load(traced.save_to_bytes()).forward({x})[0], x + 2.0, 0, 0).ok);
  // A graph whose attribute is none of the choices (as an archive's reader checks it) is refused,
  // naming the node's op and the value.
  std::string text = to_text(traced.graph());
  const size_t at = text.find("\"two\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 5, "\"six\"");
  AMBER_REQUIRE_ERROR(graph::verify_or_throw(parse_graph(text)),
                      "testops::shift: by must be none, one or two, got 'six'");

  // The built-in ops' choices alike.
  AMBER_REQUIRE_ERROR(pad(x, {1, 1}, "edge"), "pad: mode must be constant, reflect, replicate or circular, got 'edge'");
  AMBER_REQUIRE_ERROR(gelu(x, "exact"), "gelu: approximate must be none or tanh, got 'exact'");
}

namespace {

int noop_kernel(const amber_kernel_args*) { return 0; }
// Each registers one good op first, so a refusal must also drop what came before it.
void outside_namespace(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.def({"otherlib::f(Tensor x) -> Tensor", dtypes::floating, infer_same});
}
void bad_signature(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.def({"badlib::f(Tensor x, floaty y) -> Tensor", dtypes::floating, infer_same});
}
void choice_twice(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.def({"badlib::f(Tensor x, str{a,b,a} m=\"a\") -> Tensor", dtypes::floating, infer_same});
}
void default_not_a_choice(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.def({"badlib::f(Tensor x, str{a,b} m=\"c\") -> Tensor", dtypes::floating, infer_same});
}
void no_choices(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.def({"badlib::f(Tensor x, str{} m) -> Tensor", dtypes::floating, infer_same});
}
void kernel_without_op(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.kernel("badlib::missing", DeviceType::cpu, DType::f32, noop_kernel);
}
void kernel_for_unlisted_dtype(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.kernel("badlib::good", DeviceType::cpu, DType::i32, noop_kernel);
}
void no_inference(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  lib.def({"badlib::f(Tensor x) -> Tensor", dtypes::floating, nullptr});
}
void throws_other(OpLibrary& lib) {
  lib.def({"badlib::good(Tensor x) -> Tensor", dtypes::floating, infer_same});
  throw std::runtime_error("the library's own failure");
}
void defines_builtin_name(OpLibrary& lib) { lib.def({"relu(Tensor x) -> Tensor", dtypes::floating, infer_same}); }
void defines_nothing(OpLibrary&) {}

amber_op_library_info info(void (*f)(OpLibrary&), const char* ns = "badlib") {
  return {AMBER_OP_LIBRARY_ABI_VERSION, AMBER_BACKEND_ABI_VERSION, ns, f};
}

}  // namespace

TEST_CASE("a refused op library names the problem and registers nothing", "[op_library][reliability]") {
  const std::pair<amber_op_library_info, const char*> cases[] = {
      {info(outside_namespace), "op otherlib::f is not in the library's namespace (its name must begin with badlib::)"},
      {info(bad_signature), "bad op signature 'badlib::f(Tensor x, floaty y) -> Tensor'"},
      {info(choice_twice), "badlib::f: m lists 'a' twice"},
      {info(default_not_a_choice), "badlib::f: m's default 'c' is none of its choices"},
      {info(no_choices),
       "bad op signature 'badlib::f(Tensor x, str{} m) -> Tensor' at character 24: expected a choice"},
      {info(kernel_without_op), "a kernel for badlib::missing, which the library has not defined"},
      {info(kernel_for_unlisted_dtype), "a cpu kernel of badlib::good for i32, which its definition does not list"},
      {info(no_inference), "badlib::f: no inference function"},
      {info(throws_other), "its registration failed: the library's own failure (nothing of it was registered)"},
      {info(defines_builtin_name), "op relu is not in the library's namespace"},
      {info(defines_nothing), "defines no ops"},
      {info(defines_nothing, "amber"), "namespace 'amber' is reserved"},
      {info(defines_nothing, "bad-name"), "namespace 'bad-name' is not an identifier"},
      {info(nullptr), "has no registration function"},
      {{AMBER_OP_LIBRARY_ABI_VERSION + 7, AMBER_BACKEND_ABI_VERSION, "badlib", defines_nothing},
       "built for op-library ABI version 8; this Amber has version 1"},
      {{AMBER_OP_LIBRARY_ABI_VERSION, AMBER_BACKEND_ABI_VERSION - 1, "badlib", defines_nothing},
       "built for backend ABI version 10; this Amber has version 11"},
  };
  static_assert(AMBER_OP_LIBRARY_ABI_VERSION == 1 && AMBER_BACKEND_ABI_VERSION == 11, "update the expected messages");
  for (const auto& [lib, message] : cases) {
    INFO(message);
    AMBER_REQUIRE_ERROR(register_op_library(lib, "badlib.so"), message);
    CHECK(find_op("badlib::good") == nullptr);
    CHECK(op_library_origin("badlib").empty());
  }
  // A namespace belongs to one library.
  register_op_library(kTestops, "this test");
  const amber_op_library_info impostor{AMBER_OP_LIBRARY_ABI_VERSION, AMBER_BACKEND_ABI_VERSION, "testops",
                                       &register_testops};
  AMBER_REQUIRE_ERROR(register_op_library(impostor, "other.so"),
                      "op library other.so: namespace testops is already provided by op library this test");
  // A file that is not an op library.
  AMBER_REQUIRE_ERROR(load_op_library(AMBER_SIM_LIBRARY), "exports no amber_op_library_entry");
  AMBER_REQUIRE_ERROR(load_op_library("/nonexistent/libx.so"), "op library /nonexistent/libx.so cannot be loaded");
}
