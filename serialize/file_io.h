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

// The system calls a save makes, replaceable so tests can make each one fail (EIO, ENOSPC,
// a failing rename, link or close) and check that the previous file survives byte for
// byte and no temporary file is left. Each has the POSIX signature and errno convention;
// the defaults are the real calls. `open_unnamed` opens an O_TMPFILE file in a folder.
struct FileOps {
  std::function<int(const char* dir)> open_unnamed;
  std::function<long(int fd, const void* data, size_t n)> write;
  std::function<int(int fd)> fsync;
  std::function<int(int fd, const char* target)> link_fd;  // name an unnamed file
  std::function<int(const char* from, const char* to)> rename;
  std::function<int(int fd)> close;
  static const FileOps& system();
};
// Replaces path atomically with what produce writes through its argument; throws
// amber::Error naming the path and cause when anything fails. The data is written to an
// unnamed file (O_TMPFILE; a named `.<name>.tmp-<pid>-*` file where unsupported) that is
// named only once complete, synced and closed. A process killed in the microseconds between
// naming and renaming leaves `.<name>.tmp-<pid>-N`; the next save of the same name removes
// it. Every failure up to the rename leaves the previous file as it was; only the folder's
// fsync comes after it (then the new file is in place and the error says so). `ops` (tests)
// replaces the system calls; null means FileOps::system().
void write_file_atomically(const std::string& path, const std::function<void(const WriteChunk&)>& produce,
                           const FileOps* ops = nullptr);

}  // namespace amber
