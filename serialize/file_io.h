// File helpers shared by the serialisers: read-only memory mapping with a keep-alive
// handle, and atomic replacement of a file (write a temporary file in the same folder,
// fsync it, rename it over the target, fsync the folder; on any failure the previous file
// is untouched and the temporary file removed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace amber {

struct MappedFile {
  std::shared_ptr<const void> keep_alive;  // unmaps when the last holder goes
  std::span<const uint8_t> bytes;
};
// Maps path read-only; throws amber::Error naming the path and the system error.
MappedFile map_file(const std::string& path);

// Receives chunks of the new file's contents; returns false if writing failed.
using WriteChunk = std::function<bool(const void* data, size_t n)>;
// Replaces path atomically with what produce writes through its argument; throws
// amber::Error naming the path and cause when anything fails. The data is written to an
// unnamed file (O_TMPFILE; a named `.<name>.tmp-<pid>-*` file where unsupported) that is
// named only once complete and synced. A process killed in the microseconds between naming
// and renaming leaves `.<name>.tmp-<pid>-N`; the next save of the same name removes it.
void write_file_atomically(const std::string& path, const std::function<void(const WriteChunk&)>& produce);

}  // namespace amber
