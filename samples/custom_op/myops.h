// The eager functions of the sample op library (myops.cpp) for model code: each calls its op
// by name through the dispatcher, so it runs eagerly and is traced like a built-in op. The
// library must be loaded first (amber::load_op_library).
#pragma once

#include <amber/amber.h>

namespace myops {

// x * sigmoid(beta * g), x and g of one shape (f32 or f64).
inline amber::Tensor swish_gate(const amber::Tensor& x, const amber::Tensor& g, double beta = 1.0,
                                amber::SrcLoc loc = {}) {
  return amber::call_op("myops::swish_gate", {x, g}, {{"beta", beta}}, loc)[0];
}

// scale * tanh(x / scale): a soft clip to (-scale, scale).
inline amber::Tensor soft_clip(const amber::Tensor& x, double scale, amber::SrcLoc loc = {}) {
  return amber::call_op("myops::soft_clip", {x}, {{"scale", scale}}, loc)[0];
}

}  // namespace myops
