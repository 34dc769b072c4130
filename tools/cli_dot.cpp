// `amber dot FILE`: the graph as Graphviz text (`amber dot m.amber | dot -Tsvg > m.svg`):
// inputs and outputs as ellipses, weights as notes, one box per node with its op, output
// types and source line; edges carry the value names; control-flow bodies are clusters.

#include <cstdio>
#include <map>
#include <sstream>

#include "amber/graph/graph.h"
#include "cli.h"

namespace amber::cli {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += (unsigned char)c < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

std::string type_text(const graph::ValueType& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

// The nodes and edges of g; ids of a body's values start with prefix. A control-flow node's
// bodies are clusters beside it (a dashed edge from the node to each), drawn the same way.
void emit(const graph::Graph& g, const std::string& prefix, int& counter) {
  std::map<const graph::Value*, std::string> id;  // graph node producing each value
  for (const graph::Value* v : g.inputs()) {
    id[v] = prefix + "in_" + v->name;
    std::printf("  %s [shape=ellipse, label=%s];\n", quote(id[v]).c_str(),
                quote(v->name + "\n" + type_text(v->type)).c_str());
  }
  for (const graph::Value* c : g.constants()) {
    id[c] = prefix + "const_" + c->name;
    std::printf("  %s [shape=note, fontsize=8, label=%s];\n", quote(id[c]).c_str(),
                quote(c->name + "\n" + type_text(c->type)).c_str());
  }
  for (const graph::Node* n : g.nodes()) {
    const std::string nid = "n" + std::to_string(counter++);
    std::string label = n->op->name;
    for (const graph::Value* out : n->outputs) {
      label += "\n%" + out->name + " : " + type_text(out->type);
      id[out] = nid;
    }
    if (!n->source.empty()) label += "\n" + n->source;
    if (!n->scope.empty()) label += "\n@" + n->scope;
    std::printf("  %s [shape=box, label=%s];\n", nid.c_str(), quote(label).c_str());
    for (const graph::Value* in : n->inputs)
      if (in)
        std::printf("  %s -> %s [label=%s];\n", quote(id.at(in)).c_str(), nid.c_str(), quote("%" + in->name).c_str());
    for (size_t k = 0; k < n->bodies.size(); ++k) {
      const std::string body = str(nid, "_b", k, "_");
      std::printf("  subgraph %s {\n  label=%s; style=dashed;\n", quote("cluster_" + body).c_str(),
                  quote(str(n->op->name, " body ", k)).c_str());
      const int first = counter;
      emit(*n->bodies[k], body, counter);
      std::printf("  }\n");
      if (counter > first) std::printf("  %s -> n%d [style=dashed, arrowhead=none];\n", nid.c_str(), first);
    }
  }
  for (const auto& [name, v] : g.outputs()) {
    std::printf("  %s [shape=ellipse, label=%s];\n", quote(prefix + "out_" + name).c_str(),
                quote(name + "\n" + type_text(v->type)).c_str());
    std::printf("  %s -> %s;\n", quote(id.at(v)).c_str(), quote(prefix + "out_" + name).c_str());
  }
}

}  // namespace

int cmd_dot(const std::vector<std::string>& argv) {
  Args a(argv, {}, {});
  Model m = load(a.file(), load_options(a));
  std::printf("digraph amber {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n");
  int counter = 0;
  emit(m.graph(), "", counter);
  std::printf("}\n");
  return kExitOk;
}

}  // namespace amber::cli
