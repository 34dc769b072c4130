// A small zip writer and reader for stored (uncompressed) entries, written for archives:
// the writer places each entry's data at a chosen alignment (padding in the local header's
// extra field) and writes zip64 records when sizes or offsets need them; the reader checks
// everything before use (shared/RELIABILITY.md's zip cases) and reports entries with the
// file offset of their data, which libzip does not expose. Standard tools (unzip, Python's
// zipfile, libzip) read what the writer writes; tests cross-check that.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace amber {

class ZipWriter {
 public:
  using Sink = std::function<bool(const void* data, size_t n)>;
  // force_zip64 writes zip64 records for every entry (tests; otherwise only when needed).
  explicit ZipWriter(Sink sink, bool force_zip64 = false);
  // Appends a stored entry whose data starts at a multiple of `alignment` in the file.
  void add(const std::string& name, std::span<const uint8_t> data, size_t alignment = 1);
  // Writes the central directory; the writer is done.
  void finish();
  uint64_t bytes_written() const { return offset_; }

 private:
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size, local_offset;
    bool zip64;
  };
  void put(const void* p, size_t n);
  Sink sink_;
  bool force_zip64_;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
};

struct ZipEntry {
  std::string name;
  uint64_t data_offset;  // of the entry's first byte in the file
  uint64_t size;
  uint32_t crc32;
};

struct ZipLimits {
  static constexpr uint64_t kMaxEntries = 200'000;
  static constexpr uint64_t kMaxNameLength = 1024;
};

// Parses and validates the zip structure of bytes (a whole file); throws amber::Error
// "<source>: ..." naming the entry and the problem. Does not check data CRCs (see
// check_crc32).
std::vector<ZipEntry> read_zip(std::span<const uint8_t> bytes, const std::string& source);
// Throws when the entry's data does not match its CRC-32.
void check_crc32(std::span<const uint8_t> bytes, const ZipEntry& e, const std::string& source);

uint32_t crc32_of(std::span<const uint8_t> data);

}  // namespace amber
