// cuDNN 9 backend-API plumbing shared by the execution plans Amber builds (conv_plan.h,
// attention_plan.h): descriptors owned and destroyed together, attributes set with the failure
// named, tensor descriptors, and a plan's run with its variant pack (kept while a graph being
// recorded may refer to it). Private to libamber_cuda.so.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace amber::cuda::cudnn_graph {

// A failed step while building, with what failed and cuDNN's word for it.
struct Fail {
  std::string why;
};
// Throws Fail{what: cuDNN's status} unless st is success.
void check(cudnnStatus_t st, const char* what);
void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* value, const char* what);

// Descriptors made for one plan, destroyed together (last made, first destroyed), after the
// plan itself and the variant packs of recorded runs.
class Descriptors {
 public:
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors();
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type);
  // A finalized tensor descriptor: n dims and strides in elements, its unique id, 16-byte
  // alignment; virtual (between the graph's operations) or by value (a host scalar).
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type, int n, const int64_t* dims, const int64_t* strides,
                                  bool is_virtual = false, bool by_value = false);
  // The finalized operation graph of ops on handle.
  cudnnBackendDescriptor_t graph(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops);
  // The engine configs heuristics mode `mode` ranks for graph, best first (empty when none).
  std::vector<cudnnBackendDescriptor_t> configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode);
  // A config's engine's global index and numerical notes (false when they cannot be read).
  bool engine_of(cudnnBackendDescriptor_t config, int64_t* index, std::vector<cudnnBackendNumericalNote_t>* notes);

  // Runs plan on the handle's stream with the n tensors' ids and pointers and the workspace; a
  // run recorded into a CUDA graph (the stream capturing) keeps its variant pack until this set
  // is destroyed, in case the engine's recorded work refers to the pack's host memory.
  cudnnStatus_t execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, int n, const int64_t* uids,
                        void* const* pointers, void* workspace);
  // Hands plan (an EXECUTION_PLAN descriptor, finalized or not) to this set to destroy.
  void own_plan(cudnnBackendDescriptor_t plan) { plans_.push_back(plan); }

 private:
  std::vector<cudnnBackendDescriptor_t> owned_;           // made by make(), in order
  std::vector<cudnnBackendDescriptor_t> plans_;           // destroyed before owned_
  std::vector<cudnnBackendDescriptor_t> captured_packs_;  // variant packs of runs recorded into graphs
};

// A finalized execution plan of config on handle and its workspace bytes, or NULL (nothing is
// left behind) when the config does not make one.
cudnnBackendDescriptor_t make_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t config, int64_t* workspace);

}  // namespace amber::cuda::cudnn_graph
