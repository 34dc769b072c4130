// The device code of the `fused` kernel (fused.cu) and the host-side slot assignment its Code
// needs, in a header of its own so that tests/test_fused_emulated.cpp runs the same code on the
// CPU (tests/cuda_emulation.h) where no GPU is; fused.cu builds the Code and launches these.
// Private to libamber_cuda.so.
#pragma once

#include "amber/core/fused_ops.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/pointwise_math.h"

namespace amber::cuda::fused {

// The program travels by value in the kernel's parameters. Each thread runs it on kPerThread
// neighbouring elements (kWidePerThread for dense, aligned operands of one or two inputs), so an
// instruction is decoded (its operand kinds, the switch on its opcode; uniform across the warp:
// about 60 PTX instructions with the switch's compare tree) once per four or eight elements,
// with 16-byte loads and stores where every operand is dense and aligned. The previous result
// stays in registers; a result read again later is kept in one of kSlots slots (assigned on the
// host by liveness), which the compiler places in local memory; a program that needs more slots
// runs one element a thread with a slot per instruction.
constexpr int kMaxInstrs = 64;
constexpr int kMaxInputs = 8;
constexpr int kPerThread = 4;
// Dense, aligned operands of programs with at most kWideInputs inputs: eight elements a thread,
// two 16-byte loads an operand in flight, the program decoded once for all eight. The bandwidth
// line (relu(2x + 1), one input) ran at 63% of a copy on an H100 with four a thread and on an
// H200 with eight a thread decoded per four: twice the loads in flight changed nothing, so the
// decoding's instruction issue, not memory latency, is what held it (about 15 instructions an
// element an instruction at four); decoded once per eight: 77 registers, no spills, three blocks
// of 256 an SM (four at 64 registers spilled). Three or four inputs stay at four a thread (76-80
// registers at eight), their loads already three to four times one input's.
constexpr int kWidePerThread = 8;
constexpr int kWideInputs = 2;
constexpr int kSlots = 16;
constexpr uint8_t kOperandPrev = 3;  // beside AMBER_OPERAND_*: the previous instruction's result
constexpr uint8_t kNoSlot = 255;

struct Code {
  int32_t n_instrs = 0;
  struct Instr {
    uint8_t op, kind[3], index[3];  // index: an input, or a TEMP operand's slot
    uint8_t slot;                   // where the result is kept for a later read, or kNoSlot
    float imm[3];
  } instrs[kMaxInstrs];
};

// One instruction of the given arity on its operand values.
template <int Arity, typename F>
__device__ float apply(float x0, float x1, float x2, F f) {
  if constexpr (Arity == 1)
    return f(x0);
  else if constexpr (Arity == 2)
    return f(x0, x1);
  else
    return f(x0, x1, x2);
}

// The program on E elements: in[k][e] is input k of element e; the result is left in out.
template <int K, int E, int Slots>
__device__ void run_program(const Code& code, const float (&in)[K][E], float (&out)[E]) {
  float kept[Slots][E];
  float prev[E];
  for (int i = 0; i < code.n_instrs; ++i) {
    const Code::Instr& c = code.instrs[i];
    float x[3][E];
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const uint8_t kind = c.kind[j], index = c.index[j];
      if (kind == kOperandPrev) {
#pragma unroll
        for (int e = 0; e < E; ++e) x[j][e] = prev[e];
      } else if (kind == AMBER_OPERAND_INPUT) {
#pragma unroll
        for (int k = 0; k < K; ++k)  // a run-time index into in[] would put it in local memory
          if (index == k)
#pragma unroll
            for (int e = 0; e < E; ++e) x[j][e] = in[k][e];
      } else if (kind == AMBER_OPERAND_TEMP) {
#pragma unroll
        for (int e = 0; e < E; ++e) x[j][e] = kept[index][e];
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e) x[j][e] = c.imm[j];
      }
    }
    if (c.op == AMBER_FUSED_POW && c.kind[1] == AMBER_OPERAND_IMM) {
#pragma unroll
      for (int e = 0; e < E; ++e) prev[e] = pw::pow_scalar(x[0][e], x[1][e]);  // ATen's exact shortcuts
    } else {
      switch (c.op) {
#define AMBER_FUSED_CASE(OPCODE, name, arity, kind)                                            \
  case AMBER_FUSED_##OPCODE:                                                                   \
    _Pragma("unroll") for (int e = 0; e < E; ++e) prev[e] =                                    \
        apply<arity>(x[0][e], x[1][e], x[2][e], [](auto... v) { return pw::op::name(v...); }); \
    break;
        AMBER_FUSED_OPS(AMBER_FUSED_CASE)
#undef AMBER_FUSED_CASE
        default:
#pragma unroll
          for (int e = 0; e < E; ++e) prev[e] = 0;
          break;
      }
    }
    if (c.slot != kNoSlot)
#pragma unroll
      for (int e = 0; e < E; ++e) kept[c.slot][e] = prev[e];
  }
#pragma unroll
  for (int e = 0; e < E; ++e) out[e] = prev[e];
}

// Every operand's byte offset of element i (elements of `item` bytes), in one walk over the dims.
template <int N>
__device__ void offsets_of(const Operands<N>& o, int64_t i, int64_t (&off)[N], int64_t item) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = o.dense ? i * item : 0;
  if (o.dense) return;
  for (int d = o.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % o.sizes[d];
    i /= o.sizes[d];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += idx * o.bytes[k][d];
  }
}

// Elements as the program sees them: S is the operands' storage (float, or __nv_bfloat16 /
// __half for a model in 16 bits, docs/OPS.md "16-bit floats"), widened on load and rounded to
// nearest even on store; the program runs in f32 either way.
template <typename S>
__device__ inline float load_elem(const char* p) {
  return load_as_compute(*reinterpret_cast<const S*>(p));  // cuda_util.cuh: f32 for all three
}
template <typename S>
__device__ inline void store_elem(char* p, float v) {
  *reinterpret_cast<S*>(p) = cast_value<S>(v);
}
// A 16-bit element from its bits, and the bits of an f32 rounded to it.
template <typename S>
__device__ inline float from_bits(uint32_t b) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __uint_as_float(b << 16);
  else
    return __half2float(__ushort_as_half(uint16_t(b)));
}
template <typename S>
__device__ inline uint32_t to_bits(float v) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  else
    return __half_as_ushort(__float2half_rn(v));
}
// Four elements starting at p (16 bytes of f32 or 8 of 16-bit values, aligned so), widened; and
// four stored.
template <typename S>
__device__ inline void load4(const char* p, float* v) {
  if constexpr (std::is_same_v<S, float>) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    const uint2 x = *reinterpret_cast<const uint2*>(p);
    v[0] = from_bits<S>(x.x & 0xffffu), v[1] = from_bits<S>(x.x >> 16);
    v[2] = from_bits<S>(x.y & 0xffffu), v[3] = from_bits<S>(x.y >> 16);
  }
}
template <typename S>
__device__ inline void store4(char* p, const float* v) {
  if constexpr (std::is_same_v<S, float>)
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else
    *reinterpret_cast<uint2*>(p) =
        make_uint2(to_bits<S>(v[0]) | to_bits<S>(v[1]) << 16, to_bits<S>(v[2]) | to_bits<S>(v[3]) << 16);
}

// A dense, aligned chunk of E elements (E a multiple of 4) at element base: every operand's
// loads issued before any is used (16-byte ones when the chunk is whole; elements past n read an
// element in range, never stored), and the results stored.
template <typename S, int K, int E>
__device__ inline void load_chunk(const Operands<K + 1>& o, int64_t base, int64_t n, float (&in)[K][E]) {
  constexpr int64_t kItem = sizeof(S);
  if (base + E <= n) {
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int q = 0; q < E; q += 4) load4<S>(o.ptr[k + 1] + (base + q) * kItem, &in[k][q]);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int64_t i = base + e < n ? base + e : base;  // past the end: an element in range, not stored
#pragma unroll
      for (int k = 0; k < K; ++k) in[k][e] = load_elem<S>(o.ptr[k + 1] + i * kItem);
    }
  }
}
template <typename S, int K, int E>
__device__ inline void store_chunk(const Operands<K + 1>& o, int64_t base, int64_t n, const float (&out)[E]) {
  constexpr int64_t kItem = sizeof(S);
  if (base + E <= n) {
#pragma unroll
    for (int q = 0; q < E; q += 4) store4<S>(o.ptr[0] + (base + q) * kItem, &out[q]);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (base + e < n) store_elem<S>(o.ptr[0] + (base + e) * kItem, out[e]);
  }
}

// Vec: every operand dense and 16-byte aligned (E a multiple of 4): 16-byte loads and stores
// (8-byte ones of four 16-bit values), the last partial group element by element at dense
// offsets; else each element's offsets from the dims. The two are separate kernels so that
// neither carries the other's registers. Registers bounded so that four blocks of 256 fit on an
// SM (three from three inputs up, and at eight a thread, where four would spill), keeping enough
// loads in flight.
template <int K, int E, bool Vec>
constexpr int fused_blocks_per_sm() {
  return (Vec && E > 4) || K > 2 ? 3 : 4;
}
template <typename S, int K, int E, int Slots, bool Vec>
__global__ void __launch_bounds__(256, fused_blocks_per_sm<K, E, Vec>())
    fused_map_kernel(int64_t n, Operands<K + 1> o, Code code) {
  static_assert(!Vec || E % 4 == 0);
  constexpr int64_t kItem = sizeof(S);
  const int64_t step = int64_t(gridDim.x) * blockDim.x * E;
  for (int64_t base = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * E; base < n; base += step) {
    float in[K][E], out[E];
    if constexpr (Vec) {
      load_chunk<S, K, E>(o, base, n, in);
      run_program<K, E, Slots>(code, in, out);  // each instruction decoded once for the E elements
      store_chunk<S, K, E>(o, base, n, out);
    } else {
      int64_t out_off[E];
#pragma unroll
      for (int e = 0; e < E; ++e) {
        int64_t off[K + 1];
        offsets_of(o, base + e < n ? base + e : 0, off, kItem);  // past the end: element 0, not stored
        out_off[e] = off[0];
#pragma unroll
        for (int k = 0; k < K; ++k) in[k][e] = load_elem<S>(o.ptr[k + 1] + off[k + 1]);
      }
      run_program<K, E, Slots>(code, in, out);
#pragma unroll
      for (int e = 0; e < E; ++e)
        if (base + e < n) store_elem<S>(o.ptr[0] + out_off[e], out[e]);
    }
  }
}

// The dense, aligned form run by a grid of resident blocks that each walk many chunks, every
// thread's next chunk loaded before the program runs on its current one, so that loads stay in
// flight while it decodes, computes and stores (the one-chunk-a-thread kernel above waits a
// memory round trip per chunk, and its 32768 blocks of a 256 MiB call come and go in about 80
// waves). Opt-in (AMBER_CUDA_FUSED_AHEAD=1) until a GPU run times it against that one
// (gpu_check's bandwidth step runs both). Chunks are E elements, E a multiple of 4.
constexpr int kAheadBlocksPerSm = 2;  // room for two chunks a thread in registers (three spilled)
template <typename S, int K, int E, int Slots>
__global__ void __launch_bounds__(256, kAheadBlocksPerSm) fused_ahead_kernel(int64_t n, Operands<K + 1> o, Code code) {
  static_assert(E % 4 == 0);
  const int64_t step = int64_t(gridDim.x) * blockDim.x * E;
  int64_t base = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * E;
  if (base >= n) return;
  float in[K][E];
  load_chunk<S, K, E>(o, base, n, in);
  for (;;) {
    const int64_t next = base + step;
    const bool more = next < n;
    float ahead[K][E];
    if (more) load_chunk<S, K, E>(o, next, n, ahead);  // in flight while this chunk runs
    float out[E];
    run_program<K, E, Slots>(code, in, out);
    store_chunk<S, K, E>(o, base, n, out);
    if (!more) return;
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int e = 0; e < E; ++e) in[k][e] = ahead[k][e];
    base = next;
  }
}

// Rewrites the program's TEMP operands: the previous instruction's result is read from registers
// (kOperandPrev); a result read later than that is kept in a slot, reused after its last read.
// Returns the number of slots needed; with slot_per_instr each result keeps its own.
inline int assign_slots(Code& code, bool slot_per_instr) {
  int last_read[kMaxInstrs];
  for (int i = 0; i < code.n_instrs; ++i) last_read[i] = -1;
  for (int i = 0; i < code.n_instrs; ++i)
    for (int j = 0; j < 3; ++j) {
      Code::Instr& c = code.instrs[i];
      if (c.kind[j] != AMBER_OPERAND_TEMP) continue;
      if (c.index[j] == i - 1)
        c.kind[j] = kOperandPrev;
      else if (last_read[c.index[j]] < i)
        last_read[c.index[j]] = i;
    }
  int slot_of[kMaxInstrs] = {};
  bool busy[kMaxInstrs] = {};
  int needed = 0;
  for (int i = 0; i < code.n_instrs; ++i) {
    Code::Instr& c = code.instrs[i];
    for (int j = 0; j < 3; ++j)
      if (c.kind[j] == AMBER_OPERAND_TEMP) c.index[j] = uint8_t(slot_of[c.index[j]]);
    if (!slot_per_instr)  // free the slots whose last read is this instruction (read before the write)
      for (int r = 0; r < i; ++r)
        if (last_read[r] == i) busy[slot_of[r]] = false;
    c.slot = kNoSlot;
    slot_of[i] = -1;
    if (last_read[i] < 0) continue;
    int s = slot_per_instr ? i : 0;
    while (busy[s]) ++s;
    busy[s] = true;
    slot_of[i] = s;
    c.slot = uint8_t(s);
    if (s + 1 > needed) needed = s + 1;
  }
  return needed;
}

}  // namespace amber::cuda::fused
