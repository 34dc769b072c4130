// Control flow that survives tracing: amber::loop, amber::while_loop and amber::cond run as
// ordinary C++ (eagerly); under a trace each records its bodies once, as the subgraphs of one
// node whose counts and predicates are data (inputs of the node), so the archive does not grow
// with a count and a service can run any. The op table entries are in schema/ops_control.cpp;
// the interpreter and the loader run the bodies; the limits below bound what data can ask.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "amber/core/tensor.h"

namespace amber {

// Control-flow nodes nest at most this deep (a body inside a body ...): the tracer, graph
// text, the archive reader and the verifier refuse deeper nesting.
inline constexpr int kMaxBodyDepth = 8;
// The default bound on the loop iterations of one call (every loop and while_loop of the
// graph, nested ones included): a count or a condition from data cannot make a call run for
// ever. The loader's is LoadOptions::max_loop_trips.
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

// Runs body on state while cond(state) (a 0-d bool tensor) is true, and returns the final
// state (as jax.lax.while_loop and torch's while_loop). body returns the next state, of the
// state's dtypes and shapes. Under a trace cond and body are each recorded once, on the initial
// state (body runs even when cond is false at once; its result is then dropped); what they read
// from outside becomes operands of the node. A loaded model counts the iterations against
// LoadOptions::max_loop_trips: a condition that never turns false fails the call, naming the node.
using WhileCond = std::function<Tensor(const std::vector<Tensor>& state)>;
using StateFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& state)>;
std::vector<Tensor> while_loop(const WhileCond& cond, const StateFn& body, const std::vector<Tensor>& state,
                               SrcLoc loc = {});

// then_fn(operands) when pred (a 0-d bool tensor) is true, else else_fn(operands) (as
// torch.cond and jax.lax.cond). The branches may return any tensors, but the same number of
// the same dtypes and shapes as each other. Under a trace both branches run once and are
// recorded (a disagreement between them is an error naming the line); the node takes the
// predicate as data.
std::vector<Tensor> cond(const Tensor& pred, const StateFn& then_fn, const StateFn& else_fn,
                         const std::vector<Tensor>& operands, SrcLoc loc = {});
Tensor cond(const Tensor& pred, const std::function<Tensor(const Tensor& x)>& then_fn,
            const std::function<Tensor(const Tensor& x)>& else_fn, const Tensor& operand, SrcLoc loc = {});

}  // namespace amber
