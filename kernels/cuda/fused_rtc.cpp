// Fused programs compiled at run time (fused_rtc.h): the source writer, and NVRTC opened with
// dlopen (so that libamber_cuda.so loads where NVRTC is not installed) and given the headers
// the source includes from the copies built into the library (fused_rtc_headers.cpp, generated
// by CMake from kernels/: the same text the CPU and the interpreting kernel compile).

#include "amber/kernels/cuda/fused_rtc.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "amber/core/fused_ops.h"

namespace amber::cuda::rtc {

// The headers the generated source includes, by the names it includes them with
// (fused_rtc_headers.cpp).
extern const char* const kHeaderNames[];
extern const char* const kHeaderTexts[];
extern const int kHeaderCount;

namespace {

constexpr int kMaxInputs = 8;

struct OpInfo {
  const char* name;
  int arity;
};

bool op_info(int32_t op, OpInfo* info) {
  switch (op) {
#define AMBER_RTC_OP(OPCODE, name, arity, kind) \
  case AMBER_FUSED_##OPCODE:                    \
    *info = {#name, arity};                     \
    return true;
    AMBER_FUSED_OPS(AMBER_RTC_OP)
#undef AMBER_RTC_OP
  }
  return false;
}

// An immediate as its exact bits.
std::string imm_text(float v) {
  uint32_t bits = 0;
  static_assert(sizeof bits == sizeof v);
  std::memcpy(&bits, &v, sizeof v);
  char text[40];
  std::snprintf(text, sizeof text, "__uint_as_float(0x%08xu)", bits);
  return text;
}

struct Nvrtc {
  std::string error;  // why it could not be opened
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
};

// NVRTC of the toolkit the library was built with (its soname carries the major version),
// opened once for the process and never closed.
const Nvrtc& nvrtc() {
  static const Nvrtc n = [] {
    Nvrtc r;
    void* h = nullptr;
    for (const char* name : {AMBER_NVRTC_LIBRARY, "libnvrtc.so"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (!h) {
      const char* why = dlerror();
      r.error = std::string("cannot open " AMBER_NVRTC_LIBRARY ": ") + (why ? why : "not found");
      return r;
    }
    bool all = true;
    auto sym = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
      all = all && f != nullptr;
    };
    sym(r.create, "nvrtcCreateProgram");
    sym(r.compile, "nvrtcCompileProgram");
    sym(r.destroy, "nvrtcDestroyProgram");
    sym(r.cubin_size, "nvrtcGetCUBINSize");
    sym(r.cubin, "nvrtcGetCUBIN");
    sym(r.log_size, "nvrtcGetProgramLogSize");
    sym(r.log, "nvrtcGetProgramLog");
    sym(r.error_string, "nvrtcGetErrorString");
    if (!all) {
      r = Nvrtc{};
      r.error = AMBER_NVRTC_LIBRARY " lacks the functions Amber calls";
    }
    return r;
  }();
  return n;
}

}  // namespace

std::string program_source(const amber_fused_program& p, Storage storage, const std::string& name, std::string* error) {
  const int k = p.n_inputs;
  if (k < 1 || k > kMaxInputs || p.n_instrs < 1 || !p.instrs) {
    *error = "a program of " + std::to_string(p.n_instrs) + " instructions on " + std::to_string(k) +
             " inputs (the compiled kernels take 1 to 8 inputs)";
    return "";
  }
  const std::string program = name + "_program";
  std::string body;
  for (int i = 0; i < p.n_instrs; ++i) {
    const amber_fused_instr& in = p.instrs[i];
    OpInfo info{};
    if (!op_info(in.op, &info)) {
      *error = "instruction " + std::to_string(i) + " has the unknown opcode " + std::to_string(in.op);
      return "";
    }
    const amber_fused_operand* operands[3] = {&in.a, &in.b, &in.c};
    std::string args;
    for (int j = 0; j < info.arity; ++j) {
      std::string arg = "0.0f";  // an operand the instruction does not give: 0, as the interpreter reads it
      if (j < in.arity) {
        const amber_fused_operand& o = *operands[j];
        if (o.kind == AMBER_OPERAND_INPUT && o.index >= 0 && o.index < k) {
          arg = "x[" + std::to_string(o.index) + "]";
        } else if (o.kind == AMBER_OPERAND_TEMP && o.index >= 0 && o.index < i) {
          arg = "t" + std::to_string(o.index);
        } else if (o.kind == AMBER_OPERAND_IMM) {
          arg = imm_text(o.imm);
        } else {
          *error = "instruction " + std::to_string(i) + "'s operand " + std::to_string(j) + " (kind " +
                   std::to_string(o.kind) + ", index " + std::to_string(o.index) + ") reads nothing";
          return "";
        }
      }
      args += (j ? ", " : "") + arg;
    }
    // pow with a constant exponent takes ATen's exact shortcuts (the interpreter's test too).
    const bool pow_scalar = in.op == AMBER_FUSED_POW && in.arity >= 2 && in.b.kind == AMBER_OPERAND_IMM;
    body += "    const float t" + std::to_string(i) +
            " = amber::pw::" + (pow_scalar ? std::string("pow_scalar") : "op::" + std::string(info.name)) + "(" + args +
            ");\n";
  }
  const char* frame = storage == Storage::f32 ? "F32" : storage == Storage::bf16 ? "Bf16" : "F16";
  const std::string kk = std::to_string(k);
  return "#include \"amber/kernels/cuda/fused_rtc_kernel.cuh\"\n"
         "namespace {\n"
         "struct " +
         program + " {\n  __device__ static float run(const float (&x)[" + kk + "]) {\n" + body + "    return t" +
         std::to_string(p.n_instrs - 1) +
         ";\n  }\n};\n"
         "}  // namespace\n"
         "extern \"C\" __global__ void __launch_bounds__(256) " +
         name + "(long long n, amber::cuda::rtc::Pointers<" + kk +
         "> p) {\n  amber::cuda::rtc::dense<amber::cuda::rtc::" + frame + ", " + kk + ", " + program + ">(n, p);\n}\n";
}

bool nvrtc_available(std::string* error) {
  const Nvrtc& n = nvrtc();
  if (!n.create) *error = n.error;
  return n.create != nullptr;
}

std::vector<char> compile(const std::string& source, int major, int minor, std::string* error) {
  const Nvrtc& n = nvrtc();
  if (!n.create) {
    *error = n.error;
    return {};
  }
  nvrtcProgram prog = nullptr;
  nvrtcResult r = n.create(&prog, source.c_str(), "amber_fused.cu", kHeaderCount, kHeaderTexts, kHeaderNames);
  if (r != NVRTC_SUCCESS) {
    *error = std::string("nvrtcCreateProgram: ") + n.error_string(r);
    return {};
  }
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor);
  // (-default-device: what the shared headers declare without __device__ serves the kernel too)
  const char* options[] = {arch.c_str(), "-std=c++17", "-default-device"};
  r = n.compile(prog, 3, options);
  std::vector<char> image;
  if (r == NVRTC_SUCCESS) {
    size_t bytes = 0;
    r = n.cubin_size(prog, &bytes);
    if (r == NVRTC_SUCCESS) {
      image.resize(bytes);
      r = n.cubin(prog, image.data());
    }
  }
  if (r != NVRTC_SUCCESS) {
    image.clear();
    size_t log_bytes = 0;
    std::string log;
    if (n.log_size(prog, &log_bytes) == NVRTC_SUCCESS && log_bytes > 1) {
      log.resize(log_bytes);
      if (n.log(prog, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
      if (log.size() > 2000) log = log.substr(0, 2000) + " ...";
    }
    *error = std::string("NVRTC (") + arch + "): " + n.error_string(r) + (log.empty() ? "" : ": " + log);
  }
  (void)n.destroy(&prog);
  return image;
}

}  // namespace amber::cuda::rtc
