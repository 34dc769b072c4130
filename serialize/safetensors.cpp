// safetensors reading (validated) and writing (see safetensors.h). The JSON header is parsed
// with nlohmann::json (Debian's nlohmann-json3-dev) under a depth limit, rejecting
// duplicate keys; then every entry is checked before any tensor is built.

#include "amber/serialize/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "amber/serialize/file_io.h"

namespace amber {
namespace {

using Json = nlohmann::ordered_json;

struct DtypeName {
  const char* name;
  DType dtype;
};
constexpr DtypeName kDtypes[] = {{"F32", DType::f32}, {"F64", DType::f64}, {"F16", DType::f16}, {"BF16", DType::bf16},
                                 {"I64", DType::i64}, {"I32", DType::i32}, {"I16", DType::i16}, {"I8", DType::i8},
                                 {"U8", DType::u8},   {"BOOL", DType::b8}};

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Json parse_header(const std::string& src, std::string_view text) {
  constexpr int kMaxDepth = 4;  // {"name": {"shape": [..]}} needs 3
  std::set<std::string> top_keys;
  auto cb = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxDepth) throw Error(str(src, ": safetensors header nests deeper than ", kMaxDepth, " levels"));
    if (event == Json::parse_event_t::key && depth == 1) {
      const std::string k = parsed.get<std::string>();
      AMBER_CHECK(top_keys.insert(k).second, src, ": safetensors header names tensor '", k, "' twice");
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), cb);
  } catch (const Json::exception& e) {
    throw Error(str(src, ": safetensors header is not valid JSON: ", e.what()));
  }
}

}  // namespace

std::string_view safetensors_dtype_name(DType t) {
  for (const auto& d : kDtypes)
    if (d.dtype == t) return d.name;
  return "?";
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  MappedFile m = map_file(path);
  SafetensorsFile f;
  f.source_ = path;
  f.keep_alive_ = m.keep_alive;
  f.bytes_ = m.bytes;
  f.parse();
  return f;
}

SafetensorsFile SafetensorsFile::from_buffer(std::span<const uint8_t> bytes, std::shared_ptr<const void> keep_alive,
                                             std::string name) {
  SafetensorsFile f;
  f.source_ = std::move(name);
  if (!keep_alive) {
    auto copy = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
    bytes = {copy->data(), copy->size()};
    keep_alive = std::shared_ptr<const void>(copy, copy->data());
  }
  f.keep_alive_ = std::move(keep_alive);
  f.bytes_ = bytes;
  f.parse();
  return f;
}

void SafetensorsFile::parse() {
  const std::string& src = source_;
  const uint64_t size = bytes_.size();
  AMBER_CHECK(size >= 8, src, ": not a safetensors file (", size, " bytes; the 8-byte header length is missing)");
  const uint64_t n = read_le64(bytes_.data());
  AMBER_CHECK(n <= kMaxHeaderBytes, src, ": safetensors header length ", n, " exceeds the limit of ", kMaxHeaderBytes,
              " bytes");
  AMBER_CHECK(n <= size - 8, src, ": safetensors header length ", n, " runs past the end of the file (", size,
              " bytes)");
  AMBER_CHECK(n >= 2, src, ": safetensors header of ", n, " bytes is too short to be a JSON object");
  const std::string_view text(reinterpret_cast<const char*>(bytes_.data() + 8), size_t(n));
  Json header = parse_header(src, text);
  AMBER_CHECK(header.is_object(), src, ": safetensors header is not a JSON object");
  data_ = bytes_.data() + 8 + n;
  const uint64_t data_size = size - 8 - n;
  AMBER_CHECK(header.size() <= kMaxTensors + 1, src, ": ", header.size(), " header entries exceed the limit of ",
              kMaxTensors);

  std::vector<const Entry*> by_offset;
  for (auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      AMBER_CHECK(value.is_object(), src, ": __metadata__ must be an object of strings");
      for (auto& [k, v] : value.items()) {
        AMBER_CHECK(v.is_string(), src, ": __metadata__ value for '", k, "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string where = str(src, ": tensor '", name, "'");
    AMBER_CHECK(value.is_object(), where, ": entry is not an object");
    for (auto& [k, v] : value.items())
      AMBER_CHECK(k == "dtype" || k == "shape" || k == "data_offsets", where, ": unknown field '", k, "'");
    AMBER_CHECK(value.contains("dtype") && value["dtype"].is_string(), where, ": missing or non-string dtype");
    AMBER_CHECK(value.contains("shape") && value["shape"].is_array(), where, ": missing shape");
    AMBER_CHECK(value.contains("data_offsets") && value["data_offsets"].is_array() && value["data_offsets"].size() == 2,
                where, ": data_offsets must be [begin, end]");
    Entry e;
    e.name = name;
    const std::string dt = value["dtype"].get<std::string>();
    bool known = false;
    for (const auto& d : kDtypes)
      if (dt == d.name) {
        e.dtype = d.dtype;
        known = true;
      }
    AMBER_CHECK(known, where, ": unsupported dtype '", dt,
                "' (supported: F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
    const Json& shape = value["shape"];
    AMBER_CHECK(shape.size() <= size_t(kMaxDims), where, ": rank ", shape.size(), " exceeds the maximum of ", kMaxDims);
    for (const Json& d : shape) {
      AMBER_CHECK(d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0), where,
                  ": shape entries must be non-negative integers, got ", d.dump());
      AMBER_CHECK(d.get<uint64_t>() <= uint64_t(INT64_MAX), where, ": dimension ", d.dump(), " is too large");
      e.shape.push_back(d.get<int64_t>());
    }
    const Json& offs = value["data_offsets"];
    for (const Json& o : offs)
      AMBER_CHECK(o.is_number_unsigned() || (o.is_number_integer() && o.get<int64_t>() >= 0), where,
                  ": data_offsets must be non-negative integers, got ", o.dump());
    e.begin = offs[0].get<uint64_t>();
    e.end = offs[1].get<uint64_t>();
    AMBER_CHECK(e.begin <= e.end, where, ": data_offsets [", e.begin, ", ", e.end, "] are reversed");
    AMBER_CHECK(e.end <= data_size, where, ": data_offsets [", e.begin, ", ", e.end, "] run past the data section of ",
                data_size, " bytes");
    int64_t numel;
    try {
      numel = checked_numel(e.shape);
    } catch (const Error& err) {
      throw Error(str(where, ": ", err.what()));
    }
    uint64_t expected;
    AMBER_CHECK(!__builtin_mul_overflow(uint64_t(numel), uint64_t(itemsize(e.dtype)), &expected), where,
                ": byte size of shape ", e.shape, " overflows");
    AMBER_CHECK(e.end - e.begin == expected, where, ": holds ", e.end - e.begin, " bytes but dtype ",
                dtype_name(e.dtype), " and shape ", e.shape, " need ", expected);
    order_.push_back(name);
    entries_.emplace(name, std::move(e));
  }
  // The data section must be covered exactly once, in order (no holes, no overlaps).
  for (auto& [n2, e] : entries_) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t pos = 0;
  for (const Entry* e : by_offset) {
    AMBER_CHECK(e->begin == pos, src, ": tensor '", e->name, "' starts at byte ", e->begin, " of the data section, ",
                e->begin < pos ? "overlapping the previous tensor" : "leaving a gap", " (expected ", pos, ")");
    pos = e->end;
  }
  AMBER_CHECK(pos == data_size, src, ": ", data_size - pos,
              " bytes at the end of the data section belong to no tensor");
}

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  AMBER_CHECK(it != entries_.end(), source_, ": no tensor named '", name, "'");
  return it->second;
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const Entry& e = entry(name);
  const uint8_t* p = data_ + e.begin;
  const size_t nbytes = size_t(e.end - e.begin);
  if (reinterpret_cast<uintptr_t>(p) % itemsize(e.dtype) == 0 && nbytes > 0) {
    Storage s = Storage::wrap(const_cast<uint8_t*>(p), nbytes, Device::cpu(), keep_alive_, /*read_only=*/true);
    return Tensor::make(std::move(s), e.shape, contiguous_strides(e.shape), 0, e.dtype);
  }
  return tensor_from_raw(p, e.dtype, e.shape);
}

std::vector<uint8_t> safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (auto& [name, t] : tensors) {
    AMBER_CHECK(t.defined(), "save_safetensors: tensor '", name, "' is undefined");
    AMBER_CHECK(name != "__metadata__" && !header.contains(name), "save_safetensors: duplicate or reserved name '",
                name, "'");
    Tensor h = t.to(Device::cpu(), SrcLoc::none()).contiguous(SrcLoc::none());
    Json entry = Json::object();
    entry["dtype"] = std::string(safetensors_dtype_name(h.dtype()));
    entry["shape"] = h.sizes().vec();
    entry["data_offsets"] = {offset, offset + h.nbytes()};
    header[name] = entry;
    offset += h.nbytes();
    host.push_back(std::move(h));
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::vector<uint8_t> out(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* p = out.data() + 8 + text.size();
  for (const Tensor& h : host) {
    if (h.nbytes()) std::memcpy(p, h.data(), h.nbytes());
    p += h.nbytes();
  }
  return out;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata, const FileOps* file_ops) {
  const std::vector<uint8_t> bytes = safetensors_bytes(tensors, metadata);
  write_file_atomically(
      path, [&](const WriteChunk& write) { write(bytes.data(), bytes.size()); }, file_ops);
}

}  // namespace amber
