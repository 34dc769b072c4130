// The ONNX zoo: torchvision models, the samples' transformer encoder and a GPT-2-style block,
// exported from PyTorch with a dynamic batch (tests/gen_onnx_zoo.py), imported, saved, loaded
// and run at batch 1 and 4 against PyTorch's outputs within the end-to-end tolerances; then
// exported back to ONNX (checked by ONNX's checker), imported again and run at batch 4. The
// transformer exported with its sequence length dynamic imports as one archive for every (N, T).

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "amber/loader/model.h"
#include "amber/onnx/export.h"
#include "amber/onnx/import.h"
#include "amber/serialize/safetensors.h"
#include "test_util.h"

using namespace amber;

TEST_CASE("the ONNX zoo imports and matches PyTorch at batch 1 and 4", "[onnx][zoo]") {
  const char* env = std::getenv("AMBER_ONNX_ZOO");
  REQUIRE(env);
  const std::string dir = env;
  std::ifstream in(dir + "/zoo.json");
  REQUIRE(in);
  nlohmann::json zoo;
  in >> zoo;
  std::printf("%-20s %6s %9s %10s %12s %12s %13s\n", "model", "nodes", "import ms", "max|y|", "b1 max|diff|",
              "b4 max|diff|", "re-imp. b4");
  for (const auto& entry : zoo) {
    const std::string name = entry["model"];
    INFO(name);
    const auto t0 = std::chrono::steady_clock::now();
    const TracedModule traced = import_onnx(dir + "/" + name + ".onnx");
    const double import_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<uint8_t> bytes = traced.save_to_bytes();
    const Model m = load(std::span<const uint8_t>(bytes));
    const SafetensorsFile io = SafetensorsFile::open(dir + "/" + name + ".io.safetensors");
    double diff[2] = {0, 0}, scales[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      const std::string b = i == 0 ? "1" : "4";
      const Tensor got = m.forward({io.tensor("x" + b)})[0], want = io.tensor("y" + b);
      // The e2e matrix's tolerances, 1e-5 + 1e-4 relative, relative to the output's largest
      // magnitude: deep models' small logits carry the rounding of the large ones.
      const double scale = want.abs().amax().item<float>();
      scales[i] = scale;
      const test::Diff c = test::compare(got, want, 1e-5 + 1e-4 * scale, 0);
      diff[i] = c.max_abs;
      INFO("batch " << b << ": " << c.message);
      CHECK(c.ok);
    }
    // The archive's graph exported (dynamic batch as N) and imported again.
    const TracedModule again = import_onnx_bytes(export_onnx_bytes(traced.graph()));
    const test::Diff r =
        test::compare(again.forward({io.tensor("x4")})[0], io.tensor("y4"), 1e-5 + 1e-4 * scales[1], 0);
    INFO("exported and imported again, batch 4: " << r.message);
    CHECK(r.ok);
    std::printf("%-20s %6zu %9.0f %10.3g %12.2e %12.2e %13.2e\n", name.c_str(), traced.graph().num_nodes(), import_ms,
                std::max(scales[0], scales[1]), diff[0], diff[1], r.max_abs);
  }
}

TEST_CASE("a transformer exported with a dynamic sequence length serves any (N, T) from one import",
          "[onnx][zoo][dynamic]") {
  const char* env = std::getenv("AMBER_ONNX_ZOO");
  REQUIRE(env);
  const std::string dir = env;
  OnnxImportOptions o;
  o.dynamic_dims = {{"seq", 'T'}};
  o.dims = {{"seq", 128}};
  const TracedModule traced = import_onnx(dir + "/transformer_seq.onnx", o);
  CHECK(traced.graph().inputs()[0]->type.shape[1] == graph::SymInt::symbol('T'));
  const std::vector<uint8_t> bytes = traced.save_to_bytes();
  const Model m = load(std::span<const uint8_t>(bytes));
  const SafetensorsFile io = SafetensorsFile::open(dir + "/transformer_seq.io.safetensors");
  for (const char* nt : {"n2t16", "n1t77", "n1t300"}) {  // none of them the traced (1, 128)
    const Tensor want = io.tensor(str("y.", nt));
    const test::Diff c =
        test::compare(m.forward({io.tensor(str("x.", nt))})[0], want, 1e-5 + 1e-4 * want.abs().amax().item<float>(), 0);
    INFO(nt << ": " << c.message);
    CHECK(c.ok);
    std::printf("transformer_seq %s: max|diff| %.2e\n", nt, c.max_abs);
  }
}
