// amber-export-onnx (run as `amber export-onnx`): an Amber archive to an ONNX model through the
// authoring library's exporter (onnx/export.h). A program of its own so that the amber tool
// itself links only the runtime; exit codes as the amber tool's (docs/CLI.md).

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <amber/amber.h>

#include "cli.h"

namespace {

const char* kUsage = R"(usage: amber export-onnx MODEL.amber -o OUT.onnx [options]

  -o, --output OUT.onnx      the ONNX model to write (opset 17; the dynamic batch as dim "N")
  --no-check                 skip ONNX's checker and strict shape inference on the result
  --external-data            weights of 1 KiB and more in OUT.onnx.data beside the model
                             (ONNX's external data; automatic when they pass 2 GiB)
  --external-min-bytes N     the size from which a weight goes there (default 1024)

exit codes: 0 success, 1 the archive cannot be read or has nodes that cannot be exported (every
            one is named), 2 bad command line, 3 the model could not be written
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace amber;
  using namespace amber::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  return run_guarded("export-onnx", [&]() -> int {
    std::string archive, out;
    OnnxExportOptions o;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return kExitOk;
      } else if (a == "-o" || a == "--output") {
        if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
        out = args[++i];
      } else if (a == "--no-check") {
        o.check = false;
      } else if (a == "--external-data") {
        o.external_data = OnnxExportOptions::ExternalData::always;
      } else if (a == "--external-min-bytes") {
        if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
        o.external_min_bytes = uint64_t(parse_positive_int(a, args[++i]));
      } else if (!a.empty() && a[0] == '-') {
        throw UsageError("unknown option '" + a + "'");
      } else if (archive.empty()) {
        archive = a;
      } else {
        throw UsageError("one MODEL.amber only (got '" + archive + "' and '" + a + "')");
      }
    }
    if (archive.empty()) throw UsageError("missing MODEL.amber");
    if (out.empty()) throw UsageError("missing -o OUT.onnx");
    const LoadedArchive a = read_archive(archive);
    OnnxWritten w;
    try {
      w = export_onnx(a.graph, out, o);
    } catch (const OnnxWriteError& e) {
      throw IoError(e.what());
    }
    std::printf("exported %s -> %s: opset 17, %zu inputs, %zu outputs, %ju bytes", archive.c_str(), out.c_str(),
                a.graph.inputs().size(), a.graph.outputs().size(), uintmax_t(w.model_bytes));
    if (w.external_bytes) std::printf(" and %ju of external data in %s.data", uintmax_t(w.external_bytes), out.c_str());
    std::printf("\n");
    return kExitOk;
  });
}
