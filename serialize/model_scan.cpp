// model_scan.h: a table of archive.proto's messages (which fields hold messages, strings or
// lists, and the limit each count answers to), and a walk over the wire encoding that counts
// against it. The table must match schema/archive.proto; test_archive checks that it does.

#include "amber/serialize/model_scan.h"

#include <algorithm>
#include <array>

#include "amber/core/error.h"
#include "amber/core/shape.h"
#include "amber/graph/graph.h"
#include "amber/schema/control_flow.h"
#include "amber/serialize/archive.h"
#include "archive.pb.h"

namespace amber {
namespace {

namespace pb = amber::archive;

enum Msg : uint8_t {
  kModel,
  kGraph,
  kDim,
  kValueInfo,
  kConstant,
  kInts,
  kFloats,
  kAttribute,
  kNode,
  kOutput,
  kTensorRecord,
  kShape,
  kWarning,
  kKeyValue,
  kMetadata,
  kSymTerm,
  kSymPart,
  kSymbolSize,
  kNumMsgs
};

// The heap size of one parsed message of each type (the object, malloc's overhead, and its
// slot in the parent's repeated field with room to grow).
constexpr std::array<size_t, kNumMsgs> kMsgBytes = {
    sizeof(pb::Model),        sizeof(pb::Graph),   sizeof(pb::Dim),       sizeof(pb::ValueInfo), sizeof(pb::Constant),
    sizeof(pb::Ints),         sizeof(pb::Floats),  sizeof(pb::Attribute), sizeof(pb::Node),      sizeof(pb::Output),
    sizeof(pb::TensorRecord), sizeof(pb::Shape),   sizeof(pb::Warning),   sizeof(pb::KeyValue),  sizeof(pb::Metadata),
    sizeof(pb::SymTerm),      sizeof(pb::SymPart), sizeof(pb::SymbolSize)};
constexpr uint64_t kOverhead = 32;
constexpr uint64_t kStringBytes = sizeof(std::string) + kOverhead;  // plus the text past the inline buffer
constexpr uint64_t kElementBytes = 16;                              // a list element, the list growing by doubling

// Which count a repeated field's elements answer to.
enum Count : uint8_t {
  kNone,
  kRank,
  kList,
  kNodes,
  kTensors,
  kConstants,
  kInputs,
  kOutputs,
  kShapes,
  kWarnings,
  kExtras,
  kTerms,
  kSymbols,
  kNumCounts
};
struct CountSpec {
  const char* what;
  uint64_t limit;
  bool per_parent;  // counted in each message holding the field (ranks, lists) or in the whole file
};
constexpr std::array<CountSpec, kNumCounts> kCounts = {{
    {"", 0, false},
    {"dims", kMaxDims, true},
    {"list elements", ArchiveLimits::kMaxListLength, true},
    {"nodes", ArchiveLimits::kMaxNodes, false},
    {"weight tensors", ArchiveLimits::kMaxTensors, false},
    {"constants", ArchiveLimits::kMaxTensors, false},
    {"graph inputs", ArchiveLimits::kMaxGraphIO, false},
    {"graph outputs", ArchiveLimits::kMaxGraphIO, false},
    {"example input shapes", ArchiveLimits::kMaxGraphIO, false},
    {"trace warnings", ArchiveLimits::kMaxGraphIO, false},
    {"metadata entries", ArchiveLimits::kMaxGraphIO, false},
    {"terms", uint64_t(graph::kMaxSymTerms), true},
    {"symbols", 26, true},
}};

enum class Kind : uint8_t { scalar, fixed64, numbers, doubles, string, message };
struct Field {
  uint32_t number;
  Kind kind;
  Msg type;     // the message type (Kind::message)
  Count count;  // the limit on how many (repeated fields)
  const char* what;
};
struct MsgSpec {
  const char* name;
  std::initializer_list<Field> fields;
};

// schema/archive.proto, field by field. numbers/doubles: repeated int64 / double (packed or
// not); string: any string field (each capped at ArchiveLimits::kMaxStringBytes).
const std::array<MsgSpec, kNumMsgs>& schema() {
  using K = Kind;
  static const std::array<MsgSpec, kNumMsgs> s = {{
      {"Model",
       {{1, K::scalar, kModel, kNone, "format_major"},
        {2, K::scalar, kModel, kNone, "format_minor"},
        {3, K::string, kModel, kNone, "producer"},
        {4, K::message, kGraph, kNone, "graph"},
        {5, K::message, kTensorRecord, kTensors, "tensors"},
        {6, K::message, kMetadata, kNone, "metadata"}}},
      {"Graph",
       {{1, K::message, kValueInfo, kInputs, "inputs"},
        {2, K::message, kConstant, kConstants, "constants"},
        {3, K::message, kNode, kNodes, "nodes"},
        {4, K::message, kOutput, kOutputs, "outputs"},
        {5, K::scalar, kGraph, kNone, "traced_batch"},
        {6, K::message, kSymbolSize, kSymbols, "traced"}}},
      {"Dim",
       {{1, K::scalar, kDim, kNone, "coef"},
        {2, K::scalar, kDim, kNone, "value"},
        {3, K::message, kSymTerm, kTerms, "terms"}}},
      {"ValueInfo",
       {{1, K::string, kValueInfo, kNone, "a value name"},
        {2, K::scalar, kValueInfo, kNone, "dtype"},
        {3, K::message, kDim, kRank, "shape"}}},
      {"Constant", {{1, K::string, kConstant, kNone, "a constant name"}, {2, K::string, kConstant, kNone, "a source"}}},
      {"Ints", {{1, K::numbers, kInts, kList, "values"}}},
      {"Floats", {{1, K::doubles, kFloats, kList, "values"}}},
      {"Attribute",
       {{1, K::string, kAttribute, kNone, "an attribute name"},
        {2, K::scalar, kAttribute, kNone, "none"},
        {3, K::scalar, kAttribute, kNone, "i"},
        {4, K::fixed64, kAttribute, kNone, "f"},
        {5, K::scalar, kAttribute, kNone, "b"},
        {6, K::message, kInts, kNone, "ints"},
        {7, K::message, kFloats, kNone, "floats"},
        {8, K::string, kAttribute, kNone, "a string attribute"},
        {9, K::scalar, kAttribute, kNone, "dtype"},
        {10, K::numbers, kAttribute, kList, "coefs"},
        {11, K::message, kSymPart, kList, "syms"}}},
      {"Node",
       {{1, K::string, kNode, kNone, "an op name"},
        {2, K::scalar, kNode, kNone, "op_version"},
        {3, K::string, kNode, kNone, "a value name"},
        {4, K::message, kValueInfo, kNone, "outputs"},
        {5, K::message, kAttribute, kNone, "attrs"},
        {6, K::string, kNode, kNone, "a source"},
        {7, K::string, kNode, kNone, "a scope"},
        {8, K::message, kGraph, kNone, "bodies"}}},
      {"Output", {{1, K::string, kOutput, kNone, "an output name"}, {2, K::string, kOutput, kNone, "an output value"}}},
      {"TensorRecord",
       {{1, K::string, kTensorRecord, kNone, "a tensor name"},
        {2, K::scalar, kTensorRecord, kNone, "dtype"},
        {3, K::numbers, kTensorRecord, kRank, "shape"},
        {4, K::string, kTensorRecord, kNone, "a record name"},
        {5, K::scalar, kTensorRecord, kNone, "byte_length"},
        {6, K::fixed64, kTensorRecord, kNone, "xxh3"}}},
      {"Shape", {{1, K::numbers, kShape, kRank, "dims"}}},
      {"Warning",
       {{1, K::string, kWarning, kNone, "a warning"},
        {2, K::string, kWarning, kNone, "a warning"},
        {3, K::string, kWarning, kNone, "a warning"}}},
      {"KeyValue", {{1, K::string, kKeyValue, kNone, "a key"}, {2, K::string, kKeyValue, kNone, "a value"}}},
      {"Metadata",
       {{1, K::message, kShape, kShapes, "example_input_shapes"},
        {2, K::message, kWarning, kWarnings, "trace_warnings"},
        {3, K::scalar, kMetadata, kNone, "creation_time"},
        {4, K::message, kKeyValue, kExtras, "extra"}}},
      {"SymTerm", {{1, K::scalar, kSymTerm, kNone, "symbols"}, {2, K::scalar, kSymTerm, kNone, "coef"}}},
      {"SymPart", {{1, K::message, kSymTerm, kTerms, "terms"}}},
      {"SymbolSize", {{1, K::string, kSymbolSize, kNone, "a symbol"}, {2, K::scalar, kSymbolSize, kNone, "size"}}},
  }};
  return s;
}

class Scanner {
 public:
  Scanner(std::span<const uint8_t> bytes, uint64_t max_parse_bytes, const std::string& src)
      : base_(bytes.data()), size_(bytes.size()), max_(max_parse_bytes), src_(src) {}

  ModelScan run(std::span<const uint8_t> bytes) {
    charge(kMsgBytes[kModel] + kOverhead);
    ++out_.messages;
    message(kModel, bytes.data(), bytes.data() + bytes.size());
    return out_;
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    throw Error(str(src_, ": ", args...));
  }
  [[noreturn]] void malformed(const uint8_t* at, const char* why) const {
    fail("model.pb is not a valid protobuf message (byte ", at - base_, ": ", why, ")");
  }

  void charge(uint64_t bytes) {
    out_.parse_bytes += bytes;
    if (out_.parse_bytes > max_)
      fail("model.pb (", size_, " bytes) would take more than ", max_,
           " bytes of memory to parse (the smaller of ArchiveReadOptions::max_model_memory and ",
           ArchiveLimits::kParseBytesPerModelByte, " bytes per byte of model.pb; found before parsing, at ",
           out_.messages, " messages)");
  }

  uint64_t varint(const uint8_t*& p, const uint8_t* end) const {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p == end) malformed(p, "truncated varint");
      const uint8_t b = *p++;
      if (shift == 63 && b > 1) malformed(p - 1, "varint over 64 bits");
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    malformed(p, "varint over 10 bytes");
  }

  void count(Count c, uint64_t n, uint64_t& local, const MsgSpec& parent, const Field& f) {
    if (c == kNone) return;
    const CountSpec& s = kCounts[c];
    uint64_t& total = s.per_parent ? local : totals_[c];
    total += n;
    if (total <= s.limit) return;
    if (c == kRank)
      fail("model.pb: a ", parent.name, "'s ", f.what, " has rank ", total, " or more (the maximum is ", kMaxDims, ")");
    if (c == kTerms || c == kSymbols)
      fail("model.pb: a ", parent.name, " has ", total, " ", s.what, " or more (the maximum is ", s.limit, ")");
    if (c == kList)
      fail("model.pb: a ", parent.name, "'s ", f.what, " list has ", total, " elements or more, over the limit of ",
           s.limit);
    fail("model.pb: ", total, " ", s.what, " exceed the limit of ", s.limit, " (found before parsing)");
  }

  void message(Msg type, const uint8_t* p, const uint8_t* end) {
    const MsgSpec& spec = schema()[type];
    std::array<uint64_t, kNumCounts> local{};  // per-parent counts of this message
    bool unknown_seen = false;                 // its unknown fields share one string
    while (p < end) {
      const uint8_t* field_start = p;
      const uint64_t tag = varint(p, end);
      const uint64_t number = tag >> 3;
      const unsigned wire = unsigned(tag & 7);
      if (number == 0 || number > (uint64_t(1) << 29) - 1) malformed(field_start, "field number out of range");
      const Field* f = nullptr;
      for (const Field& x : spec.fields)
        if (x.number == number) f = &x;
      const uint8_t* payload = p;
      uint64_t len = 0;
      switch (wire) {
        case 0:
          varint(p, end);
          break;
        case 1:
          if (end - p < 8) malformed(p, "truncated fixed64");
          p += 8;
          break;
        case 5:
          if (end - p < 4) malformed(p, "truncated fixed32");
          p += 4;
          break;
        case 2:
          len = varint(p, end);
          if (len > uint64_t(end - p)) malformed(field_start, "a length past the end of its message");
          payload = p;
          p += len;
          break;
        case 3:
        case 4:
          malformed(field_start, "a group (wire type 3/4), which archives never hold");
        default:
          malformed(field_start, "an invalid wire type");
      }
      // A known field whose wire type does not match is kept as an unknown field, as
      // protobuf does; so is a field this reader does not know (a newer minor version).
      const bool matches = f && ((f->kind == Kind::scalar && wire == 0) || (f->kind == Kind::fixed64 && wire == 1) ||
                                 (f->kind == Kind::numbers && (wire == 0 || wire == 2)) ||
                                 (f->kind == Kind::doubles && (wire == 1 || wire == 2)) ||
                                 ((f->kind == Kind::string || f->kind == Kind::message) && wire == 2));
      if (!matches) {
        charge(uint64_t(p - field_start) + (unknown_seen ? 0 : kStringBytes));
        unknown_seen = true;
        continue;
      }
      switch (f->kind) {
        case Kind::scalar:
        case Kind::fixed64:
          break;
        case Kind::numbers:
        case Kind::doubles: {
          uint64_t n = 1;
          if (wire == 2) {
            if (f->kind == Kind::doubles) {
              if (len % 8) malformed(field_start, "a packed double list whose length is not a multiple of 8");
              n = len / 8;
            } else {
              n = 0;
              for (const uint8_t* q = payload; q < p; ++q) n += !(*q & 0x80);
              if (len && (p[-1] & 0x80)) malformed(p - 1, "a packed list ending inside a varint");
            }
          }
          count(f->count, n, local[f->count], spec, *f);
          charge(n * kElementBytes);
          break;
        }
        case Kind::string:
          if (len > ArchiveLimits::kMaxStringBytes)
            fail("model.pb: ", f->what, " is ", len, " bytes long, over the limit of ", ArchiveLimits::kMaxStringBytes);
          charge(kStringBytes + (len > 15 ? len + 1 + kOverhead : 0));
          break;
        case Kind::message:
          if (f->type == kGraph && ++graph_depth_ > kMaxBodyDepth + 1)
            fail("model.pb: control-flow bodies nest more than ", kMaxBodyDepth, " deep");
          count(f->count, 1, local[f->count], spec, *f);
          ++out_.messages;
          charge(kMsgBytes[f->type] + kOverhead);
          message(f->type, payload, p);
          if (f->type == kGraph) --graph_depth_;
          break;
      }
    }
  }

  const uint8_t* base_;
  uint64_t size_;
  uint64_t max_;
  const std::string& src_;
  std::array<uint64_t, kNumCounts> totals_{};
  int graph_depth_ = 0;  // Graph messages open (the model's, then bodies)
  ModelScan out_;
};

}  // namespace

std::string model_scan_schema() {
  static constexpr const char* kKinds[] = {"scalar", "fixed64", "numbers", "doubles", "string", "message"};
  std::string out;
  for (const MsgSpec& m : schema())
    for (const Field& f : m.fields)
      out += str(m.name, " ", f.number, " ", kKinds[int(f.kind)],
                 f.kind == Kind::message ? std::string(" ") + schema()[f.type].name : std::string(), "\n");
  return out;
}

ModelScan scan_model_pb(std::span<const uint8_t> bytes, uint64_t max_parse_bytes, const std::string& src) {
  return Scanner(bytes, max_parse_bytes, src).run(bytes);
}

}  // namespace amber
