// What reduced precision costs in accuracy, measured: a digits CNN trained by PyTorch on
// scikit-learn's digits data (tests/gen_digits.py) classifies the 450 held-out images in f32,
// bf16, dynamic int8, bf16-model and f16-model (LoadOptions::precision) and calibrated int8
// (`amber quantize`'s quantize_int8 on 256 training images), and ResNet-18 and the transformer
// encoder (seeded weights of tests/gen_reference.py) run 1000 seeded inputs each in the first four: test-set
// accuracy, top-1 agreement with f32 and the outputs' relative error, printed and bounded.
// Where the processor lacks AVX512-BF16 or AVX512-VNNI those load options' rows are skipped,
// visibly, after checking the refusal (calibrated int8 runs everywhere).

#include <algorithm>
#include <cmath>

#include "models/programs.h"
#include "models/resnet.h"
#include "test_util.h"

using namespace amber;

namespace {

// tests/gen_digits.py's DigitsNet: input [N, 1, 8, 8].
class DigitsNet : public nn::ModuleImpl<DigitsNet> {
 public:
  DigitsNet() { register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) {
    Tensor y = relu(conv1(x));
    y = max_pool2d(relu(conv2(y)), {2});
    return fc2(relu(fc1(y.flatten(1))));
  }
  nn::Conv2d conv1{1, 16, 3, {.padding = {1}}}, conv2{16, 32, 3, {.padding = {1}}};
  nn::Linear fc1{32 * 4 * 4, 64}, fc2{64, 10};
};

std::string data_dir(const char* env) {
  const char* d = std::getenv(env);
  if (!d) FAIL(env << " is not set: run through ctest (its fixture writes the data)");
  return d;
}

TraceOptions dynamic_trace() {
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = true;
  return o;
}

// The reduced precisions measured here, and each one's bounds: digits accuracy within
// `digits_pp` percentage points of f32 ([quant]'s bounds), top-1 agreement at least
// `agreement`, relative error at most `error` (measured: bf16 99.10% and 3.7e-3 on ResNet-18;
// dynamic int8 96.60% and 1.6e-2 there, calibrated int8 94.60% and 1.65e-2 with its residual
// additions in uint8, 95.80% and 1.58e-2 without them: seeded, untrained weights leave small
// top-1 margins, and each uint8 addition rounds its convolution's output once more).
// The whole model in 16 bits (bf16-model, f16-model) runs on the digits only: the e2e matrix
// bounds its outputs on ResNet-18 and the transformer, and 1000 inputs each through the f32
// kernels between conversions would cost CI minutes.
struct Reduced {
  Precision precision;
  bool calibrated;  // the archive quantize_int8 made, loaded in f32
  const char* label;
  const char* needs;  // what the refusal names where the processor lacks it
  double digits_pp, agreement, error;
  bool agreement_rows = true;  // also the 1000-input ResNet-18 and transformer rows
};
const Reduced kReduced[] = {{Precision::bf16, false, "Amber bf16", "AVX512-BF16", 0.5, 0.97, 2e-2},
                            {Precision::dynamic_int8, false, "Amber dynamic int8", "AVX512-VNNI", 1.0, 0.95, 3e-2},
                            {Precision::f32, true, "Amber int8 calibrated", "", 1.0, 0.94, 3e-2},
                            {Precision::bf16_model, false, "Amber bf16-model", "", 0.5, 0, 0, false},
                            {Precision::f16_model, false, "Amber f16-model", "", 0.5, 0, 0, false}};

// An archive quantized to int8 by calibration on `samples` (stacked along dim 0), as
// `amber quantize` does; prints how many nodes became int8.
std::vector<uint8_t> calibrated(const std::vector<uint8_t>& archive, const Tensor& samples, const char* what) {
  LoadedArchive a = read_archive(archive, nullptr);
  const QuantizeReport r = quantize_int8(a.graph, {samples});
  std::printf("%s: %d of %zu convolutions and linear layers in int8, calibrated on %lld samples\n", what, r.quantized(),
              r.nodes.size(), static_cast<long long>(r.samples));
  CHECK(r.quantized() > 0);
  return archive_bytes(a.graph, a.info);
}

// The model of an archive at a reduced precision (r.calibrated: `quantized`, its calibrated
// int8 form), or an undefined one (with the refusal checked and the reason printed) where the
// processor cannot run it.
Model load_reduced(const std::vector<uint8_t>& archive, const Reduced& r, const std::vector<uint8_t>& quantized = {}) {
  try {
    if (r.calibrated) return load(quantized);
    return load(archive, LoadOptions{.precision = r.precision});
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains(r.needs));
    WARN(r.label << " rows skipped: " << e.what());
    return Model();
  }
}

// Row-wise argmax of a [rows, classes] f32 tensor.
std::vector<int64_t> argmax_rows(const Tensor& t) {
  const std::vector<float> v = t.contiguous(SrcLoc::none()).to_vector<float>(SrcLoc::none());
  const int64_t cols = t.size(-1), rows = t.numel() / cols;
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    out[size_t(r)] = std::max_element(v.begin() + r * cols, v.begin() + (r + 1) * cols) - (v.begin() + r * cols);
  return out;
}

// ||a - b|| / ||b|| over all elements.
double relative_error(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(SrcLoc::none()), y = b.to_vector<double>(SrcLoc::none());
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (x[i] - y[i]) * (x[i] - y[i]);
    den += y[i] * y[i];
  }
  return std::sqrt(num / den);
}

// Agreement and error of a model's reduced-precision outputs with its f32 outputs over
// `batches` seeded input batches; returns {top-1 agreement, worst batch's relative error}.
template <typename MakeInput>
std::pair<double, double> agreement(const Model& f32, const Model& reduced, int batches, MakeInput make) {
  int64_t same = 0, total = 0;
  double worst = 0;
  for (int b = 0; b < batches; ++b) {
    const Tensor x = make(b);
    const Tensor y32 = f32.forward({x})[0], y16 = reduced.forward({x})[0];
    const auto a = argmax_rows(y32), c = argmax_rows(y16);
    for (size_t i = 0; i < a.size(); ++i) same += a[i] == c[i];
    total += int64_t(a.size());
    worst = std::max(worst, relative_error(y16, y32));
  }
  return {double(same) / double(total), worst};
}

}  // namespace

TEST_CASE("digits: test-set accuracy in f32, bf16, dynamic and calibrated int8 against PyTorch's",
          "[precision][digits]") {
  const std::string dir = data_dir("AMBER_DIGITS");
  SafetensorsFile test = SafetensorsFile::open(dir + "/digits_test.safetensors");
  const Tensor images = test.tensor("images"), logits = test.tensor("logits");
  const std::vector<int64_t> labels = test.tensor("labels").to_vector<int64_t>(SrcLoc::none());
  DigitsNet net;
  net.load_state(dir + "/digits.safetensors");
  net.eval();
  const auto archive = trace(net, {images.slice(0, 0, 1)}, dynamic_trace()).save_to_bytes();
  const auto quantized = calibrated(archive, test.tensor("calibration"), "digits CNN");
  auto accuracy = [&](const Tensor& out) {
    const auto pred = argmax_rows(out);
    int64_t right = 0;
    for (size_t i = 0; i < labels.size(); ++i) right += pred[i] == labels[i];
    return 100.0 * double(right) / double(labels.size());
  };
  const double torch_acc = accuracy(logits);
  const Tensor out32 = load(archive).forward({images})[0];
  const test::Diff d = test::compare(out32, logits, 1e-4, 1e-4);
  INFO("f32 logits vs PyTorch's: " << d.message);
  CHECK(d.ok);
  const double acc32 = accuracy(out32);
  std::printf("\ndigits CNN, %zu held-out images (tests/gen_digits.py)\n%-22s %9s %14s %18s\n", labels.size(), "",
              "accuracy", "vs Amber f32", "logits rel. error");
  std::printf("%-22s %8.2f%% %14s %18s\n", "PyTorch f32", torch_acc, "", "");
  std::printf("%-22s %8.2f%% %13.2fpp %18.2e\n", "Amber f32", acc32, 0.0, relative_error(out32, logits));
  CHECK(acc32 == torch_acc);
  CHECK(acc32 > 90);  // a trained model, not chance
  for (const Reduced& r : kReduced) {
    const Model m = load_reduced(archive, r, quantized);
    if (!m.defined()) continue;
    const Tensor out = m.forward({images})[0];
    const double acc = accuracy(out);
    std::printf("%-22s %8.2f%% %13.2fpp %18.2e\n", r.label, acc, acc - acc32, relative_error(out, out32));
    CHECK(std::fabs(acc - acc32) <= r.digits_pp);
  }
}

TEST_CASE(
    "ResNet-18 and the transformer encoder: bf16, dynamic and calibrated int8 against f32 over 1000 seeded "
    "inputs each",
    "[precision][agreement]") {
  const std::string ref = test::refdata_dir();
  if (ref.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  models::ResNet18 resnet;
  resnet.load_state(ref + "/resnet18.safetensors");
  resnet.eval();
  nn::TransformerEncoder encoder(models::transformer_options(), models::kTransformerLayers);
  encoder.load_state(ref + "/transformer.safetensors");
  encoder.eval();
  const auto resnet_archive = trace(resnet, {randn({1, 3, 224, 224})}, dynamic_trace()).save_to_bytes();
  const auto encoder_archive = trace(encoder, {randn({1, 128, 256})}, dynamic_trace()).save_to_bytes();
  const Model resnet32 = load(resnet_archive), encoder32 = load(encoder_archive);
  Generator calibration(20261126);  // other inputs than the 1000 compared
  const auto resnet_q = calibrated(resnet_archive, randn({64, 3, 224, 224}, {}, &calibration), "ResNet-18");
  const auto encoder_q = calibrated(encoder_archive, randn({64, 128, 256}, {}, &calibration), "transformer encoder");
  std::printf("\nagainst f32, 1000 seeded inputs each\n%-22s %-24s %16s %26s\n", "", "", "top-1 agreement",
              "rel. error (worst batch)");
  for (const Reduced& r : kReduced) {
    if (!r.agreement_rows) continue;
    const Model resnet_r = load_reduced(resnet_archive, r, resnet_q),
                encoder_r = load_reduced(encoder_archive, r, encoder_q);
    if (!resnet_r.defined() || !encoder_r.defined()) continue;
    Generator gen(20261124);  // the same inputs for every precision
    const auto [top1_r, err_r] = agreement(resnet32, resnet_r, 40, [&](int) {
      return randn({25, 3, 224, 224}, {}, &gen);
    });
    // The encoder's output per position, argmax over its 256 features.
    const auto [top1_e, err_e] = agreement(encoder32, encoder_r, 40, [&](int) {
      return randn({25, 128, 256}, {}, &gen);
    });
    std::printf("%-22s %-24s %15.2f%% %26.2e\n", r.label, "ResNet-18 logits", 100 * top1_r, err_r);
    std::printf("%-22s %-24s %15.2f%% %26.2e\n", r.label, "transformer (per pos.)", 100 * top1_e, err_e);
    CHECK(top1_r >= r.agreement);
    CHECK(err_r <= r.error);
    CHECK(top1_e >= r.agreement);
    CHECK(err_e <= r.error);
  }
}
