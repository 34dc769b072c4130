// The int8 CUDA kernels launched (docs/OPS.md, "Int8 convolutions and linear layers"):
// quantized_conv2d, quantized_linear and their .u8 overloads (device code in quantized_kernels.cuh:
// a thread an output, quant_direct.h's exact int32 sum and epilogue, shared with the CPU; a NaN
// image flagged first), and quantized_add. Direct kernels, no tensor cores: correct everywhere, not yet
// fast (cuDNN's int8 convolutions and cuBLASLt's int8 products want channels in multiples of 4).

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/quantized_kernels.cuh"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/quant_math.h"
#include "amber/op_attrs.h"

namespace amber::cuda {
namespace {

using namespace quantized;  // the kernels and their arguments (quantized_kernels.cuh)

// A convolution writing f32 from an f32 source needs its images' NaN flags in the workspace.
bool flags_images(const amber_kernel_args* a, bool u8_out) { return !u8_out && a->inputs[0].dtype == kF32; }

// A loaded model's constant weight scales and bias (setup sees their data, in device memory)
// held to quant::scale_error's rule as the CPU's setup holds them: an archive with a negative or
// NaN scale is refused at load on either device. Computed ones (no data at setup) go unchecked:
// checking them would cost a copy back and a wait on every call.
int check_constant_scales(const amber_kernel_args* a, const char* op) {
  const amber_tensor_view &s = a->inputs[2], &b = a->inputs[3];
  const int64_t n = s.sizes[0];
  if (n == 0 || !s.data || (present(b) && !b.data)) return 0;
  std::vector<float> scales, bias;
  auto to_host = [n](const amber_tensor_view& v, std::vector<float>& out) {
    out.resize(size_t((n - 1) * v.strides[0] + 1));
    return cudaMemcpy(out.data(), v.data, out.size() * sizeof(float), cudaMemcpyDefault);
  };
  std::unique_lock no_capture(capture_lock());  // a synchronous copy would spoil a capture in flight
  DeviceScope scope(a->device);
  cudaError_t e = to_host(s, scales);
  if (e == cudaSuccess && present(b)) e = to_host(b, bias);
  if (e != cudaSuccess) return fail(a, "%s: reading its weight scales at setup failed: %s", op, cudaGetErrorString(e));
  const std::string error = quant::scale_error(scales.data(), s.strides[0], present(b) ? bias.data() : nullptr,
                                               present(b) ? b.strides[0] : 0, n, op);
  return error.empty() ? 0 : fail(a, "%s", error.c_str());
}

template <bool U8Out>
int conv_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes = 0;
  if (check_constant_scales(a, U8Out ? "quantized_conv2d.u8" : "quantized_conv2d") != 0) return 1;
  const int64_t images = a->inputs[0].ndim == 4 ? a->inputs[0].sizes[0] : 1;
  *workspace_bytes = flags_images(a, U8Out) ? size_t(images) * sizeof(int32_t) : 0;
  return 0;
}

template <bool U8Out>
int linear_setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
  *state = nullptr;
  *workspace_bytes = 0;
  return check_constant_scales(a, U8Out ? "quantized_linear.u8" : "quantized_linear");
}

template <typename TX, typename TY>
int launch_conv(const amber_kernel_args* a, const ConvGeometry& g, const Quant& q, int32_t* flags) {
  const int64_t total = g.n * g.oc * g.oh * g.ow;
  enqueue(a, &quantized_conv_kernel<TX, TY>, dim3(grid_for(total)), dim3(256),
          static_cast<const TX*>(a->inputs[0].data), static_cast<const int8_t*>(a->inputs[1].data),
          static_cast<const float*>(a->inputs[2].data),
          present(a->inputs[3]) ? static_cast<const float*>(a->inputs[3].data) : nullptr,
          static_cast<TY*>(a->outputs[0].data), g, q, flags);
  return launched(a, "quantized_conv2d");
}

template <bool U8Out>
int quantized_conv(const amber_kernel_args* a) {
  const ConvGeometry g = quant::conv_geometry(a);
  if (g.n * g.oc * g.oh * g.ow == 0) return 0;
  const Quant q = quant::conv_quant<U8Out>(a);
  DeviceScope scope(a->device);
  int32_t* flags = nullptr;
  if (flags_images(a, U8Out)) {
    if (a->workspace_bytes < size_t(g.n) * sizeof(int32_t))
      return fail(a, "quantized_conv2d: called without its setup");
    flags = static_cast<int32_t*>(a->workspace);
    if (cudaMemsetAsync(flags, 0, size_t(g.n) * sizeof(int32_t), stream_of(a)) != cudaSuccess)
      return launched(a, "quantized_conv2d");
    if (g.c * g.h * g.w > 0)
      enqueue(a, &flag_nan_images<>, dim3(grid_for(g.n * g.c * g.h * g.w)), dim3(256),
              static_cast<const float*>(a->inputs[0].data), g, flags);
  }
  const bool u8_in = a->inputs[0].dtype == kU8;
  if constexpr (U8Out)
    return u8_in ? launch_conv<uint8_t, uint8_t>(a, g, q, flags) : launch_conv<float, uint8_t>(a, g, q, flags);
  else
    return u8_in ? launch_conv<uint8_t, float>(a, g, q, flags) : launch_conv<float, float>(a, g, q, flags);
}

// ---- quantized_linear ----

template <typename TX, typename TY>
int launch_linear(const amber_kernel_args* a, const Rows& rows, int64_t n_rows, const Quant& q) {
  const amber_tensor_view &w = a->inputs[1], &b = a->inputs[3];
  const LinearGeometry l = linear_geometry(w, a->inputs[2], b);
  enqueue(a, &quantized_linear_kernel<TX, TY>, dim3(grid_for(n_rows * l.out_f)), dim3(256),
          static_cast<const TX*>(a->inputs[0].data), static_cast<const int8_t*>(w.data),
          static_cast<const float*>(a->inputs[2].data), present(b) ? static_cast<const float*>(b.data) : nullptr,
          static_cast<TY*>(a->outputs[0].data), rows, n_rows, l, q);
  return launched(a, "quantized_linear");
}

template <bool U8Out>
int quantized_linear(const amber_kernel_args* a) {
  const amber_tensor_view& x = a->inputs[0];
  int64_t n_rows = 0;
  const Rows rows = linear_rows(x, n_rows);
  if (n_rows * a->inputs[1].sizes[0] == 0) return 0;
  const Quant q = quant::linear_quant<U8Out>(a);
  DeviceScope scope(a->device);
  const bool u8_in = x.dtype == kU8;
  if constexpr (U8Out)
    return u8_in ? launch_linear<uint8_t, uint8_t>(a, rows, n_rows, q)
                 : launch_linear<float, uint8_t>(a, rows, n_rows, q);
  else
    return u8_in ? launch_linear<uint8_t, float>(a, rows, n_rows, q) : launch_linear<float, float>(a, rows, n_rows, q);
}

// ---- quantized_add: one thread per element (cuda_util.cuh's strided map), add_u8's formula ----

template <Act A>
struct AddF {
  quant::AddParams q;
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<uint8_t*>(p[0]) =
        quant::add_u8<A>(*reinterpret_cast<const uint8_t*>(p[1]), *reinterpret_cast<const uint8_t*>(p[2]), q);
  }
};

int quantized_add(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_add;
  quant::AddParams q;
  q.sa = double(float(a->attrs[at::self_scale].f));
  q.za = double(a->attrs[at::self_zero_point].i);
  q.sb = double(float(a->attrs[at::other_scale].f));
  q.zb = double(a->attrs[at::other_zero_point].i);
  q.act = act_of(a->attrs[at::activation]);
  q.lo = float(a->attrs[at::min_val].f);
  q.hi = float(a->attrs[at::max_val].f);
  q.inv_so = 1.0f / float(a->attrs[at::output_scale].f);
  q.zo = float(a->attrs[at::output_zero_point].i);
  const amber_tensor_view* v[3] = {&a->outputs[0], &a->inputs[0], &a->inputs[1]};
  const int64_t items[3] = {1, 1, 1};
  return with_act(q.act, [&](auto act) { return map<3>(a, v, items, AddF<decltype(act)::value>{q}, "quantized_add"); });
}

AMBER_CUDA_KERNELS(quantized) {
  register_kernel("quantized_add", kU8, &quantized_add);
  for (int32_t t : {kF32, kU8}) {  // the source as f32 (quantized as it is read) or u8
    register_kernel("quantized_conv2d", t, amber_kernel{quantized_conv<false>, conv_setup<false>, nullptr, nullptr});
    register_kernel("quantized_conv2d.u8", t, amber_kernel{quantized_conv<true>, conv_setup<true>, nullptr, nullptr});
    register_kernel("quantized_linear", t,
                    amber_kernel{quantized_linear<false>, linear_setup<false>, nullptr, nullptr});
    register_kernel("quantized_linear.u8", t,
                    amber_kernel{quantized_linear<true>, linear_setup<true>, nullptr, nullptr});
  }
}

}  // namespace
}  // namespace amber::cuda
