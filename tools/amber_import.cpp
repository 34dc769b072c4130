// amber-import (run as `amber import`): an ONNX model to an Amber archive through the
// authoring library's importer (onnx/import.h). A program of its own so that the amber tool
// itself links only the runtime; exit codes as the amber tool's (docs/CLI.md).

#include <cstdio>
#include <string>
#include <vector>

#include <amber/amber.h>

#include "cli.h"

namespace {

const char* kUsage = R"(usage: amber import MODEL.onnx -o OUT.amber [options]

  -o, --output OUT.amber     the archive to write
  --dim NAME=N               the size of a symbolic dim other than a leading batch; repeatable
  --dynamic NAME=S           keep the symbolic dim NAME dynamic as Amber's symbol S (one
                             upper-case letter: --dynamic seq=T); traced at its --dim size
                             (default 8), the archive serves any size; repeatable
  --batch N                  the batch traced at when the inputs' first dim is symbolic (default 1;
                             the archive serves any batch)
  --no-optimize              skip the optimisation passes

exit codes: 0 success, 1 the model cannot be imported (every refused node is named),
            2 bad command line, 3 the archive could not be written
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace amber;
  using namespace amber::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  return run_guarded("import", [&]() -> int {
    std::string model, out;
    OnnxImportOptions o;
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
      } else if (a == "--dim") {
        const std::string v = value();
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) throw UsageError("--dim takes NAME=N, got '" + v + "'");
        o.dims[v.substr(0, eq)] = parse_positive_int("--dim " + v.substr(0, eq), v.substr(eq + 1));
      } else if (a == "--dynamic") {
        const std::string v = value();
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0 || v.size() != eq + 2 || v[eq + 1] < 'A' || v[eq + 1] > 'Z')
          throw UsageError("--dynamic takes NAME=S with S one upper-case letter (seq=T), got '" + v + "'");
        o.dynamic_dims[v.substr(0, eq)] = v[eq + 1];
      } else if (a == "--batch") {
        o.batch = parse_positive_int("--batch", value());
      } else if (a == "--no-optimize") {
        o.optimize = false;
      } else if (!a.empty() && a[0] == '-') {
        throw UsageError("unknown option '" + a + "'");
      } else if (model.empty()) {
        model = a;
      } else {
        throw UsageError("one MODEL.onnx only (got '" + model + "' and '" + a + "')");
      }
    }
    if (model.empty()) throw UsageError("missing MODEL.onnx");
    if (out.empty()) throw UsageError("missing -o OUT.amber");
    const TracedModule traced = import_onnx(model, o);
    try {
      traced.save(out);
    } catch (const Error& e) {
      throw IoError(e.what());
    }
    const graph::Graph& g = traced.graph();
    std::printf("imported %s -> %s: %zu inputs, %zu outputs, %zu nodes, %zu weights\n", model.c_str(), out.c_str(),
                g.inputs().size(), g.outputs().size(), g.num_nodes(), g.constants().size());
    return kExitOk;
  });
}
