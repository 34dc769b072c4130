// libFuzzer target over ONNX import: any bytes to import_onnx_bytes with small limits (which
// also run the model once on zero inputs under the tracer) must give a traced module or an
// amber::Error; never a crash, undefined behaviour, a leak, an allocation past the limits or
// a run past the work limit (libFuzzer's -timeout).

#include <cstddef>
#include <cstdint>
#include <string>

#include "amber/core/error.h"
#include "amber/onnx/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  amber::OnnxImportOptions o;
  o.max_tensor_bytes = 4 << 20;  // each tensor read or computed
  o.max_nodes = 64;
  o.max_work = 2e8;       // seconds at most under the sanitizers
  o.max_loop_trips = 64;  // a mutated Loop would otherwise spin through cheap iterations up to the work limit
  o.optimize = (size % 2) == 0;
  try {
    const amber::TracedModule m = amber::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), o);
    (void)m.save_to_bytes();
  } catch (const amber::Error&) {
  }
  return 0;
}
