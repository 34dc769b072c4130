// CUDA kernel for scaled_dot_product_attention in f32, a fused kernel of Amber's own: one block
// per (batch entry, query row) computes the row's scores q k^T / sqrt(E) into shared memory
// (the mask or causal mask applied), their softmax, then the row of scores v. The scores of
// a row live in shared memory, which bounds the key length (about 12k keys at 48 KiB); longer
// sequences are refused with an error. Batch dims of q, k, v and the mask broadcast as on the
// CPU. (cuDNN's fused attention, for the shapes it takes, is later work.)

#include <cmath>

#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/pointwise_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxKeys = (48 * 1024) / sizeof(float) - 2 * kThreads;

struct View {
  const float* data;
  int ndim;
  int64_t sizes[AMBER_MAX_DIMS], strides[AMBER_MAX_DIMS];
};
View view_of(const amber_tensor_view& v) {
  View r{static_cast<const float*>(v.data), v.ndim, {}, {}};
  for (int d = 0; d < v.ndim; ++d) r.sizes[d] = v.sizes[d], r.strides[d] = v.strides[d];
  return r;
}

struct Batch {
  int nb;
  int64_t sizes[AMBER_MAX_DIMS];
};

// The offset of batch entry b in v, whose last two dims are matrices and whose batch dims
// broadcast against bsizes (right-aligned; size-1 dims repeat).
__device__ int64_t batch_offset(const View& v, const Batch& bt, int64_t b) {
  int64_t off = 0;
  for (int d = bt.nb - 1; d >= 0; --d) {
    const int64_t i = b % bt.sizes[d];
    b /= bt.sizes[d];
    const int vd = d - (bt.nb - (v.ndim - 2));
    if (vd >= 0 && v.sizes[vd] != 1) off += i * v.strides[vd];
  }
  return off;
}

__global__ void sdpa_kernel(View q, View k, View v, View mask, bool has_mask, bool bool_mask, bool causal, Batch bt,
                            float* out, int64_t L, int64_t S, int64_t E, int64_t Ev, float scale) {
  extern __shared__ float smem[];
  float* scores = smem;   // S
  float* red = smem + S;  // kThreads
  const int64_t b = blockIdx.x / L, row = blockIdx.x % L;
  const int r = q.ndim;
  const float* qp = q.data + batch_offset(q, bt, b) + row * q.strides[r - 2];
  const float* kp = k.data + batch_offset(k, bt, b);
  const float* vp = v.data + batch_offset(v, bt, b);
  const int64_t mo = has_mask ? batch_offset(mask, bt, b) : 0;
  const int64_t msr = has_mask && mask.ndim >= 2 && mask.sizes[mask.ndim - 2] != 1 ? mask.strides[mask.ndim - 2] : 0;
  const int64_t msc = has_mask && mask.ndim >= 1 && mask.sizes[mask.ndim - 1] != 1 ? mask.strides[mask.ndim - 1] : 0;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    const float* kr = kp + j * k.strides[r - 2];
    float s = 0;
    for (int64_t e = 0; e < E; ++e) s += qp[e * q.strides[r - 1]] * kr[e * k.strides[r - 1]];
    s *= scale;
    if (has_mask) {
      const int64_t m = mo + row * msr + j * msc;
      if (bool_mask)
        s = reinterpret_cast<const bool*>(mask.data)[m] ? s : -INFINITY;
      else
        s += mask.data[m];
    }
    if (causal && j > row) s = -INFINITY;
    scores[j] = s;
    mx = fmaxf(mx, s);
  }
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int t = kThreads / 2; t > 0; t /= 2) {
    if (int(threadIdx.x) < t) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + t]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    const float p = pw::exp_(scores[j] - mx);
    scores[j] = p;
    sum += p;
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int t = kThreads / 2; t > 0; t /= 2) {
    if (int(threadIdx.x) < t) red[threadIdx.x] += red[threadIdx.x + t];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  float* orow = out + (b * L + row) * Ev;
  for (int64_t e = threadIdx.x; e < Ev; e += blockDim.x) {
    float acc = 0;
    for (int64_t j = 0; j < S; ++j) acc += scores[j] * vp[j * v.strides[r - 2] + e * v.strides[r - 1]];
    orow[e] = S == 0 ? NAN : acc * inv;
  }
}

// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal)
int sdpa(const amber_kernel_args* a) {
  const amber_tensor_view &q = a->inputs[0], &k = a->inputs[1], &v = a->inputs[2], &mask = a->inputs[3];
  const amber_tensor_view& out = a->outputs[0];
  const int r = q.ndim;
  const int64_t L = q.sizes[r - 2], E = q.sizes[r - 1], S = k.sizes[r - 2], Ev = v.sizes[r - 1];
  Batch bt{r - 2, {}};
  int64_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= (bt.sizes[d] = q.sizes[d]);
  if (L == 0 || Ev == 0 || batches == 0) return 0;
  if (S > kMaxKeys)
    return fail(a, "scaled_dot_product_attention: %lld keys is more than this CUDA kernel holds (%lld)", (long long)S,
                (long long)kMaxKeys);
  const bool has_mask = present(mask);
  DeviceScope scope(a->device);
  const size_t smem = size_t(S + kThreads) * sizeof(float);
  sdpa_kernel<<<unsigned(batches * L), kThreads, smem, stream_of(a)>>>(
      view_of(q), view_of(k), view_of(v), has_mask ? view_of(mask) : View{}, has_mask, has_mask && mask.dtype == kBool,
      a->attrs[op_attrs::scaled_dot_product_attention::is_causal].i != 0, bt, static_cast<float*>(out.data), L, S, E,
      Ev, float(1.0 / std::sqrt(double(E))));
  return launched(a, "scaled_dot_product_attention");
}

AMBER_CUDA_KERNELS(attention) { register_kernel("scaled_dot_product_attention", kF32, &sdpa); }

}  // namespace
}  // namespace amber::cuda
