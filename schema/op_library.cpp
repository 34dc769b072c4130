// Op libraries (see op_library.h): loading and version checks, staged registration of a
// library's ops and kernels, and the kernel table the dispatcher consults for their ops.

#include "amber/schema/op_library.h"

#include <dlfcn.h>

#include <cctype>
#include <map>
#include <mutex>
#include <tuple>

namespace amber {
namespace {

struct Loaded {
  std::string origin;  // a path or "this program"
  const amber_op_library_info* info;
};

struct Libraries {
  std::mutex mutex;
  std::map<std::string, Loaded, std::less<>> by_namespace;
  std::map<std::tuple<std::string, int, int>, amber_kernel, std::less<>> kernels;  // (op, device, dtype)
};

Libraries& libraries() {
  static Libraries* l = new Libraries();  // never destroyed: kernels outlive static destructors
  return *l;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(uint8_t(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(uint8_t(c)) && c != '_') return false;
  return true;
}

}  // namespace

std::string_view op_namespace(std::string_view op) {
  const size_t p = op.find("::");
  return p == std::string_view::npos ? std::string_view() : op.substr(0, p);
}

void OpLibrary::def(const OpDef& d) {
  std::unique_ptr<OpSchema> op = parse_op(d);
  AMBER_CHECK(op_namespace(op->name) == ns_, "op ", op->name,
              " is not in the library's namespace (its name must begin with ", ns_, "::)");
  for (const auto& o : ops_) AMBER_CHECK(o->name != op->name, "op ", op->name, " defined twice");
  ops_.push_back(std::move(op));
}

void OpLibrary::kernel(std::string_view op, DeviceType device, DType dtype, amber_kernel_fn run) {
  amber_kernel k{};
  k.run = run;
  kernel(op, device, dtype, k);
}

void OpLibrary::kernel(std::string_view op, DeviceType device, DType dtype, const amber_kernel& k) {
  const OpSchema* def = nullptr;
  for (const auto& o : ops_)
    if (o->name == op) def = o.get();
  AMBER_CHECK(def, "a kernel for ", op, ", which the library has not defined (def() it first)");
  AMBER_CHECK(k.run, "the ", device_type_name(device), " kernel of ", op, " for ", dtype, " has no run function");
  AMBER_CHECK(def->dtypes.contains(dtype), "a ", device_type_name(device), " kernel of ", op, " for ", dtype,
              ", which its definition does not list (", def->dtypes, ")");
  for (const Kernel& e : kernels_)
    AMBER_CHECK(!(e.op == op && e.device == device && e.dtype == dtype), "two ", device_type_name(device),
                " kernels of ", op, " for ", dtype);
  kernels_.push_back({std::string(op), device, dtype, k});
}

void register_op_library(const amber_op_library_info& info, const std::string& origin) {
  AMBER_CHECK(info.abi_version == AMBER_OP_LIBRARY_ABI_VERSION, "op library ", origin,
              " was built for op-library ABI version ", info.abi_version, "; this Amber has version ",
              AMBER_OP_LIBRARY_ABI_VERSION, ": rebuild the library against this Amber");
  AMBER_CHECK(info.backend_abi_version == AMBER_BACKEND_ABI_VERSION, "op library ", origin,
              " was built for backend ABI version ", info.backend_abi_version, "; this Amber has version ",
              AMBER_BACKEND_ABI_VERSION, ": rebuild the library against this Amber");
  const std::string ns = info.name_space ? info.name_space : "";
  AMBER_CHECK(is_identifier(ns), "op library ", origin, ": namespace '", ns, "' is not an identifier");
  AMBER_CHECK(ns != "amber", "op library ", origin, ": namespace 'amber' is reserved");
  AMBER_CHECK(info.register_ops, "op library ", origin, " has no registration function");
  Libraries& l = libraries();
  // One library at a time: its ops are checked against the table and added together.
  static std::mutex registering;
  std::lock_guard one(registering);
  {
    std::lock_guard lock(l.mutex);
    if (auto it = l.by_namespace.find(ns); it != l.by_namespace.end()) {
      if (it->second.info == &info) return;  // already registered
      AMBER_CHECK(false, "op library ", origin, ": namespace ", ns, " is already provided by op library ",
                  it->second.origin);
    }
  }
  OpLibrary lib(ns);
  try {
    info.register_ops(lib);
  } catch (const Error& e) {
    throw Error(str("op library ", origin, ": ", e.what(), " (nothing of it was registered)"));
  } catch (const std::exception& e) {
    throw Error(str("op library ", origin, ": its registration failed: ", e.what(), " (nothing of it was registered)"));
  }
  AMBER_CHECK(!lib.ops().empty(), "op library ", origin, " (namespace ", ns, ") defines no ops");
  for (const auto& op : lib.ops())
    AMBER_CHECK(!find_op(op->name), "op library ", origin, ": op ", op->name, " already exists");
  {
    std::lock_guard lock(l.mutex);
    for (const OpLibrary::Kernel& k : lib.kernels()) l.kernels[{k.op, int(k.device), int(k.dtype)}] = k.kernel;
    l.by_namespace.emplace(ns, Loaded{origin, &info});
  }
  for (auto& op : lib.ops()) add_op(std::move(op));
}

void load_op_library(const std::string& path) {
  // RTLD_NOW: a missing symbol fails here, naming the library, not at the first call.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  AMBER_CHECK(handle, "op library ", path, " cannot be loaded: ", dlerror());
  auto entry = reinterpret_cast<amber_op_library_entry_fn>(dlsym(handle, "amber_op_library_entry"));
  if (!entry) {
    dlclose(handle);
    AMBER_CHECK(false, "op library ", path,
                " exports no amber_op_library_entry (is it an op library? define it with AMBER_OP_LIBRARY)");
  }
  const amber_op_library_info* info = entry();
  try {
    AMBER_CHECK(info, "op library ", path, ": amber_op_library_entry() returned nothing");
    register_op_library(*info, path);
  } catch (...) {
    dlclose(handle);  // nothing of it is referenced
    throw;
  }
  // Kept open for good: the op table and kernel table point into it. A second dlopen of the
  // same file returned the same handle and info, so only its reference count grew.
}

std::string op_library_origin(std::string_view ns) {
  Libraries& l = libraries();
  std::lock_guard lock(l.mutex);
  auto it = l.by_namespace.find(ns);
  return it == l.by_namespace.end() ? std::string() : it->second.origin;
}

const amber_kernel* library_kernel(const OpSchema& op, DeviceType device, DType dtype) {
  Libraries& l = libraries();
  std::lock_guard lock(l.mutex);
  auto it = l.kernels.find(std::make_tuple(op.name, int(device), int(dtype)));
  return it == l.kernels.end() ? nullptr : &it->second;
}

}  // namespace amber
