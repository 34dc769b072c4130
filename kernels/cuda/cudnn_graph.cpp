// cudnn_graph.h: descriptor ownership, attribute setting, tensors, operation graphs, heuristics'
// engine configs, plans and their runs for cuDNN 9's backend API.

#include "amber/kernels/cuda/cudnn_graph.h"

#include <cuda_runtime_api.h>

namespace amber::cuda::cudnn_graph {

void check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) throw Fail{std::string(what) + ": " + cudnnGetErrorString(st)};
}

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* value, const char* what) {
  check(cudnnBackendSetAttribute(d, name, type, count, value), what);
}

Descriptors::~Descriptors() {
  for (cudnnBackendDescriptor_t pack : captured_packs_) cudnnBackendDestroyDescriptor(pack);
  for (cudnnBackendDescriptor_t plan : plans_) cudnnBackendDestroyDescriptor(plan);
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
}

cudnnBackendDescriptor_t Descriptors::make(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  check(cudnnBackendCreateDescriptor(type, &d), "creating a cuDNN descriptor");
  owned_.push_back(d);
  return d;
}

cudnnBackendDescriptor_t Descriptors::tensor(int64_t uid, cudnnDataType_t type, int n, const int64_t* dims,
                                             const int64_t* strides, bool is_virtual, bool by_value) {
  const int64_t alignment = 16;
  cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor dtype");
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, n, dims, "tensor dims");
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, n, strides, "tensor strides");
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor id");
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "tensor alignment");
  const bool yes = true;
  if (is_virtual) set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, "virtual tensor");
  if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor by value");
  check(cudnnBackendFinalize(t), "finalizing a tensor descriptor");
  return t;
}

cudnnBackendDescriptor_t Descriptors::graph(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops) {
  cudnnBackendDescriptor_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data(), "graph ops");
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
  check(cudnnBackendFinalize(g), "finalizing the operation graph");
  return g;
}

std::vector<cudnnBackendDescriptor_t> Descriptors::configs(cudnnBackendDescriptor_t graph,
                                                           cudnnBackendHeurMode_t mode) {
  cudnnBackendDescriptor_t heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph");
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
  int64_t count = 0;
  if (cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS)
    return {};
  std::vector<cudnnBackendDescriptor_t> found;
  for (int64_t i = 0; i < count; ++i) found.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                               found.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  found.resize(size_t(count));
  return found;
}

bool Descriptors::engine_of(cudnnBackendDescriptor_t config, int64_t* index,
                            std::vector<cudnnBackendNumericalNote_t>* notes) {
  cudnnBackendDescriptor_t engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index) !=
          CUDNN_STATUS_SUCCESS)
    return false;
  if (!notes) return true;
  cudnnBackendNumericalNote_t found[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t n_notes = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n_notes, found) != CUDNN_STATUS_SUCCESS)
    return false;
  notes->assign(found, found + n_notes);
  return true;
}

cudnnStatus_t Descriptors::execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, int n, const int64_t* uids,
                                   void* const* pointers, void* workspace) {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if ((st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids)) ==
          CUDNN_STATUS_SUCCESS &&
      (st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers)) ==
          CUDNN_STATUS_SUCCESS &&
      (st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)) ==
          CUDNN_STATUS_SUCCESS &&
      (st = cudnnBackendFinalize(pack)) == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendExecute(handle, plan, pack);
  // Untested hypothesis for the crash with conv plans under 8 threads (README, GPUs): a graph
  // replay reading a destroyed pack's host memory. Packs of recorded runs are kept.
  cudaStream_t stream = nullptr;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (st == CUDNN_STATUS_SUCCESS && cudnnGetStream(handle, &stream) == CUDNN_STATUS_SUCCESS &&
      cudaStreamIsCapturing(stream, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusActive) {
    captured_packs_.push_back(pack);
    return st;
  }
  cudnnBackendDestroyDescriptor(pack);
  return st;
}

cudnnBackendDescriptor_t make_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t config, int64_t* workspace) {
  cudnnBackendDescriptor_t plan = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS)
    return nullptr;
  int64_t n = 0;
  if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) ==
          CUDNN_STATUS_SUCCESS &&
      cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &config) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, workspace) ==
          CUDNN_STATUS_SUCCESS)
    return plan;
  cudnnBackendDestroyDescriptor(plan);
  return nullptr;
}

}  // namespace amber::cuda::cudnn_graph
