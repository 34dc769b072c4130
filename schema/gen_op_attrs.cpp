// Build tool: writes <amber/op_attrs.h> from the op table, the position of every attribute
// of every built-in op in amber_kernel_args::attrs (amber::op_attrs::conv2d::groups), so
// kernels read attributes by name and a reordered signature changes the kernels with it.
// Usage: amber_gen_op_attrs OUT.h (rewritten only when its text changes).

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "amber/schema/op_schema.h"

namespace {

// An op or attribute name as a C++ identifier: "add.Scalar" -> add_Scalar; keywords get "_".
std::string identifier(const std::string& name) {
  static const std::set<std::string> keywords = {
      "and", "bool", "char",   "default", "delete", "double",   "float", "for",      "if",   "int", "long",  "new",
      "not", "or",   "return", "short",   "signed", "template", "this",  "unsigned", "void", "xor", "union", "case"};
  std::string s = name;
  for (char& c : s)
    if (c == '.') c = '_';
  return keywords.count(s) ? s + "_" : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: amber_gen_op_attrs OUT.h\n";
    return 2;
  }
  std::ostringstream h;
  h << "// Generated at build time by schema/gen_op_attrs.cpp from the op table: the position of\n"
       "// each attribute of each op in amber_kernel_args::attrs (signature order). Do not edit.\n"
       "#pragma once\n\nnamespace amber::op_attrs {\n";
  for (const amber::OpSchema* op : amber::all_ops()) {
    if (op->num_attrs() == 0) continue;
    h << "namespace " << identifier(op->name) << " {  // " << op->signature << "\n";
    for (int i = 0; i < op->num_attrs(); ++i)
      h << "inline constexpr int " << identifier(op->attr_spec(i).name) << " = " << i << ";\n";
    h << "}  // namespace " << identifier(op->name) << "\n";
  }
  h << "}  // namespace amber::op_attrs\n";
  std::ifstream old(argv[1]);
  std::stringstream existing;
  existing << old.rdbuf();
  if (existing.str() == h.str()) return 0;
  std::ofstream out(argv[1]);
  out << h.str();
  return out.good() ? 0 : 1;
}
