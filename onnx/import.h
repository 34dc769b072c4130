// ONNX import: turns an ONNX model (default domain, opsets 7 to 17) into a traced Amber
// module, ready to save as an ordinary archive. The model is read with Debian's libonnx
// (protobuf classes and checker), run once through Amber's eager ops under the tracer, and
// optimised by the usual passes. The file is treated as hostile: docs/ONNX.md lists the limits.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "amber/core/error.h"
#include "amber/core/tensor.h"
#include "amber/tracer/trace.h"

namespace amber {

struct OnnxImportOptions {
  // Sizes of symbolic dims (dim_param) other than a leading batch dim, by name ("T" -> 128).
  std::map<std::string, int64_t> dims;
  // Symbolic dims that stay dynamic in the archive, by dim_param name, each as an Amber
  // symbol (one upper-case letter: "seq" -> 'T'; TraceOptions::dynamic_dims). Traced at their
  // size in `dims` (8 when not given); the archive serves any size.
  std::map<std::string, char> dynamic_dims;
  // The batch the model is traced at when every input's first dim is the same symbol; the
  // archive then serves any batch (TraceOptions::dynamic_batch).
  int64_t batch = 1;
  // Inputs fixed to these values: they become constants of the archive and leave the
  // archive's inputs (a shape operand fed as a graph input, for example).
  std::map<std::string, Tensor> constant_inputs;
  // Example values for inputs (default: zeros of the declared shape); their shapes are the
  // shapes traced. Used by the node tests, which come with their own inputs.
  std::map<std::string, Tensor> example_inputs;
  // Run the optimisation passes (constant and batch-norm folding, CSE, fusion, DCE).
  bool optimize = true;
  // Limits against hostile files.
  uint64_t max_file_bytes = (uint64_t(1) << 31) - 1;  // model.onnx itself (protobuf's own bound)
  // One tensor: an initializer, constant or external record, and any tensor computed while
  // the model runs at import (core/storage.h's AllocationLimit).
  uint64_t max_tensor_bytes = uint64_t(16) << 30;
  int64_t max_nodes = 1 << 20;
  // The work of running the model at import, summed over every kernel of the trace's runs
  // (schema/op_cost.h: floating-point operations plus bytes moved): a small file cannot
  // hold a model that runs for hours. ViT-B/16 at batch 1 needs about 1e11.
  double max_work = 4e12;
  // The most iterations one Loop node may run while the model runs at import (a Loop body of
  // no ops costs no work); the archive's own bound at run time is LoadOptions::max_loop_trips.
  int64_t max_loop_trips = int64_t(1) << 20;
};

// One node the importer cannot take, and why.
struct OnnxRefusal {
  std::string node;     // the node's name, or "#index" when it has none
  std::string op_type;  // "Conv", or "domain::Op" outside the default domain
  std::string reason;
};

// An import that failed. what() is the whole message; refusals() lists every node that
// cannot be imported when that is the reason; needs_constant() names graph inputs an op
// needs as constants (a shape, axes or pads operand), which constant_inputs can supply.
class OnnxImportError : public Error {
 public:
  OnnxImportError(const std::string& message, std::vector<OnnxRefusal> refusals = {},
                  std::vector<std::string> needs_constant = {})
      : Error(message), refusals_(std::move(refusals)), needs_constant_(std::move(needs_constant)) {}
  const std::vector<OnnxRefusal>& refusals() const { return refusals_; }
  const std::vector<std::string>& needs_constant() const { return needs_constant_; }

 private:
  std::vector<OnnxRefusal> refusals_;
  std::vector<std::string> needs_constant_;
};

// Imports the ONNX model at path (external data files are read relative to its folder;
// a location leaving that folder is refused).
TracedModule import_onnx(const std::string& path, const OnnxImportOptions& options = {});
// The same from the model's bytes; external data is refused unless base_dir is given.
TracedModule import_onnx_bytes(const std::string& bytes, const OnnxImportOptions& options = {},
                               const std::string& base_dir = "");

// A serialized ONNX TensorProto (the node tests' input_0.pb) as a CPU tensor.
Tensor read_onnx_tensor(const std::string& path);

// The ONNX op types the importer maps (default domain), sorted.
std::vector<std::string> onnx_supported_ops();

}  // namespace amber
