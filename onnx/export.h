// ONNX export: writes an Amber graph (a traced module or an archive's graph) as an ONNX model
// of the default domain, opset 17, on Debian's libonnx (its protobuf classes, checker and
// shape inference). Fused nodes are expanded back into ONNX's own ops, weights become
// initializers, and the dynamic batch N becomes the symbolic dim "N". Authoring only.
#pragma once

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

// The serialized ONNX ModelProto of g (a graph of the op table's ops, constants holding
// their data). Graphs over 2 GiB of weights are refused (protobuf's limit).
std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options = {});
// The same, written to onnx_path atomically.
void export_onnx(const graph::Graph& g, const std::string& onnx_path, const OnnxExportOptions& options = {});
void export_onnx(const TracedModule& m, const std::string& onnx_path, const OnnxExportOptions& options = {});
// Reads the archive at archive_path (validated like any load) and exports its graph.
void export_onnx(const std::string& archive_path, const std::string& onnx_path, const OnnxExportOptions& options = {});

}  // namespace amber
