// libFuzzer target over the archive reader: any bytes must give a verified graph or an
// amber::Error, never a crash, a hang or undefined behaviour (built with ASan and UBSan by
// -DAMBER_FUZZ=ON; see tests/fuzz/README.md). Each input is read twice: without checksums
// (so mutated weights reach the deeper checks) and with them. A graph that reads is also
// exported to ONNX (`amber export-onnx` takes any archive), which must give a model or an
// amber::Error.

#include <cstddef>
#include <cstdint>
#include <span>

#include "amber/core/error.h"
#include "amber/onnx/export.h"
#include "amber/serialize/archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  for (bool verify : {false, true}) {
    amber::ArchiveReadOptions options;
    options.verify_checksums = verify;
    try {
      amber::LoadedArchive a = amber::read_archive(bytes, nullptr, options, "<fuzz>");
      if (!verify) (void)amber::export_onnx_bytes(a.graph);
    } catch (const amber::Error&) {
    }
  }
  return 0;
}
