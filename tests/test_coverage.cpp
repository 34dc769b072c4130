// Prints the op x device coverage table straight from the op table and the backends'
// kernel lookup, and fails if an op lists a dtype its CPU kernels do not implement (no
// stubs). The CUDA column reports whatever libamber_cuda.so provides when it loads.

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
  }
  std::printf("%-13s %-6s %-32s %-32s %s\n", "op", "kind", "cpu", "cuda", "signature");
  int missing = 0, ops = 0;
  for (const OpSchema* op : all_ops()) {
    ++ops;
    std::string kind = op->is_view() ? "view" : op->is_maybe_view() ? "view*" : "kernel";
    std::string cpu_col, cuda_col;
    if (!op->needs_kernel()) {
      cpu_col = cuda_col = "(metadata only)";
    } else if (op->is_maybe_view()) {
      cpu_col = cuda_col = "(view, else clone kernel)";
    } else {
      op->dtypes.for_each([&](DType t) {
        const bool has = cpu->lookup_kernel(op->name.c_str(), op->version, int32_t(t)) != nullptr;
        cpu_col += str(has ? "" : "!", dtype_name(t), " ");
        if (!has) {
          ++missing;
          UNSCOPED_INFO(op->name << ": no CPU kernel for listed dtype " << t);
        }
        if (cuda)
          cuda_col +=
              str(cuda->lookup_kernel(op->name.c_str(), op->version, int32_t(t)) ? "" : "!", dtype_name(t), " ");
      });
      if (!cuda) cuda_col = "-";
    }
    std::printf("%-13s %-6s %-32s %-32s %s\n", op->name.c_str(), kind.c_str(), cpu_col.c_str(), cuda_col.c_str(),
                op->signature.c_str());
  }
  std::printf("%d ops. '!' marks a listed dtype without a kernel. view*: a view when strides allow, else a copy.\n",
              ops);
  if (!cuda) std::printf("cuda: not available here (%s)\n", cuda_note.c_str());
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
