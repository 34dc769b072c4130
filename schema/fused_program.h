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

// Instruction codes are the C ABI's (core/backend.h), so a program converts to C data as is;
// both come from the one list, core/fused_ops.h.
#define AMBER_FUSED_ENUMERATOR(OPCODE, name, arity, kind) name = AMBER_FUSED_##OPCODE,
enum class FusedOp : uint8_t { AMBER_FUSED_OPS(AMBER_FUSED_ENUMERATOR) };
#undef AMBER_FUSED_ENUMERATOR

// What the list says of an instruction. kind: whether an op of the same name exists and
// what it takes (the fusion pass translates such ops one to one; with floating_attrs, the
// op's Scalar attributes become the instruction's further operands).
enum class FusedOpKind : uint8_t { none, numeric, floating, floating_cheap, floating_attrs, binary };
struct FusedOpInfo {
  FusedOp op;
  const char* name;
  int arity;
  FusedOpKind kind;
};
#define AMBER_FUSED_INFO(OPCODE, name, arity, kind) FusedOpInfo{FusedOp::name, #name, arity, FusedOpKind::kind},
inline constexpr FusedOpInfo kFusedOps[] = {AMBER_FUSED_OPS(AMBER_FUSED_INFO)};
#undef AMBER_FUSED_INFO
static_assert(sizeof(kFusedOps) / sizeof(kFusedOps[0]) == AMBER_FUSED_NUM_OPCODES);

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
