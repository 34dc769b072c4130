// The end-to-end conformance matrix: for every model (the seed programs of DESIGN.md section
// 9, LeNet, the Elman RNN, torchvision's ResNet-18, the transformer encoder, a U-Net-style
// decoder) at batch 1 and 8,
// PyTorch's reference == Amber eager == traced == saved-then-loaded on CPU == loaded on the
// simulated device (tests/sim: never skipped; bit for bit the CPU's) == loaded on CUDA (where a
// GPU and the CUDA backend exist), |amber - ref| <= atol + rtol * |ref| per model; and loaded
// on CPU in bf16 and in dynamic int8 (LoadOptions::precision, where the processor has
// AVX512-BF16 and AVX512-VNNI) and calibrated int8 (quantize_int8 on the model's largest
// batch), within kBf16Tolerance and kInt8Tolerance of the output's largest magnitude, and on
// CUDA in TF32, bf16 and f16 (where a GPU with such tensor cores exists) within kTf32Tolerance,
// kBf16Tolerance and kF16Tolerance of it; and the whole model in bf16 and f16 (bf16_model,
// f16_model) on CPU and CUDA within kBf16ModelTolerance and kF16ModelTolerance, the f16 one on
// the simulated device equal to the CPU's bit for bit.
// Each model is traced once at batch 1 with a dynamic batch and that one archive serves every
// batch; programs that cannot generalise must be refused at trace time. Prints the matrix.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "models/control.h"
#include "models/programs.h"
#include "models/resnet.h"
#include "models/small.h"
#include "test_util.h"

using namespace amber;
using Json = nlohmann::json;

namespace {

enum Path {
  kEager,
  kTraced,
  kLoadedCpu,
  kLoadedBf16,
  kLoadedInt8,
  kLoadedInt8Calibrated,
  kLoadedSim,
  kLoadedCuda,
  kLoadedCudaTf32,
  kLoadedCudaBf16,
  kLoadedCudaF16,
  kLoadedBf16Model,
  kLoadedF16Model,
  kLoadedCudaBf16Model,
  kLoadedCudaF16Model,
  kPaths
};
const char* const kPathNames[kPaths] = {
    "eager",           "traced",         "loaded CPU",    "loaded CPU bf16",  "loaded CPU int8",
    "CPU int8 calib.", "loaded sim",     "loaded CUDA",   "loaded CUDA tf32", "loaded CUDA bf16",
    "loaded CUDA f16", "CPU bf16-model", "CPU f16-model", "CUDA bf16-model",  "CUDA f16-model"};

// The bf16 column's bound: max |amber - ref| <= kBf16Tolerance * max |ref| (bf16 keeps 8
// significant bits, a relative rounding of 2^-9 per product input; measured here 0.1-0.4%).
constexpr double kBf16Tolerance = 2e-2;
// The dynamic int8 column's (Precision::dynamic_int8: linear layers and convolutions),
// likewise: each product input rounded to 1/255 of its source's range (a row, an image) or
// 1/254 of its weight channel's largest magnitude. The calibrated int8 column (the archive
// quantize_int8 rewrote, percentile ranges from the model's largest batch) is held to it too.
constexpr double kInt8Tolerance = 4e-2;
// The CUDA TF32 column's (Precision::tf32: matrix products and convolutions on tensor cores),
// likewise: TF32 keeps 11 significant bits of each product input, a relative rounding of 2^-11.
constexpr double kTf32Tolerance = 1e-2;
// The CUDA f16 column's (Precision::f16: convolutions and linear layers in IEEE half), likewise:
// f16 keeps 11 significant bits, as TF32, and the convolution's output is rounded to it too.
// (The CUDA bf16 column is held to kBf16Tolerance.)
constexpr double kF16Tolerance = 1e-2;
// The whole model in 16 bits (Precision::bf16_model, f16_model: every weight and every value
// between ops rounded), likewise, on the CPU and on CUDA. Measured on the CPU: bf16 at most 1.8%
// of max |ref| (the transformer; ResNet-18 0.46%), f16 at most 0.30% (the transformer).
constexpr double kBf16ModelTolerance = 4e-2;
constexpr double kF16ModelTolerance = 1e-2;

struct Cell {
  bool run = false, ok = true;
  double max_abs = 0, max_rel = 0;
};
struct Row {
  std::string model, batch;
  double atol = 0, rtol = 0;
  Cell cells[kPaths];
};
std::vector<Row>& matrix() {
  static std::vector<Row> rows;
  return rows;
}

// Why the CUDA column does not run here ("" when it does): probed once by loading a tiny
// archive on cuda:0.
const std::string& cuda_skip_reason() {
  static const std::string reason = [] {
    try {
      TraceOptions o;
      o.print_warnings = false;
      Model m = load(trace(models::ten_mul, {ones({5})}, o).save_to_bytes(), LoadOptions{.device = Device::cuda(0)});
      (void)m.forward({ones({5})});
      return std::string();
    } catch (const Error& e) {
      std::string what = e.what();
      std::string line;  // on one line, runs of spaces collapsed
      for (char c : what)
        if (!((c == ' ' || c == '\n') && (line.empty() || line.back() == ' '))) line += c == '\n' ? ' ' : c;
      return line;
    }
  }();
  return reason;
}

// Why a precision's column does not run here on the device ("" when it does): probed on a tiny archive.
std::string precision_skip_reason(Precision p, Device device = Device::cpu()) {
  try {
    TraceOptions o;
    o.print_warnings = false;
    (void)load(trace(models::ten_mul, {ones({5})}, o).save_to_bytes(), LoadOptions{.device = device, .precision = p});
    return std::string();
  } catch (const Error& e) {
    return std::string(e.what());
  }
}
// Why a precision's CUDA column does not run here ("" when it does), once per precision.
// AMBER_E2E_CUDA_PRECISIONS (a comma list, e.g. "bf16") narrows the bf16, f16 and 16-bit model columns
// (scripts/gpu_check.sh --short under compute-sanitizer, where each load's cuDNN search is slow).
const std::string& cuda_precision_skip_reason(Precision p) {
  static std::map<Precision, std::string> reasons;
  auto it = reasons.find(p);
  if (it == reasons.end()) {
    std::string why = cuda_skip_reason();
    const char* only = std::getenv("AMBER_E2E_CUDA_PRECISIONS");
    if (why.empty() && only &&
        ("," + std::string(only) + ",").find(str(",", precision_name(p), ",")) == std::string::npos)
      why = str("not in AMBER_E2E_CUDA_PRECISIONS=", only);
    if (why.empty()) why = precision_skip_reason(p, Device::cuda(0));
    it = reasons.emplace(p, why).first;
  }
  return it->second;
}

const std::string& bf16_skip_reason() {
  static const std::string reason = precision_skip_reason(Precision::bf16);
  return reason;
}
const std::string& int8_skip_reason() {
  static const std::string reason = precision_skip_reason(Precision::dynamic_int8);
  return reason;
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

// Max |got - ref| / |ref| over the elements with |ref| >= 1e-2 (relative error means little
// next to zero, where atol governs).
double max_rel_significant(const Tensor& got, const Tensor& ref) {
  const auto g = got.to_vector<double>(SrcLoc::none()), r = ref.to_vector<double>(SrcLoc::none());
  double m = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (std::fabs(r[i]) >= 1e-2) m = std::max(m, std::fabs(g[i] - r[i]) / std::fabs(r[i]));
  return m;
}

SafetensorsFile open_ref(const std::string& file) {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest");
  return SafetensorsFile::open(dir + "/" + file);
}

struct Batch {
  std::string label;
  std::vector<Tensor> inputs;
  Tensor reference;
};

using EagerFn = std::function<Tensor(const std::vector<Tensor>&)>;

// The archive at `path` quantized by calibration on the inputs of the batch with the most
// elements (as `amber quantize` would), saved beside it, and those inputs' shape; "" when no
// node became int8 (none outside control-flow bodies, which stay f32).
std::pair<std::string, DimVec> calibrated_archive(const std::string& path, const std::vector<Batch>& batches) {
  const Batch* largest = &batches[0];
  for (const Batch& b : batches)
    if (b.inputs[0].numel() > largest->inputs[0].numel()) largest = &b;
  LoadedArchive a = read_archive(path);
  const QuantizeReport r = quantize_int8(a.graph, largest->inputs);
  if (r.quantized() == 0) return {};
  const std::string out = path + ".int8.amber";
  save_archive(out, a.graph, a.info);
  return {out, largest->inputs[0].sizes()};
}

// Whether `inputs` have the calibration's shape but for the batch: ranges calibrated on
// 128-token sequences do not fit short ones (an attention output averages fewer values, so
// its range is wider: the out-projections' inputs saturate at 16 tokens and fewer), so the
// calibrated column runs only those.
bool like_calibration(const std::vector<Tensor>& inputs, const DimVec& calibrated) {
  const DimVec& s = inputs[0].sizes();
  return s.size() == calibrated.size() && std::equal(s.begin() + 1, s.end(), calibrated.begin() + 1);
}

// Runs every path of one model on every batch and appends the rows. `traced` was traced at
// the first batch; it is saved to a file and loaded back by the runtime.
void conform(const std::string& name, double atol, double rtol, const EagerFn& eager, const TracedModule& traced,
             const std::vector<Batch>& batches, bool lower_precision = true, bool half_model = false) {
  const std::string path = "e2e_" + name + ".amber";
  traced.save(path);
  const Model cpu = load(path);
  const Model sim = load(path, LoadOptions{.device = Device::sim(1)});
  Model cuda, cuda_tf32, cuda_bf16, cuda_f16, bf16, int8, int8_calibrated;
  if (cuda_skip_reason().empty()) {
    cuda = load(path, LoadOptions{.device = Device::cuda(0)});
    cuda_tf32 = load(path, LoadOptions{.device = Device::cuda(0), .precision = Precision::tf32});
    if (lower_precision && cuda_precision_skip_reason(Precision::bf16).empty())
      cuda_bf16 = load(path, LoadOptions{.device = Device::cuda(0), .precision = Precision::bf16});
    if (lower_precision && cuda_precision_skip_reason(Precision::f16).empty())
      cuda_f16 = load(path, LoadOptions{.device = Device::cuda(0), .precision = Precision::f16});
  }
  Model bf16_model, f16_model, sim_f16_model, cuda_bf16_model, cuda_f16_model;
  if (half_model) {
    bf16_model = load(path, LoadOptions{.precision = Precision::bf16_model});
    f16_model = load(path, LoadOptions{.precision = Precision::f16_model});
    sim_f16_model = load(path, LoadOptions{.device = Device::sim(1), .precision = Precision::f16_model});
    if (cuda_skip_reason().empty() && cuda_precision_skip_reason(Precision::bf16_model).empty())
      cuda_bf16_model = load(path, LoadOptions{.device = Device::cuda(0), .precision = Precision::bf16_model});
    if (cuda_skip_reason().empty() && cuda_precision_skip_reason(Precision::f16_model).empty())
      cuda_f16_model = load(path, LoadOptions{.device = Device::cuda(0), .precision = Precision::f16_model});
  }
  if (lower_precision && bf16_skip_reason().empty()) bf16 = load(path, LoadOptions{.precision = Precision::bf16});
  if (lower_precision && int8_skip_reason().empty())
    int8 = load(path, LoadOptions{.precision = Precision::dynamic_int8});
  const auto [calibrated, calibrated_shape] =
      lower_precision ? calibrated_archive(path, batches) : std::pair<std::string, DimVec>{};
  if (!calibrated.empty()) int8_calibrated = load(calibrated);
  for (const Batch& b : batches) {
    Row row{name, b.label, atol, rtol, {}};
    double ref_max = 0;
    for (double v : b.reference.to_vector<double>(SrcLoc::none())) ref_max = std::max(ref_max, std::fabs(v));
    auto check = [&](Path p, const Tensor& got) {
      const test::Diff d = p == kLoadedBf16 || p == kLoadedCudaBf16
                               ? test::compare(got, b.reference, kBf16Tolerance * ref_max, 0)
                           : p == kLoadedCudaF16 ? test::compare(got, b.reference, kF16Tolerance * ref_max, 0)
                           : p == kLoadedBf16Model || p == kLoadedCudaBf16Model
                               ? test::compare(got, b.reference, kBf16ModelTolerance * ref_max, 0)
                           : p == kLoadedF16Model || p == kLoadedCudaF16Model
                               ? test::compare(got, b.reference, kF16ModelTolerance * ref_max, 0)
                           : p == kLoadedInt8 || p == kLoadedInt8Calibrated
                               ? test::compare(got, b.reference, kInt8Tolerance * ref_max, 0)
                           : p == kLoadedCudaTf32 ? test::compare(got, b.reference, kTf32Tolerance * ref_max, 0)
                                                  : test::compare(got, b.reference, atol, rtol);
      row.cells[p] = Cell{true, d.ok, d.max_abs, d.ok ? max_rel_significant(got, b.reference) : d.max_rel};
      INFO(name << " batch " << b.label << ", " << kPathNames[p] << ": " << d.message);
      CHECK(d.ok);
    };
    check(kEager, eager(b.inputs));
    check(kTraced, traced.forward(b.inputs)[0]);
    const Tensor on_cpu = cpu.forward(b.inputs)[0];
    check(kLoadedCpu, on_cpu);
    if (bf16.defined()) check(kLoadedBf16, bf16.forward(b.inputs)[0]);
    if (int8.defined()) check(kLoadedInt8, int8.forward(b.inputs)[0]);
    if (int8_calibrated.defined() && like_calibration(b.inputs, calibrated_shape))
      check(kLoadedInt8Calibrated, int8_calibrated.forward(b.inputs)[0]);
    const Tensor on_sim = sim.forward(b.inputs)[0];
    CHECK(on_sim.device() == Device::sim(1));
    check(kLoadedSim, on_sim.to(Device::cpu()));
    INFO(name << " batch " << b.label << ": loaded sim vs loaded CPU");
    CHECK(test::compare(on_sim.to(Device::cpu()), on_cpu, 0, 0).ok);  // the same kernels on the same threads
    if (cuda.defined()) check(kLoadedCuda, cuda.forward(b.inputs)[0].to(Device::cpu()));
    if (cuda_tf32.defined()) check(kLoadedCudaTf32, cuda_tf32.forward(b.inputs)[0].to(Device::cpu()));
    if (cuda_bf16.defined()) check(kLoadedCudaBf16, cuda_bf16.forward(b.inputs)[0].to(Device::cpu()));
    if (cuda_f16.defined()) check(kLoadedCudaF16, cuda_f16.forward(b.inputs)[0].to(Device::cpu()));
    if (half_model) {
      check(kLoadedBf16Model, bf16_model.forward(b.inputs)[0]);
      const Tensor f16_on_cpu = f16_model.forward(b.inputs)[0];
      check(kLoadedF16Model, f16_on_cpu);
      INFO(name << " batch " << b.label << ": f16-model on sim vs on the CPU");
      CHECK(test::compare(sim_f16_model.forward(b.inputs)[0].to(Device::cpu()), f16_on_cpu, 0, 0).ok);
    }
    if (cuda_bf16_model.defined()) check(kLoadedCudaBf16Model, cuda_bf16_model.forward(b.inputs)[0].to(Device::cpu()));
    if (cuda_f16_model.defined()) check(kLoadedCudaF16Model, cuda_f16_model.forward(b.inputs)[0].to(Device::cpu()));
    matrix().push_back(row);
  }
  std::filesystem::remove(path);
  if (!calibrated.empty()) std::filesystem::remove(calibrated);
}

TraceOptions trace_options(bool dynamic, int batch_dim = 0) {
  TraceOptions o;
  o.print_warnings = false;
  o.strict = true;  // a model of the matrix must trace without warnings
  o.dynamic_batch = dynamic;
  o.batch_dim = batch_dim;
  return o;
}

// The batches of a seed program from seeds_io.safetensors.
std::vector<Batch> seed_batches(const std::string& name, const std::vector<int>& sizes, size_t num_inputs,
                                bool static_shape) {
  SafetensorsFile io = open_ref("seeds_io.safetensors");
  std::vector<Batch> out;
  for (int b : sizes) {
    Batch batch;
    const std::string key = str(name, ".b", b);
    for (size_t k = 0; k < num_inputs; ++k) batch.inputs.push_back(io.tensor(str(key, ".input", k)));
    batch.reference = io.tensor(key + ".output");
    batch.label = static_shape ? str(batch.inputs[0].sizes()) : std::to_string(b);
    out.push_back(batch);
  }
  return out;
}

// The batches of a model from MODEL_io.safetensors.
std::vector<Batch> model_batches(const std::string& name) {
  SafetensorsFile io = open_ref(name + "_io.safetensors");
  std::vector<Batch> out;
  for (int b : {1, 8})
    out.push_back({std::to_string(b), {io.tensor(str("input.b", b))}, io.tensor(str("output.b", b))});
  return out;
}

template <typename M>
void conform_model(const std::string& name, M& model, double atol, double rtol, int batch_dim = 0) {
  const std::vector<Batch> batches = model_batches(name);
  model.load_state(test::refdata_dir() + "/" + name + ".safetensors");
  model.eval();
  const TracedModule traced = trace(model, batches[0].inputs, trace_options(true, batch_dim));
  conform(
      name, atol, rtol, [&](const std::vector<Tensor>& in) { return model(in[0]); }, traced, batches, true, true);
}

}  // namespace

TEST_CASE("seed programs: 2*x + y and ten muls traced at batch 1 serve batch 8", "[e2e]") {
  for (const char* name : {"two_x_plus_y", "ten_mul"}) {
    const bool two = std::string(name) == "two_x_plus_y";
    const auto batches = seed_batches(name, {1, 8}, two ? 2 : 1, false);
    const EagerFn eager = [two](const std::vector<Tensor>& in) {
      return two ? models::two_x_plus_y(in[0], in[1]) : models::ten_mul(in[0]);
    };
    const TracedModule traced = trace(eager, batches[0].inputs, trace_options(true));
    // Ten squarings amplify one rounding by up to 2^10 in relative terms; torch rounds alike.
    conform(name, 1e-6, two ? 1e-6 : 1e-5, eager, traced, batches);
  }
}

TEST_CASE("seed programs without a batch dim: static traces, and dynamic batch refused at trace time", "[e2e]") {
  const Tensor t33 = ones({3, 3}), t11 = ones({1, 1});
  const EagerFn mm_add = [&](const std::vector<Tensor>& in) { return models::mm_add(in[0], t33); };
  const EagerFn loop_rows = [&](const std::vector<Tensor>& in) { return models::loop_rows(in[0], t11); };
  const EagerFn pairwise = [](const std::vector<Tensor>& in) { return models::pairwise_sq_dist(in[0], in[1]); };
  struct Seed {
    const char* name;
    const EagerFn& fn;
    int size;
    size_t num_inputs;
    const char* refusal;  // why a dynamic batch cannot be traced: x.mm(x) needs a square x, the
                          // loop runs once per row, a and b have different numbers of points
  };
  for (const Seed& s : {Seed{"mm_add", mm_add, 3, 1, "fails at N=4, so it bakes a size in"},
                        Seed{"loop_rows", loop_rows, 3, 1, "the model's structure depends on a dynamic size"},
                        Seed{"pairwise", pairwise, 100, 2,
                             "the inputs disagree on the size N: 100 in input 0 dim 0, 200 in input 1 dim 0"}}) {
    const auto batches = seed_batches(s.name, {s.size}, s.num_inputs, true);
    AMBER_REQUIRE_ERROR(trace(s.fn, batches[0].inputs, trace_options(true)), s.refusal);
    conform(s.name, 1e-6, 1e-6, s.fn, trace(s.fn, batches[0].inputs, trace_options(false)), batches);
  }
}

TEST_CASE("LeNet traced at batch 1 serves batch 8", "[e2e][models]") {
  models::LeNet net;
  conform_model("lenet", net, 1e-5, 1e-4);
}

TEST_CASE("the Elman RNN (input [T, N, in]) traced at batch 1 serves batch 8", "[e2e][models]") {
  models::ElmanRNN rnn(10, 20, 5);
  conform_model("elman_rnn", rnn, 1e-5, 1e-4, /*batch_dim=*/1);
}

TEST_CASE("torchvision's ResNet-18 traced at batch 1 serves batch 8", "[e2e][models]") {
  models::ResNet18 net;
  conform_model("resnet18", net, 1e-5, 1e-4);
}

TEST_CASE("the transformer encoder traced once at [1, 128] serves any batch and sequence length", "[e2e][models]") {
  nn::TransformerEncoder encoder(models::transformer_options(), models::kTransformerLayers);
  std::vector<Batch> batches = model_batches("transformer");
  SafetensorsFile io = open_ref("transformer_io.safetensors");
  for (const char* nt : {"n2.t16", "n1.t77", "n1.t512", "n3.t1"})  // (N, T) other than the traced length 128
    batches.push_back({nt, {io.tensor(str("input.", nt))}, io.tensor(str("output.", nt))});
  encoder.load_state(test::refdata_dir() + "/transformer.safetensors");
  encoder.eval();
  TraceOptions o = trace_options(true);
  o.dynamic_dims = {{0, 1, 'T'}};
  const TracedModule traced = trace(encoder, batches[0].inputs, o);
  CHECK(traced.graph().inputs()[0]->type.shape ==
        graph::SymShape{graph::SymInt::symbol('N'), graph::SymInt::symbol('T'), graph::SymInt(256)});
  conform(
      "transformer", 1e-5, 1e-4, [&](const std::vector<Tensor>& in) { return encoder(in[0]); }, traced, batches, true,
      true);
}

TEST_CASE("a U-Net-style decoder (transposed convolutions, group norm, upsampling) traced at batch 1 serves batch 8",
          "[e2e][models]") {
  models::Decoder decoder;
  conform_model("decoder", decoder, 1e-5, 1e-4);
}

TEST_CASE("control flow (loop, while_loop, cond) against torch.jit.script, one archive for every length", "[e2e]") {
  SafetensorsFile ref = open_ref("control.safetensors");
  const Json cases = Json::parse(ref.metadata().at("cases"));
  auto w = [&](const std::string& model, const std::string& name) { return ref.tensor(model + "." + name); };
  auto batches = [&](const std::string& model, size_t num_inputs) {
    std::vector<Batch> out;
    for (const auto& c : cases.at(model)) {
      const std::string key = model + "." + c.get<std::string>();
      Batch b{c.get<std::string>(), {}, ref.tensor(key + ".output")};
      for (size_t k = 0; k < num_inputs; ++k) b.inputs.push_back(ref.tensor(str(key, ".input", k)));
      out.push_back(b);
    }
    return out;
  };
  // Each model is traced once, on its first case; the others run other lengths through the
  // same archive (its loop's count, the decoder's stop, the block's predicate are data).
  auto run = [&](const std::string& name, size_t num_inputs, const EagerFn& eager, bool lower_precision,
                 bool half_model) {
    const std::vector<Batch> bs = batches(name, num_inputs);
    const TracedModule traced = trace(eager, bs[0].inputs, trace_options(false));
    size_t control = 0;
    for (const graph::Node* n : traced.graph().nodes()) control += n->op->is_control_flow();
    CHECK(control == 1);
    conform(name, 1e-5, 1e-4, eager, traced, bs, lower_precision, half_model);
  };
  // Squaring n times multiplies a relative rounding by 2^n: the 16-bit models do not run it.
  run(
      "square_n", 2, [](const std::vector<Tensor>& in) { return models::square_n(in[0], in[1]); }, true, false);
  const models::LoopElman elman{w("loop_elman", "W_h"), w("loop_elman", "U_h"), w("loop_elman", "b_h"),
                                w("loop_elman", "W_y"), w("loop_elman", "b_y")};
  run(
      "loop_elman", 2, [&](const std::vector<Tensor>& in) { return elman.forward(in[0], in[1]); }, true, true);
  const models::LoopGRU gru{w("loop_gru", "weight_ih"), w("loop_gru", "weight_hh"), w("loop_gru", "bias_ih"),
                            w("loop_gru", "bias_hh")};
  run(
      "loop_gru", 2, [&](const std::vector<Tensor>& in) { return gru.forward(in[0], in[1]); }, true, true);
  const models::GreedyDecoder decoder{w("greedy_decoder", "embedding"), w("greedy_decoder", "U"),
                                      w("greedy_decoder", "out"),
                                      ref.tensor("greedy_decoder.end_token").item<int64_t>()};
  // Tokens are argmaxes: lower precision may pick another one, so only f32 columns run.
  run(
      "greedy_decoder", 2, [&](const std::vector<Tensor>& in) { return decoder.forward(in[0], in[1]); }, false, false);
  const models::SkipBlock block{w("skip_block", "w1"), w("skip_block", "b1"), w("skip_block", "w2"),
                                w("skip_block", "b2")};
  run(
      "skip_block", 1, [&](const std::vector<Tensor>& in) { return block.forward(in[0]); }, true, true);
}

TEST_CASE("the conformance matrix", "[e2e]") {
  std::printf(
      "\nconformance vs PyTorch (tests/gen_reference.py), per path: max |amber - ref| / max |amber - ref| / |ref| "
      "where |ref| >= 1e-2;\nevery cell within |amber - ref| <= atol + rtol * |ref|; traced at batch 1, the same "
      "archive serving batch 8 (control-flow models: the batch column names the case, one archive for all);\nloaded "
      "CPU bf16 and int8 (LoadOptions::precision, dynamic int8), CPU int8 calibrated (quantize_int8 on the "
      "largest batch; skipped: nothing to quantize outside control-flow bodies, or another sequence "
      "length than calibrated), CUDA tf32 and f16: within "
      "%g, %g, %g and %g x max |ref| instead (CUDA bf16: as CPU bf16); the whole model in bf16 and f16 "
      "(bf16-model, f16-model; CPU and CUDA) within %g and %g x max |ref|\n",
      kBf16Tolerance, kInt8Tolerance, kTf32Tolerance, kF16Tolerance, kBf16ModelTolerance, kF16ModelTolerance);
  std::printf("%-14s %-9s %-14s", "model", "batch", "atol / rtol");
  for (const char* p : kPathNames) std::printf(" %-19s", p);
  std::printf("\n");
  for (const Row& r : matrix()) {
    std::printf("%-14s %-9s %-14s", r.model.c_str(), r.batch.c_str(), str(r.atol, " / ", r.rtol).c_str());
    for (const Cell& c : r.cells) {
      if (!c.run)
        std::printf(" %-19s", "skipped");
      else
        std::printf(" %-19s", str(c.ok ? "" : "FAIL ", fmt_g(c.max_abs), " / ", fmt_g(c.max_rel)).c_str());
    }
    std::printf("\n");
  }
  if (!cuda_skip_reason().empty())
    std::printf("loaded CUDA, CUDA tf32, bf16, f16, bf16-model and f16-model skipped: %s\n",
                cuda_skip_reason().c_str());
  for (Precision p : {Precision::bf16, Precision::f16, Precision::bf16_model, Precision::f16_model})
    if (cuda_skip_reason().empty() && !cuda_precision_skip_reason(p).empty())
      std::printf("loaded CUDA %s skipped: %s\n", precision_name(p), cuda_precision_skip_reason(p).c_str());
  if (!bf16_skip_reason().empty()) std::printf("loaded CPU bf16 skipped: %s\n", bf16_skip_reason().c_str());
  if (!int8_skip_reason().empty()) std::printf("loaded CPU int8 skipped: %s\n", int8_skip_reason().c_str());
  // Every model of the matrix reported (a filtered run prints what it ran).
  CHECK(matrix().size() == 2 * 2 + 3 + 5 * 2 + 3 * 4 + 2 + 4);  // control flow, the transformer's lengths
}
