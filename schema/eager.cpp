// Definitions of the eager API (eager.h) and of the compute methods declared on Tensor
// (core/tensor.h). Each looks its op up once and calls the dispatcher.

#include "amber/schema/eager.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "amber/core/backend_registry.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/op_library.h"

namespace amber {
namespace {

// The op named name, looked up once per call site.
#define AMBER_OP(name)                            \
  ([]() -> const OpSchema& {                      \
    static const OpSchema& op_ = op_schema(name); \
    return op_;                                   \
  }())

Attr mode_attr(const std::string& mode) { return mode.empty() ? Attr::none() : Attr(mode); }

Attr dtype_attr(DType t) { return Attr(t); }

}  // namespace

// ---- Arithmetic ----
// The unary ops of the instruction list (core/fused_ops.h).
#define AMBER_EAGER_DEF(name) \
  Tensor name(const Tensor& a, SrcLoc loc) { return call(AMBER_OP(#name), {&a}, {}, loc); }
#define AMBER_EAGER_UNARY_DEF(OPCODE, name, arity, kind) AMBER_EAGER_UNARY_##kind(name)
#undef AMBER_EAGER_UNARY_binary
#define AMBER_EAGER_UNARY_binary(name) \
  Tensor name(const Tensor& a, const Tensor& b, SrcLoc loc) { return call(AMBER_OP(#name), {&a, &b}, {}, loc); }
#undef AMBER_EAGER_UNARY_numeric
#define AMBER_EAGER_UNARY_numeric(name) AMBER_EAGER_DEF(name)
AMBER_FUSED_OPS(AMBER_EAGER_UNARY_DEF)
#undef AMBER_EAGER_UNARY_DEF
#undef AMBER_EAGER_DEF

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha, SrcLoc loc) {
  return call(AMBER_OP("add"), {&a, &b}, {Attr(alpha)}, loc);
}
Tensor add(const Tensor& a, Scalar b, Scalar alpha, SrcLoc loc) {
  return call(AMBER_OP("add.Scalar"), {&a}, {Attr(b), Attr(alpha)}, loc);
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha, SrcLoc loc) {
  return call(AMBER_OP("sub"), {&a, &b}, {Attr(alpha)}, loc);
}
Tensor sub(const Tensor& a, Scalar b, Scalar alpha, SrcLoc loc) {
  return call(AMBER_OP("sub.Scalar"), {&a}, {Attr(b), Attr(alpha)}, loc);
}
Tensor rsub(const Tensor& a, Scalar b, Scalar alpha, SrcLoc loc) {
  return call(AMBER_OP("rsub.Scalar"), {&a}, {Attr(b), Attr(alpha)}, loc);
}
Tensor mul(const Tensor& a, const Tensor& b, SrcLoc loc) { return call(AMBER_OP("mul"), {&a, &b}, {}, loc); }
Tensor mul(const Tensor& a, Scalar b, SrcLoc loc) { return call(AMBER_OP("mul.Scalar"), {&a}, {Attr(b)}, loc); }
Tensor div(const Tensor& a, const Tensor& b, const std::string& mode, SrcLoc loc) {
  return call(AMBER_OP("div"), {&a, &b}, {mode_attr(mode)}, loc);
}
Tensor div(const Tensor& a, Scalar b, const std::string& mode, SrcLoc loc) {
  return call(AMBER_OP("div.Scalar"), {&a}, {Attr(b), mode_attr(mode)}, loc);
}
Tensor pow(const Tensor& a, const Tensor& e, SrcLoc loc) { return call(AMBER_OP("pow"), {&a, &e}, {}, loc); }
Tensor pow(const Tensor& a, Scalar e, SrcLoc loc) { return call(AMBER_OP("pow.Scalar"), {&a}, {Attr(e)}, loc); }
Tensor clamp(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi, SrcLoc loc) {
  return call(AMBER_OP("clamp"), {&a}, {lo ? Attr(*lo) : Attr::none(), hi ? Attr(*hi) : Attr::none()}, loc);
}
Tensor clamp(const Tensor& a, const Tensor& lo, const Tensor& hi, SrcLoc loc) {
  return minimum(maximum(a, lo, loc), hi, loc);
}
Tensor prelu(const Tensor& a, const Tensor& weight, SrcLoc loc) {
  const int64_t channels = a.dim() >= 2 ? a.sizes()[1] : 1;
  if (weight.dim() > 1 || (weight.numel() != 1 && weight.numel() != channels))
    throw Error(str("prelu: weight must have 1 element or one per channel (", channels, ", dim 1 of input ", a.sizes(),
                    "), got shape ", weight.sizes()));
  DimVec shape{weight.numel()};  // [C, 1, ...]: right-aligned, it broadcasts along dim 1
  for (int d = 2; d < a.dim(); ++d) shape.push_back(1);
  const Tensor w = weight.numel() == 1 ? weight.reshape({}, loc) : weight.reshape(shape, loc);
  return where(ge(a, Scalar(0), loc), a, mul(a, w, loc), loc);
}
Tensor gelu(const Tensor& a, const std::string& approximate, SrcLoc loc) {
  return call(AMBER_OP("gelu"), {&a}, {Attr(approximate)}, loc);
}
Tensor hardtanh(const Tensor& a, Scalar lo, Scalar hi, SrcLoc loc) {
  return call(AMBER_OP("hardtanh"), {&a}, {Attr(lo), Attr(hi)}, loc);
}
Tensor leaky_relu(const Tensor& a, Scalar slope, SrcLoc loc) {
  return call(AMBER_OP("leaky_relu"), {&a}, {Attr(slope)}, loc);
}
Tensor elu(const Tensor& a, Scalar alpha, SrcLoc loc) { return call(AMBER_OP("elu"), {&a}, {Attr(alpha)}, loc); }
Tensor softplus(const Tensor& a, Scalar beta, Scalar threshold, SrcLoc loc) {
  return call(AMBER_OP("softplus"), {&a}, {Attr(beta), Attr(threshold)}, loc);
}
Tensor hardshrink(const Tensor& a, Scalar lambd, SrcLoc loc) {
  return call(AMBER_OP("hardshrink"), {&a}, {Attr(lambd)}, loc);
}
Tensor softshrink(const Tensor& a, Scalar lambd, SrcLoc loc) {
  return call(AMBER_OP("softshrink"), {&a}, {Attr(lambd)}, loc);
}
Tensor threshold(const Tensor& a, Scalar threshold, Scalar value, SrcLoc loc) {
  return call(AMBER_OP("threshold"), {&a}, {Attr(threshold), Attr(value)}, loc);
}
Tensor softmax(const Tensor& a, int64_t dim, SrcLoc loc) {
  return call(AMBER_OP("softmax"), {&a}, {Attr(dim), Attr::none()}, loc);
}
Tensor log_softmax(const Tensor& a, int64_t dim, SrcLoc loc) {
  return call(AMBER_OP("log_softmax"), {&a}, {Attr(dim), Attr::none()}, loc);
}
Tensor softmax(const Tensor& a, int64_t dim, DType dtype, SrcLoc loc) {
  return call(AMBER_OP("softmax"), {&a}, {Attr(dim), Attr(dtype)}, loc);
}
Tensor log_softmax(const Tensor& a, int64_t dim, DType dtype, SrcLoc loc) {
  return call(AMBER_OP("log_softmax"), {&a}, {Attr(dim), Attr(dtype)}, loc);
}
Tensor dropout(const Tensor& a, double p, bool train, SrcLoc loc) {
  return call(AMBER_OP("dropout"), {&a}, {Attr(p), Attr(train)}, loc);
}

#define AMBER_COMPARE(name)                                                                                      \
  Tensor name(const Tensor& a, const Tensor& b, SrcLoc loc) { return call(AMBER_OP(#name), {&a, &b}, {}, loc); } \
  Tensor name(const Tensor& a, Scalar b, SrcLoc loc) { return call(AMBER_OP(#name ".Scalar"), {&a}, {Attr(b)}, loc); }
AMBER_COMPARE(eq)
AMBER_COMPARE(ne)
AMBER_COMPARE(lt)
AMBER_COMPARE(le)
AMBER_COMPARE(gt)
AMBER_COMPARE(ge)
#undef AMBER_COMPARE
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b, SrcLoc loc) {
  return call(AMBER_OP("where"), {&c, &a, &b}, {}, loc);
}
namespace {
// A scalar branch of where as a 0-d tensor of dtype (traced as a `full` node).
Tensor scalar_branch(Scalar v, DType dtype, Device device, SrcLoc loc) { return full({}, v, {dtype, device}, loc); }
DType where_dtype(const Tensor& t, Scalar v) {
  ResultType r;
  r.add(t.dtype(), t.dim() ? Priority::dimensioned : Priority::zero_dim);
  r.add(v.wrapped_dtype(), Priority::wrapped);
  return r.result();
}
}  // namespace
Tensor where(const Tensor& c, const Tensor& a, Scalar b, SrcLoc loc) {
  const DType d = where_dtype(a, b);
  return where(c, a.to(d, loc), scalar_branch(b, d, a.device(), loc), loc);
}
Tensor where(const Tensor& c, Scalar a, const Tensor& b, SrcLoc loc) {
  const DType d = where_dtype(b, a);
  return where(c, scalar_branch(a, d, b.device(), loc), b.to(d, loc), loc);
}
Tensor where(const Tensor& c, Scalar a, Scalar b, SrcLoc loc) {
  ResultType r;
  r.add(a.wrapped_dtype(), Priority::wrapped);
  r.add(b.wrapped_dtype(), Priority::wrapped);
  const DType d = r.result();
  return where(c, scalar_branch(a, d, c.device(), loc), scalar_branch(b, d, c.device(), loc), loc);
}
Tensor logical_and(const Tensor& a, const Tensor& b, SrcLoc loc) {
  return call(AMBER_OP("logical_and"), {&a, &b}, {}, loc);
}
Tensor logical_or(const Tensor& a, const Tensor& b, SrcLoc loc) {
  return call(AMBER_OP("logical_or"), {&a, &b}, {}, loc);
}
Tensor logical_xor(const Tensor& a, const Tensor& b, SrcLoc loc) {
  return call(AMBER_OP("logical_xor"), {&a, &b}, {}, loc);
}
Tensor logical_not(const Tensor& a, SrcLoc loc) { return call(AMBER_OP("logical_not"), {&a}, {}, loc); }
Tensor masked_fill(const Tensor& a, const Tensor& mask, Scalar value, SrcLoc loc) {
  return call(AMBER_OP("masked_fill.Scalar"), {&a, &mask}, {Attr(value)}, loc);
}

// ---- Reductions and products ----
Tensor sum(const Tensor& a, SrcLoc loc) {
  return call(AMBER_OP("sum"), {&a}, {Attr::none(), Attr(false), Attr::none()}, loc);
}
Tensor sum(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("sum"), {&a}, {Attr(dims), Attr(keepdim), Attr::none()}, loc);
}
Tensor sum(const Tensor& a, const DimVec& dims, bool keepdim, DType dtype, SrcLoc loc) {
  return call(AMBER_OP("sum"), {&a}, {Attr(dims), Attr(keepdim), Attr(dtype)}, loc);
}
Tensor mean(const Tensor& a, const DimVec& dims, bool keepdim, DType dtype, SrcLoc loc) {
  return call(AMBER_OP("mean"), {&a}, {Attr(dims), Attr(keepdim), Attr(dtype)}, loc);
}
std::pair<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim, SrcLoc loc) {
  return {amax(a, {dim}, keepdim, loc), argmax(a, dim, keepdim, loc)};
}
std::pair<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim, SrcLoc loc) {
  return {amin(a, {dim}, keepdim, loc), argmin(a, dim, keepdim, loc)};
}
std::pair<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted, SrcLoc loc) {
  const Tensor* in[] = {&a};
  const Attr attrs[] = {Attr(k), Attr(dim), Attr(largest), Attr(sorted)};
  std::vector<Tensor> out = dispatch(AMBER_OP("topk"), in, attrs, loc);
  return {out[0], out[1]};
}
std::pair<Tensor, Tensor> sort(const Tensor& a, int64_t dim, bool descending, SrcLoc loc) {
  return topk(a, a.dim() ? a.size(dim) : 1, dim, descending, true, loc);
}
Tensor any(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("any"), {&a}, {Attr(dims), Attr(keepdim)}, loc);
}
Tensor all(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("all"), {&a}, {Attr(dims), Attr(keepdim)}, loc);
}
Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype, SrcLoc loc) {
  return call(AMBER_OP("cumsum"), {&a}, {Attr(dim), dtype ? Attr(*dtype) : Attr::none()}, loc);
}
Tensor mean(const Tensor& a, SrcLoc loc) {
  return call(AMBER_OP("mean"), {&a}, {Attr::none(), Attr(false), Attr::none()}, loc);
}
Tensor mean(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("mean"), {&a}, {Attr(dims), Attr(keepdim), Attr::none()}, loc);
}
Tensor prod(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("prod"), {&a}, {Attr(dims), Attr(keepdim), Attr::none()}, loc);
}
Tensor prod(const Tensor& a, const DimVec& dims, bool keepdim, DType dtype, SrcLoc loc) {
  return call(AMBER_OP("prod"), {&a}, {Attr(dims), Attr(keepdim), Attr(dtype)}, loc);
}
Tensor amax(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("amax"), {&a}, {Attr(dims), Attr(keepdim)}, loc);
}
Tensor amin(const Tensor& a, const DimVec& dims, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("amin"), {&a}, {Attr(dims), Attr(keepdim)}, loc);
}
Tensor argmax(const Tensor& a, SrcLoc loc) { return call(AMBER_OP("argmax"), {&a}, {Attr::none(), Attr(false)}, loc); }
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("argmax"), {&a}, {Attr(dim), Attr(keepdim)}, loc);
}
Tensor argmin(const Tensor& a, SrcLoc loc) { return call(AMBER_OP("argmin"), {&a}, {Attr::none(), Attr(false)}, loc); }
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim, SrcLoc loc) {
  return call(AMBER_OP("argmin"), {&a}, {Attr(dim), Attr(keepdim)}, loc);
}
Tensor mm(const Tensor& a, const Tensor& b, SrcLoc loc) { return call(AMBER_OP("mm"), {&a, &b}, {}, loc); }
Tensor bmm(const Tensor& a, const Tensor& b, SrcLoc loc) { return call(AMBER_OP("bmm"), {&a, &b}, {}, loc); }
Tensor matmul(const Tensor& a, const Tensor& b, SrcLoc loc) { return call(AMBER_OP("matmul"), {&a, &b}, {}, loc); }
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, SrcLoc loc) {
  return call(AMBER_OP("linear"), {&x, &w, &b}, {}, loc);
}
Tensor fused_linear(const Tensor& x, const Tensor& w, const Tensor& b, const std::string& activation, double min_val,
                    double max_val, SrcLoc loc) {
  return call(AMBER_OP("fused_linear"), {&x, &w, &b}, {Attr(activation), Attr(min_val), Attr(max_val)}, loc);
}
Tensor quantized_linear(const Tensor& x, const Tensor& w, const Tensor& ws, const Tensor& b, double input_scale,
                        int64_t input_zero_point, SrcLoc loc) {
  return call(AMBER_OP("quantized_linear"), {&x, &w, &ws, &b}, {Attr(input_scale), Attr(input_zero_point)}, loc);
}
Tensor quantized_linear_u8(const Tensor& x, const Tensor& w, const Tensor& ws, const Tensor& b, double input_scale,
                           int64_t input_zero_point, const std::string& activation, double min_val, double max_val,
                           double output_scale, int64_t output_zero_point, SrcLoc loc) {
  return call(AMBER_OP("quantized_linear.u8"), {&x, &w, &ws, &b},
              {Attr(input_scale), Attr(input_zero_point), Attr(activation), Attr(min_val), Attr(max_val),
               Attr(output_scale), Attr(output_zero_point)},
              loc);
}
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                    double dropout_p, bool is_causal, SrcLoc loc) {
  return call(AMBER_OP("scaled_dot_product_attention"), {&q, &k, &v, &mask}, {Attr(dropout_p), Attr(is_causal)}, loc);
}
Tensor attention_merge_heads(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double dropout_p,
                             bool is_causal, SrcLoc loc) {
  return call(AMBER_OP("attention_merge_heads"), {&q, &k, &v, &mask}, {Attr(dropout_p), Attr(is_causal)}, loc);
}

// ---- Convolution, pooling, normalisation, embedding ----
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& stride, const DimVec& padding,
              const DimVec& dilation, int64_t groups, SrcLoc loc) {
  return call(AMBER_OP("conv2d"), {&x, &w, &b}, {Attr(stride), Attr(padding), Attr(dilation), Attr(groups)}, loc);
}
Tensor fused_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& stride, const DimVec& padding,
                    const DimVec& dilation, int64_t groups, const std::string& activation, double min_val,
                    double max_val, SrcLoc loc) {
  return call(
      AMBER_OP("fused_conv2d"), {&x, &w, &b},
      {Attr(stride), Attr(padding), Attr(dilation), Attr(groups), Attr(activation), Attr(min_val), Attr(max_val)}, loc);
}
Tensor quantized_conv2d(const Tensor& x, const Tensor& w, const Tensor& ws, const Tensor& b, const DimVec& stride,
                        const DimVec& padding, const DimVec& dilation, int64_t groups, double input_scale,
                        int64_t input_zero_point, const std::string& activation, double min_val, double max_val,
                        SrcLoc loc) {
  return call(AMBER_OP("quantized_conv2d"), {&x, &w, &ws, &b},
              {Attr(stride), Attr(padding), Attr(dilation), Attr(groups), Attr(input_scale), Attr(input_zero_point),
               Attr(activation), Attr(min_val), Attr(max_val)},
              loc);
}
Tensor quantized_add(const Tensor& a, const Tensor& b, double self_scale, int64_t self_zero_point, double other_scale,
                     int64_t other_zero_point, const std::string& activation, double min_val, double max_val,
                     double output_scale, int64_t output_zero_point, SrcLoc loc) {
  return call(AMBER_OP("quantized_add"), {&a, &b},
              {Attr(self_scale), Attr(self_zero_point), Attr(other_scale), Attr(other_zero_point), Attr(activation),
               Attr(min_val), Attr(max_val), Attr(output_scale), Attr(output_zero_point)},
              loc);
}
Tensor quantized_conv2d_u8(const Tensor& x, const Tensor& w, const Tensor& ws, const Tensor& b, const DimVec& stride,
                           const DimVec& padding, const DimVec& dilation, int64_t groups, double input_scale,
                           int64_t input_zero_point, const std::string& activation, double min_val, double max_val,
                           double output_scale, int64_t output_zero_point, SrcLoc loc) {
  return call(AMBER_OP("quantized_conv2d.u8"), {&x, &w, &ws, &b},
              {Attr(stride), Attr(padding), Attr(dilation), Attr(groups), Attr(input_scale), Attr(input_zero_point),
               Attr(activation), Attr(min_val), Attr(max_val), Attr(output_scale), Attr(output_zero_point)},
              loc);
}
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& stride, const DimVec& padding,
                        const DimVec& output_padding, int64_t groups, const DimVec& dilation, SrcLoc loc) {
  return call(AMBER_OP("conv_transpose2d"), {&x, &w, &b},
              {Attr(stride), Attr(padding), Attr(output_padding), Attr(groups), Attr(dilation)}, loc);
}
namespace {
// The value of a per-dim argument given once or per dim (PyTorch's int or tuple).
int64_t per_dim(const DimVec& v, int i) { return v.size() == 1 ? v[0] : v[i]; }
// padding="same"/"valid" for a convolution over the last `spatial` dims of x with kernel
// sizes from w's last dims: the symmetric padding to pass to the convolution; x gains the odd
// remainder of "same" on the far side (as PyTorch's _convolution_same) by a pad node.
DimVec padding_of(const char* op, Tensor& x, const Tensor& w, const DimVec& stride, PaddingMode padding,
                  const DimVec& dilation, int spatial, SrcLoc loc) {
  if (padding == kValid) return DimVec{0};
  if (w.dim() != spatial + 2) throw Error(str(op, ": weight must have ", spatial + 2, " dims, got shape ", w.sizes()));
  for (int i = 0; i < spatial; ++i) {
    if ((stride.size() != 1 && stride.size() != spatial) || (dilation.size() != 1 && dilation.size() != spatial))
      throw Error(str(op, ": stride ", stride, " and dilation ", dilation, " must have 1 or ", spatial, " values"));
    if (per_dim(stride, i) != 1)
      throw Error(str(op, ": padding=\"same\" needs stride 1 (as PyTorch), got stride ", stride));
  }
  DimVec symmetric, extra;  // extra: pad's (before, after) pairs, last dim first
  bool odd = false;
  for (int i = 0; i < spatial; ++i) {
    const int64_t total = per_dim(dilation, i) * (w.size(2 + i) - 1), left = total / 2;
    symmetric.push_back(left);
    odd |= total - 2 * left != 0;
  }
  for (int i = spatial - 1; i >= 0; --i) {
    const int64_t total = per_dim(dilation, i) * (w.size(2 + i) - 1);
    extra.push_back(0);
    extra.push_back(total - 2 * (total / 2));
  }
  if (odd) x = pad(x, extra, "constant", 0, loc);
  return symmetric;
}
}  // namespace
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& stride, PaddingMode padding,
              const DimVec& dilation, int64_t groups, SrcLoc loc) {
  Tensor in = x;
  const DimVec p = padding_of("conv2d", in, w, stride, padding, dilation, 2, loc);
  return conv2d(in, w, b, stride, p, dilation, groups, loc);
}
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& stride, const DimVec& padding,
              const DimVec& dilation, int64_t groups, SrcLoc loc) {
  if (x.dim() != 2 && x.dim() != 3)
    throw Error(str("conv1d: input must be [N, C, L] or [C, L], got shape ", x.sizes()));
  if (w.dim() != 3)
    throw Error(str("conv1d: weight must be [out_channels, in_channels / groups, k], got shape ", w.sizes()));
  for (const DimVec* v : {&stride, &padding, &dilation})
    if (v->size() != 1) throw Error(str("conv1d: stride, padding and dilation take one value each, got ", *v));
  // A conv2d over [N, C, 1, L] with a [K, C / groups, 1, k] kernel, then the 1 dropped.
  const Tensor y = conv2d(x.unsqueeze(-2, loc), w.unsqueeze(-2, loc), b, DimVec{1, stride[0]}, DimVec{0, padding[0]},
                          DimVec{1, dilation[0]}, groups, loc);
  return y.squeeze(-2, loc);
}
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& stride, PaddingMode padding,
              const DimVec& dilation, int64_t groups, SrcLoc loc) {
  Tensor in = x;
  const DimVec p = padding_of("conv1d", in, w, stride, padding, dilation, 1, loc);
  return conv1d(in, w, b, stride, p, dilation, groups, loc);
}
Tensor max_pool2d(const Tensor& x, const DimVec& k, const DimVec& s, const DimVec& p, const DimVec& d, bool ceil_mode,
                  SrcLoc loc) {
  return call(AMBER_OP("max_pool2d"), {&x}, {Attr(k), Attr(s), Attr(p), Attr(d), Attr(ceil_mode)}, loc);
}
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const DimVec& k, const DimVec& s, const DimVec& p,
                                                  const DimVec& d, bool ceil_mode, SrcLoc loc) {
  const Tensor* in[] = {&x};
  const Attr attrs[] = {Attr(k), Attr(s), Attr(p), Attr(d), Attr(ceil_mode)};
  std::vector<Tensor> out = dispatch(AMBER_OP("max_pool2d_with_indices"), in, attrs, loc);
  return {out[0], out[1]};
}
Tensor roi_align(const Tensor& x, const Tensor& boxes, const DimVec& output_size, double spatial_scale,
                 int64_t sampling_ratio, bool aligned, SrcLoc loc) {
  return call(AMBER_OP("roi_align"), {&x, &boxes},
              {Attr(output_size), Attr(spatial_scale), Attr(sampling_ratio), Attr(aligned)}, loc);
}
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const DimVec& output_size, SrcLoc loc) {
  return call(AMBER_OP("max_unpool2d"), {&x, &indices}, {Attr(output_size)}, loc);
}
Tensor avg_pool2d(const Tensor& x, const DimVec& k, const DimVec& s, const DimVec& p, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override, SrcLoc loc) {
  return call(AMBER_OP("avg_pool2d"), {&x},
              {Attr(k), Attr(s), Attr(p), Attr(ceil_mode), Attr(count_include_pad),
               divisor_override ? Attr(*divisor_override) : Attr::none()},
              loc);
}
namespace {
// An adaptive pool's output_size for x's last `dims` dims with each None resolved to x's size
// there (one value standing for every dim); without a None, the values as given (the op checks
// their count).
DimVec resolve_output_size(const char* op, const OptionalSize2d& output_size, const Tensor& x, int dims) {
  const auto& o = output_size.values();
  DimVec size;
  if (std::all_of(o.begin(), o.end(), [](const std::optional<int64_t>& v) { return v.has_value(); })) {
    for (const std::optional<int64_t>& v : o) size.push_back(*v);
    return size;
  }
  if ((o.size() != 1 && o.size() != size_t(dims)) || x.dim() < dims + 1)
    throw Error(str(op, ": output_size with None needs 1 or ", dims, " values and a ", dims + 1, "-D or ", dims + 2,
                    "-D input, got ", o.size(), " values and shape ", x.sizes()));
  for (int i = 0; i < dims; ++i) {
    const std::optional<int64_t>& given = o[o.size() == 1 ? 0 : size_t(i)];
    size.push_back(given ? *given : x.size(x.dim() - dims + i));
  }
  return size;
}
}  // namespace
Tensor adaptive_avg_pool2d(const Tensor& x, const OptionalSize2d& output_size, SrcLoc loc) {
  const DimVec size = resolve_output_size("adaptive_avg_pool2d", output_size, x, 2);
  return call(AMBER_OP("adaptive_avg_pool2d"), {&x}, {Attr(size)}, loc);
}
Tensor adaptive_avg_pool3d(const Tensor& x, const OptionalSize3d& output_size, SrcLoc loc) {
  const auto& o = output_size.values();
  const int64_t r = x.dim();
  if (r != 4 && r != 5)
    throw Error(
        str("adaptive_avg_pool3d: expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got shape ", x.sizes()));
  for (int64_t d = r - 4; d < r; ++d)
    if (x.size(d) <= 0)
      throw Error(str("adaptive_avg_pool3d: expected non-empty channel and spatial dims, got shape ", x.sizes()));
  if (o.size() != 1 && o.size() != 3)
    throw Error(str("adaptive_avg_pool3d: output_size takes 1 or 3 values (D, H, W), got ", o.size()));
  DimVec size = resolve_output_size("adaptive_avg_pool3d", output_size, x, 3);  // (D, H, W)
  if (size.size() == 1) size = {size[0], size[0], size[0]};
  for (int i = 0; i < 3; ++i)
    if (size[i] < 0)
      throw Error(str("adaptive_avg_pool3d: output_size must be non-negative, got ", size[i], " for dim ", i));
  const Tensor v = r == 5 ? x : x.unsqueeze(0, loc);
  const int64_t n = v.size(0), c = v.size(1), d = v.size(2), plane = size[1] * size[2];
  const DimVec out{n, c, size[0], size[1], size[2]};
  Tensor y;
  if (size[0] == 0 || plane == 0) {
    y = zeros(out, TensorOptions(x.dtype(), x.device()), loc);  // nothing to average
  } else {
    const Tensor planes =
        adaptive_avg_pool2d(v.reshape({n, c * d, v.size(3), v.size(4)}, loc), {size[1], size[2]}, loc);
    y = adaptive_avg_pool2d(planes.reshape({n, c, d, plane}, loc), {size[0], plane}, loc).reshape(out, loc);
  }
  return r == 5 ? y : y.squeeze(0, loc);
}
namespace {
Attr optional_float(std::optional<double> v) { return v ? Attr(*v) : Attr::none(); }
}  // namespace
Tensor upsample_nearest2d(const Tensor& x, const DimVec& size, std::optional<double> sh, std::optional<double> sw,
                          SrcLoc loc) {
  return call(AMBER_OP("upsample_nearest2d"), {&x}, {Attr(size), optional_float(sh), optional_float(sw)}, loc);
}
Tensor upsample_bilinear2d(const Tensor& x, const DimVec& size, bool align_corners, std::optional<double> sh,
                           std::optional<double> sw, SrcLoc loc) {
  return call(AMBER_OP("upsample_bilinear2d"), {&x},
              {Attr(size), Attr(align_corners), optional_float(sh), optional_float(sw)}, loc);
}
Tensor upsample_bicubic2d(const Tensor& x, const DimVec& size, bool align_corners, std::optional<double> sh,
                          std::optional<double> sw, SrcLoc loc) {
  return call(AMBER_OP("upsample_bicubic2d"), {&x},
              {Attr(size), Attr(align_corners), optional_float(sh), optional_float(sw)}, loc);
}
Tensor upsample_bilinear2d_aa(const Tensor& x, const DimVec& size, bool align_corners, std::optional<double> sh,
                              std::optional<double> sw, SrcLoc loc) {
  return call(AMBER_OP("upsample_bilinear2d_aa"), {&x},
              {Attr(size), Attr(align_corners), optional_float(sh), optional_float(sw)}, loc);
}
Tensor upsample_bicubic2d_aa(const Tensor& x, const DimVec& size, bool align_corners, std::optional<double> sh,
                             std::optional<double> sw, SrcLoc loc) {
  return call(AMBER_OP("upsample_bicubic2d_aa"), {&x},
              {Attr(size), Attr(align_corners), optional_float(sh), optional_float(sw)}, loc);
}
Tensor upsample_nearest3d(const Tensor& x, const DimVec& size, std::optional<double> sd, std::optional<double> sh,
                          std::optional<double> sw, SrcLoc loc) {
  return call(AMBER_OP("upsample_nearest3d"), {&x},
              {Attr(size), optional_float(sd), optional_float(sh), optional_float(sw)}, loc);
}
Tensor upsample_trilinear3d(const Tensor& x, const DimVec& size, bool align_corners, std::optional<double> sd,
                            std::optional<double> sh, std::optional<double> sw, SrcLoc loc) {
  return call(AMBER_OP("upsample_trilinear3d"), {&x},
              {Attr(size), Attr(align_corners), optional_float(sd), optional_float(sh), optional_float(sw)}, loc);
}
Tensor grid_sample(const Tensor& x, const Tensor& grid, const std::string& mode, const std::string& padding_mode,
                   bool align_corners, SrcLoc loc) {
  return call(AMBER_OP("grid_sample"), {&x, &grid}, {Attr(mode), Attr(padding_mode), Attr(align_corners)}, loc);
}
namespace {

// nearest-exact's source indices along one dim: ATen's nearest_neighbor_exact_compute_source_index,
// min(floor((dst + 0.5) * scale), in - 1) with compute_scales_value's float scale (1 / the scale
// passed on, else in / out); empty where they are 0, 1, ... (no gather needed).
std::vector<int64_t> nearest_exact_sources(int64_t in, int64_t out, std::optional<double> scale) {
  const float step = scale && *scale > 0 ? float(1.0 / *scale) : float(in) / float(out);
  std::vector<int64_t> src(static_cast<size_t>(out));
  bool identity = true;
  for (int64_t j = 0; j < out; ++j) {
    src[size_t(j)] = std::min(int64_t(std::floor(float((double(j) + 0.5) * double(step)))), in - 1);
    identity = identity && src[size_t(j)] == j;
  }
  if (identity && in == out) src.clear();
  return src;
}

// interpolate of [N, C, H, W] or [N, C, D, H, W] to size (H, W or D, H, W) by mode, the scales
// passed on where given.
Tensor resize(const Tensor& x, const std::string& mode, const DimVec& size,
              std::span<const std::optional<double>> scales, bool align_corners, bool antialias, SrcLoc loc) {
  const bool volumetric = size.size() == 3;
  if (mode == "nearest")
    return volumetric ? upsample_nearest3d(x, size, scales[0], scales[1], scales[2], loc)
                      : upsample_nearest2d(x, size, scales[0], scales[1], loc);
  if (mode == "trilinear") return upsample_trilinear3d(x, size, align_corners, scales[0], scales[1], scales[2], loc);
  if (mode == "area")  // as F.interpolate: no scales
    return volumetric ? adaptive_avg_pool3d(x, size, loc) : adaptive_avg_pool2d(x, size, loc);
  if (mode == "bicubic")
    return (antialias ? upsample_bicubic2d_aa : upsample_bicubic2d)(x, size, align_corners, scales[0], scales[1], loc);
  if (mode == "bilinear")
    return (antialias ? upsample_bilinear2d_aa : upsample_bilinear2d)(x, size, align_corners, scales[0], scales[1],
                                                                      loc);
  for (int i = 0; i < size.size(); ++i)
    if (x.size(2 + i) <= 0 || size[i] <= 0)
      throw Error(str("interpolate: nearest-exact needs input and output sizes greater than 0, got input ", x.sizes(),
                      " and output size ", size));
  Tensor y = x;  // nearest-exact: index_select along each spatial dim
  for (int i = 0; i < size.size(); ++i) {
    const int64_t d = 2 + i;
    const std::vector<int64_t> src = nearest_exact_sources(x.size(d), size[i], scales[size_t(i)]);
    if (!src.empty()) y = y.index_select(d, tensor(src), loc);
  }
  return y;
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o, SrcLoc loc) {
  const std::string& mode = o.mode;
  if (mode != "nearest" && mode != "nearest-exact" && mode != "linear" && mode != "bilinear" && mode != "bicubic" &&
      mode != "trilinear" && mode != "area")
    throw Error(
        str("interpolate: mode must be \"nearest\", \"nearest-exact\", \"linear\", \"bilinear\", \"bicubic\", "
            "\"trilinear\" or \"area\", got \"",
            mode, "\""));
  // As F.interpolate: linear takes 3-D input, bilinear and bicubic 4-D, trilinear 5-D, the others
  // any of the three.
  const int64_t spatial = x.dim() - 2;
  const int64_t needs = mode == "linear"                          ? 1
                        : mode == "bilinear" || mode == "bicubic" ? 2
                        : mode == "trilinear"                     ? 3
                                                                  : 0;
  static const char* const kShapes[] = {"3-D (N, C, L), 4-D (N, C, H, W) or 5-D (N, C, D, H, W)", "3-D (N, C, L)",
                                        "4-D (N, C, H, W)", "5-D (N, C, D, H, W)"};
  if ((needs && spatial != needs) || (!needs && (spatial < 1 || spatial > 3)))
    throw Error(str("interpolate: ", mode, " mode needs a ", kShapes[needs], " input, got shape ", x.sizes()));
  if (o.size.empty() == o.scale_factor.empty())
    throw Error("interpolate: exactly one of size and scale_factor must be given");
  if (o.align_corners && mode != "linear" && mode != "bilinear" && mode != "bicubic" && mode != "trilinear")
    throw Error(
        "interpolate: align_corners can only be set with the interpolating modes (linear, bilinear, bicubic, "
        "trilinear)");
  if (o.antialias && ((mode != "bilinear" && mode != "bicubic") || spatial != 2))
    throw Error(
        str("interpolate: antialias is only supported for the bilinear and bicubic modes (4-D input), got mode ", mode,
            " and shape ", x.sizes()));
  static const char* const kCounts[] = {"", " value (L)", " or 2 values (H, W)", " or 3 values (D, H, W)"};
  for (size_t n : {size_t(o.size.size()), o.scale_factor.size()})
    if (n > 1 && int64_t(n) != spatial)
      throw Error(
          str("interpolate: size and scale_factor take 1", kCounts[spatial], " for a ", x.dim(), "-D input, got ", n));
  DimVec size;
  std::optional<double> scales[3];
  for (int64_t i = 0; i < spatial; ++i) {
    if (!o.size.empty()) {
      size.push_back(o.size.size() == 1 ? o.size[0] : o.size[size_t(i)]);
      continue;
    }
    const double s = o.scale_factor.size() == 1 ? o.scale_factor[0] : o.scale_factor[size_t(i)];
    size.push_back(int64_t(std::floor(double(x.size(2 + i)) * s)));
    if (!o.recompute_scale_factor) scales[i] = s;
  }
  const bool corners = o.align_corners.value_or(false);
  if (spatial > 1) return resize(x, mode, size, std::span(scales, size_t(spatial)), corners, o.antialias, loc);
  // 1-D: the 2-D form over [N, C, 1, L] (H from 1 to 1 is a copy in every mode), the 1 dropped.
  const DimVec wide{1, size[0]};
  const std::optional<double> wide_scales[2] = {std::nullopt, scales[0]};
  return resize(x.unsqueeze(2, loc), mode == "linear" ? "bilinear" : mode, wide, wide_scales, corners, false, loc)
      .squeeze(2, loc);
}
Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& w, const Tensor& b,
                  bool training, double momentum, double eps, SrcLoc loc) {
  return call(AMBER_OP("batch_norm"), {&x, &w, &b, &mean, &var}, {Attr(training), Attr(momentum), Attr(eps)}, loc);
}
Tensor layer_norm(const Tensor& x, const DimVec& shape, const Tensor& w, const Tensor& b, double eps, SrcLoc loc) {
  return call(AMBER_OP("layer_norm"), {&x, &w, &b}, {Attr(shape), Attr(eps)}, loc);
}
Tensor add_layer_norm(const Tensor& x, const Tensor& other, const DimVec& shape, const Tensor& w, const Tensor& b,
                      double eps, SrcLoc loc) {
  return call(AMBER_OP("add_layer_norm"), {&x, &other, &w, &b}, {Attr(shape), Attr(eps)}, loc);
}
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w, const Tensor& b, double eps, SrcLoc loc) {
  if (x.dim() < 2) throw Error(str("group_norm: input must be [N, C, *], got shape ", x.sizes()));
  const int64_t n = x.size(0), c = x.size(1);
  if (num_groups <= 0 || c % num_groups != 0)
    throw Error(
        str("group_norm: the ", c, " channels of input ", x.sizes(), " must divide into num_groups=", num_groups));
  for (const Tensor* t : {&w, &b})
    if (t->defined() && (t->dim() != 1 || t->size(0) != c))
      throw Error(str("group_norm: weight and bias must be [", c, "] (one per channel of input ", x.sizes(),
                      "), got shape ", t->sizes()));
  // Each group normalised as a layer_norm row: [N, G, C / G * spatial] over its last dim.
  int64_t row = c / num_groups;
  for (int d = 2; d < x.dim(); ++d) row *= x.size(d);
  // -1 for the batch: a trace with a dynamic batch records no batch size here.
  DimVec back = x.sizes();
  back[0] = -1;
  Tensor y = layer_norm(x.reshape({n ? -1 : 0, num_groups, row}, loc), {row}, {}, {}, eps, loc)
                 .reshape(n ? back : x.sizes(), loc);
  DimVec per_channel{c};  // [C, 1, ...]: right-aligned, it broadcasts along dim 1
  for (int d = 2; d < x.dim(); ++d) per_channel.push_back(1);
  if (w.defined()) y = mul(y, w.reshape(per_channel, loc), loc);
  if (b.defined()) y = add(y, b.reshape(per_channel, loc), 1, loc);
  return y;
}
Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& w,
                     const Tensor& b, bool use_input_stats, double momentum, double eps, SrcLoc loc) {
  if (x.dim() < 3) throw Error(str("instance_norm: input must be [N, C, *spatial], got shape ", x.sizes()));
  if (use_input_stats) return group_norm(x, x.size(1), w, b, eps, loc);
  if (!running_mean.defined() || !running_var.defined())
    throw Error("instance_norm: use_input_stats=false needs running_mean and running_var");
  return batch_norm(x, running_mean, running_var, w, b, false, momentum, eps, loc);
}
Tensor embedding(const Tensor& w, const Tensor& idx, int64_t padding_idx, SrcLoc loc) {
  return call(AMBER_OP("embedding"), {&w, &idx}, {Attr(padding_idx)}, loc);
}

// ---- Joining, splitting, gathering ----
namespace {
std::vector<const Tensor*> pointers(const std::vector<Tensor>& ts) {
  std::vector<const Tensor*> p;
  p.reserve(ts.size());
  for (const Tensor& t : ts) p.push_back(&t);
  return p;
}
}  // namespace
Tensor cat(const std::vector<Tensor>& ts, int64_t dim, SrcLoc loc) {
  const Attr attrs[] = {Attr(dim)};
  return std::move(dispatch(AMBER_OP("cat"), pointers(ts), attrs, loc)[0]);
}
Tensor stack(const std::vector<Tensor>& ts, int64_t dim, SrcLoc loc) {
  const Attr attrs[] = {Attr(dim)};
  return std::move(dispatch(AMBER_OP("stack"), pointers(ts), attrs, loc)[0]);
}
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim, SrcLoc loc) {
  const Tensor* in[] = {&x};
  const Attr attrs[] = {Attr(size), Attr(dim)};
  return dispatch(AMBER_OP("split"), in, attrs, loc);
}
std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim, SrcLoc loc) {
  const Tensor* in[] = {&x};
  const Attr attrs[] = {Attr(sizes), Attr(dim)};
  return dispatch(AMBER_OP("split_with_sizes"), in, attrs, loc);
}
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, SrcLoc loc) {
  const Tensor* in[] = {&x};
  const Attr attrs[] = {Attr(chunks), Attr(dim)};
  return dispatch(AMBER_OP("chunk"), in, attrs, loc);
}
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, SrcLoc loc) {
  return call(AMBER_OP("index_select"), {&x, &index}, {Attr(dim)}, loc);
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, SrcLoc loc) {
  return call(AMBER_OP("gather"), {&x, &index}, {Attr(dim)}, loc);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src, SrcLoc loc) {
  return call(AMBER_OP("scatter"), {&x, &idx, &src}, {Attr(dim)}, loc);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& idx, Scalar value, SrcLoc loc) {
  return call(AMBER_OP("scatter.value"), {&x, &idx}, {Attr(dim), Attr(value)}, loc);
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src, SrcLoc loc) {
  return call(AMBER_OP("scatter_add"), {&x, &idx, &src}, {Attr(dim)}, loc);
}
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src, const std::string& reduce,
                      bool include_self, SrcLoc loc) {
  return call(AMBER_OP("scatter_reduce"), {&x, &idx, &src}, {Attr(dim), Attr(reduce), Attr(include_self)}, loc);
}
Tensor pad(const Tensor& x, const DimVec& pad, const std::string& mode, Scalar value, SrcLoc loc) {
  return call(AMBER_OP("pad"), {&x}, {Attr(pad), Attr(mode), Attr(value)}, loc);
}
Tensor roll(const Tensor& x, const DimVec& shifts, const DimVec& dims, SrcLoc loc) {
  if (!dims.empty()) return call(AMBER_OP("roll"), {&x}, {Attr(shifts), Attr(dims)}, loc);
  if (shifts.size() != 1)
    throw Error(str("roll: without dims, shifts must hold one shift (over the flattened tensor), got ", shifts));
  const Tensor flat = x.reshape({-1}, loc);
  return call(AMBER_OP("roll"), {&flat}, {Attr(shifts), Attr(DimVec{0})}, loc).reshape(x.sizes(), loc);
}
Tensor repeat(const Tensor& x, const DimVec& repeats, SrcLoc loc) {
  return call(AMBER_OP("repeat"), {&x}, {Attr(repeats)}, loc);
}
Tensor pixel_shuffle(const Tensor& x, int64_t r, SrcLoc loc) {
  const int n = x.dim();
  if (n < 3 || r <= 0 || x.sizes()[n - 3] % (r * r) != 0)
    throw Error(str("pixel_shuffle: expected at least 3 dims with the channels (dim -3) divisible by ", r,
                    " squared and a positive factor, got shape ", x.sizes(), " and factor ", r));
  DimVec split(std::span<const int64_t>(x.sizes().begin(), size_t(n - 3))), perm, out = split;
  const int64_t c = x.sizes()[n - 3] / (r * r), h = x.sizes()[n - 2], w = x.sizes()[n - 1];
  for (int64_t d : {c, r, r, h, w}) split.push_back(d);
  for (int i = 0; i < n - 3; ++i) perm.push_back(i);
  for (int i : {0, 3, 1, 4, 2}) perm.push_back(n - 3 + i);  // C, H, r, W, r
  for (int64_t d : {c, h * r, w * r}) out.push_back(d);
  return x.reshape(split, loc).permute(perm, loc).reshape(out, loc);
}
Tensor pixel_unshuffle(const Tensor& x, int64_t r, SrcLoc loc) {
  const int n = x.dim();
  if (n < 3 || r <= 0 || x.sizes()[n - 2] % r != 0 || x.sizes()[n - 1] % r != 0)
    throw Error(str("pixel_unshuffle: expected at least 3 dims with height and width divisible by ", r,
                    " and a positive factor, got shape ", x.sizes(), " and factor ", r));
  DimVec split(std::span<const int64_t>(x.sizes().begin(), size_t(n - 3))), perm, out = split;
  const int64_t c = x.sizes()[n - 3], h = x.sizes()[n - 2] / r, w = x.sizes()[n - 1] / r;
  for (int64_t d : {c, h, r, w, r}) split.push_back(d);
  for (int i = 0; i < n - 3; ++i) perm.push_back(i);
  for (int i : {0, 2, 4, 1, 3}) perm.push_back(n - 3 + i);  // C, r, r, H, W
  for (int64_t d : {c * r * r, h, w}) out.push_back(d);
  return x.reshape(split, loc).permute(perm, loc).reshape(out, loc);
}
Tensor flip(const Tensor& x, const DimVec& dims, SrcLoc loc) { return call(AMBER_OP("flip"), {&x}, {Attr(dims)}, loc); }
Tensor tril(const Tensor& x, int64_t diagonal, SrcLoc loc) {
  return call(AMBER_OP("tril"), {&x}, {Attr(diagonal)}, loc);
}
Tensor triu(const Tensor& x, int64_t diagonal, SrcLoc loc) {
  return call(AMBER_OP("triu"), {&x}, {Attr(diagonal)}, loc);
}

// ---- Factories ----
Tensor full(const DimVec& size, Scalar v, TensorOptions o, SrcLoc loc) {
  Tensor t = call(AMBER_OP("full"), {}, {Attr(size), Attr(v), dtype_attr(o.dtype)}, loc, o.device);
  t.impl()->origin = loc;
  return t;
}
Tensor zeros(const DimVec& size, TensorOptions o, SrcLoc loc) { return full(size, 0, o, loc); }
Tensor ones(const DimVec& size, TensorOptions o, SrcLoc loc) { return full(size, 1, o, loc); }
Tensor zeros_like(const Tensor& t, SrcLoc loc) { return full(t.sizes(), 0, {t.dtype(), t.device()}, loc); }
Tensor ones_like(const Tensor& t, SrcLoc loc) { return full(t.sizes(), 1, {t.dtype(), t.device()}, loc); }

Tensor arange(Scalar end, SrcLoc loc) { return arange(0, end, 1, loc); }
Tensor arange(Scalar start, Scalar end, Scalar step, SrcLoc loc) {
  Tensor t = call(AMBER_OP("arange"), {}, {Attr(start), Attr(end), Attr(step), Attr::none()}, loc);
  t.impl()->origin = loc;
  return t;
}
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions o, SrcLoc loc) {
  Tensor t = call(AMBER_OP("arange"), {}, {Attr(start), Attr(end), Attr(step), dtype_attr(o.dtype)}, loc, o.device);
  t.impl()->origin = loc;
  return t;
}

namespace {
Tensor random_tensor(const DimVec& size, TensorOptions o, Generator* gen, SrcLoc loc, bool normal) {
  const char* what = normal ? "randn()" : "rand()";
  AMBER_CHECK(o.dtype == DType::f32 || o.dtype == DType::f64, what, ": expected dtype f32 or f64, got ", o.dtype);
  Tensor host = empty(size, o.dtype);
  Generator& g = gen ? *gen : default_generator();
  {
    std::lock_guard lock(g.mutex());
    if (o.dtype == DType::f32) {
      float* p = static_cast<float*>(host.mutable_data());  // not a user host access
      normal ? g.fill_normal(p, host.numel(), 0, 1) : g.fill_uniform(p, host.numel(), 0, 1);
    } else {
      double* p = static_cast<double*>(host.mutable_data());
      normal ? g.fill_normal(p, host.numel(), 0, 1) : g.fill_uniform(p, host.numel(), 0, 1);
    }
  }
  Tensor t = o.device.is_cpu() ? host : host.to(o.device, loc);
  t.impl()->origin = loc;
  if (HostAccessHook* hook = tls_host_access_hook()) hook->on_random(t, what, loc);
  return t;
}
}  // namespace

Tensor rand(const DimVec& size, TensorOptions o, Generator* gen, SrcLoc loc) {
  return random_tensor(size, o, gen, loc, false);
}
Tensor randn(const DimVec& size, TensorOptions o, Generator* gen, SrcLoc loc) {
  return random_tensor(size, o, gen, loc, true);
}

// ---- Operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b, 1, SrcLoc::none()); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b, 1, SrcLoc::none()); }
Tensor operator+(Scalar a, const Tensor& b) { return add(b, a, 1, SrcLoc::none()); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b, 1, SrcLoc::none()); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b, 1, SrcLoc::none()); }
Tensor operator-(Scalar a, const Tensor& b) { return rsub(b, a, 1, SrcLoc::none()); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b, SrcLoc::none()); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b, SrcLoc::none()); }
Tensor operator*(Scalar a, const Tensor& b) { return mul(b, a, SrcLoc::none()); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b, "", SrcLoc::none()); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b, "", SrcLoc::none()); }
Tensor operator/(Scalar a, const Tensor& b) { return mul(reciprocal(b, SrcLoc::none()), a, SrcLoc::none()); }
Tensor operator-(const Tensor& a) { return neg(a, SrcLoc::none()); }

// ---- Tensor methods declared in core/tensor.h ----
Tensor Tensor::view(const DimVec& s, SrcLoc loc) const { return call(AMBER_OP("view"), {this}, {Attr(s)}, loc); }
Tensor Tensor::reshape(const DimVec& s, SrcLoc loc) const { return call(AMBER_OP("reshape"), {this}, {Attr(s)}, loc); }
Tensor Tensor::permute(const DimVec& d, SrcLoc loc) const { return call(AMBER_OP("permute"), {this}, {Attr(d)}, loc); }
Tensor Tensor::transpose(int64_t d0, int64_t d1, SrcLoc loc) const {
  return call(AMBER_OP("transpose"), {this}, {Attr(d0), Attr(d1)}, loc);
}
Tensor Tensor::t(SrcLoc loc) const {
  AMBER_CHECK(dim() <= 2, "t(): expects a tensor with at most 2 dimensions, got shape ", sizes());
  return dim() < 2 ? *this : transpose(0, 1, loc);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step, SrcLoc loc) const {
  return call(AMBER_OP("slice"), {this}, {Attr(dim), Attr(start), Attr(end), Attr(step)}, loc);
}
Tensor Tensor::select(int64_t dim, int64_t index, SrcLoc loc) const {
  return call(AMBER_OP("select"), {this}, {Attr(dim), Attr(index)}, loc);
}
Tensor Tensor::unsqueeze(int64_t dim, SrcLoc loc) const {
  return call(AMBER_OP("unsqueeze"), {this}, {Attr(dim)}, loc);
}
Tensor Tensor::squeeze(SrcLoc loc) const { return call(AMBER_OP("squeeze"), {this}, {}, loc); }
Tensor Tensor::squeeze(int64_t dim, SrcLoc loc) const {
  return call(AMBER_OP("squeeze.dim"), {this}, {Attr(dim)}, loc);
}
Tensor Tensor::expand(const DimVec& s, SrcLoc loc) const { return call(AMBER_OP("expand"), {this}, {Attr(s)}, loc); }
Tensor Tensor::flatten(int64_t s, int64_t e, SrcLoc loc) const {
  return call(AMBER_OP("flatten"), {this}, {Attr(s), Attr(e)}, loc);
}
Tensor Tensor::contiguous(SrcLoc loc) const {
  if (is_contiguous()) return *this;  // as PyTorch: the same tensor (every kernel accepts strides)
  return call(AMBER_OP("contiguous"), {this}, {}, loc);
}

Tensor Tensor::to(DType t, SrcLoc loc) const {
  if (t == dtype()) return *this;
  return call(AMBER_OP("to"), {this}, {Attr(t)}, loc);
}

Tensor Tensor::to(Device d, SrcLoc loc) const {
  (void)loc;
  AMBER_CHECK(defined(), "to(): the tensor is undefined");
  if (d == device()) return *this;
  // A device move is not an op of the graph (archives are device-independent): the data is
  // copied through the backends' tables.
  Tensor src = contiguous(SrcLoc::none());
  Tensor out = empty(sizes(), {dtype(), d});
  if (out.nbytes() > 0) {
    copy_between_devices(out.mutable_data(), d, src.data(), src.device(), out.nbytes(), "to()");
  }
  if (HostAccessHook* hook = tls_host_access_hook()) hook->on_device_copy(*this, out);
  return out;
}

Tensor Tensor::clone(SrcLoc loc) const { return call(AMBER_OP("clone"), {this}, {}, loc); }

Tensor Tensor::add(const Tensor& o, Scalar alpha, SrcLoc loc) const { return amber::add(*this, o, alpha, loc); }
Tensor Tensor::add(Scalar o, Scalar alpha, SrcLoc loc) const { return amber::add(*this, o, alpha, loc); }
Tensor Tensor::sub(const Tensor& o, Scalar alpha, SrcLoc loc) const { return amber::sub(*this, o, alpha, loc); }
Tensor Tensor::sub(Scalar o, Scalar alpha, SrcLoc loc) const { return amber::sub(*this, o, alpha, loc); }
Tensor Tensor::mul(const Tensor& o, SrcLoc loc) const { return amber::mul(*this, o, loc); }
Tensor Tensor::mul(Scalar o, SrcLoc loc) const { return amber::mul(*this, o, loc); }
Tensor Tensor::div(const Tensor& o, SrcLoc loc) const { return amber::div(*this, o, "", loc); }
Tensor Tensor::div(Scalar o, SrcLoc loc) const { return amber::div(*this, o, "", loc); }
Tensor Tensor::neg(SrcLoc loc) const { return amber::neg(*this, loc); }
Tensor Tensor::exp(SrcLoc loc) const { return amber::exp(*this, loc); }
Tensor Tensor::tanh(SrcLoc loc) const { return amber::tanh(*this, loc); }
Tensor Tensor::relu(SrcLoc loc) const { return amber::relu(*this, loc); }
Tensor Tensor::sum(SrcLoc loc) const { return amber::sum(*this, loc); }
Tensor Tensor::sum(const DimVec& dims, bool keepdim, SrcLoc loc) const { return amber::sum(*this, dims, keepdim, loc); }
Tensor Tensor::mm(const Tensor& o, SrcLoc loc) const { return amber::mm(*this, o, loc); }
Tensor Tensor::matmul(const Tensor& o, SrcLoc loc) const { return amber::matmul(*this, o, loc); }
Tensor Tensor::bmm(const Tensor& o, SrcLoc loc) const { return amber::bmm(*this, o, loc); }
Tensor Tensor::pow(Scalar e, SrcLoc loc) const { return amber::pow(*this, e, loc); }
Tensor Tensor::abs(SrcLoc loc) const { return amber::abs(*this, loc); }
Tensor Tensor::sqrt(SrcLoc loc) const { return amber::sqrt(*this, loc); }
Tensor Tensor::log(SrcLoc loc) const { return amber::log(*this, loc); }
Tensor Tensor::sigmoid(SrcLoc loc) const { return amber::sigmoid(*this, loc); }
Tensor Tensor::softmax(int64_t dim, SrcLoc loc) const { return amber::softmax(*this, dim, loc); }
Tensor Tensor::log_softmax(int64_t dim, SrcLoc loc) const { return amber::log_softmax(*this, dim, loc); }
Tensor Tensor::mean(SrcLoc loc) const { return amber::mean(*this, loc); }
Tensor Tensor::mean(const DimVec& d, bool k, SrcLoc loc) const { return amber::mean(*this, d, k, loc); }
Tensor Tensor::prod(const DimVec& d, bool k, SrcLoc loc) const { return amber::prod(*this, d, k, loc); }
Tensor Tensor::amax(const DimVec& d, bool k, SrcLoc loc) const { return amber::amax(*this, d, k, loc); }
Tensor Tensor::argmax(SrcLoc loc) const { return amber::argmax(*this, loc); }
Tensor Tensor::argmax(int64_t d, bool k, SrcLoc loc) const { return amber::argmax(*this, d, k, loc); }
std::vector<Tensor> Tensor::chunk(int64_t c, int64_t d, SrcLoc loc) const { return amber::chunk(*this, c, d, loc); }
std::vector<Tensor> Tensor::split(int64_t s, int64_t d, SrcLoc loc) const { return amber::split(*this, s, d, loc); }
Tensor Tensor::index_select(int64_t d, const Tensor& i, SrcLoc loc) const {
  return amber::index_select(*this, d, i, loc);
}

// ---- Any op by name ----
std::vector<Tensor> call_op(std::string_view name, const std::vector<Tensor>& inputs,
                            std::initializer_list<NamedAttr> attrs, SrcLoc loc) {
  const OpSchema* op = find_op(name);
  AMBER_CHECK(op, "call_op: unknown op '", name, "'",
              op_namespace(name).empty() ? std::string()
                                         : str(" (namespace ", op_namespace(name),
                                               " is an op library's: load it first with amber::load_op_library)"));
  std::vector<Attr> full(size_t(op->num_attrs()));
  std::vector<bool> given(full.size(), false);
  for (const NamedAttr& a : attrs) {
    const int i = op->attr_index(a.first);
    AMBER_CHECK(i >= 0, op->name, ": no attribute named '", a.first, "' (", op->signature, ")");
    AMBER_CHECK(!given[size_t(i)], op->name, ": attribute '", a.first, "' given twice");
    full[size_t(i)] = a.second;
    given[size_t(i)] = true;
  }
  for (int i = 0; i < op->num_attrs(); ++i) {
    if (given[size_t(i)]) continue;
    const ArgSpec& spec = op->attr_spec(i);
    AMBER_CHECK(spec.default_value.has_value(), op->name, ": attribute '", spec.name, "' is required (", op->signature,
                ")");
    full[size_t(i)] = *spec.default_value;
  }
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  return dispatch(*op, ptrs, normalize_attrs(*op, full), loc);
}

}  // namespace amber
