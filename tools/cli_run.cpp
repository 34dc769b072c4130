// `amber run FILE [--inputs IN.safetensors] [--outputs OUT.safetensors] [--batch N]
// [--sizes T=64,...] [--seed S] [--anomaly]`: one forward call. Inputs come keyed by the model's input names
// (or are generated); outputs are written keyed by output names and summarised.

#include <chrono>
#include <cmath>
#include <cstdio>

#include "cli.h"

namespace amber::cli {
namespace {

void summarize(const std::string& name, const Tensor& t) {
  std::printf("  %-16s %s%s", name.c_str(), std::string(dtype_name(t.dtype())).c_str(), str(t.sizes()).c_str());
  if (t.numel() == 0) {
    std::printf("  (empty)\n");
    return;
  }
  const std::vector<double> v = t.to(DType::f64).contiguous().to_vector<double>();
  double lo = v[0], hi = v[0], sum = 0;
  size_t nonfinite = 0;
  for (double x : v) {
    if (!std::isfinite(x)) {
      ++nonfinite;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  std::printf("  min %.6g  max %.6g  mean %.6g", lo, hi, sum / double(v.size() - nonfinite ? v.size() - nonfinite : 1));
  if (nonfinite) std::printf("  (%zu NaN/Inf)", nonfinite);
  std::printf("\n    first values:");
  for (size_t i = 0; i < v.size() && i < 5; ++i) std::printf(" %.6g", v[i]);
  std::printf("\n");
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  Args a(argv, {"anomaly"}, {"inputs", "outputs", "batch", "sizes", "seed"});
  if (a.has("inputs") && (a.has("batch") || a.has("sizes") || a.has("seed")))
    throw UsageError("--batch, --sizes and --seed choose generated inputs; they cannot be used with --inputs");
  LoadOptions o = load_options(a);
  o.anomaly_mode = a.flag("anomaly");
  const auto t0 = std::chrono::steady_clock::now();
  Model m = load(a.file(), o);
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<Tensor> inputs = make_inputs(m, a);
  const auto t2 = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = m.forward(inputs);
  const auto t3 = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("%s: loaded in %.2f ms, ran in %.2f ms on %s\n", a.file().c_str(), ms(t1 - t0), ms(t3 - t2),
              str(o.device).c_str());
  std::printf("inputs%s:\n", a.has("inputs") ? (" (from " + a.get("inputs") + ")").c_str() : " (generated)");
  for (size_t i = 0; i < inputs.size(); ++i) summarize(m.inputs()[i].name, inputs[i]);
  std::printf("outputs:\n");
  for (size_t i = 0; i < outputs.size(); ++i) summarize(m.outputs()[i].name, outputs[i]);
  if (a.has("outputs")) {
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < outputs.size(); ++i) named.emplace_back(m.outputs()[i].name, outputs[i]);
    try {
      save_safetensors(a.get("outputs"), named, {{"producer", "amber run"}});
    } catch (const Error& e) {
      throw IoError(e.what());
    }
    std::printf("wrote %s\n", a.get("outputs").c_str());
  }
  return kExitOk;
}

}  // namespace amber::cli
