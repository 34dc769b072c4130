// Reading the op cases of tests/gen_reference.py (ops.safetensors and its "cases" metadata)
// for the tests that replay them: a case's attributes converted by the op table's own
// argument kinds, and its inputs rebuilt in the layout the case asks for (transposed,
// strided, channels-last or expanded views of the stored tensor).
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "amber/schema/op_schema.h"
#include "amber/serialize/safetensors.h"

namespace amber::test {

inline Attr attr_from_json(const OpSchema& op, const ArgSpec& spec, const nlohmann::json& v) {
  if (v.is_null()) return Attr::none();
  switch (spec.kind) {
    case ArgKind::int_:
      return Attr(v.get<int64_t>());
    case ArgKind::float_:
      return Attr(v.get<double>());
    case ArgKind::bool_:
      return Attr(v.get<bool>());
    case ArgKind::scalar:
      if (v.is_boolean()) return Attr(v.get<bool>());
      if (v.is_number_integer()) return Attr(v.get<int64_t>());
      return Attr(v.get<double>());
    case ArgKind::ints:
      return Attr(v.get<std::vector<int64_t>>());
    case ArgKind::floats:
      return Attr(v.get<std::vector<double>>());
    case ArgKind::string:
      return Attr(v.get<std::string>());
    case ArgKind::dtype: {
      auto t = dtype_from_name(v.get<std::string>());
      REQUIRE(t.has_value());
      return Attr(*t);
    }
    default:
      FAIL("op " << op.name << ": attribute " << spec.name << " has a tensor kind");
  }
  return Attr::none();
}

inline Tensor rebuild_layout(const Tensor& stored, const nlohmann::json& layout) {
  if (layout.is_null()) return stored;
  const std::string kind = layout[0].get<std::string>();
  if (kind == "t") return stored.transpose(layout[1].get<int64_t>(), layout[2].get<int64_t>());
  if (kind == "s2") {
    const int64_t d = layout[1].get<int64_t>();
    return stored.slice(d, 0, stored.size(d), 2);
  }
  if (kind == "cl") return stored.permute({0, 3, 1, 2});
  if (kind == "exp") {
    DimVec sizes = stored.sizes();
    sizes[int(layout[1].get<int64_t>())] = layout[2].get<int64_t>();
    return stored.expand(sizes);
  }
  FAIL("unknown layout " << layout.dump());
  return stored;
}

}  // namespace amber::test
