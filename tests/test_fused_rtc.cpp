// The fused programs compiled at run time (kernels/cuda/fused_rtc.h), without a GPU: the source
// written for every opcode of core/fused_ops.h (each operand kind, pow's constant exponent, every
// storage, one to eight inputs) compiles with NVRTC for sm_90, and bad programs are refused with
// a reason; a model's setup scope makes each kernel once. Right values: test_fused_rtc_emulated
// (on the CPU) and test_cuda on a GPU. Skips, saying so, where NVRTC cannot be opened.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "amber/core/fused_ops.h"
#include "amber/kernels/cuda/fused_rtc.h"
#include "amber/kernels/cuda/setup_scope.h"

namespace {

namespace rtc = amber::cuda::rtc;

amber_fused_operand input(int k) { return {AMBER_OPERAND_INPUT, k, 0.0f}; }
amber_fused_operand temp(int i) { return {AMBER_OPERAND_TEMP, i, 0.0f}; }
amber_fused_operand imm(float v) { return {AMBER_OPERAND_IMM, 0, v}; }
amber_fused_instr instr(int op, int arity, amber_fused_operand a, amber_fused_operand b = imm(0),
                        amber_fused_operand c = imm(0)) {
  return {op, arity, a, b, c};
}

struct Op {
  int code, arity;
  const char* name;
};
const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops = {
#define AMBER_TEST_OP(OPCODE, name, arity, kind) {AMBER_FUSED_##OPCODE, arity, #name},
      AMBER_FUSED_OPS(AMBER_TEST_OP)
#undef AMBER_TEST_OP
  };
  return ops;
}

bool have_nvrtc() {
  std::string why;
  if (rtc::nvrtc_available(&why)) return true;
  WARN("SKIPPED: NVRTC cannot be opened here (" << why << ")");
  return false;
}

}  // namespace

TEST_CASE("fused rtc: every opcode's program compiles with NVRTC", "[rtc]") {
  if (!have_nvrtc()) return;
  // One program holding every opcode: its operands an input, the previous result, an earlier
  // result and immediates by turns; then pow with a constant exponent and on a tensor.
  std::vector<amber_fused_instr> instrs;
  const auto& ops = all_ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const int n = int(instrs.size());
    const amber_fused_operand first = n == 0 ? input(0) : i % 3 == 0 ? input(1) : temp(n - 1);
    const amber_fused_operand second = i % 2 ? imm(0.5f + float(i)) : n > 1 ? temp(n / 2) : input(1);
    instrs.push_back(instr(ops[i].code, ops[i].arity, first, second, imm(-1.25f)));
  }
  const int n = int(instrs.size());
  instrs.push_back(instr(AMBER_FUSED_POW, 2, temp(n - 1), imm(2.0f)));
  instrs.push_back(instr(AMBER_FUSED_POW, 2, temp(n), input(1)));
  const amber_fused_program p{instrs.data(), int32_t(instrs.size()), 2};
  for (rtc::Storage s : {rtc::Storage::f32, rtc::Storage::bf16, rtc::Storage::f16}) {
    std::string error;
    const std::string source = rtc::program_source(p, s, "every_op", &error);
    INFO(source);
    REQUIRE(error.empty());
    CHECK(source.find("amber::pw::pow_scalar(t" + std::to_string(n - 1) + ", __uint_as_float(0x40000000u))") !=
          std::string::npos);
    const bool compiled = !rtc::compile(source, 9, 0, &error).empty();
    INFO(error);
    CHECK(compiled);
  }
}

TEST_CASE("fused rtc: one to eight inputs, a one-instruction program", "[rtc]") {
  if (!have_nvrtc()) return;
  for (int k = 1; k <= 8; ++k) {
    std::vector<amber_fused_instr> instrs;
    instrs.push_back(instr(AMBER_FUSED_RELU, 1, input(k - 1)));
    for (int j = 0; j + 1 < k; ++j) instrs.push_back(instr(AMBER_FUSED_ADD, 2, temp(int(instrs.size()) - 1), input(j)));
    const amber_fused_program p{instrs.data(), int32_t(instrs.size()), k};
    std::string error;
    const std::string source = rtc::program_source(p, k % 2 ? rtc::Storage::f32 : rtc::Storage::f16, "k", &error);
    REQUIRE(error.empty());
    INFO(k << " inputs: " << source);
    const bool compiled = !rtc::compile(source, 9, 0, &error).empty();
    INFO(error);
    CHECK(compiled);
  }
}

TEST_CASE("fused rtc: programs the compiled kernels cannot take are refused with a reason", "[rtc]") {
  std::string error;
  std::vector<amber_fused_instr> instrs{instr(AMBER_FUSED_RELU, 1, input(0))};
  amber_fused_program p{instrs.data(), 1, 0};  // no inputs
  CHECK(rtc::program_source(p, rtc::Storage::f32, "k", &error).empty());
  CHECK(error.find("0 inputs") != std::string::npos);
  p.n_inputs = 9;
  error.clear();
  CHECK(rtc::program_source(p, rtc::Storage::f32, "k", &error).empty());
  CHECK(!error.empty());
  p.n_inputs = 1;
  instrs[0].op = 9999;
  error.clear();
  CHECK(rtc::program_source(p, rtc::Storage::f32, "k", &error).empty());
  CHECK(error.find("unknown opcode 9999") != std::string::npos);
  instrs[0] = instr(AMBER_FUSED_ADD, 2, input(0), temp(0));  // reads its own result
  error.clear();
  CHECK(rtc::program_source(p, rtc::Storage::f32, "k", &error).empty());
  CHECK(error.find("reads nothing") != std::string::npos);
  instrs[0] = instr(AMBER_FUSED_ADD, 2, input(0), input(1));  // input 1 of 1
  error.clear();
  CHECK(rtc::program_source(p, rtc::Storage::f32, "k", &error).empty());
  CHECK(error.find("reads nothing") != std::string::npos);
}

TEST_CASE("fused rtc: NVRTC's errors come back with its log", "[rtc]") {
  if (!have_nvrtc()) return;
  std::string error;
  CHECK(rtc::compile("this is not CUDA", 9, 0, &error).empty());
  CHECK(error.find("sm_90") != std::string::npos);
  CHECK(error.find("error") != std::string::npos);
}

TEST_CASE("fused rtc: a model's setup scope makes each key once, for many threads at once", "[rtc][scope]") {
  // kernels/cuda/setup_scope.h, which keeps one compiled kernel per program source for all of a
  // model's fused steps: eight threads asking for one key at once get one value, made once.
  amber::cuda::SetupScope scope;
  std::atomic<int> made{0};
  const auto make = [&] {
    ++made;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the others arrive meanwhile
    return std::make_unique<std::string>("compiled");
  };
  std::vector<std::shared_ptr<std::string>> got(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = scope.find_or_make<std::string>("fused:a", make); });
  for (std::thread& t : threads) t.join();
  CHECK(made == 1);
  for (const auto& g : got) CHECK(g.get() == got[0].get());
  REQUIRE(got[0]);
  CHECK(*got[0] == "compiled");
  // Another key is made apart; a null result is kept (a refused program is not compiled again).
  CHECK(scope.find_or_make<std::string>("fused:b", make).get() != got[0].get());
  CHECK(made == 2);
  const auto refuse = [&] {
    ++made;
    return std::unique_ptr<std::string>();
  };
  CHECK(scope.find_or_make<std::string>("fused:c", refuse) == nullptr);
  CHECK(scope.find_or_make<std::string>("fused:c", make) == nullptr);
  CHECK(made == 3);
  // A make that throws keeps nothing: the next ask makes it again.
  const auto fail = [&]() -> std::unique_ptr<std::string> { throw std::runtime_error("no memory"); };
  CHECK_THROWS_WITH(scope.find_or_make<std::string>("fused:d", fail), "no memory");
  CHECK(scope.find_or_make<std::string>("fused:d", make) != nullptr);
  CHECK(made == 4);
  CHECK(scope.size() == 4);
}
