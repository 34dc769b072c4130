// ONNX import: ONNX's own node test suite (Debian's libonnx-testdata: one-node models with
// inputs and expected outputs) imported, saved, loaded and run, with a table per op of
// passed, failed and refused; and the importer's refusals of hostile or unsupported files.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "amber/graph/graph.h"
#include "amber/loader/model.h"
#include "amber/onnx/import.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"
#include "test_util.h"

using namespace amber;
namespace fs = std::filesystem;

namespace {

const char* node_dir() {
  const char* env = std::getenv("AMBER_ONNX_NODE_TESTS");
  return env ? env : "/usr/share/libonnx-testdata/data/node";
}

onnx::ModelProto read_model(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

// Tolerances (ONNX's backend tests use rtol 1e-3, atol 1e-7 for every float type): floats
// within atol + rtol * |expected|, NaN where expected is NaN; integers and bools exactly.
struct Tol {
  double atol, rtol;
};
Tol tolerance(DType t) {
  switch (t) {
    case DType::f64:
      return {1e-7, 1e-5};
    case DType::f32:
      return {1e-6, 1e-3};
    case DType::f16:
    case DType::bf16:
      return {1e-3, 1e-2};
    default:
      return {0, 0};
  }
}

// "" when equal within the dtype's tolerance, else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  const Tol tol = tolerance(want.dtype());
  const test::Diff d = test::compare(got, want, tol.atol, tol.rtol);
  return d.ok ? "" : d.message;
}

struct Counts {
  int passed = 0, failed = 0, refused = 0;
  std::string reason;  // the first refusal's
};

}  // namespace

TEST_CASE("ONNX's node test suite imports, loads and runs; no imported test fails", "[onnx][node-suite]") {
  if (!fs::is_directory(node_dir())) {
    WARN("SKIPPED: no ONNX node tests at " << node_dir() << " (Debian's libonnx-testdata)");
    return;
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(node_dir()))
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, Counts> by_op;
  std::vector<std::string> failures;
  int passed = 0, failed = 0, refused = 0;
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    const onnx::ModelProto proto = read_model(dir / "model.onnx");
    // The op a test is filed under: its node's type; expanded function bodies together.
    const bool expanded = proto.graph().node_size() != 1;
    const std::string op = expanded ? "(expanded function bodies)" : proto.graph().node(0).op_type();
    Counts& c = by_op[op];
    const fs::path data = dir / "test_data_set_0";
    std::vector<std::string> in_names, out_names;
    std::set<std::string> inits;
    for (const auto& t : proto.graph().initializer()) inits.insert(t.name());
    for (const auto& vi : proto.graph().input())
      if (!inits.count(vi.name())) in_names.push_back(vi.name());
    for (const auto& vi : proto.graph().output()) out_names.push_back(vi.name());
    std::vector<Tensor> inputs, expected;
    std::string why;
    try {
      for (size_t i = 0; i < in_names.size(); ++i)
        inputs.push_back(read_onnx_tensor((data / str("input_", i, ".pb")).string()));
      for (size_t i = 0; i < out_names.size(); ++i)
        expected.push_back(read_onnx_tensor((data / str("output_", i, ".pb")).string()));
    } catch (const std::exception& e) {
      why = str("test data: ", e.what());
    }
    // Import with the test's inputs as the example inputs; inputs an op needs at import
    // (shapes, axes, pads) are given as constants, the way a model would hold them.
    OnnxImportOptions o;
    for (size_t i = 0; i < inputs.size(); ++i) o.example_inputs[in_names[i]] = inputs[i];
    std::optional<TracedModule> traced;
    for (int attempt = 0; why.empty() && attempt <= int(in_names.size()); ++attempt) {
      try {
        traced.emplace(import_onnx((dir / "model.onnx").string(), o));
        break;
      } catch (const OnnxImportError& e) {
        if (e.needs_constant().empty()) {
          why = e.refusals().empty() ? e.what() : str(e.refusals()[0].op_type, ": ", e.refusals()[0].reason);
          break;
        }
        for (const std::string& n : e.needs_constant()) {
          const size_t i = size_t(std::find(in_names.begin(), in_names.end(), n) - in_names.begin());
          o.constant_inputs[n] = inputs.at(i);
        }
      } catch (const std::exception& e) {
        why = e.what();
        break;
      }
    }
    if (!traced) {
      if (std::getenv("AMBER_ONNX_VERBOSE")) std::printf("REFUSED %s: %s\n", name.c_str(), why.c_str());
      ++refused, ++c.refused;
      if (c.reason.empty()) c.reason = why.substr(0, why.find('\n'));
      continue;
    }
    // Save, load from the bytes, run with the inputs the archive kept.
    std::string diff;
    try {
      const std::vector<uint8_t> bytes = traced->save_to_bytes();
      const Model m = load(std::span<const uint8_t>(bytes));
      std::vector<Tensor> args;
      for (size_t i = 0; i < in_names.size(); ++i)
        if (!o.constant_inputs.count(in_names[i])) args.push_back(inputs[i]);
      const std::vector<Tensor> got = m.forward(args);
      if (got.size() != expected.size()) diff = str(got.size(), " outputs, expected ", expected.size());
      for (size_t i = 0; diff.empty() && i < got.size(); ++i)
        if (std::string d = compare(got[i], expected[i]); !d.empty()) diff = str("output ", i, ": ", d);
    } catch (const std::exception& e) {
      diff = str("running: ", e.what());
    }
    if (diff.empty()) {
      ++passed, ++c.passed;
    } else {
      ++failed, ++c.failed;
      failures.push_back(str(name, ": ", diff));
    }
  }
  std::printf("ONNX node tests (%s): %zu tests\n%-32s %6s %6s %7s  first refusal\n", node_dir(), dirs.size(), "op",
              "passed", "failed", "refused");
  for (const auto& [op, c] : by_op)
    std::printf("%-32s %6d %6d %7d  %s\n", op.c_str(), c.passed, c.failed, c.refused, c.reason.substr(0, 150).c_str());
  std::printf("total: %d passed, %d failed, %d refused\n", passed, failed, refused);
  for (const std::string& f : failures) std::printf("FAILED %s\n", f.c_str());
  CHECK(failed == 0);
  // The floor: the count passing when it was last raised (docs/ONNX.md); it only goes up.
  CHECK(passed >= 795);
}

// ---- the importer's refusals and options, on small models built here ----

namespace {

struct Builder {
  onnx::ModelProto m;
  explicit Builder(int opset = 13) {
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m.mutable_graph()->set_name("g");
  }
  // dims: a number, or -1 for the symbol `sym`
  void input(const std::string& name, std::vector<int64_t> dims, const std::string& sym = "N",
             int type = onnx::TensorProto::FLOAT) {
    value_info(m.mutable_graph()->add_input(), name, dims, sym, type);
  }
  // rank dims of unknown size
  void output(const std::string& name, int rank = 1, int type = onnx::TensorProto::FLOAT) {
    auto* vi = m.mutable_graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int i = 0; i < rank; ++i) shape->add_dim();
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                        const std::string& name = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  onnx::TensorProto* initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  std::string bytes() const { return m.SerializeAsString(); }

 private:
  static void value_info(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims,
                         const std::string& sym, int type) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param(sym);
      else
        dim->set_dim_value(d);
    }
  }
};

void add_int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void add_ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t e : v) a->add_ints(e);
}

}  // namespace

TEST_CASE("import_onnx refuses what is not a model it can take, naming why", "[onnx]") {
  AMBER_REQUIRE_ERROR(import_onnx_bytes(std::string("\xff\xff\xff\x0f garbage", 12)), "does not parse");
  {
    Builder b(18);
    b.input("x", {2});
    b.output("y");
    b.node("Relu", {"x"}, {"y"});
    AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes()), "imports opset 18 of the default domain; Amber reads 7 to 17");
  }
  {  // every node that cannot be imported, in one error
    Builder b;
    b.input("x", {2, 3});
    b.output("z");
    b.node("Bernoulli", {"x"}, {"y"}, "rand1");
    b.node("Unique", {"y"}, {"z"}, "uniq");
    try {
      import_onnx_bytes(b.bytes());
      FAIL("imported");
    } catch (const OnnxImportError& e) {
      REQUIRE(e.refusals().size() == 2);
      CHECK(e.refusals()[0].node == "rand1");
      CHECK(e.refusals()[1].op_type == "Unique");
      CHECK(std::string(e.what()).find("2 node(s) cannot be imported:\n  rand1 (Bernoulli): no Amber mapping") !=
            std::string::npos);
    }
  }
  {  // a shape fed as a graph input must be known at import
    Builder b;
    b.input("x", {2, 3});
    b.input("shape", {1}, "", onnx::TensorProto::INT64);
    b.output("y");
    b.node("Reshape", {"x", "shape"}, {"y"}, "r");
    try {
      import_onnx_bytes(b.bytes());
      FAIL("imported");
    } catch (const OnnxImportError& e) {
      CHECK(e.needs_constant() == std::vector<std::string>{"shape"});
      CHECK(std::string(e.what()).find("node r (Reshape): input 1 ('shape') must be known at import") !=
            std::string::npos);
    }
    OnnxImportOptions o;
    o.constant_inputs["shape"] = tensor<int64_t>({6});
    const TracedModule t = import_onnx_bytes(b.bytes(), o);
    const Tensor x = randn({2, 3});
    CHECK(test::compare(t.forward({x})[0], x.reshape({6}), 0, 0).ok);
  }
  {  // symbolic dims other than a leading batch need sizes
    Builder b;
    b.input("x", {-1, -1}, "T");
    b.output("y");
    b.node("Relu", {"x"}, {"y"});
    AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes()), "input 'x' dim 1 is symbolic ('T'): give its size");
    OnnxImportOptions o;
    o.dims["T"] = 5;
    CHECK(import_onnx_bytes(b.bytes(), o).graph().inputs()[0]->type.shape.size() == 2);
  }
  {  // an initializer's data must match its dims, checked before allocating
    Builder b;
    b.input("x", {2});
    b.output("y");
    b.initializer("w", {int64_t(1) << 40, int64_t(1) << 20}, {1.0f});
    b.node("Add", {"x", "w"}, {"y"});
    AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes()), "the limit is");
    Builder c;
    c.input("x", {2});
    c.output("y");
    c.initializer("w", {3}, {1.0f, 2.0f});
    c.node("Add", {"x", "w"}, {"y"});
    AMBER_REQUIRE_ERROR(import_onnx_bytes(c.bytes()), "float_data holds 2 values, its dims need 3");
  }
}

TEST_CASE("import_onnx caps every tensor the model computes while it runs at import", "[onnx]") {
  // ConstantOfShape of a 4 GiB shape held in an initializer: refused before allocating
  Builder b;
  b.input("x", {2});
  b.output("y", 2);
  auto* shape = b.m.mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(int64_t(1) << 20);
  shape->add_int64_data(int64_t(1) << 10);
  b.node("ConstantOfShape", {"shape"}, {"big"}, "c");
  b.node("Add", {"big", "x"}, {"y"}, "a");
  OnnxImportOptions o;
  o.max_tensor_bytes = 1 << 20;
  AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes(), o),
                      "node c (ConstantOfShape): allocating 4294967296 bytes on cpu exceeds this thread's limit of "
                      "1048576 bytes");
  const Tensor small = zeros({600, 600});  // the limit ends with the import
  CHECK(small.numel() == 360000);
}

TEST_CASE("import_onnx caps the work of running the model at import", "[onnx]") {
  // Small tensors, a window of 300 x 300 at each of 300 x 300 places: 8.1e9 comparisons
  // (and 1795204 bytes read and written: the 599 x 599 input the asymmetric pads make, and
  // the output; and 1024 for the call).
  Builder b;
  b.input("x", {1, 1, 300, 300});
  b.output("y", 4);
  auto* pool = b.node("MaxPool", {"x"}, {"y"}, "p");
  add_ints_attr(pool, "kernel_shape", {300, 300});
  add_ints_attr(pool, "pads", {150, 150, 149, 149});
  OnnxImportOptions o;
  o.max_work = 1e9;
  AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes(), o),
                      "node p (MaxPool): max_pool2d: this call's work (about 8101796228 operations");
  AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes(), o),
                      "left of this thread's work limit (OnnxImportOptions::max_work)");
  // The limit ends with the import, and nested limits count against the outer one.
  const Tensor x = zeros({1, 1, 30, 30});
  CHECK(max_pool2d(x, {30, 30}, {1, 1}, {15, 15}).numel() == 31 * 31);
  {
    const WorkLimit outer(1e5, "outer");
    {
      const WorkLimit inner(1e9, "inner");  // the outer budget binds
      AMBER_REQUIRE_ERROR(max_pool2d(x, {30, 30}, {1, 1}, {15, 15}), "work limit (outer)");
      (void)relu(x);  // 7200 bytes and 1024 for the call
    }
    const WorkLimit inner(5000, "inner");
    AMBER_REQUIRE_ERROR(relu(x), "more than the 5000 left of this thread's work limit (inner)");
  }
}

TEST_CASE("import_onnx refuses window strides, dilations and sizes below 1", "[onnx]") {
  for (const char* attr : {"strides", "dilations"}) {
    Builder b;
    b.input("x", {1, 1, 8, 8});
    b.output("y", 4);
    auto* pool = b.node("MaxPool", {"x"}, {"y"}, "p");
    add_ints_attr(pool, "kernel_shape", {2, 2});
    add_ints_attr(pool, attr, {0, 1});
    auto* a = pool->add_attribute();
    a->set_name("auto_pad");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s("SAME_UPPER");
    AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes()),
                        str("node p (MaxPool): ", attr, " [0, 1]: each value must be from 1 to 2147483647"));
  }
}

TEST_CASE("an imported name that is not UTF-8 fails the save, not a later load", "[onnx]") {
  Builder b;
  b.input("x\xff", {2});
  b.output("y");
  b.node("Relu", {"x\xff"}, {"y"});
  AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes()).save_to_bytes(), "save: value name 'x\\xff' is not valid UTF-8");
}

TEST_CASE("import_onnx reads external data only from inside the model's folder", "[onnx]") {
  const test::ScratchDir scratch("amber_onnx_ext");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "model");
  {
    std::ofstream(dir / "model" / "w.bin", std::ios::binary).write("\0\0\x80?\0\0\0@", 8);  // 1.0f, 2.0f
    std::ofstream(dir / "secret.bin", std::ios::binary).write("\0\0\x80?\0\0\0@", 8);
  }
  fs::create_symlink(dir / "secret.bin", dir / "model" / "link.bin");
  auto model_with = [&](const std::string& location, const std::string& offset = "0") {
    Builder b;
    b.input("x", {2});
    b.output("y");
    auto* t = b.initializer("w", {2}, {});
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    kv = t->add_external_data();
    kv->set_key("offset");
    kv->set_value(offset);
    b.node("Add", {"x", "w"}, {"y"});
    const fs::path p = dir / "model" / "m.onnx";
    std::ofstream(p, std::ios::binary) << b.bytes();
    return p.string();
  };
  const TracedModule ok = import_onnx(model_with("w.bin"));
  CHECK(test::compare(ok.forward({zeros({2})})[0], tensor({1.0f, 2.0f}), 0, 0).ok);
  // The checker refuses some escapes itself; either way the import fails naming the location.
  AMBER_REQUIRE_ERROR(import_onnx(model_with("../secret.bin")), "secret.bin");
  AMBER_REQUIRE_ERROR(import_onnx(model_with((dir / "secret.bin").string())), "secret.bin");
  AMBER_REQUIRE_ERROR(import_onnx(model_with("link.bin")), "leaves the model's folder");
  AMBER_REQUIRE_ERROR(import_onnx(model_with("w.bin", "4")), "holds 8 bytes; 8 asked at offset 4");
  AMBER_REQUIRE_ERROR(import_onnx_bytes(Builder().bytes()), "no outputs");
}

TEST_CASE("import_onnx serves any batch when the inputs' first dim is symbolic", "[onnx]") {
  // y = relu(x W^T + b) flattened, with x [N, 3]: torch.nn.Linear's export (Gemm transB=1).
  Builder b;
  b.input("x", {-1, 3});
  b.output("y");
  b.initializer("W", {2, 3}, {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f});
  b.initializer("B", {2}, {0.1f, -0.2f});
  add_int_attr(b.node("Gemm", {"x", "W", "B"}, {"h"}, "fc"), "transB", 1);
  b.node("Relu", {"h"}, {"y"}, "act");
  const TracedModule t = import_onnx_bytes(b.bytes());
  const std::vector<uint8_t> bytes = t.save_to_bytes();
  const Model m = load(std::span<const uint8_t>(bytes));
  const Tensor W = tensor({0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}, {2, 3}), B = tensor({0.1f, -0.2f});
  for (int64_t n : {1, 4, 7}) {
    const Tensor x = randn({n, 3});
    CHECK(test::compare(m.forward({x})[0], relu(linear(x, W, B)), 1e-6, 1e-6).ok);
  }
}

TEST_CASE("import_onnx takes ArgMax with select_last_index of a 0-d input", "[onnx]") {
  // Found by fuzz_onnx_import: the flip this maps to read a stride a 0-d tensor lacks.
  Builder b;
  b.input("x", {});
  b.output("y", 0, onnx::TensorProto::INT64);
  auto* n = b.node("ArgMax", {"x"}, {"y"}, "am");
  add_int_attr(n, "keepdims", 1);
  add_int_attr(n, "select_last_index", 1);
  const TracedModule t = import_onnx_bytes(b.bytes());
  const Tensor y = t.forward({tensor(std::vector<float>{2.5f}).reshape({})})[0];
  CHECK(y.dim() == 0);
  CHECK(y.item<int64_t>() == 0);
}

// Einsum by definition: every assignment of the labels, the operands' product summed into
// the output's element (inputs contiguous f32; labels as given, output explicit, no ellipsis).
std::vector<float> naive_einsum(const std::vector<std::string>& terms, const std::string& out,
                                const std::vector<Tensor>& ins) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ins.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = ins[i].size(int64_t(d));
  std::vector<std::vector<float>> data;
  for (const Tensor& t : ins) data.push_back(t.contiguous().to_vector<float>());
  int64_t n_out = 1;
  for (char ch : out) n_out *= size[ch];
  std::vector<float> y(size_t(n_out), 0.0f);
  std::map<char, int64_t> at;
  for (const auto& [ch, n] : size) at[ch] = 0;
  auto offset = [&](const std::string& l) {
    int64_t o = 0;
    for (char ch : l) o = o * size[ch] + at[ch];
    return o;
  };
  for (;;) {
    float p = 1;
    for (size_t i = 0; i < ins.size(); ++i) p *= data[i][size_t(offset(terms[i]))];
    y[size_t(offset(out))] += p;
    auto it = at.begin();
    for (; it != at.end(); ++it) {
      if (++it->second < size[it->first]) break;
      it->second = 0;
    }
    if (it == at.end()) return y;
  }
}

TEST_CASE("import_onnx's Einsum equals the definition on odd shapes, f32 products included", "[onnx]") {
  struct Case {
    std::string equation;
    std::vector<std::string> terms;  // the reference's labels
    std::string out;
    std::vector<DimVec> shapes;
  };
  const std::vector<Case> cases = {
      {"bij,bjk->bik", {"bij", "bjk"}, "bik", {{3, 5, 7}, {3, 7, 2}}},
      {"bhqd,bhkd->bhqk", {"bhqd", "bhkd"}, "bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}},
      {"ij,jk", {"ij", "jk"}, "ik", {{5, 3}, {3, 7}}},
      {"...ij,...jk->...ik", {"xij", "xjk"}, "xik", {{4, 2, 3}, {4, 3, 5}}},
      {"abc,cd->dba", {"abc", "cd"}, "dba", {{2, 3, 5}, {5, 4}}},
      {"bi,bi->b", {"bi", "bi"}, "b", {{3, 7}, {3, 7}}},
      {"ik,jkl->ijl", {"ik", "jkl"}, "ijl", {{3, 4}, {2, 4, 5}}},
      {"i,j->ij", {"i", "j"}, "ij", {{5}, {3}}},                             // no contraction: the general form
      {"ij,jk,kl->il", {"ij", "jk", "kl"}, "il", {{2, 3}, {3, 4}, {4, 5}}},  // three inputs
      {"ijk->ki", {"ijk"}, "ki", {{3, 4, 5}}},
  };
  for (const Case& k : cases) {
    INFO(k.equation);
    Builder b;
    std::vector<std::string> names;
    std::vector<Tensor> xs;
    for (size_t i = 0; i < k.shapes.size(); ++i) {
      names.push_back(str("x", i));
      b.input(names.back(), k.shapes[i].vec());
      xs.push_back(randn(k.shapes[i]));
    }
    b.output("y", int(k.out.size()));
    auto* n = b.node("Einsum", names, {"y"}, "e");
    auto* a = n->add_attribute();
    a->set_name("equation");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(k.equation);
    const TracedModule t = import_onnx_bytes(b.bytes());
    const Tensor got = t.forward(xs)[0];
    DimVec shape;
    for (char ch : k.out)
      for (size_t i = 0; i < k.terms.size(); ++i)
        if (k.terms[i].find(ch) != std::string::npos) {
          shape.push_back(xs[i].size(int64_t(k.terms[i].find(ch))));
          break;
        }
    const Tensor want = tensor(naive_einsum(k.terms, k.out, xs), shape);
    CHECK(test::compare(got, want, 1e-5, 1e-5).ok);
    bool product = false;  // two inputs with a contraction take matmul
    for (const graph::Node* node : t.recorded_graph().nodes()) product = product || node->op->name == "matmul";
    CHECK(product == (k.terms.size() == 2 && k.out != "ij"));
  }
}

TEST_CASE("import_onnx's MaxPool Indices number elements over the tensor, at any batch", "[onnx]") {
  // Asymmetric pads (padded explicitly before pooling), a dynamic batch, both storage orders.
  for (int64_t order : {0, 1}) {
    INFO("storage_order " << order);
    Builder b;
    b.input("x", {-1, 3, 7, 6});
    b.output("y", 4);
    b.output("i", 4, onnx::TensorProto::INT64);
    auto* pool = b.node("MaxPool", {"x"}, {"y", "i"}, "p");
    add_ints_attr(pool, "kernel_shape", {3, 2});
    add_ints_attr(pool, "strides", {2, 2});
    add_ints_attr(pool, "pads", {1, 0, 0, 1});  // top, left, bottom, right
    add_int_attr(pool, "storage_order", order);
    const TracedModule t = import_onnx_bytes(b.bytes());
    for (int64_t n : {1, 4}) {
      const Tensor x = randn({n, 3, 7, 6});
      const std::vector<Tensor> got = t.forward({x});
      // By definition: output (oh, ow) covers rows oh*2-1 .. oh*2+1, columns ow*2 .. ow*2+1.
      const std::vector<float> v = x.contiguous().to_vector<float>();
      const int64_t oh_n = got[0].size(2), ow_n = got[0].size(3);
      REQUIRE(oh_n == 3);
      REQUIRE(ow_n == 3);
      std::vector<float> want_y;
      std::vector<int64_t> want_i;
      for (int64_t p = 0; p < n * 3; ++p)
        for (int64_t oh = 0; oh < oh_n; ++oh)
          for (int64_t ow = 0; ow < ow_n; ++ow) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t at = -1;
            for (int64_t h = oh * 2 - 1; h <= oh * 2 + 1; ++h)
              for (int64_t w = ow * 2; w <= ow * 2 + 1; ++w)
                if (h >= 0 && h < 7 && w < 6 && v[size_t(p * 42 + h * 6 + w)] > best) {
                  best = v[size_t(p * 42 + h * 6 + w)];
                  at = p * 42 + (order ? w * 7 + h : h * 6 + w);
                }
            want_y.push_back(best);
            want_i.push_back(at);
          }
      CHECK(test::compare(got[0], tensor(want_y, {n, 3, 3, 3}), 0, 0).ok);
      CHECK(got[1].to_vector<int64_t>() == want_i);
    }
  }
}

TEST_CASE("import_onnx's MaxUnpool undoes MaxPool's whole-tensor indices, at any batch", "[onnx]") {
  Builder b;
  b.input("x", {-1, 2, 4, 6});
  b.output("z", 4);
  auto* pool = b.node("MaxPool", {"x"}, {"y", "i"}, "p");
  add_ints_attr(pool, "kernel_shape", {2, 2});
  add_ints_attr(pool, "strides", {2, 2});
  auto* unpool = b.node("MaxUnpool", {"y", "i"}, {"z"}, "u");
  add_ints_attr(unpool, "kernel_shape", {2, 2});
  add_ints_attr(unpool, "strides", {2, 2});
  const TracedModule t = import_onnx_bytes(b.bytes());
  for (int64_t n : {1, 3}) {
    const Tensor x = randn({n, 2, 4, 6});
    // By definition: each element that is its 2x2 window's maximum, zeros elsewhere.
    std::vector<float> v = x.contiguous().to_vector<float>(), want(v.size(), 0.0f);
    for (int64_t p = 0; p < n * 2; ++p)
      for (int64_t h = 0; h < 4; h += 2)
        for (int64_t w = 0; w < 6; w += 2) {
          size_t at = size_t(p * 24 + h * 6 + w);
          for (int64_t dh = 0; dh < 2; ++dh)
            for (int64_t dw = 0; dw < 2; ++dw)
              if (v[size_t(p * 24 + (h + dh) * 6 + w + dw)] > v[at]) at = size_t(p * 24 + (h + dh) * 6 + w + dw);
          want[at] = v[at];
        }
    CHECK(test::compare(t.forward({x})[0], tensor(want, {n, 2, 4, 6}), 0, 0).ok);
  }
}

TEST_CASE("import_onnx's QuantizeLinear rounds halves to even and saturates int8; DequantizeLinear undoes it",
          "[onnx]") {
  Builder b;
  b.input("x", {5});
  b.output("q", 1, onnx::TensorProto::INT8);
  b.output("d", 1);
  b.initializer("scale", {}, {0.5f});
  auto* zp = b.m.mutable_graph()->add_initializer();
  zp->set_name("zp");
  zp->set_data_type(onnx::TensorProto::INT8);
  zp->add_int32_data(-3);
  b.node("QuantizeLinear", {"x", "scale", "zp"}, {"q"}, "quantize");
  b.node("DequantizeLinear", {"q", "scale", "zp"}, {"d"}, "dequantize");
  const TracedModule t = import_onnx_bytes(b.bytes());
  // x / 0.5 = -200, -2.5, 0.5, 1.5, 200; rounded -200, -2, 0, 2, 200; + -3, saturated.
  const std::vector<Tensor> got = t.forward({tensor({-100.0f, -1.25f, 0.25f, 0.75f, 100.0f})});
  REQUIRE(got[0].dtype() == DType::i8);
  CHECK(got[0].to(DType::i64).to_vector<int64_t>() == std::vector<int64_t>{-128, -5, -3, -1, 127});
  CHECK(test::compare(got[1], tensor({-62.5f, -1.0f, 0.0f, 1.0f, 65.0f}), 0, 0).ok);
}

TEST_CASE("import_onnx's integer sums keep the input's type, as ONNX's reductions do", "[onnx]") {
  for (const char* op : {"ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceProd"}) {
    INFO(op);
    Builder b(op == std::string("ReduceSum") ? 13 : 12);
    b.input("x", {2, 3}, "N", onnx::TensorProto::INT32);
    b.output("y", 1, onnx::TensorProto::INT32);
    auto* n = b.node(op, {"x"}, {"y"}, "r");
    if (op == std::string("ReduceSum")) {
      auto* axes = b.m.mutable_graph()->add_initializer();
      axes->set_name("axes");
      axes->set_data_type(onnx::TensorProto::INT64);
      axes->add_dims(1);
      axes->add_int64_data(1);
      n->add_input("axes");
    } else {
      add_ints_attr(n, "axes", {1});
    }
    add_int_attr(n, "keepdims", 0);
    const TracedModule t = import_onnx_bytes(b.bytes());
    const Tensor y = t.forward({tensor({1, -2, 3, 4, 5, -6}).reshape({2, 3}).to(DType::i32)})[0];
    CHECK(y.dtype() == DType::i32);
    const std::map<std::string, std::vector<int64_t>> want = {
        {"ReduceSum", {2, 3}}, {"ReduceSumSquare", {14, 77}}, {"ReduceL1", {6, 15}}, {"ReduceProd", {-6, -120}}};
    CHECK(y.to(DType::i64).to_vector<int64_t>() == want.at(op));
  }
}

TEST_CASE("import_onnx's RNN runs reverse, clips and takes its activations by name", "[onnx]") {
  // seq 2, batch 1, one input and one hidden unit: reverse, so t = 1 comes first.
  // t = 1: relu(clip(3 * 2)) = 4; t = 0: relu(clip(1.5 * 2 + 4 * -0.5)) = 1.
  Builder b(14);
  b.input("x", {2, 1, 1});
  b.output("y", 4);
  b.output("yh", 3);
  b.initializer("W", {1, 1, 1}, {2.0f});
  b.initializer("R", {1, 1, 1}, {-0.5f});
  auto* n = b.node("RNN", {"x", "W", "R"}, {"y", "yh"}, "rnn");
  add_int_attr(n, "hidden_size", 1);
  auto* dir = n->add_attribute();
  dir->set_name("direction");
  dir->set_type(onnx::AttributeProto::STRING);
  dir->set_s("reverse");
  auto* clip = n->add_attribute();
  clip->set_name("clip");
  clip->set_type(onnx::AttributeProto::FLOAT);
  clip->set_f(4.0f);
  auto* act = n->add_attribute();
  act->set_name("activations");
  act->set_type(onnx::AttributeProto::STRINGS);
  act->add_strings("Relu");
  const TracedModule t = import_onnx_bytes(b.bytes());
  const std::vector<Tensor> got = t.forward({tensor({1.5f, 3.0f}).reshape({2, 1, 1})});
  CHECK(test::compare(got[0], tensor({1.0f, 4.0f}).reshape({2, 1, 1, 1}), 0, 0).ok);
  CHECK(test::compare(got[1], tensor({1.0f}).reshape({1, 1, 1}), 0, 0).ok);
  act->set_strings(0, "Softsign");  // not one Amber maps
  AMBER_REQUIRE_ERROR(import_onnx_bytes(b.bytes()), "activation Softsign");
  // A long sequence unrolls into many small calls: each costs its dispatch against the
  // import's work limit, so a tiny file cannot make the import run for minutes.
  Builder l(14);
  l.input("x", {200000, 1, 1});
  l.output("y", 4);
  l.initializer("W", {1, 1, 1}, {0.5f});
  l.initializer("R", {1, 1, 1}, {0.5f});
  add_int_attr(l.node("RNN", {"x", "W", "R"}, {"y"}, "long"), "hidden_size", 1);
  OnnxImportOptions o;
  o.max_work = 1e7;
  AMBER_REQUIRE_ERROR(import_onnx_bytes(l.bytes(), o),
                      "left of this thread's work limit (OnnxImportOptions::max_work)");
}

TEST_CASE("docs/ONNX.md's op mapping lists exactly the ops the importer maps", "[onnx]") {
  std::ifstream in(std::string(AMBER_SOURCE_DIR) + "/docs/ONNX.md");
  REQUIRE(in);
  std::vector<std::string> documented;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_table = line == "## Op mapping";
    if (!in_table || line.rfind("| ", 0) != 0 || line.rfind("| ONNX op", 0) == 0) continue;
    documented.push_back(line.substr(2, line.find(" |") - 2));
  }
  std::vector<std::string> mapped = onnx_supported_ops();
  CHECK(documented == mapped);
}
