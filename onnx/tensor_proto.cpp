// ONNX TensorProto and Amber tensors, both ways (tensor_proto.h). External data: the location must be a
// relative path that stays inside the model's folder after symlinks are resolved (the class
// of CVE-2024-27318), and offset + length must lie inside the file.

#include "amber/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "amber/core/error.h"
#include "amber/core/shape.h"

namespace amber::onnx_in {

namespace fs = std::filesystem;
using onnx::TensorProto;

std::string onnx_type_name(int32_t t) {
  if (TensorProto::DataType_IsValid(t)) return TensorProto::DataType_Name(TensorProto::DataType(t));
  return str("unknown data type ", t);
}

// Amber's dtypes and their ONNX data types, one pair each (every Amber dtype has one).
constexpr std::pair<DType, TensorProto::DataType> kDTypes[] = {
    {DType::f32, TensorProto::FLOAT},     {DType::f64, TensorProto::DOUBLE}, {DType::f16, TensorProto::FLOAT16},
    {DType::bf16, TensorProto::BFLOAT16}, {DType::i64, TensorProto::INT64},  {DType::i32, TensorProto::INT32},
    {DType::i16, TensorProto::INT16},     {DType::i8, TensorProto::INT8},    {DType::u8, TensorProto::UINT8},
    {DType::b8, TensorProto::BOOL}};
static_assert(std::size(kDTypes) == kNumDTypes);

int32_t dtype_to_onnx(DType t) {
  for (const auto& [amber, onnx_type] : kDTypes)
    if (amber == t) return onnx_type;
  throw Error(str("ONNX export: dtype ", int(t), " has no ONNX data type"));
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* p) {
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.sizes()) p->add_dims(d);
  const Tensor c = t.contiguous();  // Amber's dtypes are little-endian in memory, as raw_data is
  p->set_raw_data(static_cast<const char*>(c.data()), size_t(c.numel()) * itemsize(c.dtype()));
}

DType dtype_from_onnx(int32_t t, const std::string& what) {
  for (const auto& [amber, onnx_type] : kDTypes)
    if (onnx_type == t) return amber;
  throw Error(str(what, ": ONNX data type ", onnx_type_name(t),
                  " has no Amber dtype (Amber has float, double, float16, bfloat16, int64, int32, int16, int8, uint8 "
                  "and bool)"));
}

namespace {

// The bytes of an external-data record, read from inside base_dir only.
std::string read_external(const TensorProto& p, const std::string& base_dir, uint64_t nbytes, const std::string& what) {
  std::string location;
  uint64_t offset = 0;
  bool has_length = false;
  uint64_t length = 0;
  for (const auto& kv : p.external_data()) {
    auto number = [&](const std::string& v) {
      if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
        throw Error(str(what, ": external data ", kv.key(), " '", v, "' is not a non-negative integer"));
      return uint64_t(std::stoull(v));
    };
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = number(kv.value());
    else if (kv.key() == "length")
      length = number(kv.value()), has_length = true;
  }
  if (base_dir.empty())
    throw Error(str(what, ": external data ('", location, "') needs the model's folder (import from a path)"));
  if (location.empty()) throw Error(str(what, ": external data without a location"));
  const fs::path rel(location);
  if (rel.is_absolute() || location.find('\0') != std::string::npos)
    throw Error(str(what, ": external data location '", location, "' must be relative to the model's folder"));
  std::error_code ec;
  const fs::path dir = fs::canonical(base_dir, ec);
  if (ec) throw Error(str(what, ": cannot resolve the model's folder '", base_dir, "': ", ec.message()));
  const fs::path file = fs::weakly_canonical(dir / rel, ec);
  const std::string d = dir.string() + "/", f = file.string();
  if (ec || f.compare(0, d.size(), d) != 0)
    throw Error(str(what, ": external data location '", location, "' leaves the model's folder ", dir.string()));
  if (has_length && length != nbytes)
    throw Error(str(what, ": external data length ", length, " is not the ", nbytes, " bytes its dims and type need"));
  std::ifstream in(f, std::ios::binary);
  if (!in) throw Error(str(what, ": cannot open external data file '", location, "'"));
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  if (offset > size || nbytes > size - offset)
    throw Error(
        str(what, ": external data '", location, "' holds ", size, " bytes; ", nbytes, " asked at offset ", offset));
  std::string bytes(nbytes, '\0');
  in.seekg(std::streamoff(offset));
  in.read(bytes.data(), std::streamsize(nbytes));
  if (!in) throw Error(str(what, ": reading external data '", location, "' failed"));
  return bytes;
}

template <typename Field>
void check_count(const Field& f, int64_t numel, const char* field, const std::string& what) {
  if (int64_t(f.size()) != numel)
    throw Error(str(what, ": ", field, " holds ", f.size(), " values, its dims need ", numel));
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& p, const std::string& base_dir, uint64_t max_bytes,
                         const std::string& what) {
  const DType dtype = dtype_from_onnx(p.data_type(), what);
  if (p.dims_size() > kMaxDims)
    throw Error(str(what, ": ", p.dims_size(), " dims; Amber tensors have at most ", kMaxDims));
  DimVec sizes;
  int64_t numel = 1;
  for (int64_t d : p.dims()) {
    if (d < 0) throw Error(str(what, ": negative dim ", d));
    numel = checked_mul(numel, d, "ONNX tensor size");
    sizes.push_back(d);
  }
  const uint64_t nbytes = uint64_t(checked_mul(numel, int64_t(itemsize(dtype)), "ONNX tensor size"));
  if (nbytes > max_bytes)
    throw Error(str(what, ": ", nbytes, " bytes of tensor data; the limit is ", max_bytes,
                    " (OnnxImportOptions::max_tensor_bytes)"));
  if (p.has_segment()) throw Error(str(what, ": segmented tensors are not supported"));
  Tensor t = empty(sizes, dtype);
  char* out = static_cast<char*>(t.mutable_data());
  if (p.data_location() == TensorProto::EXTERNAL) {
    const std::string bytes = read_external(p, base_dir, nbytes, what);
    if (nbytes) std::memcpy(out, bytes.data(), nbytes);
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != nbytes)
      throw Error(str(what, ": raw_data holds ", p.raw_data().size(), " bytes, its dims and type need ", nbytes));
    if (nbytes) std::memcpy(out, p.raw_data().data(), nbytes);
    if (dtype == DType::b8)
      for (int64_t i = 0; i < numel; ++i) out[i] = out[i] != 0;
    return t;
  }
  switch (p.data_type()) {
    case TensorProto::FLOAT:
      check_count(p.float_data(), numel, "float_data", what);
      if (numel) std::memcpy(out, p.float_data().data(), nbytes);
      break;
    case TensorProto::DOUBLE:
      check_count(p.double_data(), numel, "double_data", what);
      if (numel) std::memcpy(out, p.double_data().data(), nbytes);
      break;
    case TensorProto::INT64:
      check_count(p.int64_data(), numel, "int64_data", what);
      if (numel) std::memcpy(out, p.int64_data().data(), nbytes);
      break;
    default: {  // int32_data holds int32, int16, int8, uint8, bool and the bits of float16 / bfloat16
      check_count(p.int32_data(), numel, "int32_data", what);
      const size_t w = itemsize(dtype);
      for (int64_t i = 0; i < numel; ++i) {
        const int32_t v = p.int32_data(int(i));
        if (dtype == DType::b8) {
          out[i] = v != 0;
        } else if (w == 4) {
          std::memcpy(out + i * 4, &v, 4);
        } else if (w == 2) {
          const int16_t h = int16_t(v);
          std::memcpy(out + i * 2, &h, 2);
        } else {
          out[i] = char(v);
        }
      }
    }
  }
  return t;
}

}  // namespace amber::onnx_in
