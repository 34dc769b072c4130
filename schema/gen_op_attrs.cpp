// Build tool: writes <amber/op_attrs.h> from the op table, the position of every attribute
// of every built-in op in amber_kernel_args::attrs (amber::op_attrs::conv2d::groups) and the
// index of each choice of a str{a,b} (amber::op_attrs::pad::mode_is::reflect), so kernels
// read attributes by name and a reordered signature or choice list changes them with it.
// Usage: amber_gen_op_attrs OUT.h (rewritten only when its text changes).

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "amber/schema/op_schema.h"

namespace {

// An op, attribute or choice name as a C++ identifier: "add.Scalar" -> add_Scalar,
// "nearest-exact" -> nearest_exact; keywords get "_".
std::string identifier(const std::string& name) {
  static const std::set<std::string> keywords = {
      "and", "bool", "char",   "default", "delete", "double",   "float", "for",      "if",   "int", "long",  "new",
      "not", "or",   "return", "short",   "signed", "template", "this",  "unsigned", "void", "xor", "union", "case"};
  std::string s = name;
  for (char& c : s)
    if (c == '.' || c == '-') c = '_';
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
       "// each attribute of each op in amber_kernel_args::attrs (signature order), and of each\n"
       "// choice of a str{a,b} attribute in its list (the attribute's amber_attr::i). Do not edit.\n"
       "#pragma once\n\nnamespace amber::op_attrs {\n";
  for (const amber::OpSchema* op : amber::all_ops()) {
    if (op->num_attrs() == 0) continue;
    h << "namespace " << identifier(op->name) << " {  // " << op->signature << "\n";
    for (int i = 0; i < op->num_attrs(); ++i) {
      const amber::ArgSpec& spec = op->attr_spec(i);
      h << "inline constexpr int " << identifier(spec.name) << " = " << i << ";\n";
      if (spec.choices.empty()) continue;
      h << "namespace " << identifier(spec.name) << "_is {  // amber_attr::i\n";
      for (size_t k = 0; k < spec.choices.size(); ++k)
        h << "inline constexpr int " << identifier(spec.choices[k]) << " = " << k << ";\n";
      h << "}  // namespace " << identifier(spec.name) << "_is\n";
    }
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
