// ONNX export: every op case of tests/gen_reference.py traced as a one-op model, exported
// (which runs ONNX's checker and strict shape inference), imported back and compared with
// PyTorch's output. Ops the exporter refuses must be exactly docs/ONNX.md's list; a table
// per op is printed. Also the exporter's own errors, the dynamic batch as dim "N", external
// data, and an op library's op in its own domain.

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "amber/loader/model.h"
#include "amber/onnx/export.h"
#include "amber/onnx/import.h"
#include "amber/schema/control_flow.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"
#include "amber/schema/op_library.h"
#include "ref_cases.h"
#include "test_util.h"

using namespace amber;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Stats {
  int exported = 0;
  int half_run = 0;               // of them, 16-bit cases run without comparing values
  int bf16_untyped = 0;           // bf16 cases of ONNX ops whose opset-17 types lack bfloat16
  std::set<std::string> refused;  // the reasons for the cases the exporter refuses
  double max_abs = 0;
};

// The ops docs/ONNX.md lists under "## Export" as not exported, in all or some cases (lines
// "| `op` | why |").
std::set<std::string> documented_refusals() {
  std::ifstream in(std::string(AMBER_SOURCE_DIR) + "/docs/ONNX.md");
  REQUIRE(in);
  std::set<std::string> ops;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_table = line == "## Export";
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    ops.insert(line.substr(3, line.find('`', 3) - 3));
  }
  return ops;
}

// Whether the ONNX model's main graph has a node of `op_type`.
bool has_node(const onnx::ModelProto& m, const std::string& op_type) {
  for (const auto& n : m.graph().node())
    if (n.op_type() == op_type) return true;
  return false;
}

}  // namespace

TEST_CASE("every op case exports to ONNX and imports back to PyTorch's output", "[onnx][export]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest (the refdata fixture generates it)");
  SafetensorsFile file = SafetensorsFile::open(dir + "/ops.safetensors");
  const Json cases = Json::parse(file.metadata().at("cases"));
  // Where given, the first exported model of each op is written there (check_onnx_export.py
  // runs Python's onnx.checker on them).
  const char* out_dir = std::getenv("AMBER_ONNX_EXPORT_DIR");
  if (out_dir) fs::create_directories(out_dir);
  std::map<std::string, Stats> stats;
  int total = 0, failed = 0;
  for (const Json& c : cases) {
    if (!c["error"].is_null()) continue;
    const std::string name = c["name"], opname = c["op"];
    INFO("case " << name << " (op " << opname << ")");
    const OpSchema* op = find_op(opname);
    REQUIRE(op != nullptr);
    std::vector<Tensor> inputs;  // the defined ones, in order: the model's inputs
    std::vector<int> slot;       // each argument's index into inputs, -1 when absent
    for (size_t k = 0; k < c["inputs"].size(); ++k) {
      const Json& spec = c["inputs"][k];
      if (spec.contains("absent")) {
        slot.push_back(-1);
        continue;
      }
      slot.push_back(int(inputs.size()));
      inputs.push_back(test::rebuild_layout(file.tensor(name + ".input" + std::to_string(k)), spec["layout"]));
    }
    std::vector<Attr> attrs;
    for (int i = 0; i < op->num_attrs(); ++i) {
      const ArgSpec& spec = op->attr_spec(i);
      if (c["attrs"].contains(spec.name))
        attrs.push_back(test::attr_from_json(*op, spec, c["attrs"][spec.name]));
      else
        attrs.push_back(*spec.default_value);
    }
    auto model = [&](const std::vector<Tensor>& xs) {
      std::vector<const Tensor*> ptrs;
      for (int s : slot) ptrs.push_back(s < 0 ? nullptr : &xs[size_t(s)]);
      while (!op->has_tensor_list && int(ptrs.size()) < op->num_tensor_args) ptrs.push_back(nullptr);
      return dispatch(*op, ptrs, attrs, SrcLoc::none());
    };
    TraceOptions to;
    to.optimize = false;
    to.print_warnings = false;
    const TracedModule traced = trace(model, inputs, to);
    Stats& st = stats[opname];
    std::string bytes;
    try {
      bytes = export_onnx_bytes(traced.graph());
    } catch (const OnnxExportError& e) {
      REQUIRE(e.refusals().size() == 1);
      CHECK(e.refusals()[0].op == opname);
      st.refused.insert(e.refusals()[0].reason);
      continue;
    } catch (const Error& e) {  // ONNX's checker refused what was written
      // Opset 17 types Conv, pooling and others without bfloat16 (docs/ONNX.md, "16-bit graphs").
      if (name.ends_with(".bf16") &&
          std::string(e.what()).find("unsupported type: tensor(bfloat16)") != std::string::npos) {
        ++st.bf16_untyped;
        continue;
      }
      ++failed;
      FAIL_CHECK(e.what());
      continue;
    }
    ++total;
    if (out_dir && st.exported == 0) std::ofstream(fs::path(out_dir) / (opname + ".onnx"), std::ios::binary) << bytes;
    OnnxImportOptions io;
    for (size_t i = 0; i < inputs.size(); ++i) io.example_inputs[traced.graph().inputs()[i]->name] = inputs[i];
    io.optimize = false;
    std::vector<Tensor> outs;
    try {
      outs = import_onnx_bytes(bytes, io).forward(inputs);
    } catch (const Error& e) {
      ++failed;
      FAIL_CHECK("the exported model does not import and run: " << e.what());
      continue;
    }
    REQUIRE(int(outs.size()) == c["outputs"].get<int>());
    ++st.exported;
    // The 16-bit cases (gen_reference.py's half_cases) export and run, but ONNX computes each
    // node of a decomposed formula (gelu, attention's softmax) in 16 bits, rounding at every
    // step where PyTorch's reference rounds once: their values are not compared.
    if (name.ends_with(".bf16") || name.ends_with(".f16")) {
      ++st.half_run;
      continue;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const Tensor expected = file.tensor(name + ".expected" + std::to_string(k));
      // ONNX's forms of some formulas (gelu, mish, softplus, ...) round differently.
      const test::Diff d =
          test::compare(outs[k].to(expected.dtype()), expected, std::max(c["atol"].get<double>(), 1e-5),
                        std::max(c["rtol"].get<double>(), 1e-4));
      INFO("output " << k << ": " << d.message);
      if (!d.ok) ++failed;
      CHECK(d.ok);
      st.max_abs = std::max(st.max_abs, d.max_abs);
    }
  }
  std::printf("%-30s %9s %12s  %s\n", "op", "exported", "max |diff|", "refused because");
  std::set<std::string> refused;
  for (const auto& [name, s] : stats) {
    std::string why;
    for (const std::string& r : s.refused) why += (why.empty() ? "" : "; ") + r;
    std::printf("%-30s %9d %12.3g  %s\n", name.c_str(), s.exported, s.max_abs, why.c_str());
    if (!s.refused.empty()) refused.insert(name);
  }
  int half_run = 0, bf16_untyped = 0;
  for (const auto& [name, s] : stats) {
    half_run += s.half_run;
    bf16_untyped += s.bf16_untyped;
  }
  std::printf(
      "%d cases exported, imported back and run (%d of them 16-bit, values not compared); %d bf16 cases refused by "
      "ONNX's checker (an op without bfloat16 at opset 17); %d failed; %zu ops refused\n",
      total, half_run, bf16_untyped, failed, refused.size());
  CHECK(failed == 0);
  // Every op of the table has cases (control flow: the test below); those it refuses (in any
  // case) are documented, and no other op is.
  for (const OpSchema* op : all_ops())
    if (op_namespace(op->name).empty() && op->name != "fused" && !op->is_control_flow())
      CHECK(stats.count(op->name) == 1);
  CHECK(refused == documented_refusals());
}

TEST_CASE("ONNX export writes the dynamic batch as dim N and refuses what it cannot write", "[onnx][export]") {
  // A dynamic-batch model with a fused chain and a reshape that follows N.
  auto f = [](const Tensor& x) { return relu(x * 2.0f + 1.0f).reshape({-1, 6}).softmax(1); };
  TraceOptions to;
  to.dynamic_batch = true;
  const TracedModule t = trace(f, {randn({2, 3, 2})}, to);
  const std::string bytes = export_onnx_bytes(t.graph());
  const TracedModule back = import_onnx_bytes(bytes);
  for (int64_t n : {1, 5}) {
    const Tensor x = randn({n, 3, 2});
    CHECK(test::compare(back.forward({x})[0], f(x), 1e-6, 1e-5).ok);
  }
  CHECK(back.graph().inputs()[0]->type.shape[0] == graph::SymInt::symbol('N'));

  // Named dynamic dims: N and T, a size N*T computed from Shape of the input.
  auto h = [](const Tensor& x) { return (x.reshape({x.size(0) * x.size(1), 3}) * 3.0f).softmax(1); };
  TraceOptions nt = to;
  nt.dynamic_dims = {{0, 1, 'T'}};
  const std::string nt_bytes = export_onnx_bytes(trace(h, {randn({2, 4, 3})}, nt).graph());  // checked
  onnx::ModelProto nm;
  REQUIRE(nm.ParseFromString(nt_bytes));
  CHECK(nm.graph().input(0).type().tensor_type().shape().dim(1).dim_param() == "T");
  CHECK(nm.graph().output(0).type().tensor_type().shape().dim(0).dim_param() == "N*T");
  OnnxImportOptions io;
  io.dims = {{"T", 7}};  // imported with T fixed, N dynamic
  const TracedModule nt_back = import_onnx_bytes(nt_bytes, io);
  for (int64_t n : {1, 3}) {
    const Tensor x = randn({n, 7, 3});
    CHECK(test::compare(nt_back.forward({x})[0], h(x), 1e-6, 1e-5).ok);
  }
  io.dynamic_dims = {{"T", 'T'}};  // ... or with T dynamic too: one archive for every (N, T)
  const TracedModule nt_dyn = import_onnx_bytes(nt_bytes, io);
  CHECK(nt_dyn.graph().inputs()[0]->type.shape[1] == graph::SymInt::symbol('T'));
  const Model nt_loaded = load(nt_dyn.save_to_bytes());
  for (auto [n, len] : {std::pair<int64_t, int64_t>{1, 2}, {3, 7}, {2, 30}}) {
    const Tensor x = randn({n, len, 3});
    CHECK(test::compare(nt_loaded.forward({x})[0], h(x), 1e-6, 1e-5).ok);
  }
  io.dynamic_dims = {{"L", 'L'}};
  AMBER_REQUIRE_ERROR(import_onnx_bytes(nt_bytes, io), "dynamic_dims names 'L' (as L), which is no input's symbolic");
  io.dynamic_dims = {{"T", 't'}};
  AMBER_REQUIRE_ERROR(import_onnx_bytes(nt_bytes, io), "symbol is one upper-case letter, got 't'");

  // Every node that cannot be written, in one error. (A traced batch norm runs in eval mode:
  // its training attribute is set on the graph, as a hand-made archive could hold it.)
  auto g = [](const Tensor& x) {
    return batch_norm(x, zeros({1}), ones({1})).slice(2, 0, 2).slice(3, 0, 2) +
           avg_pool2d(x, {2}, {}, {0}, true, true, 3);
  };
  const TracedModule traced = trace(g, {randn({1, 1, 4, 4})});
  graph::Graph u = traced.recorded_graph().clone();
  for (graph::Node* node : u.nodes())
    if (node->op->name == "batch_norm")
      node->attrs[size_t(op_schema("batch_norm").attr_index("training"))] = Attr(true);
  try {
    export_onnx_bytes(u);
    FAIL("exported");
  } catch (const OnnxExportError& e) {
    REQUIRE(e.refusals().size() == 2);  // in trace order, which C++ leaves to the compiler here
    std::map<std::string, std::string> why;
    for (const OnnxExportRefusal& r : e.refusals()) why[r.op] = r.reason;
    CHECK(why["batch_norm"] == "training-mode batch norm");
    CHECK(why["avg_pool2d"] == "divisor_override with ceil_mode (ONNX's AveragePool has no divisor)");
    CHECK(std::string(e.what()).find("ONNX export: 2 node(s) cannot be exported:\n  %") != std::string::npos);
  }
}

TEST_CASE("control flow exports as ONNX Loop and If and imports back (as while_loop and cond)", "[onnx][export]") {
  auto count = [](int64_t n) { return full({}, n, {DType::i64}); };
  const Tensor w = tensor(std::vector<float>{0.5f, -1.0f, 2.0f});
  // loop: x = x * x + w, n times (the count an input, w captured by the body).
  auto square_plus = [&](const Tensor& x, const Tensor& n) {
    return loop(n, x, [&](const Tensor&, const Tensor& s) { return s * s * 0.5f + w; });
  };
  // while_loop: double x until its sum passes the limit, counting the steps.
  auto doubling = [](const Tensor& x, const Tensor& limit) {
    const auto out = while_loop([&](const std::vector<Tensor>& s) { return lt(s[0].sum(), limit); },
                                [](const std::vector<Tensor>& s) {
                                  return std::vector<Tensor>{s[0] * 2.0f, s[1] + 1};
                                },
                                {x, zeros({}, {DType::i64})});
    return out[0] * out[1].to(DType::f32);
  };
  const Tensor x = tensor(std::vector<float>{0.25f, 0.5f, -0.5f});
  for (const auto& [name, fn, arg, values] :
       {std::tuple<const char*, std::function<Tensor(const Tensor&, const Tensor&)>, std::function<Tensor(int64_t)>,
                   std::vector<int64_t>>{"loop", square_plus, count, {0, 1, 4}},
        {"while_loop", doubling, [](int64_t v) { return full({}, float(v), {DType::f32}); }, {0, 3, 50}}}) {
    INFO(name);
    const TracedModule t = trace(fn, {x, arg(values[1])});
    const std::string bytes = export_onnx_bytes(t.graph());  // checked: ONNX's checker, strict shape inference
    onnx::ModelProto m;
    REQUIRE(m.ParseFromString(bytes));
    CHECK(has_node(m, "Loop"));
    const TracedModule back = import_onnx_bytes(bytes);
    size_t control = 0;
    for (const graph::Node* n : back.graph().nodes()) control += n->op->is_control_flow();
    CHECK(control == 1);
    const Model loaded = load(back.save_to_bytes());
    for (int64_t v : values) {
      const Tensor want = fn(x, arg(v));
      CHECK(test::compare(back.forward({x, arg(v)})[0], want, 1e-6, 1e-5).ok);
      CHECK(test::compare(loaded.forward({x, arg(v)})[0], want, 1e-6, 1e-5).ok);
    }
  }
  // A Loop whose condition holds for the import's zero inputs: bounded while the model runs.
  auto forever = [](const Tensor& v) {
    return while_loop([](const std::vector<Tensor>& s) { return ge(s[0].sum(), 0.0); },
                      [](const std::vector<Tensor>& s) { return std::vector<Tensor>{s[0] * 2.0f}; }, {v})[0];
  };
  OnnxImportOptions few;
  few.max_loop_trips = 16;
  AMBER_REQUIRE_ERROR(
      import_onnx_bytes(export_onnx_bytes(trace([&](const Tensor& v) { return forever(-v); }, {x}).graph()), few),
      "a Loop ran more than 16 iterations while the model ran at import");
  // cond: If with both branches as subgraphs reading the operands by name; it imports back as
  // a cond without operands.
  auto branchy = [&](const Tensor& v) {
    return cond(
        gt(v.sum(), 0.0), [&](const Tensor& a) { return a + w; }, [](const Tensor& a) { return -a; }, v);
  };
  const std::string cond_bytes = export_onnx_bytes(trace(branchy, {x}).graph());
  onnx::ModelProto cm;
  REQUIRE(cm.ParseFromString(cond_bytes));
  CHECK(has_node(cm, "If"));
  const TracedModule cond_back = import_onnx_bytes(cond_bytes);
  const Model cond_loaded = load(cond_back.save_to_bytes());
  for (const Tensor& v : {x, -x * 3.0f}) {
    CHECK(test::compare(cond_back.forward({v})[0], branchy(v), 1e-6, 1e-5).ok);
    CHECK(test::compare(cond_loaded.forward({v})[0], branchy(v), 1e-6, 1e-5).ok);
  }
}

TEST_CASE("ONNX export writes large weights as external data beside the model", "[onnx][export]") {
  const Tensor w1 = randn({37, 23}), b1 = randn({37}), w2 = randn({5, 37});
  auto f = [&](const Tensor& x) { return linear(relu(linear(x, w1, b1)), w2); };
  TraceOptions to;
  to.dynamic_batch = true;
  const TracedModule t = trace(f, {randn({2, 23})}, to);
  const test::ScratchDir scratch("amber_onnx_extdata");
  const std::filesystem::path& dir = scratch.path();
  const std::string path = (dir / "model.onnx").string();

  OnnxExportOptions o;
  o.external_data = OnnxExportOptions::ExternalData::always;
  o.external_min_bytes = 1024;  // w1 (3404 bytes) and w2 (740: inline), b1 (148: inline)
  const OnnxWritten written = export_onnx(t, path, o);
  CHECK(written.external_bytes == 37 * 23 * 4);
  CHECK(std::filesystem::file_size(path + ".data") == written.external_bytes);
  CHECK(std::filesystem::file_size(path) == written.model_bytes);
  onnx::ModelProto m;
  {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
  }
  int external = 0;
  for (const onnx::TensorProto& i : m.graph().initializer()) {
    if (i.data_location() != onnx::TensorProto::EXTERNAL) continue;
    ++external;
    CHECK(i.raw_data().empty());
    std::map<std::string, std::string> kv;
    for (const auto& e : i.external_data()) kv[e.key()] = e.value();
    CHECK(kv["location"] == "model.onnx.data");
    CHECK(kv["offset"] == "0");
    CHECK(kv["length"] == "3404");
  }
  CHECK(external == 1);
  // Imported back from the file, weights read from beside it; the same at two batches.
  const TracedModule back = import_onnx(path);
  for (int64_t n : {1, 3}) {
    const Tensor x = randn({n, 23});
    CHECK(test::compare(back.forward({x})[0], f(x), 1e-5, 1e-5).ok);
  }
  // Everything of 100 bytes and more, at 64-byte aligned offsets.
  o.external_min_bytes = 100;
  const uint64_t all = export_onnx(t, path, o).external_bytes;  // the three weights, padded between
  CHECK(all >= 3404 + 148 + 740);
  CHECK(all <= 3404 + 148 + 740 + 2 * 63);
  const TracedModule again = import_onnx(path);
  const Tensor x = randn({2, 23});
  CHECK(test::compare(again.forward({x})[0], f(x), 1e-5, 1e-5).ok);
  // Inline by default for small models, and never to bytes.
  CHECK(export_onnx(t, path).external_bytes == 0);
  AMBER_REQUIRE_ERROR(export_onnx_bytes(t.graph(), o), "external data needs a file beside the model");
}

namespace {

// exportops::scale(x, a) = a * x: an op library's op, f32, contiguous.
constexpr char kScale[] = "exportops::scale(Tensor x, float a) -> Tensor";
int scale_f32(const amber_kernel_args* args) {
  const amber_tensor_view &x = args->inputs[0], &y = args->outputs[0];
  int64_t n = 1;
  for (int d = 0; d < y.ndim; ++d) n *= y.sizes[d];
  for (int64_t k = 0; k < n; ++k)
    static_cast<float*>(y.data)[k] =
        float(args->attrs[attr_index(kScale, "a")].f) * static_cast<const float*>(x.data)[k];
  return 0;
}
void register_exportops(OpLibrary& lib) {
  lib.def({kScale, dtypes::floating, [](InferCtx& c) { c.add_output(c.in(0).dtype, c.in(0).sizes); }});
  lib.kernel("exportops::scale", DeviceType::cpu, DType::f32, scale_f32);
}
const amber_op_library_info kExportops{AMBER_OP_LIBRARY_ABI_VERSION, AMBER_BACKEND_ABI_VERSION, "exportops",
                                       &register_exportops};

}  // namespace

TEST_CASE("ONNX export writes an op library's ops in their own domain", "[onnx][export]") {
  register_op_library(kExportops, "this test");
  auto f = [](const Tensor& x) { return relu(call_op("exportops::scale", {x}, {{"a", 2.5}})[0]); };
  const TracedModule t = trace(f, {randn({2, 3})});
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(export_onnx_bytes(t.graph())));
  const onnx::NodeProto* scale = nullptr;
  for (const onnx::NodeProto& n : m.graph().node())
    if (n.domain() == "exportops") scale = &n;
  REQUIRE(scale != nullptr);
  CHECK(scale->op_type() == "scale");
  REQUIRE(scale->attribute_size() == 1);
  CHECK(scale->attribute(0).name() == "a");
  CHECK(scale->attribute(0).f() == 2.5f);
  bool domain_imported = false;
  for (const onnx::OperatorSetIdProto& o : m.opset_import())
    domain_imported = domain_imported || (o.domain() == "exportops" && o.version() == 1);
  CHECK(domain_imported);
  // Amber's importer reads the default domain only, and says so for the op.
  AMBER_REQUIRE_ERROR(import_onnx_bytes(m.SerializeAsString()), "exportops::scale");
}
