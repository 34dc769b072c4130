// AttentionPlan (attention_plan.h): cuDNN's unified SDPA forward operation on Q, K, V, O and a
// scale passed by value, in an operation graph of its own, and its first heuristic engine.
// Built only against cuDNN headers of 9.13.1 and later (a GPU machine's Python packages may
// carry older ones: then build() says so).

#include "amber/kernels/cuda/attention_plan.h"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace amber::cuda {
namespace {

constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kScale = 5;  // tensor unique ids
constexpr size_t kUnifiedSdpa = 91301;                         // the first cuDNN with the operation

}  // namespace

bool AttentionShape::operator==(const AttentionShape& other) const {
  auto same = [](const int64_t(&a)[4], const int64_t(&b)[4]) { return std::equal(a, a + 4, b); };
  return type == other.type && scale == other.scale && same(q, other.q) && same(k, other.k) && same(v, other.v) &&
         same(o, other.o) && same(qs, other.qs) && same(ks, other.ks) && same(vs, other.vs) && same(os, other.os);
}

std::string AttentionPlan::build(cudnnHandle_t handle, const AttentionShape& s) {
  if (cudnnGetVersion() < kUnifiedSdpa)
    return "cuDNN " + std::to_string(cudnnGetVersion()) + " has no unified SDPA operation (9.13.1 and later)";
#if CUDNN_VERSION >= 91301
  scale_ = s.scale;
  std::string why;
  // The scale as the frontend passes it (one element), then as a [1, 1, 1, 1] tensor.
  for (int scale_rank : {1, 4}) {
    try {
      cudnnBackendDescriptor_t q = d_.tensor(kQ, s.type, 4, s.q, s.qs), k = d_.tensor(kK, s.type, 4, s.k, s.ks),
                               v = d_.tensor(kV, s.type, 4, s.v, s.vs), o = d_.tensor(kO, s.type, 4, s.o, s.os);
      const int64_t ones[4] = {1, 1, 1, 1};
      cudnnBackendDescriptor_t scale =
          d_.tensor(kScale, CUDNN_DATA_FLOAT, scale_rank, ones, ones, /*is_virtual=*/false, /*by_value=*/true);
      cudnnBackendDescriptor_t op = d_.make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
      cudnn_graph::set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q, "sdpa q");
      cudnn_graph::set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k, "sdpa k");
      cudnn_graph::set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, "sdpa v");
      cudnn_graph::set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o, "sdpa o");
      cudnn_graph::set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &scale,
                       "sdpa scale");
      cudnn_graph::check(cudnnBackendFinalize(op), "finalizing the SDPA operation");
      cudnnBackendDescriptor_t graph = d_.graph(handle, {op});
      for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        for (cudnnBackendDescriptor_t config : d_.configs(graph, mode)) {
          plan_ = cudnn_graph::make_plan(handle, config, &workspace_);
          if (!plan_) continue;
          d_.own_plan(plan_);
          d_.engine_of(config, &engine_, nullptr);
          return "";
        }
      }
      why = "cuDNN's heuristics offer no engine for this attention";
    } catch (const cudnn_graph::Fail& f) {
      (void)cudaGetLastError();
      why = f.why;
    }
  }
  return why;
#else
  (void)handle;
  (void)s;
  return "built against cuDNN " + std::to_string(CUDNN_VERSION) + " headers, without the unified SDPA operation";
#endif
}

cudnnStatus_t AttentionPlan::run(cudnnHandle_t handle, const void* q, const void* k, const void* v, void* o,
                                 void* workspace) {
  const int64_t ids[5] = {kQ, kK, kV, kO, kScale};
  void* const pointers[5] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, &scale_};
  return d_.execute(handle, plan_, 5, ids, pointers, workspace);
}

}  // namespace amber::cuda
