// Post-training int8 quantization (authoring only; `amber quantize`): runs a graph on
// calibration inputs, records the range of every convolution's and linear layer's input,
// and rewrites those nodes as quantized_conv2d / quantized_linear with int8 weights (a
// symmetric scale per output channel) and the input's calibrated uint8 scale and zero point.
#pragma once

#include <string>
#include <vector>

#include "amber/graph/graph.h"

namespace amber {

struct QuantizeOptions {
  // How an input's range is chosen from the values the calibration runs saw: `percentile`
  // drops the `percentile`-th percent tails at both ends (a histogram of 2048 bins over the
  // observed extremes, so a few outliers do not spend the 256 levels); `minmax` keeps the
  // extremes. Either range is widened to hold 0, which is then exact.
  enum class Calibration { minmax, percentile };
  Calibration calibration = Calibration::percentile;
  double percentile = 99.99;  // in (50, 100]
  // Samples per run of the graph: 0 runs the graph's own batch when its inputs' first dim is
  // static, else 32 at a time.
  int64_t batch = 0;
  // Keep activations in uint8 between consecutive int8 layers: a layer whose output (after a
  // ReLU, clamp or hardtanh it absorbs) is read only by other int8 layers as their input, or by
  // residual additions that become quantized_add, directly or through max_pool2d and views,
  // writes uint8 with the range calibrated on that output (quantized_conv2d.u8 /
  // quantized_linear.u8), and its readers take it as it is. An addition (add, or a fused add
  // and ReLU) of two such uint8 values whose sum only such readers take becomes
  // quantized_add. A convolution absorbs the activation after it also when its output stays
  // f32. Off: every int8 layer reads and writes f32, as in format 1.3.
  bool chain = true;
  // With chain: make residual additions quantized_add (format 1.5). Off: they stay f32 and
  // the layers they read write f32 (format 1.4). On, each addition rounds its operands to
  // uint8 once more (seeded ResNet-18: top-1 agreement with f32 95.8% -> 94.6%) and the
  // model runs faster (ResNet-18 0.93x, ResNet-50 0.88x; bench/README.md).
  bool additions = true;
};

// What became of one candidate node (conv2d, fused_conv2d or linear of constant f32 weights).
struct QuantizedNode {
  std::string value;  // the node's output, as named in the graph
  std::string op;     // the op it was
  bool quantized = false;
  std::string reason;     // why not, when not
  float lo = 0, hi = 0;   // the input's calibrated range (of the uint8 input it reads, when input_u8)
  float input_scale = 0;  // (hi - lo) / 255
  int64_t input_zero_point = 0;
  bool input_u8 = false;  // reads the uint8 output of the int8 layer before it
  std::string folded;     // the activation absorbed ("relu", "clamp", "hardtanh"), named by its output
  std::string folded_value;
  bool output_u8 = false;  // writes uint8 for the int8 layers after it
  float output_scale = 0;
  int64_t output_zero_point = 0;
};

struct QuantizeReport {
  int64_t samples = 0;  // calibration samples run
  std::vector<QuantizedNode> nodes;
  int additions = 0;  // residual additions made quantized_add (both operands and the sum uint8)
  int quantized() const;
};

// Calibrates and rewrites g. calibration holds one tensor per graph input, in order: that
// input's samples stacked along the first dim (a model of input [N, 3, 224, 224] takes
// [S, 3, 224, 224]). Nodes left in f32 are reported with the reason: depthwise convolutions
// (int8 gains nothing there), weights that are not constants, sums longer than
// AMBER_MAX_INT8_REDUCTION, inputs that were never seen with a non-zero finite value, nodes
// inside control-flow bodies (not observed by the calibration runs).
// Throws amber::Error naming the input when the calibration tensors do not fit the graph
// (checked when some node is to be calibrated; a graph with none is returned as it is).
QuantizeReport quantize_int8(graph::Graph& g, const std::vector<Tensor>& calibration,
                             const QuantizeOptions& options = {});

}  // namespace amber
