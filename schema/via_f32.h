// 16-bit floats on every op that computes in f32: where a backend (or an op library) has no
// kernel of its own for an op at f16 or bf16, the op runs as a kernel made of its f32 one:
// the 16-bit inputs widened to f32 in the call's scratch (immutable ones, weights, once at
// setup), the f32 kernel run, its 16-bit outputs rounded once from the f32 results. Built on
// the backend table alone (the backend's `to` kernels, allocate, streams), so every device has it.
#pragma once

#include "amber/core/backend.h"
#include "amber/core/device.h"
#include "amber/core/dtype.h"
#include "amber/schema/op_schema.h"

namespace amber {

// The kernel for op at dtype (f16 or bf16) on device's backend made of `f32`, that backend's
// (or op library's) f32 kernel of op; the entry lives as long as the process. Its workspace
// is the f32 kernel's plus room for the f32 copies of the 16-bit inputs and outputs.
const amber_kernel& kernel_via_f32(const OpSchema& op, Device device, DType dtype, const amber_kernel& f32);

}  // namespace amber
