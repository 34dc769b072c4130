// The pre-scan of model.pb: walks its protobuf wire encoding along the archive schema's
// shape (schema/archive.proto) without building anything, enforcing ArchiveLimits' counts,
// ranks, list lengths and string lengths, and a bound on the memory that parsing the message
// would take, before protobuf parses it: a small model.pb of many tiny messages cannot make
// the reader allocate far more than the file.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace amber {

struct ModelScan {
  uint64_t messages = 0;     // protobuf messages the parse will create
  uint64_t parse_bytes = 0;  // an upper estimate of the heap memory the parse takes
};

// Throws amber::Error "<src>: model.pb ..." naming the first limit exceeded, or the first
// malformed field; `max_parse_bytes` bounds ModelScan::parse_bytes.
ModelScan scan_model_pb(std::span<const uint8_t> bytes, uint64_t max_parse_bytes, const std::string& src);

// The scanner's picture of schema/archive.proto, a line per field: "Node 4 message ValueInfo",
// "Node 3 string", "Ints 1 numbers" (repeated integers), "Floats 1 doubles", "Dim 1 scalar",
// "Attribute 4 fixed64" (a double). Tests compare it with the .proto file.
std::string model_scan_schema();

}  // namespace amber
