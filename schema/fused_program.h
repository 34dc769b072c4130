// The program of a `fused` node (made by the fusion pass from a chain of f32 pointwise
// ops): a list of instructions over the node's inputs (i0, i1, ...), earlier results (t0,
// t1, ...) and f32 immediates; the last result is the output. Text form, as stored in the
// node's `program` attribute:  "mul(i0, i0); mul(t0, t0); add(t1, 0.5)". Kernels get it as C
// data (CFusedProgram), never as text; one generic kernel per device runs it (no compiler at
// load time). The instructions and their exact formulas are listed in docs/OPS.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "amber/core/backend.h"

namespace amber {

// Instruction codes are the C ABI's (core/backend.h), so a program converts to C data as is.
enum class FusedOp : uint8_t {
  add = AMBER_FUSED_ADD,
  sub = AMBER_FUSED_SUB,
  mul = AMBER_FUSED_MUL,
  div = AMBER_FUSED_DIV,
  pow = AMBER_FUSED_POW,
  neg = AMBER_FUSED_NEG,
  abs = AMBER_FUSED_ABS,
  exp = AMBER_FUSED_EXP,
  log = AMBER_FUSED_LOG,
  sqrt = AMBER_FUSED_SQRT,
  rsqrt = AMBER_FUSED_RSQRT,
  tanh = AMBER_FUSED_TANH,
  sigmoid = AMBER_FUSED_SIGMOID,
  relu = AMBER_FUSED_RELU,
  gelu = AMBER_FUSED_GELU,
  gelu_tanh = AMBER_FUSED_GELU_TANH,
  silu = AMBER_FUSED_SILU,
  reciprocal = AMBER_FUSED_RECIPROCAL,
  clamp_min = AMBER_FUSED_CLAMP_MIN,
  clamp_max = AMBER_FUSED_CLAMP_MAX,
  clamp = AMBER_FUSED_CLAMP,
};
static_assert(int(FusedOp::clamp) + 1 == AMBER_FUSED_NUM_OPCODES, "FusedOp and amber_fused_opcode disagree");

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

// A program as the C data kernels receive (core/backend.h), built once per node or eager call.
class CFusedProgram {
 public:
  CFusedProgram(const FusedProgram& p, int num_inputs);
  CFusedProgram(const CFusedProgram&) = delete;
  CFusedProgram& operator=(const CFusedProgram&) = delete;
  const amber_fused_program* get() const { return &program_; }

 private:
  std::vector<amber_fused_instr> instrs_;
  amber_fused_program program_{};
};

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
