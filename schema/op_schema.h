// The op table: one OpSchema per op, declared once with an ATen-style signature string
// (name, version, typed arguments with defaults, outputs), the compute dtypes its kernels
// implement, flags, and a shape/dtype inference function. The eager API, the tracer, graph
// text, the archive, the loader's validation and the kernel lookup all read this table.
// docs/OPS.md is the contract for everything here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "amber/core/device.h"
#include "amber/core/dtype.h"
#include "amber/core/meta.h"
#include "amber/core/shape.h"
#include "amber/core/small_vector.h"
#include "amber/schema/attr.h"

namespace amber {

enum class ArgKind : uint8_t {
  tensor,           // Tensor
  optional_tensor,  // Tensor?
  tensor_list,      // Tensor[]  (an op's only tensor argument when present)
  int_,             // int
  float_,           // float
  scalar,           // Scalar: int, float or bool, kept as given
  bool_,            // bool
  ints,             // int[]
  floats,           // float[]
  string,           // str
  dtype,            // ScalarType
};
std::string_view arg_kind_name(ArgKind k);
inline bool is_tensor_kind(ArgKind k) {
  return k == ArgKind::tensor || k == ArgKind::optional_tensor || k == ArgKind::tensor_list;
}

struct ArgSpec {
  std::string name;
  ArgKind kind;
  bool optional = false;              // may be None ("int?", "Tensor?")
  std::optional<Attr> default_value;  // absent: the argument is required
  // str{a,b,c}: the values a str argument may take, which inference checks before the op's
  // own rules and kernels read as an index (amber_attr::i; op_attrs::OP::NAME_is::VALUE).
  // Empty: any string.
  std::vector<std::string> choices;
  // value's position in choices; -1 when it is none of them or the argument declares none.
  int choice_index(std::string_view value) const;
};

// Flags on an op.
namespace op_flags {
inline constexpr uint32_t view = 1u << 0;        // output 0 aliases input 0; no kernel runs
inline constexpr uint32_t maybe_view = 1u << 1;  // a view when strides allow, else a contiguous copy
inline constexpr uint32_t pointwise = 1u << 2;   // elementwise with broadcasting: fusible
inline constexpr uint32_t factory = 1u << 3;     // no tensor inputs; dtype from an attribute
inline constexpr uint32_t nondeterministic = 1u << 4;
// The op's `program` attribute is a fused program (schema/fused_program.h): callers hand its
// kernels the program as C data (amber_kernel_args::program), built once per node or call.
inline constexpr uint32_t program = 1u << 5;
// A pointwise op whose kernel may not write its output over an input's buffer: the memory
// planner never places it in place (to: the conversion kernels read and write in blocks).
inline constexpr uint32_t no_in_place = 1u << 6;
// Control flow (schema/control_flow.h): the node holds subgraphs (graph::Node::bodies) that
// the interpreter and the loader run; no kernel, and the dispatcher refuses to run it alone.
inline constexpr uint32_t control_flow = 1u << 7;
}  // namespace op_flags

// What a call of the op costs (schema/op_cost.h), for the loader's estimate of whether it is
// worth the thread pool and the eager work limit: bytes moved, or the arithmetic of a product.
enum class OpCost : uint8_t {
  memory,          // bytes read and written (elementwise, reductions, copies, ...)
  conv,            // 2 * output elements * weight [out, in/groups, kh, kw] elements per output
  conv_transpose,  // 2 * input elements * weight [in, out/groups, kh, kw] elements per input
  matmul,          // 2 * output elements * input 0's last dim
  attention,       // 4 * query elements * key length
  window,          // output elements * the kernel_size window's elements, plus bytes (pooling)
  roi_align,       // 4 * outputs * sampling_ratio^2, or with an adaptive grid the image-bounded bound
};

struct OpSchema;

// What an inference function sees and fills. Inputs are in the op's tensor-argument order
// (a tensor list expanded in place); an absent optional tensor is nullptr.
class InferCtx {
 public:
  InferCtx(const OpSchema& op, const TensorMeta* const* inputs, int n_inputs, const Attr* attrs, int n_attrs);

  const OpSchema& op() const { return op_; }
  int num_inputs() const { return n_inputs_; }
  bool has_input(int i) const { return i < n_inputs_ && inputs_[i] != nullptr; }
  const TensorMeta& in(int i) const { return *inputs_[i]; }
  // The attribute named name in the op's signature (attributes are read by name, never by
  // position); an internal error when the op has none of that name.
  const Attr& attr(std::string_view name) const;
  int num_attrs() const { return n_attrs_; }

  // Outputs, in order. Single-output ops set output(0).
  TensorMeta& add_output(DType dtype, DimVec sizes);
  int num_outputs() const { return int(outputs_.size()); }
  TensorMeta& output(int i) { return outputs_[size_t(i)]; }
  const SmallVector<TensorMeta, 2>& outputs() const { return outputs_; }

  // The dtype selecting the kernel; inputs listed in cast_inputs are converted to it
  // before the kernel runs (type promotion). Defaults to input 0's dtype.
  DType compute_dtype = DType::f32;
  uint32_t cast_mask = 0;  // bit i: cast input i to compute_dtype
  void cast_all_inputs_to(DType t);

  // Throws amber::Error prefixed with the op name.
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const;
  template <typename... Args>
  void check(bool cond, const Args&... args) const {
    if (!cond) [[unlikely]]
      fail(args...);
  }
  // wrap_dim with the op's name in the message.
  int wrap(int64_t dim, int ndim) const;

 private:
  const OpSchema& op_;
  const TensorMeta* const* inputs_;
  int n_inputs_;
  const Attr* attrs_;
  int n_attrs_;
  SmallVector<TensorMeta, 2> outputs_;
};

using InferFn = void (*)(InferCtx& ctx);
// Computes the layout of view output `output` from the input's; returns false when the
// view is impossible with these strides (maybe_view ops then copy to contiguous first).
using ViewFn = bool (*)(const InferCtx& ctx, const Layout& in, int output, Layout& out);

struct OpSchema {
  std::string name;  // "add", "add.Scalar"; an op library's: "myops::swish_gate"
  int version = 1;
  std::string signature;  // as declared, for docs and errors
  std::vector<ArgSpec> args;
  std::vector<std::string> outputs;  // output names
  bool list_output = false;          // one Tensor[] output of inferred length
  // Compute dtypes the kernels implement: OpDef::dtypes, plus f16 and bf16 where it lists f32
  // (a backend without its own 16-bit kernel runs the f32 one between conversions).
  DTypeSet dtypes;
  uint32_t flags = 0;
  InferFn infer = nullptr;
  ViewFn view = nullptr;
  std::string doc;
  OpCost cost = OpCost::memory;
  // The archive format minor version that first carries the op: an archive holding it is
  // written as at least 1.format_minor (docs/FORMAT.md), so older readers refuse it by version.
  uint32_t format_minor = 0;

  // Derived at registration.
  int index = -1;           // position in the table
  int num_tensor_args = 0;  // leading tensor arguments
  bool has_tensor_list = false;
  int num_attrs() const { return int(args.size()) - num_tensor_args; }
  const ArgSpec& attr_spec(int i) const { return args[size_t(num_tensor_args + i)]; }
  bool is_view() const { return flags & op_flags::view; }
  bool is_maybe_view() const { return flags & op_flags::maybe_view; }
  bool needs_kernel() const { return !(flags & (op_flags::view | op_flags::control_flow)); }
  bool is_control_flow() const { return flags & op_flags::control_flow; }
  // Index of attribute `name`, or -1.
  int attr_index(std::string_view name) const;
};

struct OpDef {
  const char* signature;
  DTypeSet dtypes;
  InferFn infer;
  uint32_t flags = 0;
  ViewFn view = nullptr;
  int version = 1;
  const char* doc = "";
  OpCost cost = OpCost::memory;
  uint32_t format_minor = 0;  // OpSchema::format_minor
};

// The most ops the table holds (built-in and op libraries' together).
inline constexpr int kMaxOps = 1024;
// Parses def.signature and checks the definition; throws amber::Error naming what is wrong.
std::unique_ptr<OpSchema> parse_op(const OpDef& def);
// Adds a parsed op; throws amber::Error on a duplicate name or a full table.
const OpSchema& add_op(std::unique_ptr<OpSchema> op);
// Both of the above.
const OpSchema& register_op(const OpDef& def);
// The op named name, or nullptr.
const OpSchema* find_op(std::string_view name);
// The op named name; throws amber::Error when there is none.
const OpSchema& op_schema(std::string_view name);
// Every op, ordered by name.
std::vector<const OpSchema*> all_ops();

// Checks attrs against op's attribute specs and returns them complete and canonical:
// defaults filled in, ints accepted where floats are expected, kinds checked. Throws an
// error naming the op and the argument.
std::vector<Attr> normalize_attrs(const OpSchema& op, std::span<const Attr> attrs);
// True when attrs already match op's specs exactly (count and kinds), so eager calls can
// skip normalisation.
bool attrs_are_canonical(const OpSchema& op, std::span<const Attr> attrs);

template <typename... Args>
void InferCtx::fail(const Args&... args) const {
  throw Error(str(op_.name, ": ", args...));
}

// Helper for registration at static-initialisation time in the ops_*.cpp files.
struct OpRegistrar {
  explicit OpRegistrar(std::initializer_list<OpDef> defs) {
    for (const OpDef& d : defs) register_op(d);
  }
};

}  // namespace amber
