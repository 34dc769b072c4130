// Inference batch_norm's CUDA formula (reduce.cu runs it through cuda_util.cuh's strided map):
// the functor, and its per-channel operands as views along dim 1 of the input (absent ones a
// null pointer the functor reads as the neutral value), in a header of its own so that
// tests/test_map_emulated.cpp runs the same code on the CPU against the CPU's batch_norm.
// Private to libamber_cuda.so.
#pragma once

#include <cmath>

#include "amber/kernels/cuda/cuda_util.cuh"

namespace amber::cuda {

// ---- batch_norm (inference): y = x * alpha[c] + beta[c], alpha = w / sqrt(var + eps),
// beta = b - mean * alpha, as the CPU computes them ----
template <typename T>
struct BatchNormF {
  double eps;
  __device__ void operator()(char* const* p) const {
    using C = compute_t<T>;
    auto at = [&](int k, C absent) {  // a per-channel value, or the neutral one
      const T* v = reinterpret_cast<const T*>(p[k]);
      return v ? load_as_compute(*v) : absent;
    };
    const C invstd = C(1) / std::sqrt(at(5, C(1)) + C(eps));
    const C alpha = invstd * at(2, C(1));
    const C beta = at(3, C(0)) - at(4, C(0)) * alpha;
    *reinterpret_cast<T*>(p[0]) = cast_value<T>(load_as_compute(*reinterpret_cast<const T*>(p[1])) * alpha + beta);
  }
};

// inputs: batch_norm's (input, weight, bias, running_mean, running_var); ch: weight, bias,
// running_mean and running_var as views of the input's rank along its dim 1 (zero strides
// elsewhere; absent ones all size 1 with a null pointer).
inline void batch_norm_channels(const amber_tensor_view* inputs, amber_tensor_view (&ch)[4]) {
  const amber_tensor_view& x = inputs[0];
  for (int i = 0; i < 4; ++i) {
    const amber_tensor_view& v = inputs[i + 1];
    ch[i] = amber_tensor_view{};
    ch[i].ndim = x.ndim;
    ch[i].dtype = x.dtype;
    for (int d = 0; d < x.ndim; ++d) {
      ch[i].sizes[d] = d == 1 && present(v) ? x.sizes[1] : 1;
      ch[i].strides[d] = d == 1 && present(v) ? v.strides[0] : 0;
    }
    ch[i].data = present(v) ? v.data : nullptr;
  }
}

}  // namespace amber::cuda
