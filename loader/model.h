// The runtime's API for services: amber::load() reads and validates an archive (from a file
// or a memory buffer), puts its weights on the chosen device and compiles it into execution
// plans; amber::Model is a cheap, reference-counted handle to the immutable loaded model.
// forward() is safe from many threads at once, takes inputs on the host or the model's
// device, returns tensors the caller owns, and shares the cores between concurrent calls.
// Debug aids: anomaly mode (first node producing NaN/Inf) and a per-node profile.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amber/core/tensor.h"
#include "amber/schema/control_flow.h"
#include "amber/serialize/archive.h"

namespace amber {

namespace graph {
class Graph;
}

// The arithmetic a loaded model computes in (LoadOptions::precision).
enum class Precision : uint8_t {
  f32,  // the archive's dtypes throughout
  // Convolutions and linear layers multiply in bf16 with f32 accumulation (weights converted
  // once, at load; activations as they enter each one), everything else in f32: about twice
  // the speed of f32 on processors with AVX512-BF16, outputs within about 1% (docs/guide.md's
  // precision section has the measured errors). Offered only where the device's backend
  // computes bf16 natively (the CPU with AVX512-BF16; CUDA on GPUs of compute capability 8.0
  // and up, where a convolution's output is rounded to bf16 too); load says so otherwise.
  bf16,
  // Dynamic int8: linear layers and convolutions (not depthwise or transposed) multiply 8-bit
  // integers with int32 accumulation (weights quantized once, at load, a scale per output
  // channel; each call's sources quantized as they enter from their own range, no
  // calibration), everything else in f32. About 3.4 times the speed of f32 in those layers on
  // processors with AVX512-VNNI (the transformer encoder 2.4 times, ResNet-18 3.2 times
  // overall); outputs within about 0.5-1.5% (docs/guide.md's precision section). Offered only
  // where the device's backend computes int8 natively; load says so otherwise.
  dynamic_int8,
  // TF32 (CUDA): matrix products and convolutions multiply on the GPU's tensor cores with
  // their f32 inputs rounded to TF32 (10 mantissa bits; GPUs before Ampere compute f32) and
  // f32 accumulation; everything else, and all data, f32. Outputs within about 0.5% (the
  // e2e matrix's CUDA TF32 column bounds them at 1% of the output's largest magnitude).
  // Offered by the CUDA backend only; PyTorch's torch.backends.cuda.matmul.allow_tf32.
  tf32,
  // As bf16 with IEEE half (f16: 11 significant bits where bf16 keeps 8, largest finite
  // 65504) on the GPU's tensor cores: weights converted once, at load (a layer with a weight
  // beyond f16's range stays f32), activations as they enter each product. A model whose
  // activations leave f16's range gets Inf there (check_numerics names the node). Offered by
  // the CUDA backend on GPUs with f16 tensor cores (compute capability 7.0 and up).
  f16,
  // The whole model in bf16 (model.to(torch.bfloat16)): weights rounded once, at load; inputs
  // converted as they enter and outputs back to f32 as they leave (the model's signature is
  // unchanged); every value computed in f32 stored in bf16, each op computing in f32 on the
  // widened values and rounding its result once (docs/OPS.md, "16-bit floats"). Offered by
  // every backend: ops without a 16-bit kernel of their own run their f32 one between
  // conversions, so on the CPU it costs more than f32 and serves to see what a GPU's 16-bit
  // model will compute; where the backend multiplies bf16 natively (AMBER_BACKEND_BF16),
  // convolutions and matrix products do so. Explicit conversions in the model (`to`) stay as
  // written; control flow runs in f32 between conversions.
  bf16_model,
  // The same in IEEE half (f16): a weight with a value beyond f16's range (65504) stays f32 and
  // the ops reading it compute in f32; activations beyond it become Inf (anomaly_mode names the
  // node).
  f16_model,  // the last: precision_from_name walks them all
};
const char* precision_name(Precision p);  // "f32", "bf16", "dynamic-int8", "tf32", "f16", "bf16-model", "f16-model"
// The precision precision_name calls name, or nullopt.
std::optional<Precision> precision_from_name(std::string_view name);

struct LoadOptions {
  // Where the model runs: the CPU (weights stay zero-copy views of the archive's mapping) or
  // any device whose backend is available (weights uploaded once, at load).
  Device device = Device::cpu();
  // Intra-op threads for one call; 0: every core the process may use. Concurrent calls
  // share them (each gets total / concurrent calls, at least one).
  int num_threads = 0;
  bool verify_checksums = true;  // XXH3-64 of every weight record at load
  // Checks every node's float outputs; the first NaN or Inf fails the call with an error
  // naming the node, its source line and module path. Costs a pass over each output.
  bool anomaly_mode = false;
  bool profile = false;  // per-node time, calls and bytes (Model::profile)
  // Intermediate memory one call may use: a call needing more fails with an amber::Error
  // (and so does load, when the traced batch size needs more). 0: the machine's physical
  // memory. Archives come from anywhere: this bounds what a hostile graph can make load or
  // a call allocate.
  size_t max_workspace_bytes = 0;
  // The largest archive accepted, and the most memory parsing its model.pb may take
  // (serialize/archive.h's ArchiveReadOptions, which documents both).
  uint64_t max_archive_bytes = ArchiveReadOptions{}.max_archive_bytes;
  uint64_t max_model_memory = ArchiveReadOptions{}.max_model_memory;
  // Outputs of forward() on the host rather than on the model's device (CallOptions can ask
  // per call).
  bool outputs_on_host = false;
  // Calls the model on zeros at the end of load (at the traced batch size; four times when a
  // call takes under 1 ms), so the first call costs what later ones do: load takes a call
  // longer. On devices with graphs it also records the first call slot's graphs, for inputs
  // on the device and from the host, and for both sets of output buffers it hands out (a few
  // more calls). A model whose kernels reject zeros loads all the same, only without the warm-up.
  bool warm_up = true;
  // On devices with graphs (CUDA graphs): each concurrent call slot of each batch size's plan
  // records its kernels once per set of output buffers, on the set's second call (the
  // warm-up's, with warm_up, for the first slot's two sets), and later calls
  // replay that one graph: a steady-state call is the input copies, one launch and the output
  // copies. A slot then keeps its intermediate memory (and output buffers) rather than
  // returning it to the model's pool between calls. Ignored on the CPU, and for calls made with
  // anomaly_mode or profile.
  bool device_graphs = true;
  // Op libraries (paths of shared libraries defining custom ops; schema/op_library.h) to
  // load before the archive is read. An archive never loads code by itself: one using ops
  // of a library not loaded here (or earlier, with amber::load_op_library) fails to load,
  // naming every missing op and its namespace.
  std::vector<std::string> op_libraries = {};
  // The arithmetic of convolutions and matrix products (Precision); the same archive serves
  // either.
  Precision precision = Precision::f32;
  // The most loop body runs one call may make (all `loop` nodes, nested ones included): a
  // trip count comes from data, so this bounds how long a call can run. A call that would
  // pass it fails with an amber::Error naming the loop.
  int64_t max_loop_trips = kDefaultMaxLoopTrips;
};

// A model input or output: name, dtype and shape ("[N, 3, 224, 224]", "[N, T, 512]": N, T
// the sizes the model was traced to take at any value: the batch, a sequence length).
struct IOInfo {
  std::string name;
  DType dtype = DType::f32;
  std::string shape;
  bool dynamic = false;  // some dim depends on a symbol
  // The sizes at these symbol values (the sizes themselves for static shapes).
  DimVec sizes_at(const graph::SymValues& v) const;
  // The sizes at batch size n (the model's other symbols at their traced sizes).
  DimVec sizes_at(int64_t n) const;
  graph::SymShape dims;
  graph::SymValues traced;  // the model's traced sizes
};

struct NodeProfile {
  std::string node;    // "%12 = conv2d"
  std::string op;      // "conv2d"
  std::string source;  // "model.cpp:21 @layer1.0.conv1", or ""
  uint64_t calls = 0;
  double total_ms = 0;   // host time: the launch, the kernel and, on devices with streams, a synchronisation
  double device_ms = 0;  // the device's time for the node (between timing marks), 0 where not measured (the CPU)
  uint64_t bytes = 0;    // bytes of outputs written, over all calls
};

// Per call choices of Model::forward.
struct CallOptions {
  // A stream of the model's device (from its backend, e.g. a cudaStream_t) to run the call
  // on; null: the call takes a stream of its own. Either way forward() synchronises it before
  // returning, so outputs are ready.
  void* stream = nullptr;
  // Outputs copied to host memory (also when LoadOptions::outputs_on_host is set).
  bool outputs_on_host = false;
  // A tighter bound on this call's loop iterations than LoadOptions::max_loop_trips (the
  // smaller applies); 0: that one.
  int64_t max_loop_trips = 0;
};

class Model {
 public:
  Model() = default;  // an empty handle; forward() throws
  bool defined() const { return bool(impl_); }

  // Runs the model. inputs are in the order of inputs(), of the given dtypes and shapes, any
  // strides, each on the host or on the model's device (host inputs are copied over). The
  // outputs are on the model's device unless host outputs are asked for. Throws amber::Error
  // naming the input and what was expected, or the node that failed; a failed call leaves
  // the model usable.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs, const CallOptions& call = {}) const;

  const std::vector<IOInfo>& inputs() const;
  const std::vector<IOInfo>& outputs() const;
  // Producer, format version, example input shapes, trace warnings, weight counts.
  const ArchiveInfo& metadata() const;
  const LoadOptions& options() const;
  Device device() const;
  std::string graph_text() const;
  // The validated graph as stored (before per-device planning).
  const graph::Graph& graph() const;
  // The batch size the model was traced at (0 when unknown or static).
  int64_t traced_batch() const;
  // The symbols' sizes load planned for: each at its traced size (1 when unknown).
  const graph::SymValues& traced_sizes() const;
  // Bytes of intermediate memory one call at batch size n (the other symbols at their traced
  // sizes) or at sizes v uses (plans it if needed).
  size_t workspace_bytes(int64_t n = -1) const;
  size_t workspace_bytes(const graph::SymValues& v) const;

  // Per-node counters since load or the last reset (needs LoadOptions::profile), summed over
  // every batch size run, in node order.
  std::vector<NodeProfile> profile() const;
  void reset_profile() const;

  struct Impl;

 private:
  friend Model load(const std::string&, const LoadOptions&);
  friend Model load(std::span<const uint8_t>, const LoadOptions&);
  std::shared_ptr<Impl> impl_;
};

// Loads an archive: reads and validates everything (docs/FORMAT.md; shared/RELIABILITY.md),
// maps the weights read-only and compiles the plan for the traced batch size, so the first
// call runs at full speed. Throws amber::Error naming the file and the problem.
Model load(const std::string& path, const LoadOptions& options = {});
// The same from an archive in memory (copied once; the caller's buffer may go away).
Model load(std::span<const uint8_t> bytes, const LoadOptions& options = {});

}  // namespace amber
