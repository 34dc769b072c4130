// What the CPU and CUDA kernels share about a call's C arguments: a failure reported through
// the args' error buffer (kernels never throw across the C ABI), and the state a kernel's
// setup made, which a kernel with a setup cannot run without.
#pragma once

#include <cstdarg>
#include <cstdio>

#include "amber/core/backend.h"

namespace amber::kernel_call {

// Writes a printf-style message to the args' error buffer; returns 1 for `return fail(...)`.
[[gnu::format(printf, 2, 3)]] inline int fail(const amber_kernel_args* a, const char* fmt, ...) {
  if (a->error && a->error_capacity) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(a->error, a->error_capacity, fmt, ap);
    va_end(ap);
  }
  return 1;
}

// The state the kernel's setup made (State may be const), or nullptr after a failure naming op:
// a caller that ran the kernel without its setup.
template <typename State>
State* setup_state(const amber_kernel_args* a, const char* op) {
  if (!a->state) fail(a, "%s: called without its setup", op);
  return static_cast<State*>(a->state);
}

}  // namespace amber::kernel_call
