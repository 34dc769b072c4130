// div's and div.Scalar's rounding_mode as an enum, for the CPU's and CUDA's kernels alike:
// None is true division; otherwise the attribute's choice (amber_attr::i), which both ops list
// in one order.
#pragma once

#include "amber/core/backend.h"
#include "amber/op_attrs.h"

namespace amber {

enum class DivMode : int { true_div, trunc, floor };

static_assert(op_attrs::div::rounding_mode_is::trunc == op_attrs::div_Scalar::rounding_mode_is::trunc &&
              op_attrs::div::rounding_mode_is::floor == op_attrs::div_Scalar::rounding_mode_is::floor);

// The rounding_mode attribute a kernel was given.
inline DivMode div_mode_of(const amber_attr& a) {
  if (a.kind == AMBER_ATTR_NONE) return DivMode::true_div;
  return a.i == op_attrs::div::rounding_mode_is::floor ? DivMode::floor : DivMode::trunc;
}

}  // namespace amber
