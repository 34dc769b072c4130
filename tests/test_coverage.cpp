// Prints the op x device coverage table straight from the op table and the backends'
// kernel lookup, and fails if an op lists a dtype its CPU kernels do not implement (no
// stubs; a 16-bit dtype counts as implemented by the f32 kernel, schema/via_f32.h). The CUDA column reports whatever
// libamber_cuda.so provides when it loads (also on a machine without a GPU, where the library loads but has no device).

#include <cstdio>
#include <fstream>
#include <sstream>

#include "amber/core/backend_registry.h"
#include "amber/schema/op_schema.h"
#include "test_util.h"

using namespace amber;

TEST_CASE("op x device coverage", "[coverage]") {
  const amber_backend* cpu = &backend(Device::cpu());
  const amber_backend* cuda = nullptr;
  std::string cuda_note;
  try {
    cuda = &backend(Device::cuda(0));
  } catch (const Error& e) {
    cuda_note = e.what();
    cuda = backend_if_loaded(DeviceType::cuda);  // the library loaded, but no GPU: its kernels still list
  }
  std::printf("%-13s %-6s %-32s %-32s %s\n", "op", "kind", "cpu", "cuda", "signature");
  int missing = 0, ops = 0;
  for (const OpSchema* op : all_ops()) {
    ++ops;
    std::string kind = op->is_view() ? "view" : op->is_maybe_view() ? "view*" : "kernel";
    std::string cpu_col, cuda_col;
    if (op->is_control_flow()) {
      cpu_col = cuda_col = "(control flow: runs its body)";
    } else if (!op->needs_kernel()) {
      cpu_col = cuda_col = "(metadata only)";
    } else if (op->is_maybe_view()) {
      cpu_col = cuda_col = "(view, else clone kernel)";
    } else {
      // A 16-bit dtype without a kernel of its own runs the f32 one (schema/via_f32.h): "~".
      auto mark = [&](const amber_backend* b, DType t) -> const char* {
        if (b->lookup_kernel(op->name.c_str(), op->version, int32_t(t))) return "";
        if (dtypes::half.contains(t) && b->lookup_kernel(op->name.c_str(), op->version, int32_t(DType::f32)))
          return "~";
        return "!";
      };
      op->dtypes.for_each([&](DType t) {
        const char* m = mark(cpu, t);
        cpu_col += str(m, dtype_name(t), " ");
        if (*m == '!') {
          ++missing;
          UNSCOPED_INFO(op->name << ": no CPU kernel for listed dtype " << t);
        }
        if (cuda) cuda_col += str(mark(cuda, t), dtype_name(t), " ");
      });
      if (!cuda) cuda_col = "-";
    }
    std::printf("%-13s %-6s %-32s %-32s %s\n", op->name.c_str(), kind.c_str(), cpu_col.c_str(), cuda_col.c_str(),
                op->signature.c_str());
  }
  std::printf(
      "%d ops. '!' marks a listed dtype without a kernel, '~' a 16-bit one run by the f32 kernel. view*: a view when "
      "strides allow, else a copy.\n",
      ops);
  if (!cuda_note.empty())
    std::printf("cuda: no device here (%s)%s\n", cuda_note.c_str(),
                cuda ? "; the column lists libamber_cuda.so's kernels" : "");
  CHECK(missing == 0);
}

TEST_CASE("docs/OPS.md lists every op with its exact signature", "[coverage][docs]") {
  std::ifstream f(AMBER_SOURCE_DIR "/docs/OPS.md");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  for (const OpSchema* op : all_ops()) {
    INFO("docs/OPS.md lacks `" << op->signature << "`");
    CHECK(doc.find("`" + op->signature + "`") != std::string::npos);
  }
}

// Hidden (run with `test_coverage "[.oplist]"`): prints the op list of docs/OPS.md from the
// table, so the doc is regenerated rather than edited by hand.
TEST_CASE("print the docs/OPS.md op list", "[.oplist]") {
  auto set_name = [](DTypeSet s) -> std::string {
    if (str(s) == str(dtypes::all)) return "all";
    if (str(s) == str(dtypes::numeric)) return "numeric";
    std::string out = str(s);
    for (auto& ch : out)
      if (ch == ',') ch = ' ';
    std::string squeezed;
    for (char ch : out)
      if (!(ch == ' ' && !squeezed.empty() && squeezed.back() == ' ')) squeezed += ch;
    return squeezed;
  };
  std::printf("| op | signature | dtypes | flags |\n|---|---|---|---|\n");
  for (const OpSchema* op : all_ops()) {
    std::string flags;
    if (op->is_view()) flags = "view";
    if (op->is_maybe_view()) flags = "maybe_view";
    if (op->flags & op_flags::pointwise) flags = "pointwise";
    if (op->flags & op_flags::factory) flags = "factory";
    if (op->is_control_flow()) flags = "control flow";
    std::printf("| %s | `%s` | %s | %s |\n", op->name.c_str(), op->signature.c_str(), set_name(op->dtypes).c_str(),
                flags.c_str());
  }
}
