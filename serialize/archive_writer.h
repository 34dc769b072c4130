// Writing the Amber archive (docs/FORMAT.md): authoring only, in the `amber` library; the
// runtime reads archives (archive.h) but never writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "amber/serialize/archive.h"

namespace amber {

struct FileOps;

struct SaveOptions {
  // Record the creation time (otherwise only when SOURCE_DATE_EPOCH is set, which then
  // gives the time): the same model always saves to the same bytes unless asked.
  bool record_creation_time = false;
  bool force_zip64 = false;  // zip64 records even when not needed (tests)
  // The system calls that write the file (file_io.h; tests inject faults); null: the real ones.
  const FileOps* file_ops = nullptr;
};

// Writes g (its constants must have data) and info's metadata as an archive, atomically
// (temporary file, fsync, rename, fsync of the folder; on failure the previous file is
// untouched). Throws amber::Error naming the path and the cause.
void save_archive(const std::string& path, const graph::Graph& g, const ArchiveInfo& info,
                  const SaveOptions& options = {});
// The same archive in memory.
std::vector<uint8_t> archive_bytes(const graph::Graph& g, const ArchiveInfo& info, const SaveOptions& options = {});

}  // namespace amber
