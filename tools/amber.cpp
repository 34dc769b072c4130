// The amber command-line tool: `amber inspect|run|bench|dot FILE [options]`, `amber import` (run as
// amber-import), `amber export-onnx` (amber-export-onnx) and `amber quantize` (amber-quantize). Dispatches to the
// commands (cli_<command>.cpp) and turns every failure into one line on stderr and a documented exit code
// (docs/CLI.md); no input makes it crash.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "amber/version.h"
#include "cli.h"

namespace {

const char* kUsage = R"(usage: amber <command> FILE [options]

commands:
  inspect FILE [--graph]          inputs, outputs, op histogram, weights, metadata, trace warnings
                                  (--graph: print the graph text instead)
  run FILE [--inputs IN.safetensors] [--outputs OUT.safetensors] [--batch N] [--seed S]
           [--sizes T=64,...] [--anomaly]
                                  run once; inputs keyed by input name (random when absent;
                                  --batch, --sizes: their dynamic sizes)
  bench FILE [--batch N] [--sizes T=64,...] [--iters N] [--seconds S] [--json] [--profile]
                                  first-call latency, p50/p90/p99, throughput, peak memory
  dot FILE                        the graph as Graphviz text
  import MODEL.onnx -o OUT.amber  an ONNX model to an archive (runs amber-import; amber import --help)
  export-onnx FILE -o OUT.onnx    an archive to an ONNX model (runs amber-export-onnx; --help there)
  quantize FILE --calibrate SAMPLES.safetensors -o OUT.amber
                                  int8 convolutions and linear layers, input ranges calibrated
                                  on the samples (runs amber-quantize; --help there)

options of every command:
  --device cpu|cuda[:N]           where to run (default cpu)
  --threads N                     intra-op threads per call (default: all cores)
  --no-verify                     skip the XXH3 checksums of the weights when loading
  --op-library LIB.so             load an op library (custom ops) first; repeatable
  --precision f32|bf16|dynamic-int8|tf32|f16|bf16-model|f16-model
                                  bf16: convolutions and linear layers in bf16 with f32
                                  accumulation (processors with AVX512-BF16, GPUs of compute
                                  capability 8.0+); dynamic-int8: linear layers and
                                  convolutions in int8, sources quantized per call (processors
                                  with AVX512-VNNI); tf32 (CUDA): matrix products and
                                  convolutions on TF32 tensor cores; f16 (CUDA): as bf16 in
                                  IEEE half; bf16-model, f16-model: the whole model in 16 bits
                                  (weights rounded once, every value stored in 16 bits, each
                                  op computing in f32; any device); default f32

exit codes: 0 success, 1 the archive, inputs or run failed, 2 bad command line,
            3 a file could not be written
)";

// `amber import ...`, `amber export-onnx ...` and `amber quantize ...` run amber-import,
// amber-export-onnx and amber-quantize from
// this program's folder (they link the authoring library, which this tool does not).
int run_tool(char** argv, const char* command, const char* program) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string tool = program;
  if (n > 0) {
    self[n] = '\0';
    const std::string path(self);
    tool = path.substr(0, path.rfind('/') + 1) + program;
  }
  argv[1] = const_cast<char*>(program);
  execv(tool.c_str(), argv + 1);
  std::fprintf(stderr, "amber %s: error: cannot run %s (%s); it is built and installed with libamber\n", command,
               tool.c_str(), std::strerror(errno));
  return amber::cli::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace amber::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs("amber: missing command: inspect, run, bench, dot, import, export-onnx or quantize (see amber --help)\n",
               stderr);
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (args[0] == "--version") {
    std::printf("amber %s\n", AMBER_VERSION);
    return kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "import") return run_tool(argv, "import", "amber-import");
  if (command == "export-onnx") return run_tool(argv, "export-onnx", "amber-export-onnx");
  if (command == "quantize") return run_tool(argv, "quantize", "amber-quantize");
  try {
    if (command == "inspect") return cmd_inspect(args);
    if (command == "run") return cmd_run(args);
    if (command == "bench") return cmd_bench(args);
    if (command == "dot") return cmd_dot(args);
    throw UsageError("unknown command '" + command + "' (commands: inspect, run, bench, dot)");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "amber: %s (see amber --help)\n", one_line(e.what()).c_str());
    return kExitUsage;
  } catch (const IoError& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command.c_str(), one_line(e.what()).c_str());
    return kExitIo;
  } catch (const amber::Error& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command.c_str(), one_line(e.what()).c_str());
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command.c_str(), one_line(e.what()).c_str());
    return kExitError;
  } catch (...) {
    std::fprintf(stderr, "amber %s: error: unknown failure\n", command.c_str());
    return kExitError;
  }
}
