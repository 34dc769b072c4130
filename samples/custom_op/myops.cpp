// A sample op library: two custom ops, myops::swish_gate and myops::soft_clip, each a table
// entry (signature, dtypes, inference) and CPU kernels of the backend ABI for f32 and f64.
// Built as libmyops.so; services load it by path (LoadOptions::op_libraries), never because
// an archive names its ops.

#include <amber/schema/op_library.h>

#include <cmath>
#include <cstdio>

namespace {

using amber::DeviceType;
using amber::DType;
using amber::InferCtx;

// Calls f(o, a, b) with each element's offsets (in elements) in out and in the inputs,
// whatever their strides: the kernel sees views as they are, not copies.
template <typename F>
void for_each_element(const amber_tensor_view& out, const amber_tensor_view* in, int n_in, F f) {
  int64_t n = 1;
  for (int d = 0; d < out.ndim; ++d) n *= out.sizes[d];
  int64_t index[AMBER_MAX_DIMS] = {};
  for (int64_t k = 0; k < n; ++k) {
    int64_t offsets[3] = {0, 0, 0};
    for (int d = 0; d < out.ndim; ++d) {
      offsets[0] += index[d] * out.strides[d];
      for (int i = 0; i < n_in; ++i) offsets[1 + i] += index[d] * in[i].strides[d];
    }
    f(offsets);
    for (int d = out.ndim - 1; d >= 0 && ++index[d] == out.sizes[d]; --d) index[d] = 0;
  }
}

// Each op's signature, named once: its definition below uses it, and its kernels find their
// attributes in it by name (amber::attr_index; a name it lacks does not compile).
constexpr char kSwishGate[] = "myops::swish_gate(Tensor x, Tensor g, float beta=1.0) -> Tensor";
constexpr char kSoftClip[] = "myops::soft_clip(Tensor x, float scale) -> Tensor";
constexpr int kBeta = amber::attr_index(kSwishGate, "beta");
constexpr int kScale = amber::attr_index(kSoftClip, "scale");

void infer_swish_gate(InferCtx& c) {
  c.check(c.in(0).sizes == c.in(1).sizes, "x and g must have one shape, got ", c.in(0).sizes, " and ", c.in(1).sizes);
  c.check(c.in(0).dtype == c.in(1).dtype, "x and g must have one dtype, got ", c.in(0).dtype, " and ", c.in(1).dtype);
  c.add_output(c.in(0).dtype, c.in(0).sizes);
}

template <typename T>
int swish_gate(const amber_kernel_args* a) {
  const double beta = a->attrs[kBeta].f;
  const T* x = static_cast<const T*>(a->inputs[0].data);
  const T* g = static_cast<const T*>(a->inputs[1].data);
  T* y = static_cast<T*>(a->outputs[0].data);
  for_each_element(a->outputs[0], a->inputs, 2,
                   [&](const int64_t* o) { y[o[0]] = x[o[1]] / (T(1) + std::exp(-T(beta) * g[o[2]])); });
  return 0;
}

void infer_soft_clip(InferCtx& c) {
  c.check(c.attr("scale").f() > 0, "scale must be positive, got ", c.attr("scale").f());
  c.add_output(c.in(0).dtype, c.in(0).sizes);
}

template <typename T>
int soft_clip(const amber_kernel_args* a) {
  const T scale = T(a->attrs[kScale].f);
  const T* x = static_cast<const T*>(a->inputs[0].data);
  T* y = static_cast<T*>(a->outputs[0].data);
  for_each_element(a->outputs[0], a->inputs, 1,
                   [&](const int64_t* o) { y[o[0]] = scale * std::tanh(x[o[1]] / scale); });
  return 0;
}

}  // namespace

AMBER_OP_LIBRARY(myops, lib) {
  lib.def({kSwishGate, amber::dtypes::floating, infer_swish_gate, 0, nullptr, 1, "x * sigmoid(beta * g)."});
  lib.def({kSoftClip, amber::dtypes::floating, infer_soft_clip, 0, nullptr, 1, "scale * tanh(x / scale)."});
  lib.kernel("myops::swish_gate", DeviceType::cpu, DType::f32, swish_gate<float>);
  lib.kernel("myops::swish_gate", DeviceType::cpu, DType::f64, swish_gate<double>);
  lib.kernel("myops::soft_clip", DeviceType::cpu, DType::f32, soft_clip<float>);
  lib.kernel("myops::soft_clip", DeviceType::cpu, DType::f64, soft_clip<double>);
}
