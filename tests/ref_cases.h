// Reading the op cases of tests/gen_reference.py (ops.safetensors and its "cases" metadata)
// for the tests that replay them: a case's attributes converted by the op table's own
// argument kinds, and its inputs rebuilt in the layout the case asks for (transposed,
// strided, channels-last or expanded views of the stored tensor), on any device.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "amber/schema/dispatcher.h"
#include "amber/schema/op_schema.h"
#include "amber/serialize/safetensors.h"
#include "test_util.h"

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

// The inputs and attributes of one case, its inputs on `device` with the case's layouts (each
// laid-out input checked to be a non-contiguous view); a missing required attribute fails.
struct Case {
  std::vector<Tensor> inputs;  // an undefined tensor stands for an absent optional input
  std::vector<const Tensor*> ptrs;
  std::vector<Attr> attrs;
};

// mutable_inputs: the inputs are copies rather than views of the file's read-only mapping,
// so kernels that pack immutable weights at setup take their unpacked path, as on a device.
inline Case make_case(const OpSchema& op, const nlohmann::json& c, SafetensorsFile& file, Device device,
                      bool mutable_inputs = false) {
  const std::string name = c["name"];
  Case k;
  for (size_t i = 0; i < c["inputs"].size(); ++i) {
    const nlohmann::json& spec = c["inputs"][i];
    if (spec.contains("absent")) {
      k.inputs.emplace_back();
      continue;
    }
    Tensor t = file.tensor(name + ".input" + std::to_string(i)).to(device);
    if (mutable_inputs && device.is_cpu()) t = t.clone();
    k.inputs.push_back(rebuild_layout(t, spec["layout"]));
    if (!spec["layout"].is_null()) CHECK_FALSE(k.inputs.back().is_contiguous());
  }
  for (const Tensor& t : k.inputs) k.ptrs.push_back(t.defined() ? &t : nullptr);
  while (!op.has_tensor_list && int(k.ptrs.size()) < op.num_tensor_args) k.ptrs.push_back(nullptr);
  for (int i = 0; i < op.num_attrs(); ++i) {
    const ArgSpec& spec = op.attr_spec(i);
    if (c["attrs"].contains(spec.name))
      k.attrs.push_back(attr_from_json(op, spec, c["attrs"][spec.name]));
    else if (spec.default_value)
      k.attrs.push_back(*spec.default_value);
    else
      FAIL("case " << name << " lacks required attribute " << spec.name);
  }
  return k;
}

// An op's cases run, those that failed with an error, and the worst differences seen.
struct OpStats {
  int cases = 0, errors = 0;
  double max_abs = 0, max_rel = 0;
};

// Case c run on the CPU and on `device` (its inputs copied there, a factory op made there): every
// output on `device` and within atol + rtol * |CPU's| of the CPU's, the worst differences into st.
// The CPU's inputs are copies: a device's are mutable, and kernels with a packed-weight path for
// immutable inputs (linear, conv2d) round differently on it.
inline void check_against_cpu(const OpSchema& op, const nlohmann::json& c, SafetensorsFile& file, Device device,
                              double atol, double rtol, OpStats& st) {
  Case on_cpu = make_case(op, c, file, Device::cpu(), /*mutable_inputs=*/true);
  Case on_dev = make_case(op, c, file, device);
  const bool factory = on_cpu.inputs.empty();
  const std::vector<Tensor> want = dispatch(op, on_cpu.ptrs, on_cpu.attrs, SrcLoc::none());
  const std::vector<Tensor> got =
      dispatch(op, on_dev.ptrs, on_dev.attrs, SrcLoc::none(), factory ? device : Device::cpu());
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    CHECK(got[k].device() == device);
    const Diff d = compare(got[k].to(Device::cpu()), want[k], atol, rtol);
    INFO("output " << k << ": " << d.message);
    CHECK(d.ok);
    st.max_abs = std::max(st.max_abs, d.max_abs);
    st.max_rel = std::max(st.max_rel, d.max_rel);
  }
}

}  // namespace amber::test
