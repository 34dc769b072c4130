// The compiled fused kernels (kernels/cuda/fused_rtc.h) on the CPU (cuda_emulation.h): the source
// fused_rtc_gen wrote at build time for each program of fused_rtc_programs.h, in f32, bf16 and
// f16, on whole and partial last chunks, equal exactly to the program evaluated directly with
// kernels/pointwise_math.h's formulas, with NaN, infinities and signed zeros among the inputs;
// nothing past the end is written. scripts/gpu_check.sh runs them on a GPU.

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_emulation.h"
// After the emulation's macros:
#include "amber/core/fused_ops.h"
#include "amber/kernels/cuda/fused_rtc_kernel.cuh"
#include "fused_rtc_programs.h"

namespace {

struct GeneratedKernel {
  const char* program;
  const char* storage;
  int bytes;
  void (*launch)(long long n, char* y, const char* const* x, unsigned blocks);
  int per_thread;
};

}  // namespace

#include "fused_rtc_generated.cuh"

namespace {

namespace pw = amber::pw;
using amber::test::RtcProgram;

template <int Arity, typename F>
float apply(const float* v, F f) {
  if constexpr (Arity == 1)
    return f(v[0]);
  else if constexpr (Arity == 2)
    return f(v[0], v[1]);
  else
    return f(v[0], v[1], v[2]);
}

// The program on one element's inputs, instruction by instruction (the interpreter's reading).
float evaluate(const RtcProgram& p, const float* x) {
  std::vector<float> t;
  for (const amber_fused_instr& in : p.instrs) {
    const amber_fused_operand* ops[3] = {&in.a, &in.b, &in.c};
    float v[3] = {0, 0, 0};
    for (int j = 0; j < in.arity; ++j)
      v[j] = ops[j]->kind == AMBER_OPERAND_INPUT  ? x[ops[j]->index]
             : ops[j]->kind == AMBER_OPERAND_TEMP ? t[size_t(ops[j]->index)]
                                                  : ops[j]->imm;
    float r = 0;
    if (in.op == AMBER_FUSED_POW && in.b.kind == AMBER_OPERAND_IMM) {
      r = pw::pow_scalar(v[0], v[1]);
    } else {
      switch (in.op) {
#define AMBER_TEST_CASE(OPCODE, name, arity, kind)                     \
  case AMBER_FUSED_##OPCODE:                                           \
    r = apply<arity>(v, [](auto... a) { return pw::op::name(a...); }); \
    break;
        AMBER_FUSED_OPS(AMBER_TEST_CASE)
#undef AMBER_TEST_CASE
      }
    }
    t.push_back(r);
  }
  return t.back();
}

// Storage bits of a float (f32; or bf16 / f16 rounded to nearest even), and back.
uint32_t narrow(float v, const std::string& storage) {
  if (storage == "f32") {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
  }
  return storage == "bf16" ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
}
float widen(uint32_t b, const std::string& storage) {
  if (storage == "f32") {
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  }
  return storage == "bf16" ? __bfloat162float(__ushort_as_bfloat16(uint16_t(b)))
                           : __half2float(__ushort_as_half(uint16_t(b)));
}

// n elements of `bytes` each in 16-byte aligned memory (uint4), with room past the end.
struct Buffer {
  std::vector<uint4> words;
  int bytes;
  Buffer(int64_t n, int item) : words(size_t((n + 16) * item / 16 + 1)), bytes(item) {}
  char* data() { return reinterpret_cast<char*>(words.data()); }
  uint32_t get(int64_t i) {
    uint32_t b = 0;
    std::memcpy(&b, data() + i * bytes, size_t(bytes));
    return b;
  }
  void set(int64_t i, uint32_t b) { std::memcpy(data() + i * bytes, &b, size_t(bytes)); }
};

}  // namespace

TEST_CASE("fused rtc kernels (emulated): every generated program in every storage", "[rtc]") {
  const std::vector<RtcProgram> programs = amber::test::rtc_programs();
  REQUIRE(kGenerated.size() == programs.size() * 3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  const float specials[] = {__builtin_nanf(""), __builtin_inff(), -__builtin_inff(), -0.0f, 0.0f, 1.0f};
  for (const GeneratedKernel& g : kGenerated) {
    const RtcProgram* p = nullptr;
    for (const RtcProgram& q : programs)
      if (q.name == g.program) p = &q;
    REQUIRE(p);
    const int64_t chunk = 256 * int64_t(g.per_thread);
    for (int64_t n : {int64_t(1), int64_t(g.per_thread - 1), int64_t(g.per_thread + 1), chunk + 3, 2 * chunk}) {
      INFO(g.program << " in " << g.storage << ", n = " << n);
      std::vector<Buffer> inputs;
      std::vector<const char*> x;
      for (int k = 0; k < p->inputs; ++k) {
        inputs.emplace_back(n, g.bytes);
        for (int64_t i = 0; i < n; ++i) {
          const float v = i < 6 ? specials[(i + k) % 6] : uniform(rng);
          inputs.back().set(i, narrow(v, g.storage));
        }
      }
      for (Buffer& b : inputs) x.push_back(b.data());
      Buffer y(n, g.bytes);
      const uint32_t sentinel = g.bytes == 4 ? 0x7f80dead : 0xdead;
      for (int64_t i = 0; i < n + 16; ++i) y.set(i, sentinel);
      g.launch(n, y.data(), x.data(), unsigned((n + chunk - 1) / chunk));
      int wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        float in[8];
        for (int k = 0; k < p->inputs; ++k) in[k] = widen(inputs[size_t(k)].get(i), g.storage);
        const float want = widen(narrow(evaluate(*p, in), g.storage), g.storage);
        const float got = widen(y.get(i), g.storage);
        const bool same = std::isnan(want) ? std::isnan(got) : got == want;  // the same code on the same CPU
        if (!same && ++wrong <= 3) FAIL_CHECK("element " << i << ": " << got << ", expected " << want);
      }
      CHECK(wrong == 0);
      for (int64_t i = n; i < n + 16; ++i) CHECK(y.get(i) == sentinel);
    }
  }
}
