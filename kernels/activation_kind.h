// The `activation` attribute of fused_conv2d, fused_linear and the int8 ops as an enum, for the
// CPU's and CUDA's kernels alike: its value is the attribute's index among the op table's
// choices (amber_attr::i), the same list on every such op (the quantized ops' adds none last).
#pragma once

#include <cstdint>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/op_attrs.h"

namespace amber {

enum class Act : int32_t {
  clamp = op_attrs::quantized_conv2d::activation_is::clamp,
  silu = op_attrs::quantized_conv2d::activation_is::silu,
  hardswish = op_attrs::quantized_conv2d::activation_is::hardswish,
  none = op_attrs::quantized_conv2d::activation_is::none,
};

// Every op with an activation lists the choices in one order.
#define AMBER_SAME_ACTIVATIONS(op)                                                 \
  static_assert(op_attrs::op::activation_is::clamp == int(Act::clamp) &&           \
                    op_attrs::op::activation_is::silu == int(Act::silu) &&         \
                    op_attrs::op::activation_is::hardswish == int(Act::hardswish), \
                #op "'s activation choices are in another order than quantized_conv2d's")
AMBER_SAME_ACTIVATIONS(fused_conv2d);
AMBER_SAME_ACTIVATIONS(fused_linear);
AMBER_SAME_ACTIVATIONS(quantized_conv2d_u8);
AMBER_SAME_ACTIVATIONS(quantized_linear_u8);
AMBER_SAME_ACTIVATIONS(quantized_add);
#undef AMBER_SAME_ACTIVATIONS
static_assert(op_attrs::quantized_conv2d_u8::activation_is::none == int(Act::none) &&
              op_attrs::quantized_linear_u8::activation_is::none == int(Act::none) &&
              op_attrs::quantized_add::activation_is::none == int(Act::none));

// The activation attribute a kernel was given (inference has checked it is one of the choices).
inline Act act_of(const amber_attr& a) { return Act(a.i); }

// f(std::integral_constant<Act, act>{}): the instance of a kernel templated on its activation
// that act names (host code; each instance returns the same type).
template <typename F>
decltype(auto) with_act(Act act, F&& f) {
  switch (act) {
    case Act::clamp:
      return f(std::integral_constant<Act, Act::clamp>{});
    case Act::silu:
      return f(std::integral_constant<Act, Act::silu>{});
    case Act::hardswish:
      return f(std::integral_constant<Act, Act::hardswish>{});
    case Act::none:
      break;
  }
  return f(std::integral_constant<Act, Act::none>{});
}

}  // namespace amber
