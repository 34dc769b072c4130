// Fused programs compiled at run time: a program's CUDA source (its instructions as straight-line
// calls of kernels/pointwise_math.h's formulas, around fused_rtc_kernel.cuh's frame) and NVRTC's
// machine code for it. NVRTC is opened on first use (dlopen); without it, or when it fails,
// fused.cu runs the program on its interpreting kernel. Host code only; private to
// libamber_cuda.so (and its tests).
#pragma once

#include <string>
#include <vector>

#include "amber/core/backend.h"

namespace amber::cuda::rtc {

enum class Storage { f32, bf16, f16 };

// The source of kernel `name` computing program p on `storage` operands, or "" (error set) when
// the program has an instruction the frame cannot take (no inputs, more than eight, an unknown
// opcode or operand). Its kernel's parameters: (long long n, Pointers<p.n_inputs>).
std::string program_source(const amber_fused_program& p, Storage storage, const std::string& name, std::string* error);

// NVRTC's cubin of `source` for compute capability major.minor (its includes are Amber's headers
// the library carries: nothing is read from disk). Empty, error set, when NVRTC is missing or
// the compilation fails.
std::vector<char> compile(const std::string& source, int major, int minor, std::string* error);

// Whether NVRTC could be opened (error set when not).
bool nvrtc_available(std::string* error);

}  // namespace amber::cuda::rtc
