// ONNX export: writes an Amber graph (a traced module or an archive's graph) as an ONNX model
// of the default domain, opset 17, on Debian's libonnx (its protobuf classes, checker and
// shape inference). Fused nodes are expanded back into ONNX's own ops, weights become
// initializers, and the dynamic batch N becomes the symbolic dim "N". Authoring only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "amber/core/error.h"
#include "amber/graph/graph.h"
#include "amber/tracer/trace.h"

namespace amber {

struct OnnxExportOptions {
  // Check the result with ONNX's checker and its shape inference in strict mode (as
  // onnx.checker.check_model(full_check=True)); a failure is an error.
  bool check = true;
  std::string producer_name = "amber";
  // Where weights go: inside the .onnx file, or in ONNX's external data, the file
  // `<model file name>.data` beside the model (each initializer of at least
  // external_min_bytes at a 64-byte aligned offset; smaller ones stay inline). automatic:
  // external only when the weights would pass the 2 GiB one ONNX file can hold (protobuf's
  // limit). export_onnx_bytes writes inline weights only.
  enum class ExternalData { automatic, always, never };
  ExternalData external_data = ExternalData::automatic;
  uint64_t external_min_bytes = 1024;
};

// One node the exporter cannot write, and why.
struct OnnxExportRefusal {
  std::string value;  // the node's first output ("%12")
  std::string op;     // the Amber op ("roll")
  std::string source;
  std::string reason;
};

// An export that failed: what() lists every node that cannot be exported (refusals()).
class OnnxExportError : public Error {
 public:
  OnnxExportError(const std::string& message, std::vector<OnnxExportRefusal> refusals)
      : Error(message), refusals_(std::move(refusals)) {}
  const std::vector<OnnxExportRefusal>& refusals() const { return refusals_; }

 private:
  std::vector<OnnxExportRefusal> refusals_;
};

// Writing the model or its data file failed; the graph itself exported (the CLI's exit 3).
class OnnxWriteError : public Error {
  using Error::Error;
};

// The serialized ONNX ModelProto of g (a graph of the op table's ops, constants holding
// their data). Graphs over 2 GiB of weights are refused (protobuf's limit; export_onnx to
// a path writes them as external data), as is ExternalData::always.
std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options = {});
// What export_onnx wrote.
struct OnnxWritten {
  uint64_t model_bytes = 0;
  uint64_t external_bytes = 0;  // in onnx_path + ".data" (0 when every weight is inline)
};
// The same, written to onnx_path atomically; external data (options.external_data) goes to
// onnx_path + ".data", written atomically before the model.
OnnxWritten export_onnx(const graph::Graph& g, const std::string& onnx_path, const OnnxExportOptions& options = {});
OnnxWritten export_onnx(const TracedModule& m, const std::string& onnx_path, const OnnxExportOptions& options = {});
// Reads the archive at archive_path (validated like any load) and exports its graph.
OnnxWritten export_onnx(const std::string& archive_path, const std::string& onnx_path,
                        const OnnxExportOptions& options = {});

}  // namespace amber
