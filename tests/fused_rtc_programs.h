// The fused programs test_fused_rtc_emulated runs: fused_rtc_gen writes each one's compiled-kernel
// source (kernels/cuda/fused_rtc.h) at build time, and the test evaluates the same programs
// directly to check what those kernels compute on the CPU.
#pragma once

#include <string>
#include <vector>

#include "amber/core/backend.h"

namespace amber::test {

struct RtcProgram {
  std::string name;
  int inputs;
  std::vector<amber_fused_instr> instrs;
  amber_fused_program program() const { return {instrs.data(), int32_t(instrs.size()), inputs}; }
};

inline amber_fused_operand rtc_input(int k) { return {AMBER_OPERAND_INPUT, k, 0.0f}; }
inline amber_fused_operand rtc_temp(int i) { return {AMBER_OPERAND_TEMP, i, 0.0f}; }
inline amber_fused_operand rtc_imm(float v) { return {AMBER_OPERAND_IMM, 0, v}; }

inline std::vector<RtcProgram> rtc_programs() {
  const amber_fused_operand none = rtc_imm(0);
  auto in = [](int op, int arity, amber_fused_operand a, amber_fused_operand b, amber_fused_operand c) {
    return amber_fused_instr{op, arity, a, b, c};
  };
  const float inf = __builtin_inff();
  return {
      // relu(2x + 1) * x - 2x: an input read twice, a result read again three instructions later.
      {"relu_affine",
       1,
       {in(AMBER_FUSED_MUL, 2, rtc_input(0), rtc_imm(2), none), in(AMBER_FUSED_ADD, 2, rtc_temp(0), rtc_imm(1), none),
        in(AMBER_FUSED_RELU, 1, rtc_temp(1), none, none), in(AMBER_FUSED_MUL, 2, rtc_temp(2), rtc_input(0), none),
        in(AMBER_FUSED_SUB, 2, rtc_temp(3), rtc_temp(0), none)}},
      // clamp((x y + x) / (y y + 1), -0.5, 0.75): three operands, immediates in the third.
      {"clamp_ratio",
       2,
       {in(AMBER_FUSED_MUL, 2, rtc_input(0), rtc_input(1), none),
        in(AMBER_FUSED_ADD, 2, rtc_temp(0), rtc_input(0), none),
        in(AMBER_FUSED_MUL, 2, rtc_input(1), rtc_input(1), none), in(AMBER_FUSED_ADD, 2, rtc_temp(2), rtc_imm(1), none),
        in(AMBER_FUSED_DIV, 2, rtc_temp(1), rtc_temp(3), none),
        in(AMBER_FUSED_CLAMP, 3, rtc_temp(4), rtc_imm(-0.5f), rtc_imm(0.75f))}},
      // pow with constant exponents (ATen's shortcuts: x x x, rounded twice, where powf rounds
      // once) and with a tensor one; an infinite immediate; leaky_relu's slope an operand.
      {"powers",
       2,
       {in(AMBER_FUSED_POW, 2, rtc_input(0), rtc_imm(3), none), in(AMBER_FUSED_ABS, 1, rtc_input(1), none, none),
        in(AMBER_FUSED_POW, 2, rtc_input(1), rtc_imm(0.5f), none),
        in(AMBER_FUSED_POW, 2, rtc_temp(1), rtc_input(0), none), in(AMBER_FUSED_ADD, 2, rtc_temp(0), rtc_temp(2), none),
        in(AMBER_FUSED_SUB, 2, rtc_temp(4), rtc_temp(3), none),
        in(AMBER_FUSED_CLAMP_MIN, 2, rtc_temp(5), rtc_imm(-inf), none),
        in(AMBER_FUSED_LEAKY_RELU, 2, rtc_temp(6), rtc_imm(0.125f), none)}},
      // Five inputs (four elements a thread in f32): gelu of their sum, times sigmoid of the last.
      {"five",
       5,
       {in(AMBER_FUSED_ADD, 2, rtc_input(0), rtc_input(1), none),
        in(AMBER_FUSED_ADD, 2, rtc_temp(0), rtc_input(2), none),
        in(AMBER_FUSED_ADD, 2, rtc_temp(1), rtc_input(3), none), in(AMBER_FUSED_GELU, 1, rtc_temp(2), none, none),
        in(AMBER_FUSED_SIGMOID, 1, rtc_input(4), none, none), in(AMBER_FUSED_MUL, 2, rtc_temp(3), rtc_temp(4), none)}},
  };
}

}  // namespace amber::test
