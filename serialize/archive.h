// The Amber archive: one zip file (stored entries) holding a format version record, a
// byte-order record, model.pb (the graph, the weight table, metadata; schema/archive.proto),
// a human-readable graph.txt, and one raw little-endian record per weight tensor starting
// on a 64-byte boundary of the file. docs/FORMAT.md is the specification.
//
// The reader validates everything before use (zip structure, record bounds, protobuf
// limits, dtypes and shapes, ops against the op table, the whole graph), verifies each
// weight record's XXH3-64 checksum unless asked not to, and gives CPU weights that view the
// file's read-only mapping when aligned (copies otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "amber/graph/graph.h"

namespace amber {

inline constexpr uint32_t kArchiveFormatMajor = 1;
// The newest minor version this build reads and writes. An archive is written as 1.0 unless
// it needs 1.1 (control-flow bodies), 1.2 (sizes in symbols other than the batch N, or
// products of symbols), 1.3 (int8 quantized ops: quantized_conv2d, quantized_linear), 1.4
// (int8 ops with uint8 outputs: quantized_conv2d.u8, quantized_linear.u8), 1.5 (the
// uint8 residual addition quantized_add), 1.6 (add_layer_norm, a residual connection and
// its layer norm), 1.7 (attention_merge_heads, attention writing its heads merged) or 1.8
// (fused_linear, a linear layer and its activation), so archives without them stay readable by
// older readers.
inline constexpr uint32_t kArchiveFormatMinor = 8;
inline constexpr size_t kArchiveRecordAlignment = 64;

// Limits the reader enforces (each with an error naming it).
struct ArchiveLimits {
  static constexpr uint64_t kMaxModelBytes = 512ull << 20;  // model.pb
  static constexpr uint64_t kMaxNodes = 1'000'000;
  static constexpr uint64_t kMaxTensors = 100'000;
  static constexpr uint64_t kMaxGraphIO = 10'000;        // inputs, outputs
  static constexpr uint64_t kMaxStringBytes = 64 << 10;  // names, sources, string attributes
  static constexpr uint64_t kMaxListLength = 1 << 20;    // int / float list attributes
  // Parsing model.pb may take at most this many bytes of memory per byte of model.pb (plus
  // kParseBytesFloor), found by a pre-scan of its encoding before anything is allocated
  // (serialize/model_scan.h); real archives take 8 to 16.
  static constexpr uint64_t kParseBytesPerModelByte = 32;
  static constexpr uint64_t kParseBytesFloor = 16 << 20;
};

struct ArchiveWarning {
  std::string kind, source, message;
};

struct ArchiveInfo {
  uint32_t format_major = 0, format_minor = 0;
  std::string producer;
  std::vector<DimVec> example_input_shapes;
  std::vector<ArchiveWarning> warnings;
  int64_t creation_time = 0;  // seconds since 1970, 0 when not recorded
  std::vector<std::pair<std::string, std::string>> extra;
  uint64_t weight_count = 0, weight_bytes = 0;
  uint64_t weights_mapped = 0;  // how many weights view the file without a copy
};

struct ArchiveReadOptions {
  bool verify_checksums = true;  // XXH3-64 of every weight record
  int num_threads = 0;           // for verifying them; 0: parallel.h's default
  // The largest archive (file or buffer, weights included) the reader accepts.
  uint64_t max_archive_bytes = uint64_t(1) << 40;
  // The most memory parsing model.pb may take (besides the archive itself), checked before
  // parsing; see ArchiveLimits::kParseBytesPerModelByte for the bound relative to its size.
  uint64_t max_model_memory = uint64_t(2) << 30;
};

struct LoadedArchive {
  graph::Graph graph;  // verified; constants hold their weights
  ArchiveInfo info;
};

// Maps path read-only and reads it; throws amber::Error "<path>: ..." on any problem.
LoadedArchive read_archive(const std::string& path, const ArchiveReadOptions& options = {});
// Reads an archive in memory. With keep_alive, weights view the buffer (kept alive by
// them); without, the buffer is copied once.
LoadedArchive read_archive(std::span<const uint8_t> bytes, std::shared_ptr<const void> keep_alive,
                           const ArchiveReadOptions& options = {}, const std::string& name = "<buffer>");

}  // namespace amber
