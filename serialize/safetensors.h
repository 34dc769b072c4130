// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header (name -> dtype, shape, data_offsets; optional
// "__metadata__" of string pairs) and the raw little-endian data. The reader validates every
// length, offset and size before use (overflow-checked, offsets contiguous and inside the
// file) and maps files read-only: tensors view the mapping when aligned, else are copied.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "amber/core/tensor.h"

namespace amber {

struct FileOps;

class SafetensorsFile {
 public:
  struct Entry {
    std::string name;
    DType dtype;
    DimVec shape;
    uint64_t begin = 0, end = 0;  // byte offsets into the data section
  };

  // Limits (named so errors can cite them).
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // as the reference implementation
  static constexpr size_t kMaxTensors = 1'000'000;

  // Maps path read-only and validates it; throws amber::Error naming the file and problem.
  static SafetensorsFile open(const std::string& path);
  // Validates a buffer; keep_alive (if any) is held by tensors viewing the buffer. Without
  // keep_alive the bytes are copied so the result owns its data.
  static SafetensorsFile from_buffer(std::span<const uint8_t> bytes, std::shared_ptr<const void> keep_alive = {},
                                     std::string name = "<buffer>");

  // Tensor names in file order.
  const std::vector<std::string>& names() const { return order_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  const Entry& entry(const std::string& name) const;
  // The tensor's values: a read-only view of the mapping when suitably aligned, else a copy.
  Tensor tensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source() const { return source_; }

 private:
  void parse();

  std::string source_;
  std::shared_ptr<const void> keep_alive_;
  const uint8_t* data_ = nullptr;  // start of the data section
  std::span<const uint8_t> bytes_;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (in the given order) and metadata as a safetensors file, atomically
// (temporary file in the same folder, fsync, rename). `file_ops` (tests) replaces the
// system calls (file_io.h).
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {}, const FileOps* file_ops = nullptr);
// The same bytes in memory.
std::vector<uint8_t> safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata = {});

// safetensors dtype names ("F32", "I64", "BOOL", ...).
std::string_view safetensors_dtype_name(DType t);

}  // namespace amber
