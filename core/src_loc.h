// SrcLoc: the C++ source line of an eager call, captured by a defaulted last argument
// (`SrcLoc loc = {}`) so the tracer can name the user's line for every recorded node.
// __builtin_FILE/__builtin_LINE are used because std::source_location does not build with
// Debian's clang 14 and libstdc++ 12.
#pragma once

#include <ostream>

namespace amber {

struct SrcLoc {
  const char* file;
  int line;
  SrcLoc(const char* f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
  static SrcLoc none() { return SrcLoc(nullptr, 0); }
  bool known() const { return file != nullptr && line > 0; }
};

// Prints "file.cpp:12" with the directory part removed, or "?" when unknown.
std::ostream& operator<<(std::ostream& os, const SrcLoc& loc);

}  // namespace amber
