// Fused-program text parsing and formatting (fused_program.h).

#include "amber/schema/fused_program.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>

#include "amber/core/error.h"
#include "amber/schema/attr.h"

namespace amber {

const char* fused_op_name(FusedOp op) { return size_t(op) < std::size(kFusedOps) ? kFusedOps[size_t(op)].name : "?"; }

int fused_op_arity(FusedOp op) { return size_t(op) < std::size(kFusedOps) ? kFusedOps[size_t(op)].arity : 0; }

bool fused_op_from_name(std::string_view name, FusedOp& out) {
  for (const FusedOpInfo& o : kFusedOps)
    if (name == o.name) {
      out = o.op;
      return true;
    }
  return false;
}

FusedProgram parse_fused_program(std::string_view s, int num_inputs) {
  FusedProgram p;
  size_t pos = 0;
  auto ws = [&] {
    while (pos < s.size() && s[pos] == ' ') ++pos;
  };
  auto fail = [&](const std::string& why) -> void {
    throw Error(str("fused: instruction ", p.instrs.size(), " of program \"", s, "\": ", why));
  };
  AMBER_CHECK(num_inputs >= 1 && num_inputs <= kMaxFusedInputs, "fused: ", num_inputs, " inputs (at most ",
              kMaxFusedInputs, " are supported)");
  while (true) {
    ws();
    const size_t start = pos;
    while (pos < s.size() && (std::isalnum(uint8_t(s[pos])) || s[pos] == '_')) ++pos;
    FusedInstr in{};
    if (!fused_op_from_name(s.substr(start, pos - start), in.op))
      fail("unknown instruction '" + std::string(s.substr(start, pos - start)) + "'");
    in.arity = fused_op_arity(in.op);
    ws();
    if (pos >= s.size() || s[pos] != '(') fail("expected '('");
    ++pos;
    FusedOperand* ops[3] = {&in.a, &in.b, &in.c};
    for (int k = 0; k < in.arity; ++k) {
      ws();
      if (k > 0) {
        if (pos >= s.size() || s[pos] != ',') fail("expected ','");
        ++pos;
        ws();
      }
      FusedOperand& o = *ops[k];
      if (pos < s.size() && (s[pos] == 'i' || s[pos] == 't') && pos + 1 < s.size() &&
          std::isdigit(uint8_t(s[pos + 1]))) {
        o.kind = s[pos] == 'i' ? FusedOperand::Kind::input : FusedOperand::Kind::temp;
        ++pos;
        const size_t ns = pos;
        while (pos < s.size() && std::isdigit(uint8_t(s[pos]))) ++pos;
        std::from_chars(s.data() + ns, s.data() + pos, o.index);
        if (o.kind == FusedOperand::Kind::input && o.index >= num_inputs)
          fail(str("input i", o.index, " does not exist (", num_inputs, " inputs)"));
        if (o.kind == FusedOperand::Kind::temp && o.index >= int(p.instrs.size()))
          fail(str("t", o.index, " is used before it is computed"));
      } else {
        const size_t ns = pos;
        while (pos < s.size() && s[pos] != ',' && s[pos] != ')' && s[pos] != ' ') ++pos;
        const std::string tok(s.substr(ns, pos - ns));
        double v;
        if (tok == "inf")
          v = INFINITY;
        else if (tok == "-inf")
          v = -INFINITY;
        else if (tok == "nan")
          v = NAN;
        else {
          auto [e, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
          if (ec != std::errc() || e != tok.data() + tok.size() || tok.empty()) fail("bad operand '" + tok + "'");
        }
        o.kind = FusedOperand::Kind::imm;
        o.imm = float(v);
      }
    }
    ws();
    if (pos >= s.size() || s[pos] != ')') fail("expected ')'");
    ++pos;
    if (in.a.kind == FusedOperand::Kind::imm && (in.arity < 2 || in.b.kind == FusedOperand::Kind::imm) &&
        (in.arity < 3 || in.c.kind == FusedOperand::Kind::imm))
      fail("an instruction needs at least one tensor operand");
    p.instrs.push_back(in);
    if (int(p.instrs.size()) > kMaxFusedInstructions) fail(str("more than ", kMaxFusedInstructions, " instructions"));
    ws();
    if (pos >= s.size()) break;
    if (s[pos] != ';') fail("expected ';'");
    ++pos;
  }
  return p;
}

std::string format_fused_program(const FusedProgram& p) {
  std::string out;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const FusedInstr& in = p.instrs[i];
    if (i) out += "; ";
    out += fused_op_name(in.op);
    out += '(';
    const FusedOperand* ops[3] = {&in.a, &in.b, &in.c};
    for (int k = 0; k < in.arity; ++k) {
      if (k) out += ", ";
      const FusedOperand& o = *ops[k];
      if (o.kind == FusedOperand::Kind::input)
        out += "i" + std::to_string(o.index);
      else if (o.kind == FusedOperand::Kind::temp)
        out += "t" + std::to_string(o.index);
      else
        out += format_double(double(o.imm));
    }
    out += ')';
  }
  return out;
}

CFusedProgram::CFusedProgram(const FusedProgram& p, int num_inputs) {
  auto operand = [](const FusedOperand& o) {
    amber_fused_operand c{};
    c.kind = o.kind == FusedOperand::Kind::input  ? AMBER_OPERAND_INPUT
             : o.kind == FusedOperand::Kind::temp ? AMBER_OPERAND_TEMP
                                                  : AMBER_OPERAND_IMM;
    c.index = o.index;
    c.imm = o.imm;
    return c;
  };
  instrs_.reserve(p.instrs.size());
  for (const FusedInstr& in : p.instrs)
    instrs_.push_back({int32_t(in.op), int32_t(in.arity), operand(in.a), operand(in.b), operand(in.c)});
  program_.instrs = instrs_.data();
  program_.n_instrs = int32_t(instrs_.size());
  program_.n_inputs = num_inputs;
}

}  // namespace amber
