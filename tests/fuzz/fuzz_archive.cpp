// libFuzzer target over the archive reader: any bytes must give a verified graph or an
// amber::Error, never a crash, a hang or undefined behaviour (built with ASan and UBSan by
// -DAMBER_FUZZ=ON; see tests/fuzz/README.md). Each input is read twice: from memory without
// checksums (so mutated weights reach the deeper checks), and from a file (a memfd, through
// the mapped path read_archive(path) and amber::load use) with them. A graph that reads is
// also exported to ONNX (`amber export-onnx` takes any archive), which must give a model or
// an amber::Error.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "amber/core/error.h"
#include "amber/onnx/export.h"
#include "amber/serialize/archive.h"

// checklist case: res.fuzz
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  amber::ArchiveReadOptions unverified;
  unverified.verify_checksums = false;
  try {
    amber::LoadedArchive a = amber::read_archive(bytes, nullptr, unverified, "<fuzz>");
    (void)amber::export_onnx_bytes(a.graph);
  } catch (const amber::Error&) {
  }
  static const int fd = memfd_create("fuzz_archive", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) __builtin_trap();
  try {
    (void)amber::read_archive("/proc/self/fd/" + std::to_string(fd));
  } catch (const amber::Error&) {
  }
  return 0;
}
