// amber-quantize (run as `amber quantize`): an archive to its int8 form through the authoring
// library's calibration (tracer/quantize.h): the samples run through the model, each
// convolution's and linear layer's input range is recorded, and those nodes become
// quantized_conv2d / quantized_linear with int8 weights (the .u8 overloads where consecutive
// int8 layers pass uint8 on). Exit codes as the amber tool's.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <amber/amber.h>

#include "cli.h"

namespace {

const char* kUsage = R"(usage: amber quantize FILE --calibrate SAMPLES.safetensors -o OUT.amber [options]

  --calibrate SAMPLES        a safetensors file holding, for each input of the model (by its
                             name), samples stacked along the first dim: [S, 3, 224, 224]
  -o, --output OUT.amber     the int8 archive to write (format 1.5 with additions in uint8,
                             1.4 with layers passing uint8 on, else 1.3)
  --method percentile|minmax how an input's range is chosen: percentile (default) drops the
                             tails beyond --percentile; minmax keeps the extremes
  --percentile P             in (50, 100], default 99.99
  --batch N                  samples per run when the model's batch is dynamic (default 32)
  --no-chain                 every int8 layer reads and writes f32 (by default a layer read
                             only by int8 layers writes uint8 for them, absorbing a ReLU or
                             clamp after it)
  --no-int8-add              residual additions stay f32 (by default an addition of two
                             uint8 values read only by int8 layers is added in uint8:
                             faster, one more rounding of each operand)
  --quiet                    print only the summary line

exit codes: 0 success, 1 the archive or the samples cannot be used, 2 bad command line,
            3 the archive could not be written
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace amber;
  using namespace amber::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  return run_guarded("quantize", [&]() -> int {
    std::string model, out, samples;
    QuantizeOptions o;
    bool quiet = false;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
        return args[++i];
      };
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return kExitOk;
      } else if (a == "-o" || a == "--output") {
        out = value();
      } else if (a == "--calibrate") {
        samples = value();
      } else if (a == "--method") {
        const std::string m = value();
        if (m != "percentile" && m != "minmax") throw UsageError("--method is percentile or minmax, got '" + m + "'");
        o.calibration = m == "minmax" ? QuantizeOptions::Calibration::minmax : QuantizeOptions::Calibration::percentile;
      } else if (a == "--percentile") {
        const std::string v = value();
        char* end = nullptr;
        o.percentile = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !(o.percentile > 50 && o.percentile <= 100))
          throw UsageError("--percentile takes a number in (50, 100], got '" + v + "'");
      } else if (a == "--batch") {
        o.batch = parse_positive_int("--batch", value());
      } else if (a == "--quiet") {
        quiet = true;
      } else if (a == "--no-chain") {
        o.chain = false;
      } else if (a == "--no-int8-add") {
        o.additions = false;
      } else if (!a.empty() && a[0] == '-') {
        throw UsageError("unknown option '" + a + "'");
      } else if (model.empty()) {
        model = a;
      } else {
        throw UsageError("one FILE only (got '" + model + "' and '" + a + "')");
      }
    }
    if (model.empty()) throw UsageError("missing FILE");
    if (samples.empty()) throw UsageError("missing --calibrate SAMPLES.safetensors");
    if (out.empty()) throw UsageError("missing -o OUT.amber");
    LoadedArchive archive = read_archive(model);
    const SafetensorsFile file = SafetensorsFile::open(samples);
    std::vector<Tensor> calibration;
    for (const graph::Value* in : archive.graph.inputs()) {
      if (!file.contains(in->name))
        throw Error(str(samples, ": no tensor named '", in->name, "' (the model's input ", in->type, ")"));
      calibration.push_back(file.tensor(in->name));
    }
    const QuantizeReport r = quantize_int8(archive.graph, calibration, o);
    if (!quiet)
      for (const QuantizedNode& n : r.nodes) {
        if (!n.quantized) {
          std::printf("  %%%s (%s): stays f32: %s\n", n.value.c_str(), n.op.c_str(), n.reason.c_str());
          continue;
        }
        std::printf("  %%%s (%s): input %srange [%.4g, %.4g], scale %.4g, zero point %lld", n.value.c_str(),
                    n.op.c_str(), n.input_u8 ? "uint8, " : "", n.lo, n.hi, n.input_scale,
                    static_cast<long long>(n.input_zero_point));
        if (!n.folded.empty()) std::printf("; absorbs %s %%%s", n.folded.c_str(), n.folded_value.c_str());
        if (n.output_u8)
          std::printf("; output uint8, scale %.4g, zero point %lld", n.output_scale,
                      static_cast<long long>(n.output_zero_point));
        std::printf("\n");
      }
    try {
      save_archive(out, archive.graph, archive.info);
    } catch (const Error& e) {
      throw IoError(e.what());
    }
    const auto chained =
        std::count_if(r.nodes.begin(), r.nodes.end(), [](const QuantizedNode& n) { return n.output_u8; });
    std::printf(
        "quantized %s -> %s: %d of %zu convolutions and linear layers in int8 (%lld passing uint8 on), %d additions in "
        "int8, calibrated on %lld samples\n",
        model.c_str(), out.c_str(), r.quantized(), r.nodes.size(), static_cast<long long>(chained), r.additions,
        static_cast<long long>(r.samples));
    return kExitOk;
  });
}
