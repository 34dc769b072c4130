// Op libraries: users' own ops ("myops::swish_gate"), defined in their own shared library
// with the op table's OpDef and kernels of the backend ABI, registered only when a program
// names the library (load_op_library, LoadOptions::op_libraries, amber run --op-library);
// an archive never causes code to be loaded. docs/OPS.md, "Custom ops", is the contract.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "amber/core/backend.h"
#include "amber/core/device.h"
#include "amber/core/dtype.h"
#include "amber/core/error.h"
#include "amber/schema/op_schema.h"

// The version of what an op library and Amber share: OpDef, InferCtx, TensorMeta, Attr,
// the dtype codes and (separately checked) the backend ABI of its kernels. Bumped whenever
// any of them changes; a library built for another version is refused with both named.
#define AMBER_OP_LIBRARY_ABI_VERSION 1

namespace amber {
class OpLibrary;
}

extern "C" {
// What an op library exports, through amber_op_library_entry() (AMBER_OP_LIBRARY makes both).
struct amber_op_library_info {
  uint32_t abi_version;          // AMBER_OP_LIBRARY_ABI_VERSION the library was built with
  uint32_t backend_abi_version;  // AMBER_BACKEND_ABI_VERSION the library was built with
  const char* name_space;        // every op it defines is name_space::name
  void (*register_ops)(amber::OpLibrary& lib);
};
typedef const amber_op_library_info* (*amber_op_library_entry_fn)(void);
}

namespace amber {

// What a library's registration function receives. Nothing it adds is visible until the
// function returns without throwing; then everything is, at once.
class OpLibrary {
 public:
  const std::string& name_space() const { return ns_; }
  // Adds an op; its name must be name_space()::something. Throws amber::Error on a malformed
  // or clashing definition.
  void def(const OpDef& def);
  // op's kernel for one device type and compute dtype, through the backend ABI
  // (core/backend.h): the kernel sees the op's inputs (already of the compute dtype), its
  // allocated outputs and its attributes in signature order. A device kernel queues its work
  // on args->stream only (calls may be recorded into a device graph).
  void kernel(std::string_view op, DeviceType device, DType dtype, amber_kernel_fn run);
  void kernel(std::string_view op, DeviceType device, DType dtype, const amber_kernel& kernel);

  // Used by register_op_library.
  struct Kernel {
    std::string op;
    DeviceType device;
    DType dtype;
    amber_kernel kernel;
  };
  explicit OpLibrary(std::string ns) : ns_(std::move(ns)) {}
  std::vector<std::unique_ptr<OpSchema>>& ops() { return ops_; }
  std::vector<Kernel>& kernels() { return kernels_; }

 private:
  std::string ns_;
  std::vector<std::unique_ptr<OpSchema>> ops_;
  std::vector<Kernel> kernels_;
};

// The position in amber_kernel_args::attrs of the attribute called name in signature (the
// op's arguments that are not tensors, in signature order): what <amber/op_attrs.h> is for
// built-in ops, for an op library's own signatures. Used as a constant,
//   constexpr char kSwishGate[] = "myops::swish_gate(Tensor x, Tensor g, float beta=1.0) -> Tensor";
//   constexpr int kBeta = amber::attr_index(kSwishGate, "beta");   // 0
// a name the signature lacks (or a tensor argument's name) fails to compile; at run time it
// throws amber::Error naming both.
constexpr int attr_index(std::string_view signature, std::string_view name) {
  const size_t open = signature.find('(');
  size_t i = open == std::string_view::npos ? signature.size() : open + 1;
  int attrs = 0;
  while (i < signature.size() && signature[i] != ')') {
    // One argument, "type name[=default]", up to a ',' or ')' outside brackets and quotes.
    size_t end = i;
    for (int depth = 0; end < signature.size(); ++end) {
      const char c = signature[end];
      if (c == '"') {
        end = signature.find('"', end + 1);
        if (end == std::string_view::npos) end = signature.size() - 1;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        --depth;
      } else if (depth == 0 && (c == ',' || c == ')')) {
        break;
      }
    }
    std::string_view arg = signature.substr(i, end - i);
    arg.remove_prefix(std::min(arg.find_first_not_of(' '), arg.size()));
    const std::string_view type = arg.substr(0, arg.find(' '));
    std::string_view rest = arg.substr(type.size());
    rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
    const std::string_view arg_name = rest.substr(0, std::min(rest.find_first_of(" ="), rest.size()));
    const bool tensor = type.substr(0, 6) == "Tensor";
    if (arg_name == name && !tensor) return attrs;
    attrs += tensor ? 0 : 1;
    i = end < signature.size() && signature[end] == ',' ? end + 1 : end;
  }
  throw Error("attr_index: '" + std::string(signature) + "' has no attribute named '" + std::string(name) + "'");
}

// Opens the shared library at path, checks that it was built for this Amber (both ABI
// versions) and registers its ops and kernels. Loading a library already loaded does
// nothing; a library is never unloaded. Throws amber::Error naming the file and what is
// wrong (not found, no amber_op_library_entry, another ABI version, a namespace another
// library provides, a bad definition); nothing of a refused library is registered.
void load_op_library(const std::string& path);
// Registers an op library linked into this program (its amber_op_library_entry()); origin
// names it in messages. As load_op_library otherwise.
void register_op_library(const amber_op_library_info& info, const std::string& origin);
// Where the library providing namespace ns came from ("" when none is loaded).
std::string op_library_origin(std::string_view ns);
// The namespace of an op library's op ("myops" for "myops::swish_gate"), "" for built-ins.
std::string_view op_namespace(std::string_view op);
// The kernel an op library registered for (op, device type, compute dtype), or nullptr.
const amber_kernel* library_kernel(const OpSchema& op, DeviceType device, DType dtype);

}  // namespace amber

// Defines an op library's entry and registration function:
//   AMBER_OP_LIBRARY(myops, lib) { lib.def({...}); lib.kernel("myops::f", DeviceType::cpu, DType::f32, f_cpu); }
#define AMBER_OP_LIBRARY(ns, lib)                                                                               \
  static void amber_op_library_register_##ns(::amber::OpLibrary& lib);                                          \
  extern "C" __attribute__((visibility("default"))) const amber_op_library_info* amber_op_library_entry(void) { \
    static const amber_op_library_info info{AMBER_OP_LIBRARY_ABI_VERSION, AMBER_BACKEND_ABI_VERSION, #ns,       \
                                            &amber_op_library_register_##ns};                                   \
    return &info;                                                                                               \
  }                                                                                                             \
  static void amber_op_library_register_##ns(::amber::OpLibrary& lib)
