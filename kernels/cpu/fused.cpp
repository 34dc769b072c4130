// CPU kernel for `fused` nodes: one generic kernel that runs a fused program (C data,
// amber_fused_program in core/backend.h) over broadcast f32 inputs. Each 1-D run is processed
// in blocks of 256 elements; every instruction is a loop over the block (vectorised per ISA
// through IsaVariants), reading inputs in place when contiguous and the last one writing a
// dense output directly, so intermediates stay in a few kilobytes of scratch. Formulas are
// the op kernels' own (pointwise_math.h, one case per line of core/fused_ops.h): a fused chain
// gives the same bits as the ops run one by one, except that libmvec's vector and scalar
// transcendental functions may differ by a few ulp.

#include <array>
#include <cmath>
#include <iterator>
#include <vector>

#include "amber/core/fused_ops.h"
#include "amber/core/hot.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/pointwise_math.h"

namespace amber::cpu {
namespace {

using namespace pw;  // the shared formulas (kernels/arith.h, kernels/pointwise_math.h)

constexpr int64_t kBlock = 256;
// On each loop over a block: left to themselves, compilers unroll the vector loop fully (a
// block has at most 256 elements), and the interpreter's switch over every instruction, each
// with its array/scalar operand forms, grew to ~64 KiB of code per ISA. Jumping through that
// for every block made the kernel front-end-bound: relu(2x + 1) over 4M floats at one thread
// took 3.6 ns an element against 1.1 with the loops kept rolled (kernel alone, 16 MiB).
#define AMBER_NO_UNROLL _Pragma("GCC unroll 1")

constexpr int kMaxInputs = 8;  // the fused op's limit (docs/OPS.md)

// An operand resolved for one block: an array or a broadcast scalar.
struct Arg {
  const float* p;
  bool scalar;
};

template <typename F>
inline void map1(float* o, Arg a, int64_t m, F f) {
  if (a.scalar) {
    const float v = f(*a.p);
    AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = v;
  } else {
    AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = f(a.p[i]);
  }
}

template <typename F>
inline void map2(float* o, Arg a, Arg b, int64_t m, F f) {
  if (!a.scalar && !b.scalar) {
    AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = f(a.p[i], b.p[i]);
  } else if (!a.scalar) {
    const float bv = *b.p;
    AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = f(a.p[i], bv);
  } else if (!b.scalar) {
    const float av = *a.p;
    AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = f(av, b.p[i]);
  } else {
    const float v = f(*a.p, *b.p);
    AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = v;
  }
}

template <typename F>
inline void map3(float* o, Arg a, Arg b, Arg c, int64_t m, F f) {
  AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) {
    o[i] = f(a.scalar ? *a.p : a.p[i], b.scalar ? *b.p : b.p[i], c.scalar ? *c.p : c.p[i]);
  }
}

// Runs one instruction of the given arity over a block; arg resolves an operand (only the
// instruction's own operands are resolved).
template <int Arity, typename ArgFn, typename F>
inline void apply(float* o, const amber_fused_instr& in, const ArgFn& arg, int64_t m, F f) {
  if constexpr (Arity == 1)
    map1(o, arg(in.a), m, f);
  else if constexpr (Arity == 2)
    map2(o, arg(in.a), arg(in.b), m, f);
  else
    map3(o, arg(in.a), arg(in.b), arg(in.c), m, f);
}

// One instruction of AMBER_FUSED_OPS_MORE over a block: o[0, m) = op(a[0], ..., a[arity - 1]).
using BlockFn = void (*)(float* o, const Arg* a, int64_t m);

template <int Arity, typename F>
inline void block(float* o, const Arg* a, int64_t m, F f) {
  if constexpr (Arity == 1)
    map1(o, a[0], m, f);
  else if constexpr (Arity == 2)
    map2(o, a[0], a[1], m, f);
  else
    map3(o, a[0], a[1], a[2], m, f);
}

// The block functions of AMBER_FUSED_OPS_MORE, compiled for each ISA, in a table indexed by
// opcode - kCoreOps: the interpreter runs AMBER_FUSED_OPS_CORE inline in its switch and calls
// the rest through the table, so it does not grow as the list does.
#define AMBER_FUSED_COUNT(OPCODE, name, arity, kind) +1
constexpr int kCoreOps = 0 AMBER_FUSED_OPS_CORE(AMBER_FUSED_COUNT);
#undef AMBER_FUSED_COUNT
#define AMBER_FUSED_BLOCK_FN(TARGET, ISA, name, arity)                   \
  TARGET void name##_##ISA(float* o, const Arg* a, int64_t m) {          \
    block<arity>(o, a, m, [](auto... x) { return pw::op::name(x...); }); \
  }
#define AMBER_FUSED_BLOCK_FNS(OPCODE, name, arity, kind)         \
  AMBER_FUSED_BLOCK_FN(AMBER_TARGET_AVX512, avx512, name, arity) \
  AMBER_FUSED_BLOCK_FN(AMBER_TARGET_AVX2, avx2, name, arity)     \
  AMBER_FUSED_BLOCK_FN(AMBER_TARGET_BASE, base, name, arity)
AMBER_FUSED_OPS_MORE(AMBER_FUSED_BLOCK_FNS)
#undef AMBER_FUSED_BLOCK_FNS
#undef AMBER_FUSED_BLOCK_FN

#define AMBER_FUSED_ENTRY_AVX512(OPCODE, name, arity, kind) &name##_avx512,
#define AMBER_FUSED_ENTRY_AVX2(OPCODE, name, arity, kind) &name##_avx2,
#define AMBER_FUSED_ENTRY_BASE(OPCODE, name, arity, kind) &name##_base,
constexpr BlockFn kBlocksAvx512[] = {AMBER_FUSED_OPS_MORE(AMBER_FUSED_ENTRY_AVX512)};
constexpr BlockFn kBlocksAvx2[] = {AMBER_FUSED_OPS_MORE(AMBER_FUSED_ENTRY_AVX2)};
constexpr BlockFn kBlocksBase[] = {AMBER_FUSED_OPS_MORE(AMBER_FUSED_ENTRY_BASE)};
#undef AMBER_FUSED_ENTRY_AVX512
#undef AMBER_FUSED_ENTRY_AVX2
#undef AMBER_FUSED_ENTRY_BASE
static_assert(kCoreOps + std::size(kBlocksBase) == AMBER_FUSED_NUM_OPCODES);
#define AMBER_FUSED_ARITY(OPCODE, name, arity, kind) arity,
constexpr int kArity[] = {AMBER_FUSED_OPS(AMBER_FUSED_ARITY)};
#undef AMBER_FUSED_ARITY

const BlockFn* blocks_for_this_cpu() {
  switch (cpu_isa()) {
    case Isa::avx512:
      return kBlocksAvx512;
    case Isa::avx2:
      return kBlocksAvx2;
    case Isa::base:
      break;
  }
  return kBlocksBase;
}

struct Ctx {
  const amber_fused_program* program;
  int num_inputs;
  const BlockFn* blocks;  // blocks_for_this_cpu()
};

struct FusedRun {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* vc) {
    const Ctx& ctx = *static_cast<const Ctx*>(vc);
    const amber_fused_instr* instrs = ctx.program->instrs;
    const int64_t n_instrs = ctx.program->n_instrs;
    const int k = ctx.num_inputs;
    thread_local std::vector<float> scratch;  // a few KiB per worker thread, reused
    scratch.resize(size_t((k + n_instrs) * kBlock));
    float* in_buf = scratch.data();
    float* tmp = scratch.data() + k * kBlock;
    // The last instruction writes a dense output directly, unless it is in place of an input
    // (its loops then keep reading and writing separate arrays, which the compiler vectorises
    // without an overlap check failing).
    bool direct = s[0] == sizeof(float);
    for (int j = 0; j < k; ++j) direct = direct && !(s[j + 1] != 0 && p[j + 1] == p[0]);
    for (int64_t base = 0; base < n; base += kBlock) {
      const int64_t m = std::min(kBlock, n - base);
      Arg inputs[kMaxInputs];
      for (int j = 0; j < k; ++j) {
        const char* src = p[j + 1] + base * s[j + 1];
        if (s[j + 1] == 0) {
          inputs[j] = {reinterpret_cast<const float*>(src), true};
        } else if (s[j + 1] == sizeof(float)) {
          inputs[j] = {reinterpret_cast<const float*>(src), false};
        } else {  // gather a strided input into its block
          float* dst = in_buf + j * kBlock;
          for (int64_t i = 0; i < m; ++i) dst[i] = *reinterpret_cast<const float*>(src + i * s[j + 1]);
          inputs[j] = {dst, false};
        }
      }
      auto arg = [&](const amber_fused_operand& o) -> Arg {
        switch (o.kind) {
          case AMBER_OPERAND_INPUT:
            return inputs[o.index];
          case AMBER_OPERAND_TEMP:
            return {tmp + o.index * kBlock, false};
          default:
            break;
        }
        return {&o.imm, true};
      };
      char* out = p[0] + base * s[0];
      for (int64_t t = 0; t < n_instrs; ++t) {
        const amber_fused_instr& in = instrs[t];
        float* o = direct && t == n_instrs - 1 ? reinterpret_cast<float*>(out) : tmp + t * kBlock;
        switch (in.op) {
          // pow by an immediate exponent takes ATen's exact shortcuts (pow_scalar)
#define AMBER_FUSED_CASE(OPCODE, name, arity, set)                                   \
  case AMBER_FUSED_##OPCODE:                                                         \
    if (AMBER_FUSED_##OPCODE == AMBER_FUSED_POW && in.b.kind == AMBER_OPERAND_IMM) { \
      const float e = in.b.imm;                                                      \
      map1(o, arg(in.a), m, [e](float x) { return pw::pow_scalar(x, e); });          \
    } else {                                                                         \
      apply<arity>(o, in, arg, m, [](auto... x) { return pw::op::name(x...); });     \
    }                                                                                \
    break;
          AMBER_FUSED_OPS_CORE(AMBER_FUSED_CASE)
#undef AMBER_FUSED_CASE
          default: {  // AMBER_FUSED_OPS_MORE: out of line, through the table
            Arg args[3];
            args[0] = arg(in.a);  // only the instruction's own operands are resolved
            if (in.arity > 1) args[1] = arg(in.b);
            if (in.arity > 2) args[2] = arg(in.c);
            ctx.blocks[in.op - kCoreOps](o, args, m);
          }
        }
      }
      if (!direct) {  // the last result is the output
        const float* r = tmp + (n_instrs - 1) * kBlock;
        if (s[0] == sizeof(float)) {
          float* o = reinterpret_cast<float*>(out);
          AMBER_NO_UNROLL for (int64_t i = 0; i < m; ++i) o[i] = r[i];
        } else {
          for (int64_t i = 0; i < m; ++i) *reinterpret_cast<float*>(out + i * s[0]) = r[i];
        }
      }
    }
  }
};

template <int N>
AMBER_HOT void run_fused(const amber_kernel_args* a, const Ctx& ctx) {
  std::array<const amber_tensor_view*, N> ops;
  std::array<int64_t, N> sizes;
  ops[0] = &a->outputs[0];
  for (int i = 1; i < N; ++i) ops[size_t(i)] = &a->inputs[i - 1];
  sizes.fill(sizeof(float));
  ElementwiseIter<N> it(ops, sizes);
  static const InnerFn inner = IsaVariants<FusedRun>::pick();
  it.run(inner, &ctx, a->num_threads, kGrainMath);
}

// Checks what the kernel relies on: each opcode's own arity, operand indices in range,
// temporaries defined before use.
AMBER_HOT bool valid_program(const amber_fused_program* p, int num_inputs) {
  if (!p || p->n_instrs < 1 || p->n_inputs != num_inputs) return false;
  for (int32_t t = 0; t < p->n_instrs; ++t) {
    const amber_fused_instr& in = p->instrs[t];
    if (in.op < 0 || in.op >= AMBER_FUSED_NUM_OPCODES || in.arity != kArity[in.op]) return false;
    for (const amber_fused_operand* o : {&in.a, &in.b, &in.c}) {
      if (o - &in.a >= in.arity) break;
      if (o->kind == AMBER_OPERAND_INPUT && (o->index < 0 || o->index >= num_inputs)) return false;
      if (o->kind == AMBER_OPERAND_TEMP && (o->index < 0 || o->index >= t)) return false;
    }
  }
  return true;
}

template <typename T>
struct FusedKernel {  // fused(inputs, program)
  AMBER_HOT static int run(const amber_kernel_args* a) {
    return guarded(a, [&] {
      if (!valid_program(a->program, a->n_inputs))
        return fail(a, "fused: the call carries no valid program for its %d inputs", a->n_inputs);
      static const BlockFn* const blocks = blocks_for_this_cpu();
      const Ctx ctx{a->program, a->n_inputs, blocks};
      switch (a->n_inputs) {
        case 1:
          run_fused<2>(a, ctx);
          break;
        case 2:
          run_fused<3>(a, ctx);
          break;
        case 3:
          run_fused<4>(a, ctx);
          break;
        case 4:
          run_fused<5>(a, ctx);
          break;
        case 5:
          run_fused<6>(a, ctx);
          break;
        case 6:
          run_fused<7>(a, ctx);
          break;
        case 7:
          run_fused<8>(a, ctx);
          break;
        case 8:
          run_fused<9>(a, ctx);
          break;
        default:
          return fail(a, "fused: %d inputs (at most %d)", a->n_inputs, kMaxInputs);
      }
      return 0;
    });
  }
};

AMBER_CPU_KERNELS(fused) { register_typed<FusedKernel, float>("fused"); }

}  // namespace
}  // namespace amber::cpu
