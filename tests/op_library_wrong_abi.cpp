// An op library built for another op-library ABI version (this one's plus one), as a library
// compiled against another Amber would be: load_op_library must refuse it, naming both.

#include "amber/schema/op_library.h"

namespace {
void register_nothing(amber::OpLibrary&) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const amber_op_library_info* amber_op_library_entry(void) {
  static const amber_op_library_info info{AMBER_OP_LIBRARY_ABI_VERSION + 1, AMBER_BACKEND_ABI_VERSION, "myops",
                                          &register_nothing};
  return &info;
}
