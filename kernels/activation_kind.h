// The `activation` attribute of fused_conv2d, fused_linear and the int8 ops (schema/infer_util.h
// checks its values) as an enum, for the CPU's and CUDA's kernels alike: one reading of the names.
#pragma once

#include <cstdint>
#include <string_view>

namespace amber {

enum class Act : int32_t { none, clamp, silu, hardswish };

// The attribute's value, which the op table's inference has checked ("none" only where the op
// allows it).
inline Act act_of(std::string_view name) {
  return name == "clamp" ? Act::clamp : name == "silu" ? Act::silu : name == "hardswish" ? Act::hardswish : Act::none;
}

}  // namespace amber
