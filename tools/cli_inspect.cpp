// `amber inspect FILE [--graph]`: what an archive holds: inputs and outputs with their
// (symbolic) shapes, the op histogram (control-flow bodies included), weights, memory per
// call, metadata and the warnings recorded when it was traced; --graph prints the graph text.

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "amber/graph/graph.h"
#include "cli.h"

namespace amber::cli {

int cmd_inspect(const std::vector<std::string>& argv) {
  Args a(argv, {"graph"}, {});
  LoadOptions o = load_options(a);
  Model m = load(a.file(), o);
  if (a.flag("graph")) {
    std::fputs(m.graph_text().c_str(), stdout);
    return kExitOk;
  }
  const ArchiveInfo& info = m.metadata();
  std::printf("%s: Amber archive, format %u.%u, written by %s\n", a.file().c_str(), info.format_major,
              info.format_minor, info.producer.c_str());
  if (info.creation_time) {
    const std::time_t t = std::time_t(info.creation_time);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    std::printf("created: %s\n", buf);
  }
  const bool dynamic = m.graph().is_dynamic();
  const graph::SymValues& traced = m.traced_sizes();
  // "batch: dynamic (N), traced at N=1"; other symbols: "sizes: dynamic (N, T), traced at N=1, T=128".
  std::printf(
      "%s: %s\n", traced.bound & ~graph::symbol_bit('N') ? "sizes" : "batch",
      dynamic ? str("dynamic (", graph::symbol_names(traced.bound), "), traced at ", traced).c_str() : "static");
  auto print_io = [](const char* title, const std::vector<IOInfo>& list) {
    std::printf("%s:\n", title);
    for (const IOInfo& io : list)
      std::printf("  %-16s %s%s\n", io.name.c_str(), std::string(dtype_name(io.dtype)).c_str(), io.shape.c_str());
  };
  print_io("inputs", m.inputs());
  print_io("outputs", m.outputs());
  if (!info.example_input_shapes.empty()) {
    std::printf("example input shapes:");
    for (const DimVec& s : info.example_input_shapes) std::printf(" %s", str(s).c_str());
    std::printf("\n");
  }
  // The histogram counts the nodes of control-flow bodies too (once each, however often they run).
  std::map<std::string, int> ops;
  size_t in_bodies = 0;
  auto count_ops = [&](auto& self, const graph::Graph& g, bool body) -> void {
    for (const graph::Node* n : g.nodes()) {
      ++ops[n->op->name];
      in_bodies += body;
      for (const auto& b : n->bodies) self(self, *b, true);
    }
  };
  count_ops(count_ops, m.graph(), false);
  std::vector<std::pair<std::string, int>> hist(ops.begin(), ops.end());
  std::stable_sort(hist.begin(), hist.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  std::printf("nodes: %zu%s\n", m.graph().num_nodes(),
              in_bodies ? str(" (and ", in_bodies, " in control-flow bodies)").c_str() : "");
  for (const auto& [op, count] : hist) std::printf("  %-28s %d\n", op.c_str(), count);
  std::printf("weights: %llu tensors, %s (%llu mapped from the file without a copy)\n",
              static_cast<unsigned long long>(info.weight_count), format_bytes(double(info.weight_bytes)).c_str(),
              static_cast<unsigned long long>(info.weights_mapped));
  std::printf("intermediate memory per call: %s%s\n", format_bytes(double(m.workspace_bytes())).c_str(),
              dynamic ? str(" at ", traced).c_str() : "");
  for (const auto& [k, v] : info.extra) std::printf("metadata: %s = %s\n", k.c_str(), v.c_str());
  if (info.warnings.empty()) {
    std::printf("trace warnings: none\n");
  } else {
    std::printf("trace warnings: %zu\n", info.warnings.size());
    for (const ArchiveWarning& w : info.warnings)
      std::printf("  [%s] %s: %s\n", w.kind.c_str(), w.source.empty() ? "?" : w.source.c_str(), w.message.c_str());
  }
  return kExitOk;
}

}  // namespace amber::cli
