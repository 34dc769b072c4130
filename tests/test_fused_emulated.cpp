// fused_kernels.cuh on the CPU (cuda_emulation.h), without a GPU: the default kernel (eight
// dense, aligned elements a thread; four, or strided offsets otherwise) and the opt-in prefetching
// one, on programs of one and two inputs with results kept in slots, lengths with partial last
// chunks and grids of a few blocks, against the program evaluated directly; nothing past the end
// is written. scripts/gpu_check.sh runs the real kernels.

#include <catch2/catch.hpp>

#include <cstdio>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "cuda_emulation.h"
// After the emulation's macros:
#include "amber/kernels/cuda/fused_kernels.cuh"

namespace {

using amber::cuda::Operands;
namespace fused = amber::cuda::fused;

// Operands as (kind, index or immediate).
struct Operand {
  int kind;
  float value;
};
Operand input(int k) { return {AMBER_OPERAND_INPUT, float(k)}; }
Operand temp(int i) { return {AMBER_OPERAND_TEMP, float(i)}; }
Operand imm(float v) { return {AMBER_OPERAND_IMM, v}; }

struct Program {
  fused::Code code;
  void add(int op, std::initializer_list<Operand> operands) {
    fused::Code::Instr& in = code.instrs[code.n_instrs++];
    in.op = uint8_t(op);
    int j = 0;
    for (const Operand& o : operands) {
      in.kind[j] = uint8_t(o.kind);
      in.index[j] = o.kind == AMBER_OPERAND_IMM ? 0 : uint8_t(o.value);
      in.imm[j] = o.kind == AMBER_OPERAND_IMM ? o.value : 0.0f;
      ++j;
    }
    for (; j < 3; ++j) in.kind[j] = AMBER_OPERAND_IMM, in.index[j] = 0, in.imm[j] = 0;
  }
};

// One input: relu(2x + 1) * x - 2x (2x read again: a slot). Two: clamp((x y + x) / (y y + 1)).
Program program(int inputs) {
  Program p;
  if (inputs == 1) {
    p.add(AMBER_FUSED_MUL, {input(0), imm(2)});
    p.add(AMBER_FUSED_ADD, {temp(0), imm(1)});
    p.add(AMBER_FUSED_RELU, {temp(1)});
    p.add(AMBER_FUSED_MUL, {temp(2), input(0)});
    p.add(AMBER_FUSED_SUB, {temp(3), temp(0)});
  } else {
    p.add(AMBER_FUSED_MUL, {input(0), input(1)});
    p.add(AMBER_FUSED_ADD, {temp(0), input(0)});
    p.add(AMBER_FUSED_MUL, {input(1), input(1)});
    p.add(AMBER_FUSED_ADD, {temp(2), imm(1)});
    p.add(AMBER_FUSED_DIV, {temp(1), temp(3)});
    p.add(AMBER_FUSED_CLAMP, {temp(4), imm(-0.5f), imm(0.75f)});
  }
  return p;
}
float expected(int inputs, float x, float y) {
  if (inputs == 1) {
    const float t0 = x * 2.0f, t1 = t0 + 1.0f, t2 = t1 > 0 ? t1 : 0.0f;
    return t2 * x - t0;
  }
  const float t1 = x * y + x, t3 = y * y + 1.0f;
  return std::min(std::max(t1 / t3, -0.5f), 0.75f);
}

enum class Form { wide, four, strided, ahead };

// Runs the kernel of `form` over n elements on `blocks` blocks of 256; the number of elements
// wrong or written past the end.
template <int K>
int wrong(Form form, int64_t n, unsigned blocks) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(size_t(n) + 8), y(size_t(n) + 8), out(size_t(n) + 8, NAN);
  for (std::vector<float>* v : {&x, &y})
    for (float& e : *v) e = normal(rng);
  fused::Code code = program(K).code;
  REQUIRE(fused::assign_slots(code, false) <= fused::kSlots);
  Operands<K + 1> o;
  o.ndim = 1, o.dense = form != Form::strided, o.sizes[0] = n;
  float* data[3] = {out.data(), x.data(), y.data()};
  for (int k = 0; k <= K; ++k) o.ptr[k] = reinterpret_cast<char*>(data[k]), o.item[k] = 4, o.bytes[k][0] = 4;
  using amber::emulation::launch;
  const dim3 grid(blocks), block(256);
  if (form == Form::wide) launch(&fused::fused_map_kernel<float, K, 8, fused::kSlots, true>, grid, block, n, o, code);
  if (form == Form::four) launch(&fused::fused_map_kernel<float, K, 4, fused::kSlots, true>, grid, block, n, o, code);
  if (form == Form::strided)
    launch(&fused::fused_map_kernel<float, K, 4, fused::kSlots, false>, grid, block, n, o, code);
  if (form == Form::ahead) launch(&fused::fused_ahead_kernel<float, K, 8, fused::kSlots>, grid, block, n, o, code);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i)
    bad += !(std::fabs(out[size_t(i)] - expected(K, x[size_t(i)], y[size_t(i)])) <= 1e-6f);
  for (int64_t i = n; i < n + 8; ++i) bad += !std::isnan(out[size_t(i)]);
  return bad;
}

}  // namespace

TEST_CASE("cuda emulated: the fused kernels run the program on every element and no further", "[emulated]") {
  // Lengths: under one chunk, partial last chunks, whole ones; grids of one block (a thread
  // walking many chunks) to enough for one chunk a thread.
  const std::pair<int64_t, unsigned> runs[] = {{5, 1}, {8, 1}, {6149, 1}, {6149, 4}, {14336, 7}, {100003, 3}};
  for (Form form : {Form::wide, Form::four, Form::strided, Form::ahead})
    for (const auto& [n, blocks] : runs) {
      INFO("form " << int(form) << ", " << n << " elements on " << blocks << " blocks");
      CHECK(wrong<1>(form, n, blocks) == 0);
      CHECK(wrong<2>(form, n, blocks) == 0);
    }
}

TEST_CASE("cuda emulated: the fused program's slots", "[emulated]") {
  // The previous result stays in registers; 2x (read three instructions later) takes a slot.
  fused::Code code = program(1).code;
  CHECK(fused::assign_slots(code, false) == 1);
  CHECK(code.instrs[1].kind[0] == fused::kOperandPrev);
  CHECK(code.instrs[0].slot == 0);
  CHECK(code.instrs[4].kind[1] == AMBER_OPERAND_TEMP);
  CHECK(code.instrs[4].index[1] == 0);
  // A slot per instruction when asked (programs needing more than kSlots): x y + x, read two
  // instructions later, keeps slot 1, its own index.
  fused::Code each = program(2).code;
  CHECK(fused::assign_slots(each, true) == 2);
  CHECK(each.instrs[1].slot == 1);
  CHECK(each.instrs[4].index[0] == 1);
}
