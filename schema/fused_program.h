// The program of a `fused` node (made by the fusion pass from a chain of f32 pointwise
// ops): a list of instructions over the node's inputs (i0, i1, ...), earlier results (t0,
// t1, ...) and f32 immediates; the last result is the output. Text form, as stored in the
// node's `program` attribute:  "mul(i0, i0); mul(t0, t0); add(t1, 0.5)". One generic
// kernel per device runs it (no compiler at load time). The instructions and their exact
// formulas are listed in docs/OPS.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace amber {

enum class FusedOp : uint8_t {
  add,
  sub,
  mul,
  div,
  pow,  // binary
  neg,
  abs,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  sigmoid,
  relu,
  gelu,
  gelu_tanh,
  silu,
  reciprocal,  // unary
  clamp_min,
  clamp_max,  // (x, bound)
  clamp,      // (x, lo, hi)
};

struct FusedOperand {
  enum class Kind : uint8_t { input, temp, imm } kind = Kind::imm;
  int32_t index = 0;  // input or temp index
  float imm = 0;
};

struct FusedInstr {
  FusedOp op;
  int arity;
  FusedOperand a, b, c;
};

struct FusedProgram {
  std::vector<FusedInstr> instrs;
};

inline constexpr int kMaxFusedInstructions = 64;
inline constexpr int kMaxFusedInputs = 8;

// Parses and validates program text for a node with num_inputs inputs; throws
// amber::Error ("fused: ...") naming the instruction at fault.
FusedProgram parse_fused_program(std::string_view text, int num_inputs);
std::string format_fused_program(const FusedProgram& p);
// The instruction name ("mul") and operand count of op.
const char* fused_op_name(FusedOp op);
int fused_op_arity(FusedOp op);
// The FusedOp named name, or false.
bool fused_op_from_name(std::string_view name, FusedOp& out);

}  // namespace amber
