// The importer's ONNX op table: for each op type of the default domain, the function that
// builds it from Amber's eager ops. NodeCtx hands it the node's inputs (tensors, and the
// values known at import: initializers, Constant, Shape and what is computed from those)
// and its attributes by name with ONNX's defaults.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "amber/core/error.h"
#include "amber/core/tensor.h"

namespace amber::onnx_in {

// A value of the ONNX graph while it runs.
struct Val {
  Tensor t;
  bool known = false;       // fixed at import (computed untraced; becomes a constant if used)
  std::string input;        // the graph input it is or, unknown, the one its value derives from
  bool from_shape = false;  // known, but computed from the size of a traced value (may follow the batch)
};

// An op needs a graph input's value at import (a shape, axes or pads operand).
class NeedsConstant : public Error {
 public:
  NeedsConstant(const std::string& message, std::string input) : Error(message), input_(std::move(input)) {}
  const std::string& input() const { return input_; }

 private:
  std::string input_;
};

// The op, attribute or dtype is not supported: the node is refused, with this reason.
class Unsupported : public Error {
  using Error::Error;
};

class NodeCtx {
 public:
  NodeCtx(const onnx::NodeProto& node, int opset, std::vector<const Val*> inputs, uint64_t max_tensor_bytes)
      : node(node), opset(opset), inputs_(std::move(inputs)), max_tensor_bytes_(max_tensor_bytes) {}
  const onnx::NodeProto& node;
  const int opset;  // of the default domain

  int size() const { return int(inputs_.size()); }
  bool has(int i) const { return i < size() && inputs_[size_t(i)] != nullptr; }
  bool known(int i) const { return has(i) && inputs_[size_t(i)]->known; }
  const Tensor& in(int i) const;
  // Input i's integers (i64 or i32), which must be known at import.
  std::vector<int64_t> ints(int i) const;
  // Input i's single number (a 0-d or 1-element tensor known at import).
  double scalar(int i) const;
  // Input i's numbers (any dtype), which must be known at import.
  std::vector<double> numbers(int i) const;
  int outputs() const { return node.output_size(); }
  bool output_used(int i) const { return i < node.output_size() && !node.output(i).empty(); }

  bool has_attr(const char* name) const { return find(name) != nullptr; }
  int64_t attr_i(const char* name, int64_t def) const;
  float attr_f(const char* name, float def) const;
  std::string attr_s(const char* name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const char* name) const;  // empty when absent
  std::vector<float> attr_floats(const char* name) const;
  Tensor attr_tensor(const char* name) const;

  // Refuses the node: not supported by Amber (the node suite counts it as refused).
  [[noreturn]] void refuse(const std::string& why) const;

 private:
  const onnx::AttributeProto* find(const char* name) const;
  const onnx::AttributeProto& typed(const char* name, int type) const;
  std::vector<const Val*> inputs_;
  uint64_t max_tensor_bytes_;
};

using OnnxOpFn = std::vector<Tensor> (*)(const NodeCtx&);
struct OnnxOp {
  std::string_view type;
  OnnxOpFn fn;
  bool host = false;  // produces a value known at import whatever its inputs (Shape, Size)
  // The output's size comes from operands (ConstantOfShape, Range: all inputs; Expand, Tile,
  // Reshape: all but input 0, the data). Sized by values computed from a traced value's
  // shape, the node is recorded (its sizes then follow the batch) rather than folded.
  enum Sizes { fixed, by_operands, by_operands_of_data } sizes = fixed;
};

// The entry for an op type of the default domain, or nullptr.
const OnnxOp* find_onnx_op(std::string_view type);
std::vector<std::string> onnx_op_types();

}  // namespace amber::onnx_in
