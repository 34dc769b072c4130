// Control flow that survives tracing. amber::loop runs its body as ordinary C++ (eagerly, n
// times); under a trace the body is recorded once, as the subgraph of one `loop` node whose
// trip count is data (an input of the node), so the archive does not grow with the count and
// a service can run any count. The op table entry is `loop` (schema/ops_control.cpp); the
// interpreter and the loader run its body; the limits below bound what data can ask of them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "amber/core/tensor.h"

namespace amber {

// Control-flow nodes nest at most this deep (a body inside a body ... ): graph text, the
// archive reader and the verifier refuse deeper nesting.
inline constexpr int kMaxBodyDepth = 8;
// The default bound on the body runs of one call (all loops of the graph, nested ones
// included): a count read from data cannot make a call run for ever. The loader's is
// LoadOptions::max_loop_trips.
inline constexpr int64_t kDefaultMaxLoopTrips = int64_t(1) << 20;

// The body of a loop: the iteration index i (a 0-d i64 tensor, 0 to n-1, on the state's
// device) and the current state; returns the next state, as many tensors as the state, each of
// the same dtype and shape as the one it replaces (as lax.fori_loop).
using LoopBody = std::function<std::vector<Tensor>(const Tensor& i, const std::vector<Tensor>& state)>;

// Runs body n times on state and returns the final state (the initial one when n is 0).
// n is a 0-d integer tensor (traced: the count follows the data; on the host or the state's
// device) or a number (traced: a constant of the graph). Under a trace the body is run once
// with the trace recording (even when n is 0), and what it reads from outside (weights,
// tensors computed before the loop) becomes an input of the node; a count or state of the wrong
// kind, or a body whose result does not match the state, is an amber::Error naming the loop's
// line.
std::vector<Tensor> loop(const Tensor& n, const std::vector<Tensor>& state, const LoopBody& body, SrcLoc loc = {});
std::vector<Tensor> loop(int64_t n, const std::vector<Tensor>& state, const LoopBody& body, SrcLoc loc = {});
// The one-tensor form: body(i, x) returns the next x.
Tensor loop(const Tensor& n, const Tensor& state, const std::function<Tensor(const Tensor& i, const Tensor& x)>& body,
            SrcLoc loc = {});
Tensor loop(int64_t n, const Tensor& state, const std::function<Tensor(const Tensor& i, const Tensor& x)>& body,
            SrcLoc loc = {});

}  // namespace amber
