// CUDA's kernel for `fused` nodes (core/fused_ops.h's instruction list, the program handed to
// the kernel as C data): one generic kernel interpreting the program (fused_kernels.cuh, with an
// opt-in prefetching form), on f32 and f16/bf16 storage computed in f32 with the pointwise ops'
// own formulas; a dense step's setup also compiles the program into a kernel of its own
// (fused_rtc.h; AMBER_CUDA_FUSED_RTC, switches.h), once per model and source (setup_scope.h).

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "amber/core/fused_ops.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/fused_kernels.cuh"
#include "amber/kernels/cuda/fused_rtc.h"
#include "amber/kernels/cuda/fused_rtc_kernel.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/setup_scope.h"
#include "amber/kernels/pointwise_math.h"

namespace amber::cuda {
namespace {

using namespace fused;  // the kernels, their Code and its slots (fused_kernels.cuh)

// A program's own kernel (fused_rtc.h): NVRTC's cubin loaded as a library, unloaded with the state.
struct Compiled {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  ~Compiled() {
    if (library) (void)cudaLibraryUnload(library);
    (void)cudaGetLastError();
  }
};

// The compiled kernel on dense, aligned operands (Pointers<K>: the output's and inputs' data).
template <typename S, int K>
int launch_compiled(const amber_kernel_args* a, const Compiled& c, const Operands<K + 1>& o, int64_t n) {
  // (the frame's elements a thread depend on the storage's size alone)
  constexpr int per_thread = sizeof(S) == 2 ? rtc::per_thread<rtc::Bf16, K>() : rtc::per_thread<rtc::F32, K>();
  const int64_t blocks = (n + 256 * per_thread - 1) / (256 * per_thread);
  rtc::Pointers<K> p;
  p.y = o.ptr[0];
  for (int k = 0; k < K; ++k) p.x[k] = o.ptr[k + 1];
  long long count = n;
  void* args[] = {&count, &p};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(c.kernel), dim3(unsigned(blocks)), dim3(256),
                                         args, 0, stream_of(a));
  return e == cudaSuccess ? 0 : fail(a, "fused: the program's compiled kernel: %s", cudaGetErrorString(e));
}

template <typename S, int K>
int run_fused(const amber_kernel_args* a, const Code& code, bool few_slots, int sms, const Compiled* compiled) {
  const amber_tensor_view* v[K + 1];
  int64_t items[K + 1];
  v[0] = &a->outputs[0];
  items[0] = sizeof(S);
  for (int k = 0; k < K; ++k) {
    v[k + 1] = &a->inputs[k];
    items[k + 1] = sizeof(S);
  }
  const int64_t n = numel(a->outputs[0]);
  if (n == 0) return 0;
  DeviceScope scope(a->device);
  Operands<K + 1> o = operands<K + 1>(v, items);
  simplify(o);
  bool vec = o.dense;
  for (int k = 0; k <= K; ++k) vec = vec && reinterpret_cast<uintptr_t>(o.ptr[k]) % 16 == 0;
  constexpr int kVecPerThread = K <= kWideInputs ? kWidePerThread : kPerThread;
  if (compiled && vec && n / (256 * 4) < int64_t(1) << 31) return launch_compiled<S, K>(a, *compiled, o, n);
  if constexpr (K <= kWideInputs) {
    if (few_slots && vec && sms > 0 && fused_ahead_asked()) {
      // Two waves of resident blocks, each thread walking every (grid x 256 x E)-th chunk.
      const int64_t resident = int64_t(sms) * kAheadBlocksPerSm * 2;
      const int64_t blocks = std::min<int64_t>(grid_for((n + kVecPerThread - 1) / kVecPerThread), resident);
      enqueue(a, &fused_ahead_kernel<S, K, kVecPerThread, kSlots>, dim3(unsigned(blocks)), dim3(256), n, o, code);
      return launched(a, "fused kernel launch");
    }
  }
  if (few_slots && vec)
    enqueue(a, &fused_map_kernel<S, K, kVecPerThread, kSlots, true>,
            dim3(grid_for((n + kVecPerThread - 1) / kVecPerThread)), dim3(256), n, o, code);
  else if (few_slots)
    enqueue(a, &fused_map_kernel<S, K, kPerThread, kSlots, false>, dim3(grid_for((n + kPerThread - 1) / kPerThread)),
            dim3(256), n, o, code);
  else
    enqueue(a, &fused_map_kernel<S, K, 1, kMaxInstrs, false>, dim3(grid_for(n)), dim3(256), n, o, code);
  return launched(a, "fused kernel launch");
}

// The node's program as the kernel's Code, its slots assigned (one per instruction when the
// program needs more than kSlots): made once, at the step's setup (a plan's step, or an eager
// call's state, which the program's text keys), so that calls from the host (node by node:
// loop bodies, profiling, graphs off) only launch. Checks the program against the call's inputs.
struct FusedState {
  Code code;
  bool few_slots = true;
  int sms = 0;  // the device's multiprocessors (the prefetching kernel's grid), 0 if unknown or not asked
  // The program's own kernel (AMBER_CUDA_FUSED_RTC), or none; shared through the model's
  // setup scope by every step running the same source.
  std::shared_ptr<const Compiled> compiled;
};

int build_code(const amber_kernel_args* a, FusedState& st) {
  const amber_fused_program* p = a->program;
  if (!p || p->n_instrs < 1 || p->n_instrs > kMaxInstrs || p->n_inputs != a->n_inputs || a->n_inputs > kMaxInputs)
    return fail(a, "fused: the call carries no valid program for its %d inputs", a->n_inputs);
  Code& code = st.code;
  code.n_instrs = p->n_instrs;
  for (int i = 0; i < p->n_instrs; ++i) {
    const amber_fused_instr& in = p->instrs[i];
    Code::Instr& c = code.instrs[i];
    c.op = uint8_t(in.op);
    const amber_fused_operand* ops[3] = {&in.a, &in.b, &in.c};
    for (int j = 0; j < 3; ++j) {
      const bool used = j < in.arity;
      const int32_t kind = used ? ops[j]->kind : AMBER_OPERAND_IMM;
      const int32_t index = used ? ops[j]->index : 0;
      if (kind == AMBER_OPERAND_INPUT && (index < 0 || index >= a->n_inputs))
        return fail(a, "fused: instruction %d reads input %d of %d", i, index, a->n_inputs);
      if (kind == AMBER_OPERAND_TEMP && (index < 0 || index >= i))
        return fail(a, "fused: instruction %d reads result %d before it exists", i, index);
      if (kind != AMBER_OPERAND_INPUT && kind != AMBER_OPERAND_TEMP && kind != AMBER_OPERAND_IMM)
        return fail(a, "fused: instruction %d has an operand of kind %d", i, kind);
      c.kind[j] = uint8_t(kind);
      c.index[j] = uint8_t(index);
      c.imm[j] = used ? ops[j]->imm : 0.0f;
    }
  }
  // The prefetching kernel's grid: asked only where that kernel is (an eager call without a
  // setup builds its code each call).
  if (fused_ahead_asked() &&
      cudaDeviceGetAttribute(&st.sms, cudaDevAttrMultiProcessorCount, a->device) != cudaSuccess) {
    (void)cudaGetLastError();
    st.sms = 0;
  }
  Code per_instr = code;
  st.few_slots = assign_slots(code, false) <= kSlots;
  if (!st.few_slots) {
    assign_slots(per_instr, true);
    code = per_instr;
  }
  return 0;
}

// Says on stderr why the step's program is interpreted; returns null.
std::nullptr_t interpreted(const amber_kernel_args* a, const std::string& why) {
  std::fprintf(stderr, "amber cuda: fused (%d instructions, %d inputs): no compiled kernel (%s); interpreted\n",
               a->program->n_instrs, a->n_inputs, why.c_str());
  return nullptr;
}

// Source's kernel from NVRTC, loaded; null (having said why on stderr) where NVRTC is missing or
// fails. AMBER_CUDA_FUSED_LOG=1 prints each compilation and its time (scripts/gpu_check.sh counts
// them: one per distinct program and model).
std::unique_ptr<Compiled> compile_source(const amber_kernel_args* a, const std::string& source) {
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, a->device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, a->device) != cudaSuccess)
    error = std::string("the device's compute capability: ") + cudaGetErrorString(cudaGetLastError());
  std::vector<char> cubin;
  if (error.empty()) cubin = rtc::compile(source, major, minor, &error);
  auto c = std::make_unique<Compiled>();
  if (error.empty()) {
    cudaError_t e = cudaLibraryLoadData(&c->library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e == cudaSuccess) e = cudaLibraryGetKernel(&c->kernel, c->library, "amber_fused");
    if (e != cudaSuccess) error = std::string("loading NVRTC's cubin: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
  }
  if (!error.empty()) return interpreted(a, error);
  if (env_is_one("AMBER_CUDA_FUSED_LOG"))
    std::fprintf(stderr, "amber cuda: fused (%d instructions, %d inputs, %s): compiled in %.1f ms\n",
                 a->program->n_instrs, a->n_inputs, a->label ? a->label : "eager",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return c;
}

// The program compiled into a kernel of its own, where its operands are dense (as the step's
// views are; a call whose operands are not, or not 16-byte aligned, runs the interpreting kernel).
// Compiled once per source in the model's setup scope (each step alone without one); where a
// compilation fails, the step says why on stderr (once per source) and interprets; where NVRTC
// is missing, every program is interpreted and the process says so once.
std::shared_ptr<const Compiled> compile_program(const amber_kernel_args* a) {
  const int32_t dtype = a->outputs[0].dtype;
  const int k = a->n_inputs;
  if (k < 1 || k > kMaxInputs || (dtype != kF32 && dtype != kBF16 && dtype != kF16)) return nullptr;
  if (std::string why; !rtc::nvrtc_available(&why)) {
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "amber cuda: fused programs are interpreted: %s (AMBER_CUDA_FUSED_RTC=0: not tried)\n",
                   why.c_str());
    });
    return nullptr;
  }
  const amber_tensor_view* v[kMaxInputs + 1];
  int64_t items[kMaxInputs + 1];
  for (int i = 0; i <= kMaxInputs; ++i) {  // (past the inputs: the output again, dense by definition)
    v[i] = i == 0 || i > k ? &a->outputs[0] : &a->inputs[i - 1];
    items[i] = dtype == kF32 ? 4 : 2;
  }
  Operands<kMaxInputs + 1> o = operands<kMaxInputs + 1>(v, items);
  simplify(o);
  if (!o.dense || numel(a->outputs[0]) == 0) return nullptr;
  std::string error;
  const rtc::Storage storage = dtype == kF32    ? rtc::Storage::f32
                               : dtype == kBF16 ? rtc::Storage::bf16
                                                : rtc::Storage::f16;
  const std::string source = rtc::program_source(*a->program, storage, "amber_fused", &error);
  if (source.empty()) return interpreted(a, error);
  if (!a->scope) return compile_source(a, source);
  return static_cast<SetupScope*>(a->scope)->find_or_make<Compiled>("fused:" + source,
                                                                    [&] { return compile_source(a, source); });
}

int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  auto st = std::make_unique<FusedState>();
  if (build_code(a, *st) != 0) return 1;
  if (fused_rtc_wanted(numel(a->outputs[0]))) st->compiled = compile_program(a);
  *workspace_bytes = 0;
  *state = st.release();
  return 0;
}
void destroy(void* state) { delete static_cast<FusedState*>(state); }

// S: the storage of every operand (the op table's inference gives a fused node one dtype).
template <typename S>
int fused_kernel(const amber_kernel_args* a) {
  std::unique_ptr<FusedState> own;  // a call without setup: its code for this call alone
  const FusedState* st = static_cast<const FusedState*>(a->state);
  if (!st) {
    own = std::make_unique<FusedState>();
    if (build_code(a, *own) != 0) return 1;
    st = own.get();
  }
  if (a->program && a->program->n_instrs != st->code.n_instrs)
    return fail(a, "fused: the call's program has %d instructions, its setup's %d", a->program->n_instrs,
                st->code.n_instrs);
  const Code& code = st->code;
  const bool few_slots = st->few_slots;
  const int sms = st->sms;
  const Compiled* compiled = st->compiled.get();
  switch (a->n_inputs) {
    case 1:
      return run_fused<S, 1>(a, code, few_slots, sms, compiled);
    case 2:
      return run_fused<S, 2>(a, code, few_slots, sms, compiled);
    case 3:
      return run_fused<S, 3>(a, code, few_slots, sms, compiled);
    case 4:
      return run_fused<S, 4>(a, code, few_slots, sms, compiled);
    case 5:
      return run_fused<S, 5>(a, code, few_slots, sms, compiled);
    case 6:
      return run_fused<S, 6>(a, code, few_slots, sms, compiled);
    case 7:
      return run_fused<S, 7>(a, code, few_slots, sms, compiled);
    case 8:
      return run_fused<S, 8>(a, code, few_slots, sms, compiled);
  }
  return fail(a, "fused: %d inputs (at most %d)", a->n_inputs, kMaxInputs);
}

AMBER_CUDA_KERNELS(fused) {
  register_kernel("fused", kF32, amber_kernel{fused_kernel<float>, setup, destroy, nullptr});
  register_kernel("fused", kBF16, amber_kernel{fused_kernel<__nv_bfloat16>, setup, destroy, nullptr});
  register_kernel("fused", kF16, amber_kernel{fused_kernel<__half>, setup, destroy, nullptr});
}

}  // namespace
}  // namespace amber::cuda
