// Module tests against PyTorch: torchvision's ResNet-18, the 4-layer transformer encoder of
// DESIGN.md section 9, LeNet, the Elman RNN and a U-Net-style decoder, built with Amber's nn API, loaded with
// load_state() from the PyTorch state_dict, run eagerly at several batch sizes and compared
// with torch's outputs: |amber - ref| <= 1e-5 + 1e-4 * |ref| (float32). Also checks that
// load_state reports missing, unexpected and mis-shaped keys.

#include <chrono>
#include <cstdio>

#include "models/programs.h"
#include "models/resnet.h"
#include "models/small.h"
#include "test_util.h"

using namespace amber;

namespace {

constexpr double kAtol = 1e-5, kRtol = 1e-4;

template <typename Model>
void check_model(const char* name, Model& model, const std::vector<int>& batches) {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  model.load_state(dir + "/" + name + ".safetensors");
  model.eval();
  SafetensorsFile io = SafetensorsFile::open(dir + "/" + name + "_io.safetensors");
  for (int b : batches) {
    const Tensor x = io.tensor("input.b" + std::to_string(b));
    const auto t0 = std::chrono::steady_clock::now();
    Tensor y;
    if constexpr (std::is_same_v<Model, nn::TransformerEncoder>) {
      const std::string mask = "mask.b" + std::to_string(b);
      y = io.contains(mask) ? model(x, Tensor(), io.tensor(mask)) : model(x);
    } else {
      y = model(x);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const test::Diff d = test::compare(y, io.tensor("output.b" + std::to_string(b)), kAtol, kRtol);
    std::printf("%-12s batch %-3d max |diff| %.3g  max rel %.3g  eager %.1f ms  %s\n", name, b, d.max_abs, d.max_rel,
                ms, d.ok ? "ok" : d.message.c_str());
    INFO(name << " batch " << b << ": " << d.message);
    CHECK(d.ok);
  }
}

}  // namespace

TEST_CASE("ResNet-18 matches torchvision", "[models]") {
  models::ResNet18 net;
  check_model("resnet18", net, {1, 8});
}

TEST_CASE("transformer encoder matches torch.nn.TransformerEncoder", "[models]") {
  nn::TransformerEncoder enc(models::transformer_options(), models::kTransformerLayers);
  check_model("transformer", enc, {1, 8});
}

TEST_CASE("pre-norm gelu sequence-first transformer with a key padding mask matches PyTorch", "[models]") {
  nn::TransformerEncoderLayerOptions o;
  o.d_model = 64;
  o.nhead = 4;
  o.dim_feedforward = 128;
  o.dropout = 0.0;
  o.activation = "gelu";
  o.norm_first = true;
  nn::TransformerEncoder enc(o, 2);
  check_model("transformer_prenorm", enc, {1, 3});
}

TEST_CASE("LeNet and the Elman RNN match PyTorch", "[models]") {
  models::LeNet lenet;
  check_model("lenet", lenet, {1, 8, 64});
  models::ElmanRNN rnn(10, 20, 5);
  check_model("elman_rnn", rnn, {1, 8});
}

TEST_CASE("a U-Net-style decoder (transposed convolutions, group norm, upsampling) matches PyTorch", "[models]") {
  models::Decoder decoder;
  check_model("decoder", decoder, {1, 8});
}

// module.to(DType::bf16) and f16 (PyTorch's model.to(dtype)): LeNet and ResNet-18 run eagerly in
// 16 bits within 16-bit rounding of PyTorch's f32 output (each op computes in f32 and rounds
// once: docs/OPS.md, "16-bit floats"), traced, saved and loaded within the same bound of eager
// (the loaded model's convolutions pack their weights and may sum in another order, and one
// f32 ulp of difference can move a result by a 16-bit step).
TEST_CASE("models in bf16 and f16: module.to(dtype), eager == traced == loaded", "[models][half]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  auto run = [&](const char* name, auto& model, double bound, const char* batch) {
    SafetensorsFile io = SafetensorsFile::open(dir + "/" + name + "_io.safetensors");
    const Tensor x = io.tensor(std::string("input.") + batch), ref = io.tensor(std::string("output.") + batch);
    double ref_max = 0;
    for (double v : ref.to_vector<double>(SrcLoc::none())) ref_max = std::max(ref_max, std::fabs(v));
    for (DType t : {DType::bf16, DType::f16}) {
      model.load_state(dir + "/" + name + ".safetensors");
      model.eval();
      model.to(t);
      const Tensor xt = x.to(t);
      const Tensor eager = model(xt);
      REQUIRE(eager.dtype() == t);
      const test::Diff d = test::compare(eager.to(DType::f32), ref, bound * ref_max, 0);
      std::printf("%-9s in %-4s: max |diff| / max |ref| %.3g\n", name, std::string(dtype_name(t)).c_str(),
                  d.max_abs / ref_max);
      INFO(name << " in " << t << ": " << d.message);
      CHECK(d.ok);
      TraceOptions o;
      o.print_warnings = false;
      const TracedModule traced = trace(model, {xt}, o);
      CHECK(test::compare(traced.forward({xt})[0], eager, bound * ref_max, 0).ok);
      const Tensor loaded = load(traced.save_to_bytes()).forward({xt})[0];
      REQUIRE(loaded.dtype() == t);
      CHECK(test::compare(loaded, eager, bound * ref_max, 0).ok);
      model.to(DType::f32);
    }
  };
  models::LeNet lenet;
  run("lenet", lenet, 2e-2, "b8");
  models::ResNet18 resnet;
#ifdef AMBER_SANITIZER_BUILD
  run("resnet18", resnet, 4e-2, "b1");  // batch 8 took 126 s under ASan (AVX2, no native bf16)
#else
  run("resnet18", resnet, 4e-2, "b8");
#endif
}

TEST_CASE("load_state lists every missing, unexpected and mis-shaped key", "[models][errors]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  nn::Linear wrong(576, 121);  // fc1 of LeNet has 120 outputs
  struct Twisted : nn::ModuleImpl<Twisted> {
    nn::Conv2d conv1{1, 6, 3};
    nn::Linear fc1{576, 121};
    Twisted() { register_modules({{"conv1", conv1}, {"fc1", fc1}, {"extra", extra}}); }
    nn::Linear extra{2, 2};
  } twisted;
  AMBER_REQUIRE_ERROR(twisted.load_state(dir + "/lenet.safetensors"),
                      "missing keys (2): extra.weight, extra.bias; unexpected keys (6): conv2.weight, conv2.bias, "
                      "fc2.weight, fc2.bias, fc3.weight, fc3.bias; mis-shaped keys (2): fc1.weight (file [120, 576], "
                      "module [121, 576]), fc1.bias (file [120], module [121])");
  // Loaded parameters are read-only views of the file, not copies.
  models::LeNet lenet;
  lenet.load_state(dir + "/lenet.safetensors");
  CHECK(lenet.conv1.weight.is_read_only());
  CHECK(lenet.named_parameters().size() == 10);
  CHECK(lenet.state_dict()[0].first == "conv1.weight");
}
