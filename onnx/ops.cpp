// The importer's ONNX op table (ops.h): each ONNX op of the default domain written with
// Amber's eager ops, following the ONNX operator specification of opsets 7 to 17. What an
// op cannot express (3-D convolutions, training outputs, other modes) refuses the node with
// the reason; docs/ONNX.md lists the mapping.

#include "amber/onnx/ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <numeric>

#include "amber/onnx/tensor_proto.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"

namespace amber::onnx_in {

using onnx::AttributeProto;

// ---- NodeCtx ----

const Tensor& NodeCtx::in(int i) const {
  if (!has(i)) throw Error(str("input ", i, " is required"));
  return inputs_[size_t(i)]->t;
}

std::vector<int64_t> NodeCtx::ints(int i) const {
  DispatchHookGuard untraced(nullptr);  // reading a known value records nothing
  const Tensor& t = in(i);
  const Val& v = *inputs_[size_t(i)];
  if (!v.known) {
    if (!v.input.empty())
      throw NeedsConstant(str("input ", i, " ('", node.input(i), "') must be known at import (Amber fixes shapes, ",
                              "axes and pads when it traces); the graph input '", v.input,
                              "' feeds it: make it an initializer or give it as a constant input"),
                          v.input);
    throw Unsupported(str("input ", i, " ('", node.input(i),
                          "') must be known at import (a shape, axes or pads operand), but it is computed from the "
                          "model's inputs"));
  }
  if (t.dtype() != DType::i64 && t.dtype() != DType::i32)
    throw Error(str("input ", i, " ('", node.input(i), "') must be int64 or int32, got ", dtype_name(t.dtype())));
  return t.to(DType::i64).contiguous().to_vector<int64_t>();
}

std::vector<double> NodeCtx::numbers(int i) const {
  if (known(i)) {
    DispatchHookGuard untraced(nullptr);
    return in(i).to(DType::f64).contiguous().to_vector<double>();
  }
  scalar(i);  // throws the error saying why the value must be known
  return {};
}

double NodeCtx::scalar(int i) const {
  DispatchHookGuard untraced(nullptr);
  const Tensor& t = in(i);
  const Val& v = *inputs_[size_t(i)];
  if (!v.known) {
    if (!v.input.empty())
      throw NeedsConstant(str("input ", i, " ('", node.input(i), "') must be known at import; the graph input '",
                              v.input, "' feeds it"),
                          v.input);
    throw Unsupported(str("input ", i, " ('", node.input(i), "') must be known at import"));
  }
  if (t.numel() != 1)
    throw Error(str("input ", i, " ('", node.input(i), "') must hold one value, got shape ", t.sizes()));
  return t.to(DType::f64).contiguous().to_vector<double>()[0];
}

const AttributeProto* NodeCtx::find(const char* name) const {
  for (const AttributeProto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

const AttributeProto& NodeCtx::typed(const char* name, int type) const {
  const AttributeProto* a = find(name);
  if (a->type() != type)
    throw Error(str("attribute '", name, "' has type ", AttributeProto::AttributeType_Name(a->type()), ", expected ",
                    AttributeProto::AttributeType_Name(AttributeProto::AttributeType(type))));
  return *a;
}

int64_t NodeCtx::attr_i(const char* name, int64_t def) const {
  return find(name) ? typed(name, AttributeProto::INT).i() : def;
}
float NodeCtx::attr_f(const char* name, float def) const {
  return find(name) ? typed(name, AttributeProto::FLOAT).f() : def;
}
std::string NodeCtx::attr_s(const char* name, const std::string& def) const {
  return find(name) ? typed(name, AttributeProto::STRING).s() : def;
}
std::vector<int64_t> NodeCtx::attr_ints(const char* name) const {
  if (!find(name)) return {};
  const auto& v = typed(name, AttributeProto::INTS).ints();
  return {v.begin(), v.end()};
}
std::vector<float> NodeCtx::attr_floats(const char* name) const {
  if (!find(name)) return {};
  const auto& v = typed(name, AttributeProto::FLOATS).floats();
  return {v.begin(), v.end()};
}
Tensor NodeCtx::attr_tensor(const char* name) const {
  return tensor_from_proto(typed(name, AttributeProto::TENSOR).t(), "", max_tensor_bytes_,
                           str("attribute '", name, "'"));
}

void NodeCtx::refuse(const std::string& why) const { throw Unsupported(why); }

namespace {

using Outs = std::vector<Tensor>;

int64_t wrap_axis(int64_t a, int64_t rank) {
  if (a < -rank || a >= std::max<int64_t>(rank, 1)) throw Error(str("axis ", a, " is out of range for rank ", rank));
  return a < 0 ? a + rank : a;
}

// x as 2-D at axis (in [0, rank]): [product of the dims before it, product of the rest], as
// Flatten and the opset < 13 forms of Softmax, LogSoftmax and Hardmax coerce their input.
Tensor flatten_2d(const Tensor& x, int64_t axis) {
  if (axis == 0) return x.reshape({1, -1});
  if (axis == x.dim()) return x.reshape({-1, 1});
  const Tensor y = axis + 1 < x.dim() ? x.flatten(axis) : x;
  return axis > 1 ? y.flatten(0, axis - 1) : y;
}

Tensor i64_tensor(const std::vector<int64_t>& v) { return tensor(v, {int64_t(v.size())}); }

// ---- elementwise ----

template <Tensor (*F)(const Tensor&, SrcLoc)>
Outs unary(const NodeCtx& c) {
  return {F(c.in(0), SrcLoc::none())};
}

Outs identity(const NodeCtx& c) { return {c.in(0)}; }

Outs is_nan(const NodeCtx& c) { return {ne(c.in(0), c.in(0))}; }
Outs is_inf(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const bool pos = c.attr_i("detect_positive", 1) != 0, neg_ = c.attr_i("detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  if (pos && neg_) return {eq(abs(x), inf)};
  if (pos) return {eq(x, inf)};
  if (neg_) return {eq(x, -inf)};
  return {zeros_like(x).to(DType::b8)};
}
Outs elu_(const NodeCtx& c) { return {elu(c.in(0), double(c.attr_f("alpha", 1.0f)))}; }
Outs leaky_relu_(const NodeCtx& c) { return {leaky_relu(c.in(0), double(c.attr_f("alpha", 0.01f)))}; }
Outs selu_(const NodeCtx& c) {
  const double alpha = c.attr_f("alpha", 1.67326319217681884765625f),
               gamma = c.attr_f("gamma", 1.05070102214813232421875f);
  const Tensor& x = c.in(0);
  return {mul(where(gt(x, 0), x, mul(expm1(x), alpha)), gamma)};
}
Outs hard_sigmoid(const NodeCtx& c) {
  const double alpha = c.attr_f("alpha", 0.2f), beta = c.attr_f("beta", 0.5f);
  return {clamp(c.in(0) * alpha + beta, Scalar(0.0), Scalar(1.0))};
}
Outs hard_swish(const NodeCtx& c) { return {hardswish(c.in(0))}; }
Outs softplus_(const NodeCtx& c) {
  // log(exp(x) + 1) without overflow: max(x, 0) + log1p(exp(-|x|))
  const Tensor& x = c.in(0);
  return {clamp(x, Scalar(0.0), std::nullopt) + log1p(exp(-abs(x)))};
}
Outs thresholded_relu(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  return {where(gt(x, double(c.attr_f("alpha", 1.0f))), x, Scalar(0.0))};
}
Outs celu(const NodeCtx& c) {
  const double alpha = c.attr_f("alpha", 1.0f);
  const Tensor& x = c.in(0);
  return {clamp(x, Scalar(0.0), std::nullopt) + clamp(mul(expm1(x / alpha), alpha), std::nullopt, Scalar(0.0))};
}
Outs shrink(const NodeCtx& c) {
  const double bias = c.attr_f("bias", 0.0f), lambd = c.attr_f("lambd", 0.5f);
  const Tensor& x = c.in(0);
  const DType t = x.dtype();
  return {where(lt(x, -lambd), (x + bias).to(t), where(gt(x, lambd), (x - bias).to(t), zeros_like(x)))};
}
Outs prelu_(const NodeCtx& c) {
  const Tensor &x = c.in(0), &slope = c.in(1);
  return {where(lt(x, 0), x * slope, x)};
}
Outs clip(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::optional<Scalar> lo, hi;
  if (c.opset < 11) {
    lo = double(c.attr_f("min", -std::numeric_limits<float>::max()));
    hi = double(c.attr_f("max", std::numeric_limits<float>::max()));
  } else {
    auto bound = [&](int i) -> std::optional<Scalar> {
      if (!c.has(i)) return std::nullopt;
      const double v = c.scalar(i);
      if (!is_floating(x.dtype())) return Scalar(int64_t(v));
      return Scalar(v);
    };
    lo = bound(1), hi = bound(2);
  }
  if (!lo && !hi) return {x};
  Tensor y = x;
  if (lo) y = clamp(y, lo, std::nullopt);
  if (hi) y = clamp(y, std::nullopt, hi);
  return {y};
}

Outs add_(const NodeCtx& c) { return {c.in(0) + c.in(1)}; }
Outs sub_(const NodeCtx& c) { return {c.in(0) - c.in(1)}; }
Outs mul_(const NodeCtx& c) { return {c.in(0) * c.in(1)}; }
Outs div_(const NodeCtx& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (!is_floating(a.dtype())) return {div(a, b, "trunc")};
  return {a / b};
}
Outs pow_(const NodeCtx& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  // A constant exponent (layer norm's square, as exporters spell it) is pow.Scalar: fusible,
  // with ATen's exact shortcuts (x * x for 2) instead of std::pow per element.
  if (c.known(1) && b.numel() == 1 && is_floating(a.dtype()) && is_floating(b.dtype()))
    return {pow(a, Scalar(c.scalar(1)))};
  return {pow(a, b).to(a.dtype())};  // ONNX: the result has the base's type
}
// f16 and bf16 (storage dtypes in Amber: its arithmetic kernels compute f32 and f64) as f32,
// for ops whose result rounded back is what ONNX's f16 op gives: Max, Min and Mod are exact
// so, sums round once.
Tensor widened(const Tensor& t) { return t.dtype() == DType::f16 || t.dtype() == DType::bf16 ? t.to(DType::f32) : t; }
Tensor as_type(const Tensor& y, DType t) { return y.dtype() == t ? y : y.to(t); }

Outs mod(const NodeCtx& c) {
  const Tensor a = widened(c.in(0)), b = widened(c.in(1));
  const bool fmod = c.attr_i("fmod", 0) != 0;
  if (!fmod && is_floating(a.dtype())) throw Error("Mod with fmod=0 needs integer inputs");
  return {as_type(a - div(a, b, fmod ? "trunc" : "floor") * b, c.in(0).dtype())};
}
Outs equal(const NodeCtx& c) { return {eq(c.in(0), c.in(1))}; }
Outs greater(const NodeCtx& c) { return {gt(c.in(0), c.in(1))}; }
Outs greater_equal(const NodeCtx& c) { return {ge(c.in(0), c.in(1))}; }
Outs less(const NodeCtx& c) { return {lt(c.in(0), c.in(1))}; }
Outs less_equal(const NodeCtx& c) { return {le(c.in(0), c.in(1))}; }
Outs and_(const NodeCtx& c) { return {logical_and(c.in(0), c.in(1))}; }
Outs or_(const NodeCtx& c) { return {logical_or(c.in(0), c.in(1))}; }
Outs xor_(const NodeCtx& c) { return {logical_xor(c.in(0), c.in(1))}; }
Outs not_(const NodeCtx& c) { return {logical_not(c.in(0))}; }
Outs where_(const NodeCtx& c) { return {where(c.in(0).to(DType::b8), c.in(1), c.in(2))}; }

template <Tensor (*F)(const Tensor&, const Tensor&, SrcLoc)>
Tensor fold_widened(const NodeCtx& c) {
  Tensor y = widened(c.in(0));
  for (int i = 1; i < c.size(); ++i) y = F(y, widened(c.in(i)), SrcLoc::none());
  return y;
}
template <Tensor (*F)(const Tensor&, const Tensor&, SrcLoc)>
Outs fold(const NodeCtx& c) {
  return {as_type(fold_widened<F>(c), c.in(0).dtype())};
}
Tensor add2(const Tensor& a, const Tensor& b, SrcLoc) { return a + b; }
Outs mean_(const NodeCtx& c) { return {as_type(fold_widened<add2>(c) / double(c.size()), c.in(0).dtype())}; }

// ---- matrix products ----

// A weight matrix [K, N] known at import as linear's [N, K], transposed untraced (a constant).
Tensor weight_rows(const Tensor& b) {
  DispatchHookGuard untraced(nullptr);
  return b.t().contiguous();
}

// A product with a weight matrix known at import runs as linear (torch.nn.Linear's export of
// inputs with more than two dims): one GEMM over the rows, the weight packed at load,
// instead of a batch of matrix-vector products.
Outs mat_mul(const NodeCtx& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (c.known(1) && b.dim() == 2 && a.dim() >= 2 && a.dtype() == DType::f32 && b.dtype() == DType::f32)
    return {linear(a, weight_rows(b))};
  return {matmul(a, b)};
}

Outs gemm(const NodeCtx& c) {
  Tensor a = c.in(0), b = c.in(1);
  const double alpha = c.attr_f("alpha", 1.0f), beta = c.attr_f("beta", 1.0f);
  if (c.attr_i("transA", 0)) a = a.t();
  const bool tb = c.attr_i("transB", 0) != 0;
  const bool bias_1d = c.has(2) && c.in(2).dim() == 1 && c.in(2).size(0) == b.size(tb ? 0 : 1);
  if (alpha == 1.0 && beta == 1.0 && (!c.has(2) || bias_1d))  // torch.nn.Linear's export
    return {linear(a, tb ? b : c.known(1) ? weight_rows(b) : b.t(), c.has(2) ? c.in(2) : Tensor{})};
  Tensor y = mm(a, tb ? b.t() : b);
  if (alpha != 1.0) y = y * alpha;
  if (c.has(2)) y = y + (beta == 1.0 ? c.in(2) : c.in(2) * beta);
  return {y};
}

// ---- convolution and pooling ----

// The pads and sizes of a 1-D or 2-D window op, from auto_pad / pads (begin..., end...).
struct Window {
  int nd = 2;
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  bool symmetric() const { return begin == end; }
};

Window window(const NodeCtx& c, const Tensor& x, std::vector<int64_t> kernel) {
  Window w;
  w.nd = int(x.dim()) - 2;
  if (w.nd != 1 && w.nd != 2) c.refuse(str(w.nd, "-D windows (input shape ", x.sizes(), "): Amber has 1-D and 2-D"));
  if (int(kernel.size()) != w.nd) throw Error(str("kernel_shape ", DimVec(kernel), " does not fit input ", x.sizes()));
  // Sizes, strides and dilations from 1 to 2^31 - 1: the pad arithmetic below neither
  // divides by zero nor overflows.
  auto check_range = [&](const char* name, const std::vector<int64_t>& v) {
    for (int64_t e : v)
      if (e < 1 || e > INT32_MAX) throw Error(str(name, " ", DimVec(v), ": each value must be from 1 to ", INT32_MAX));
  };
  check_range("kernel_shape", kernel);
  w.kernel = kernel;
  auto per_dim = [&](const char* name, int64_t def) {
    std::vector<int64_t> v = c.attr_ints(name);
    if (v.empty()) v.assign(size_t(w.nd), def);
    if (int(v.size()) != w.nd) throw Error(str(name, " must hold ", w.nd, " values, got ", v.size()));
    check_range(name, v);
    return v;
  };
  w.strides = per_dim("strides", 1);
  w.dilations = per_dim("dilations", 1);
  const std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  w.begin.assign(size_t(w.nd), 0);
  w.end.assign(size_t(w.nd), 0);
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = c.attr_ints("pads");
    if (pads.empty()) pads.assign(size_t(2 * w.nd), 0);
    if (int(pads.size()) != 2 * w.nd) throw Error(str("pads must hold ", 2 * w.nd, " values, got ", pads.size()));
    for (int i = 0; i < w.nd; ++i) w.begin[size_t(i)] = pads[size_t(i)], w.end[size_t(i)] = pads[size_t(i + w.nd)];
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < w.nd; ++i) {
      const int64_t in = x.size(2 + i), s = w.strides[size_t(i)];
      const int64_t out = (in + s - 1) / s, span = (w.kernel[size_t(i)] - 1) * w.dilations[size_t(i)] + 1;
      const int64_t total = std::max<int64_t>((out - 1) * s + span - in, 0);
      const int64_t small = total / 2, big = total - small;
      w.begin[size_t(i)] = auto_pad == "SAME_UPPER" ? small : big;
      w.end[size_t(i)] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "VALID") {
    throw Error(str("auto_pad '", auto_pad, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
  }
  return w;
}

// x padded explicitly by the window's pads (F.pad order: last dim first).
Tensor pad_window(const Tensor& x, const Window& w, double value) {
  DimVec p;
  for (int i = w.nd - 1; i >= 0; --i) p.push_back(w.begin[size_t(i)]), p.push_back(w.end[size_t(i)]);
  return pad(x, p, "constant", value);
}

DimVec dv(const std::vector<int64_t>& v) { return DimVec(v); }

// 1-D ops run as 2-D ones over [N, C, 1, L].
Tensor as_2d(const Tensor& x, const Window& w) { return w.nd == 1 ? x.unsqueeze(2) : x; }
Tensor from_2d(const Tensor& y, const Window& w) { return w.nd == 1 ? y.squeeze(2) : y; }
Window window_2d(Window w) {
  if (w.nd == 2) return w;
  for (auto* v : {&w.kernel, &w.strides, &w.dilations}) v->insert(v->begin(), 1);
  for (auto* v : {&w.begin, &w.end}) v->insert(v->begin(), 0);
  w.nd = 2;
  return w;
}

Outs conv(const NodeCtx& c) {
  const Tensor &x = c.in(0), &wt = c.in(1);
  if (wt.dim() != x.dim()) throw Error(str("weight ", wt.sizes(), " does not fit input ", x.sizes()));
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  if (kernel.empty())
    for (int64_t i = 2; i < wt.dim(); ++i) kernel.push_back(wt.size(i));
  const Window w1 = window(c, x, kernel);
  const Window w = window_2d(w1);
  Tensor xin = as_2d(x, w1), win = as_2d(wt, w1);
  DimVec padding = {0, 0};
  if (w.symmetric())
    padding = dv(w.begin);
  else
    xin = pad_window(xin, w, 0.0);
  const Tensor y =
      conv2d(xin, win, c.has(2) ? c.in(2) : Tensor{}, dv(w.strides), padding, dv(w.dilations), c.attr_i("group", 1));
  return {from_2d(y, w1)};
}

Outs conv_transpose(const NodeCtx& c) {
  const Tensor &x = c.in(0), &wt = c.in(1);
  const int nd = int(x.dim()) - 2;
  if (nd != 1 && nd != 2) c.refuse(str(nd, "-D transposed convolution: Amber has 1-D and 2-D"));
  const std::string auto_pad = c.attr_s("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    throw Error(str("auto_pad '", auto_pad, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
  auto per_dim = [&](const char* name, int64_t def) {
    std::vector<int64_t> v = c.attr_ints(name);
    if (v.empty()) v.assign(size_t(nd), def);
    if (int(v.size()) != nd) throw Error(str(name, " must hold ", nd, " values, got ", v.size()));
    if (nd == 1) v.insert(v.begin(), def);
    return v;
  };
  const std::vector<int64_t> strides = per_dim("strides", 1), dil = per_dim("dilations", 1);
  std::vector<int64_t> out_pad = per_dim("output_padding", 0);
  std::vector<int64_t> pads = c.attr_ints("pads");
  if (pads.empty()) pads.assign(size_t(2 * nd), 0);
  if (int(pads.size()) != 2 * nd) throw Error(str("pads must hold ", 2 * nd, " values, got ", pads.size()));
  std::vector<int64_t> begin(pads.begin(), pads.begin() + nd), end(pads.begin() + nd, pads.end());
  if (nd == 1) begin.insert(begin.begin(), 0), end.insert(end.begin(), 0);
  Tensor xin = nd == 1 ? x.unsqueeze(2) : x, win = nd == 1 ? wt.unsqueeze(2) : wt;
  // output_shape (or SAME: the input's size times the stride) sets the pads, as the spec's formula
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  if (out_shape.size() > size_t(nd)) out_shape.erase(out_shape.begin(), out_shape.end() - nd);  // N, C given too
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (int i = 0; i < nd; ++i) out_shape.push_back(x.size(2 + i) * strides[size_t(i + 2 - nd)]);
  if (!out_shape.empty()) {
    if (int(out_shape.size()) != nd) throw Error(str("output_shape must hold ", nd, " values"));
    if (nd == 1) out_shape.insert(out_shape.begin(), 1);
    for (size_t i = 0; i < 2; ++i) {
      const int64_t total = strides[i] * (xin.size(2 + int64_t(i)) - 1) + out_pad[i] +
                            (win.size(2 + int64_t(i)) - 1) * dil[i] + 1 - out_shape[i];
      if (total < 0) {  // larger than the full output: the rows past it come from output padding
        out_pad[i] -= total;
        begin[i] = end[i] = 0;
        continue;
      }
      const bool upper = auto_pad == "SAME_UPPER";
      begin[i] = upper ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  }
  const bool sym = begin == end;
  Tensor y = conv_transpose2d(xin, win, c.has(2) ? c.in(2) : Tensor{}, dv(strides), sym ? dv(begin) : DimVec{0, 0},
                              dv(out_pad), c.attr_i("group", 1), dv(dil));
  if (!sym)  // crop the pads: begin rows at the start, end rows at the end
    for (int i = 0; i < 2; ++i) y = y.slice(2 + i, begin[size_t(i)], y.size(2 + i) - end[size_t(i)]);
  return {nd == 1 ? y.squeeze(2) : y};
}

// Each plane's number n * C + c, as [N, C, 1, 1] of index's dtype (i64): running sums of ones
// over the batch and channel dims, so that its sizes follow the batch.
Tensor plane_numbers(const Tensor& index) {
  const Tensor one = ones_like(index.slice(2, 0, 1).slice(3, 0, 1));
  return (cumsum(one, 0) - Scalar(int64_t(1))) * Scalar(index.size(1)) + (cumsum(one, 1) - Scalar(int64_t(1)));
}

// ONNX's MaxPool Indices from max_pool2d_with_indices' (each maximum's h * W + w in its
// plane of xin, the input as pooled, with explicit pads when pad_window added them): the
// position in x's plane (H, W), row-major or, with storage_order 1, column-major (h + w * H),
// plus the plane's offset (n * C + c) * H * W, as ONNX numbers elements over the tensor.
Tensor onnx_pool_indices(const Tensor& index, const Tensor& xin, const Window& w, bool padded, bool column_major) {
  const int64_t hp = xin.size(2), wp = xin.size(3);
  Tensor h = div(index, Scalar(wp), "floor"), col = index - h * Scalar(wp);
  const int64_t bh = padded ? w.begin[0] : 0, bw = padded ? w.begin[1] : 0;
  const int64_t H = hp - (padded ? w.begin[0] + w.end[0] : 0), W = wp - (padded ? w.begin[1] + w.end[1] : 0);
  if (bh) h = h - Scalar(bh);
  if (bw) col = col - Scalar(bw);
  const Tensor in_plane = column_major ? h + col * Scalar(H) : h * Scalar(W) + col;
  return in_plane + plane_numbers(index) * Scalar(H * W);
}

Outs max_pool(const NodeCtx& c) {
  // Integers (uint8 images) and f16 pooled as f32, which holds them exactly; max is exact.
  const DType t = c.in(0).dtype();
  const bool wide = t == DType::u8 || t == DType::i8 || t == DType::f16 || t == DType::bf16;
  const Tensor x = wide ? c.in(0).to(DType::f32) : c.in(0);
  const bool column_major = c.attr_i("storage_order", 0) != 0;
  if (column_major && !c.output_used(1)) c.refuse("MaxPool with storage_order 1");
  const Window w1 = window(c, x, c.attr_ints("kernel_shape"));
  const Window w = window_2d(w1);
  Tensor xin = as_2d(x, w1);
  DimVec padding = {0, 0};
  bool fits = w.symmetric();
  for (int i = 0; i < 2; ++i) fits = fits && w.begin[size_t(i)] * 2 <= w.kernel[size_t(i)];
  if (fits)
    padding = dv(w.begin);
  else
    xin = pad_window(xin, w, -std::numeric_limits<double>::infinity());
  const bool ceil = c.attr_i("ceil_mode", 0) != 0;
  if (!c.output_used(1))
    return {as_type(from_2d(max_pool2d(xin, dv(w.kernel), dv(w.strides), padding, dv(w.dilations), ceil), w1), t)};
  const auto [y, index] = max_pool2d_with_indices(xin, dv(w.kernel), dv(w.strides), padding, dv(w.dilations), ceil);
  return {as_type(from_2d(y, w1), t), from_2d(onnx_pool_indices(index, xin, w, !fits, column_major), w1)};
}

// ---- Recurrent layers (RNN, GRU, LSTM), unrolled over the sequence at import: the inputs'
// products with W for every step at once, then per step the products with R and the gates,
// in ONNX's formulas and gate orders. The sequence length is the model's (known at import);
// sequence_lens shorter than it, other activations than Sigmoid, Tanh and Relu, and LSTM's
// input_forget are refused. ----

enum class Cell { rnn, gru, lstm };

using Activation = Tensor (*)(const Tensor&, SrcLoc);
Activation activation_named(const NodeCtx& c, const std::string& name) {
  if (name == "Sigmoid") return &sigmoid;
  if (name == "Tanh") return &tanh;
  if (name == "Relu") return &relu;
  c.refuse(str("activation ", name, " (Amber's recurrent import takes Sigmoid, Tanh and Relu)"));
}

template <Cell K>
Outs recurrent(const NodeCtx& c) {
  constexpr int gates = K == Cell::rnn ? 1 : K == Cell::gru ? 3 : 4;
  const int64_t hidden = c.attr_i("hidden_size", 0);
  const std::string direction = c.attr_s("direction", "forward");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    throw Error(str("direction '", direction, "' is not forward, reverse or bidirectional"));
  const bool batch_first = c.attr_i("layout", 0) != 0;
  if (K == Cell::lstm && c.attr_i("input_forget", 0) != 0) c.refuse("input_forget (coupled input and forget gates)");
  const Tensor x = batch_first ? c.in(0).transpose(0, 1) : c.in(0);  // [seq, batch, input]
  const Tensor &w = c.in(1), &r = c.in(2);
  if (x.dim() != 3 || w.dim() != 3 || r.dim() != 3 || w.size(0) != dirs || w.size(1) != gates * hidden ||
      r.size(1) != gates * hidden || r.size(2) != hidden)
    throw Error(str("X ", c.in(0).sizes(), ", W ", w.sizes(), " and R ", r.sizes(), " do not fit hidden_size ", hidden,
                    " and ", dirs, " direction(s)"));
  const int64_t seq = x.size(0);
  if (c.has(4)) {
    const std::vector<int64_t> lens = c.ints(4);
    for (int64_t l : lens)
      if (l != seq) c.refuse(str("sequence_lens shorter than the sequence (", l, " of ", seq, ")"));
  }
  // Activations: f, g (and h) per direction, ONNX's defaults unless given.
  std::vector<std::string> names;
  for (const auto& a : c.node.attribute())
    if (a.name() == "activations")
      for (const auto& s : a.strings()) names.push_back(s);
  const int per_dir = K == Cell::rnn ? 1 : K == Cell::gru ? 2 : 3;
  if (names.empty())
    for (int d = 0; d < dirs; ++d)
      for (const char* n : {"Sigmoid", "Tanh", "Tanh"}) {
        if (int(names.size()) == (d + 1) * per_dir) break;
        names.push_back(K == Cell::rnn ? "Tanh" : n);
      }
  if (int(names.size()) != dirs * per_dir)
    throw Error(str("activations holds ", names.size(), " names, ", dirs * per_dir, " expected"));
  if (c.has_attr("activation_alpha") || c.has_attr("activation_beta")) c.refuse("activation_alpha and activation_beta");
  const bool clipped = c.has_attr("clip");
  const double clip = c.attr_f("clip", 0);
  const bool linear_before_reset = K == Cell::gru && c.attr_i("linear_before_reset", 0) != 0;

  std::vector<Tensor> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    auto act = [&](int i, const Tensor& v) {
      const Tensor in = clipped ? clamp(v, Scalar(-clip), Scalar(clip)) : v;
      return activation_named(c, names[size_t(d * per_dir + i)])(in, SrcLoc::none());
    };
    const Tensor wd = w.select(0, d), rd = r.select(0, d);
    Tensor wb, rb;
    if (c.has(3)) {
      wb = c.in(3).select(0, d).slice(0, 0, gates * hidden);
      rb = c.in(3).select(0, d).slice(0, gates * hidden, 2 * gates * hidden);
    }
    const Tensor xw = linear(x, wd, wb);  // [seq, batch, gates * hidden], every step at once
    const Tensor zero = zeros_like(xw.select(0, 0).slice(-1, 0, hidden));
    // initial_h (5) or initial_c (6) of this direction, else zeros. A state known at import to
    // be zeros is the default too: torch.onnx.export writes ConstantOfShape(batch) zeros, which
    // would otherwise become a constant of the traced batch size.
    auto known_zeros = [&](int i) {
      DispatchHookGuard untraced(nullptr);  // looking at a known value records nothing
      return c.known(i) && !any(ne(c.in(i), 0.0)).item<bool>();
    };
    auto initial = [&](int i) {
      if (!c.has(i) || known_zeros(i)) return zero;
      return batch_first ? c.in(i).select(1, d) : c.in(i).select(0, d);
    };
    Tensor h = initial(5), cell = K == Cell::lstm ? initial(6) : Tensor{};
    Tensor peep_i, peep_o, peep_f;
    if (K == Cell::lstm && c.has(7)) {
      const Tensor p = c.in(7).select(0, d);
      peep_i = p.slice(0, 0, hidden), peep_o = p.slice(0, hidden, 2 * hidden),
      peep_f = p.slice(0, 2 * hidden, 3 * hidden);
    }
    auto gate = [&](const Tensor& t, int g) { return t.slice(-1, g * hidden, (g + 1) * hidden); };
    std::vector<Tensor> steps(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) {
      const int64_t t = reverse ? seq - 1 - i : i;
      const Tensor xt = xw.select(0, t);
      if constexpr (K == Cell::rnn) {
        h = act(0, xt + linear(h, rd, rb));
      } else if constexpr (K == Cell::gru) {  // gates z, r, h
        const Tensor hr = linear(h, rd, rb);
        const Tensor z = act(0, gate(xt, 0) + gate(hr, 0)), rg = act(0, gate(xt, 1) + gate(hr, 1));
        Tensor cand;
        if (linear_before_reset) {
          cand = act(1, gate(xt, 2) + rg * gate(hr, 2));
        } else {
          const Tensor rh = linear(rg * h, rd.slice(0, 2 * hidden, 3 * hidden),
                                   rb.defined() ? rb.slice(0, 2 * hidden, 3 * hidden) : Tensor{});
          cand = act(1, gate(xt, 2) + rh);
        }
        h = (1.0 - z) * cand + z * h;
      } else {  // gates i, o, f, c
        const Tensor hr = linear(h, rd, rb);
        Tensor ig = gate(xt, 0) + gate(hr, 0), fg = gate(xt, 2) + gate(hr, 2);
        if (peep_i.defined()) ig = ig + peep_i * cell, fg = fg + peep_f * cell;
        const Tensor it = act(0, ig), ft = act(0, fg), ct = act(1, gate(xt, 3) + gate(hr, 3));
        cell = ft * cell + it * ct;
        Tensor og = gate(xt, 1) + gate(hr, 1);
        if (peep_o.defined()) og = og + peep_o * cell;
        h = act(0, og) * act(2, cell);
      }
      steps[size_t(t)] = h;
    }
    ys.push_back(stack(steps, 0));  // [seq, batch, hidden]
    hs.push_back(h);
    cs.push_back(cell);
  }
  Tensor y = stack(ys, 1), yh = stack(hs, 0);  // [seq, dirs, batch, hidden], [dirs, batch, hidden]
  Tensor yc = K == Cell::lstm ? stack(cs, 0) : Tensor{};
  if (batch_first) {
    y = y.permute({2, 0, 1, 3}), yh = yh.transpose(0, 1);
    if (yc.defined()) yc = yc.transpose(0, 1);
  }
  if (K == Cell::lstm) return {y, yh, yc};
  return {y, yh};
}

// RoiAlign: roi_align over boxes [batch index, x1, y1, x2, y2] made of rois and batch_indices;
// opset 16's coordinate_transformation_mode half_pixel is roi_align's aligned, output_half_pixel
// (opset 10's only form) is not. Mode max is refused: roi_align averages.
Outs roi_align_(const NodeCtx& c) {
  const Tensor &x = c.in(0), &rois = c.in(1), &batch = c.in(2);
  if (c.attr_s("mode", "avg") != "avg")
    c.refuse(str("mode ", c.attr_s("mode", "avg"), " (Amber's roi_align averages)"));
  const std::string ctm =
      c.opset >= 16 ? c.attr_s("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    throw Error(str("coordinate_transformation_mode '", ctm, "' is not half_pixel or output_half_pixel"));
  const Tensor boxes = cat({batch.to(x.dtype()).unsqueeze(1), rois.to(x.dtype())}, 1);
  return {roi_align(x, boxes, {c.attr_i("output_height", 1), c.attr_i("output_width", 1)},
                    double(c.attr_f("spatial_scale", 1.0f)), c.attr_i("sampling_ratio", 0), ctm == "half_pixel")};
}

// MaxUnpool: ONNX numbers indices over the whole tensor, (n * C + c) * H * W + h * W + w;
// max_unpool2d takes them within the plane. The output's size is (in - 1) * stride + kernel -
// pads per dim. An output_shape (known at import) of another size is refused: ONNX's own test
// pads the result of the default size to it, while ONNX Runtime and PyTorch place the indices
// in a plane of output_shape's size (onnx/onnx#2398); no answer would be right for both.
Outs max_unpool(const NodeCtx& c) {
  const Tensor &x = c.in(0), &index = c.in(1);
  const Window w1 = window(c, x, c.attr_ints("kernel_shape"));
  std::vector<int64_t> size;
  for (int i = 0; i < w1.nd; ++i) {
    const size_t k = size_t(i);
    size.push_back((x.size(2 + i) - 1) * w1.strides[k] + w1.kernel[k] - w1.begin[k] - w1.end[k]);
  }
  if (c.has(2)) {
    const std::vector<int64_t> shape = c.ints(2);
    if (shape.size() != size_t(x.dim()))
      throw Error(str("output_shape ", DimVec(shape), " must hold ", x.dim(), " values"));
    if (!std::equal(size.begin(), size.end(), shape.begin() + 2))
      c.refuse(str("MaxUnpool to output_shape ", DimVec(shape), " other than its default spatial size ", DimVec(size),
                   " (ONNX's test data and ONNX Runtime disagree on its meaning: onnx/onnx#2398)"));
  }
  if (w1.nd == 1) size.insert(size.begin(), 1);
  const Tensor xin = as_2d(x, w1), iin = as_2d(index, w1);
  const Tensor local = iin - plane_numbers(iin) * Scalar(size[0] * size[1]);
  return {from_2d(max_unpool2d(xin, local, dv(size)), w1)};
}

Outs average_pool(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const Window w1 = window(c, x, c.attr_ints("kernel_shape"));
  const Window w = window_2d(w1);
  for (int64_t d : w.dilations)
    if (d != 1) c.refuse("AveragePool with dilations");
  const bool include = c.attr_i("count_include_pad", 0) != 0, ceil = c.attr_i("ceil_mode", 0) != 0;
  const Tensor xin = as_2d(x, w1);
  bool fits = w.symmetric();
  for (int i = 0; i < 2; ++i) fits = fits && w.begin[size_t(i)] * 2 <= w.kernel[size_t(i)];
  if (fits) return {from_2d(avg_pool2d(xin, dv(w.kernel), dv(w.strides), dv(w.begin), ceil, include), w1)};
  // Pads avg_pool2d cannot take: pad explicitly; without count_include_pad, divide the pooled
  // sum by the pooled count of real elements (a ones plane padded alike)
  const Tensor pooled = avg_pool2d(pad_window(xin, w, 0.0), dv(w.kernel), dv(w.strides), {0, 0}, ceil, true);
  if (include) return {from_2d(pooled, w1)};
  const Tensor count = avg_pool2d(pad_window(ones({1, 1, xin.size(2), xin.size(3)}, xin.dtype()), w, 0.0), dv(w.kernel),
                                  dv(w.strides), {0, 0}, ceil, true);
  return {from_2d(pooled / count, w1)};
}

DimVec spatial_dims(const Tensor& x) {
  DimVec d;
  for (int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
  return d;
}
Outs global_average_pool(const NodeCtx& c) { return {mean(c.in(0), spatial_dims(c.in(0)), true)}; }
Outs global_max_pool(const NodeCtx& c) { return {amax(c.in(0), spatial_dims(c.in(0)), true)}; }

// ---- normalisation ----

Outs batch_normalization(const NodeCtx& c) {
  if (c.attr_i("training_mode", 0) != 0 || c.output_used(1) || c.output_used(2))
    c.refuse("BatchNormalization in training mode (Amber imports inference graphs)");
  if (c.opset < 9 && c.attr_i("spatial", 1) != 1) c.refuse("BatchNormalization with spatial=0");
  return {batch_norm(c.in(0), c.in(3), c.in(4), c.in(1), c.in(2), false, 0.1, c.attr_f("epsilon", 1e-5f))};
}

Outs instance_normalization(const NodeCtx& c) {
  return {instance_norm(c.in(0), {}, {}, c.in(1), c.in(2), true, 0.1, c.attr_f("epsilon", 1e-5f))};
}

Outs layer_normalization(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = wrap_axis(c.attr_i("axis", -1), x.dim());
  DimVec shape;
  for (int64_t i = axis; i < x.dim(); ++i) shape.push_back(x.size(i));
  auto fit = [&](int i) -> Tensor {
    if (!c.has(i)) return {};
    const Tensor& p = c.in(i);
    if (p.sizes() == shape) return p;
    if (p.numel() == std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>()))
      return p.reshape(shape);
    return p.expand(shape).contiguous();
  };
  const double eps = c.attr_f("epsilon", 1e-5f);
  Outs o = {layer_norm(x, shape, fit(1), fit(2), eps)};
  if (c.output_used(1) || c.output_used(2)) {  // the statistics, over the normalised dims kept as 1s
    DimVec dims;
    for (int64_t i = axis; i < x.dim(); ++i) dims.push_back(i);
    const Tensor m = mean(x, dims, true), d = x - m;
    o.push_back(m);
    o.push_back(rsqrt(mean(d * d, dims, true) + eps));
  }
  return o;
}

// softmax over `axis`: from opset 13 over that dim; before, over the input coerced to 2-D at axis.
template <bool Log>
Outs softmax_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  if (c.opset >= 13) {
    const int64_t axis = c.attr_i("axis", -1);
    return {Log ? log_softmax(x, axis) : softmax(x, axis)};
  }
  const int64_t axis = wrap_axis(c.attr_i("axis", 1), x.dim());
  const Tensor flat = flatten_2d(x, axis);
  const Tensor y = Log ? log_softmax(flat, 1) : softmax(flat, 1);
  return {y.reshape(x.sizes())};
}

Outs dropout_(const NodeCtx& c) {
  if (c.opset >= 12 && c.has(2) && c.scalar(2) != 0) c.refuse("Dropout in training mode");
  Outs o = {c.in(0)};
  if (c.output_used(1)) o.push_back(ones(c.in(0).sizes(), DType::b8));
  return o;
}

// ---- shapes ----

Outs flatten_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = c.attr_i("axis", 1) < 0 ? c.attr_i("axis", 1) + x.dim() : c.attr_i("axis", 1);
  if (axis < 0 || axis > x.dim()) throw Error(str("axis ", c.attr_i("axis", 1), " is out of range for rank ", x.dim()));
  return {flatten_2d(x, axis)};
}

Outs reshape_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> shape = c.opset < 5 ? c.attr_ints("shape") : c.ints(1);
  const bool allowzero = c.attr_i("allowzero", 0) != 0;
  if (!allowzero)
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 0) {
        if (int64_t(i) >= x.dim()) throw Error(str("shape ", DimVec(shape), ": a 0 at ", i, " past the input's rank"));
        shape[i] = x.size(int64_t(i));
      }
  return {x.reshape(DimVec(shape))};
}

Outs transpose_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = x.dim() - 1; i >= 0; --i) perm.push_back(i);
  return {x.permute(DimVec(perm))};
}

Outs concat(const NodeCtx& c) {
  std::vector<Tensor> xs;
  for (int i = 0; i < c.size(); ++i) xs.push_back(c.in(i));
  return {cat(xs, c.attr_i("axis", 0))};
}

Outs split_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = wrap_axis(c.attr_i("axis", 0), x.dim());
  std::vector<int64_t> sizes = c.opset < 13 ? c.attr_ints("split") : (c.has(1) ? c.ints(1) : std::vector<int64_t>{});
  if (sizes.empty()) {
    const int64_t n = c.outputs(), len = x.size(axis);
    if (len % n != 0) throw Error(str("Split of ", len, " into ", n, " equal parts"));
    sizes.assign(size_t(n), len / n);
  }
  return split_with_sizes(x, sizes, axis);
}

std::vector<int64_t> axes_of(const NodeCtx& c, int input) {
  return c.opset < 13 ? c.attr_ints("axes") : (c.has(input) ? c.ints(input) : std::vector<int64_t>{});
}

Outs squeeze_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = axes_of(c, 1);
  if (axes.empty()) return {x.squeeze()};
  for (int64_t& a : axes) a = wrap_axis(a, x.dim());
  std::sort(axes.rbegin(), axes.rend());
  Tensor y = x;
  for (int64_t a : axes) {
    if (x.size(a) != 1) throw Error(str("Squeeze of axis ", a, " of size ", x.size(a), " (shape ", x.sizes(), ")"));
    y = y.squeeze(a);
  }
  return {y};
}

Outs unsqueeze_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = axes_of(c, 1);
  const int64_t rank = x.dim() + int64_t(axes.size());
  for (int64_t& a : axes) a = wrap_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  Tensor y = x;
  for (int64_t a : axes) y = y.unsqueeze(a);
  return {y};
}

Outs slice_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.attr_ints("starts"), ends = c.attr_ints("ends"), axes = c.attr_ints("axes");
  } else {
    starts = c.ints(1), ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error("starts, ends, axes and steps must have the same length");
  Tensor y = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = wrap_axis(axes[i], x.dim()), n = x.size(a), step = steps[i];
    if (step == 0) throw Error("Slice step 0");
    int64_t s = starts[i] < 0 ? starts[i] + n : starts[i], e = ends[i] < 0 ? ends[i] + n : ends[i];
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n), e = std::clamp<int64_t>(e, 0, n);
      y = y.slice(a, s, std::max(s, e), step);
    } else {  // flip, then walk forward from the mirrored start
      s = std::clamp<int64_t>(s, 0, n - 1), e = std::clamp<int64_t>(e, -1, n - 1);
      const int64_t fs = n - 1 - s, fe = n - 1 - e;
      y = n == 0 ? y : flip(y, {a}).slice(a, fs, std::max(fs, fe), -step);
    }
  }
  return {y};
}

Tensor wrap_indices(const Tensor& idx, int64_t n) {
  const Tensor i = idx.to(DType::i64);
  return where(lt(i, 0), i + n, i);
}

Outs gather_(const NodeCtx& c) {
  const Tensor &x = c.in(0), &idx = c.in(1);
  const int64_t axis = wrap_axis(c.attr_i("axis", 0), x.dim());
  const Tensor i = wrap_indices(idx, x.size(axis));
  const Tensor picked = index_select(x, axis, i.reshape({-1}));
  DimVec shape;
  for (int64_t d = 0; d < axis; ++d) shape.push_back(x.size(d));
  for (int64_t d : idx.sizes()) shape.push_back(d);
  for (int64_t d = axis + 1; d < x.dim(); ++d) shape.push_back(x.size(d));
  return {picked.reshape(shape)};
}

Outs gather_elements(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = wrap_axis(c.attr_i("axis", 0), x.dim());
  return {gather(x, axis, wrap_indices(c.in(1), x.size(axis)))};
}

// ScatterElements' and ScatterND's reduction other than none as scatter_reduce's (self included).
std::string scatter_reduction(const NodeCtx& c, const char* type, const std::string& reduction) {
  if (reduction == "add") return "sum";
  if (reduction == "mul") return "prod";
  if (reduction == "max") return "amax";
  if (reduction == "min") return "amin";
  c.refuse(str(type, " with reduction '", reduction, "'"));
}

Outs scatter_elements(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = wrap_axis(c.attr_i("axis", 0), x.dim());
  const Tensor i = wrap_indices(c.in(1), x.size(axis));
  const std::string red = c.attr_s("reduction", "none");
  if (red == "none") return {scatter(x, axis, i, c.in(2))};
  return {scatter_reduce(x, axis, i, c.in(2), scatter_reduction(c, "ScatterElements", red))};
}

// numpy's two-way broadcast of two shapes.
DimVec broadcast_shapes(const DimVec& a, const std::vector<int64_t>& b) {
  const int n = std::max(a.size(), int(b.size()));
  DimVec out;
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - int(b.size()));
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[size_t(ib)] : 1;
    if (da != db && da != 1 && db != 1) throw Error(str("shapes ", a, " and ", DimVec(b), " do not broadcast"));
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

Outs expand_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  return {x.expand(broadcast_shapes(x.sizes(), c.ints(1)))};
}

Outs tile(const NodeCtx& c) { return {repeat(c.in(0), DimVec(c.ints(1)))}; }

Outs shape_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t r = x.dim();
  int64_t s = c.attr_i("start", 0), e = c.attr_i("end", r);
  s = std::clamp<int64_t>(s < 0 ? s + r : s, 0, r), e = std::clamp<int64_t>(e < 0 ? e + r : e, 0, r);
  std::vector<int64_t> v;
  for (int64_t i = s; i < e; ++i) v.push_back(x.size(i));
  return {i64_tensor(v)};
}

Outs size_(const NodeCtx& c) { return {full({}, c.in(0).numel(), DType::i64)}; }

Outs constant_of_shape(const NodeCtx& c) {
  const std::vector<int64_t> shape = c.ints(0);
  Tensor value = c.has_attr("value") ? c.attr_tensor("value") : zeros({1}, DType::f32);
  if (value.numel() != 1) throw Error("ConstantOfShape's value must hold one element");
  return {value.reshape({}).expand(DimVec(shape)).contiguous()};
}

Outs constant(const NodeCtx& c) {
  if (c.has_attr("value")) return {c.attr_tensor("value")};
  if (c.has_attr("value_float")) return {full({}, double(c.attr_f("value_float", 0)), DType::f32)};
  if (c.has_attr("value_floats")) return {tensor(c.attr_floats("value_floats"))};
  if (c.has_attr("value_int")) return {full({}, c.attr_i("value_int", 0), DType::i64)};
  if (c.has_attr("value_ints")) return {i64_tensor(c.attr_ints("value_ints"))};
  c.refuse("Constant of a sparse tensor or strings");
}

// ---- Quantization as ONNX writes it (QuantizeLinear / DequantizeLinear pairs): computed in
// f32 with ONNX's rounding (halves to even) and saturation, so a QDQ model runs with the
// values its int8 arithmetic stands for ----

// A per-tensor (0-d or one value) or per-axis (1-D, x's size along axis) scale or zero point,
// shaped to broadcast against x.
Tensor along_axis(const NodeCtx& c, const Tensor& p, const Tensor& x, const char* what) {
  if (p.numel() == 1) return p.reshape({});
  if (p.dim() != 1) throw Error(str(what, " must be a scalar or 1-D, got shape ", p.sizes()));
  const int64_t axis = wrap_axis(c.attr_i("axis", 1), x.dim());
  if (p.size(0) != x.size(axis))
    throw Error(str(what, " holds ", p.size(0), " values for axis ", axis, " of size ", x.size(axis), " (shape ",
                    x.sizes(), ")"));
  DimVec shape;
  for (int64_t d = 0; d < x.dim(); ++d) shape.push_back(d == axis ? p.size(0) : 1);
  return p.reshape(shape);
}

// saturate(round(q) + zero_point) as t (uint8 or int8); zero_point f32 or undefined (0).
Tensor saturate(const Tensor& q, const Tensor& zero_point, DType t) {
  Tensor y = round(q);
  if (zero_point.defined()) y = y + zero_point;
  return clamp(y, Scalar(t == DType::u8 ? 0.0 : -128.0), Scalar(t == DType::u8 ? 255.0 : 127.0)).to(t);
}

Outs quantize_linear(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const DType t = c.has(2) ? c.in(2).dtype() : DType::u8;
  if (t != DType::u8 && t != DType::i8) c.refuse(str("a zero point of dtype ", t, " (uint8 and int8 only)"));
  const Tensor zp = c.has(2) ? along_axis(c, c.in(2), x, "y_zero_point").to(DType::f32) : Tensor{};
  return {saturate(x.to(DType::f32) / along_axis(c, c.in(1), x, "y_scale").to(DType::f32), zp, t)};
}

Outs dequantize_linear(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  if (x.dtype() != DType::u8 && x.dtype() != DType::i8 && x.dtype() != DType::i32)
    c.refuse(str("input of dtype ", x.dtype(), " (uint8, int8 and int32 only)"));
  Tensor y = x.to(DType::f32);
  if (c.has(2)) y = y - along_axis(c, c.in(2), x, "x_zero_point").to(DType::f32);
  return {y * along_axis(c, c.in(1), x, "x_scale").to(DType::f32)};
}

// y_scale from x's range widened to hold 0, the zero point putting 0 on an integer, y as
// QuantizeLinear with them (uint8).
Outs dynamic_quantize_linear(const NodeCtx& c) {
  const Tensor x = c.in(0).to(DType::f32);
  const Tensor lo = clamp(amin(x), std::nullopt, Scalar(0.0)), hi = clamp(amax(x), Scalar(0.0), std::nullopt);
  const Tensor scale = (hi - lo) / 255.0;
  const Tensor zp = clamp(round(neg(lo) / scale), Scalar(0.0), Scalar(255.0));
  return {saturate(x / scale, zp, DType::u8), scale, zp.to(DType::u8)};
}

Outs cast(const NodeCtx& c) {
  const DType to = dtype_from_onnx(int32_t(c.attr_i("to", 0)), "Cast's 'to'");
  return {c.in(0).to(to)};
}
Outs cast_like(const NodeCtx& c) { return {c.in(0).to(c.in(1).dtype())}; }

Outs range_(const NodeCtx& c) {
  const DType t = c.in(0).dtype();
  const double s = c.scalar(0), e = c.scalar(1), d = c.scalar(2);
  if (d == 0) throw Error("Range with delta 0");
  const int64_t n = std::max<int64_t>(int64_t(std::ceil((e - s) / d)), 0);
  // start + i * delta, computed in the output type as ONNX defines it
  return {(arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::i64).to(t) * Scalar(d) + Scalar(s)).to(t)};
}

// ---- Einsum ----

// One operand's labels, an ellipsis expanded: its k-th dim from the right under "..." is the
// label char('0' + k), so ellipses of different ranks broadcast from the right.
std::string einsum_labels(const std::string& term, int64_t rank, int* ellipsis_dims) {
  const size_t dots = term.find("...");
  std::string letters = term;
  if (dots != std::string::npos) letters.erase(dots, 3);
  for (char ch : letters)
    if (!std::isalpha(static_cast<unsigned char>(ch)))
      throw Error(str("equation term '", term, "' holds '", ch, "' (letters and one ellipsis only)"));
  const int64_t e = rank - int64_t(letters.size());
  if (dots == std::string::npos ? e != 0 : e < 0)
    throw Error(str("equation term '", term, "' does not fit an input of rank ", rank));
  if (dots == std::string::npos) return term;
  if (e > 8) throw Error(str("an ellipsis of ", e, " dims (at most 8)"));
  *ellipsis_dims = std::max(*ellipsis_dims, int(e));
  std::string dims;
  for (int64_t k = e - 1; k >= 0; --k) dims += char('0' + k);
  return letters.substr(0, dots) + dims + letters.substr(dots);
}

// Einsum: every operand's dims aligned to one label order, multiplied with broadcasting and
// summed over the labels the output lacks. Two f32 operands with a contraction go through
// matmul ([batch..., kept of A, contracted] @ [batch..., contracted, kept of B]). A label
// repeated within one operand (a diagonal) is refused.
Outs einsum(const NodeCtx& c) {
  std::string eq;
  for (char ch : c.attr_s("equation", ""))
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (int(terms.size()) != c.size())
    throw Error(str("equation '", eq, "' has ", terms.size(), " terms for ", c.size(), " inputs"));
  int ellipsis = 0;
  std::vector<std::string> labels;
  std::string order;  // every label, in order of first appearance
  std::map<char, int> count;
  for (int i = 0; i < c.size(); ++i) {
    labels.push_back(einsum_labels(terms[size_t(i)], c.in(i).dim(), &ellipsis));
    for (char ch : labels.back()) {
      if (std::count(labels.back().begin(), labels.back().end(), ch) > 1)
        c.refuse(str("equation '", eq, "': label '", ch, "' repeated within one input (a diagonal)"));
      if (count[ch]++ == 0) order += ch;
    }
  }
  std::string out;
  if (arrow == std::string::npos) {  // implicit: the ellipsis, then the labels seen once, sorted
    for (int k = ellipsis - 1; k >= 0; --k) out += char('0' + k);
    std::string once;
    for (const auto& [ch, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(ch))) once += ch;
    out += once;
  } else {
    out = eq.substr(arrow + 2);
    const size_t dots = out.find("...");
    if (dots != std::string::npos) {
      std::string dims;
      for (int k = ellipsis - 1; k >= 0; --k) dims += char('0' + k);
      out.replace(dots, 3, dims);
    }
    for (char ch : out)
      if (!count.count(ch) || std::count(out.begin(), out.end(), ch) > 1)
        throw Error(str("equation '", eq, "': output label '", ch, "' is not an input's or is repeated"));
  }
  auto has = [](const std::string& l, char ch) { return l.find(ch) != std::string::npos; };
  // Sums an operand's labels that neither the output nor another operand holds.
  auto sum_private = [&](Tensor t, std::string& l, int self) {
    DimVec dims;
    std::string kept;
    for (size_t d = 0; d < l.size(); ++d) {
      bool shared = has(out, l[d]);
      for (int j = 0; j < c.size(); ++j) shared = shared || (j != self && has(labels[size_t(j)], l[d]));
      if (shared)
        kept += l[d];
      else
        dims.push_back(int64_t(d));
    }
    l = kept;
    return dims.empty() ? t : sum(t, dims);
  };
  // t (labels l) permuted to the order of `to`'s labels it holds.
  auto arrange = [&](const Tensor& t, const std::string& l, const std::string& to) {
    DimVec perm;
    for (char ch : to)
      if (has(l, ch)) perm.push_back(int64_t(l.find(ch)));
    return t.permute(perm);
  };
  if (c.size() == 2 && c.in(0).dtype() == DType::f32 && c.in(1).dtype() == DType::f32) {
    std::string la = labels[0], lb = labels[1];
    Tensor a = sum_private(c.in(0), la, 0), b = sum_private(c.in(1), lb, 1);
    std::string batch, keep_a, keep_b, contracted;
    for (char ch : order) {
      const bool in_a = has(la, ch), in_b = has(lb, ch), in_out = has(out, ch);
      if (in_a && in_b)
        (in_out ? batch : contracted) += ch;
      else if (in_a)
        keep_a += ch;
      else if (in_b)
        keep_b += ch;
    }
    bool same_batch = !contracted.empty();
    for (char ch : batch) same_batch = same_batch && a.size(int64_t(la.find(ch))) == b.size(int64_t(lb.find(ch)));
    if (same_batch) {
      a = arrange(a, la, batch + keep_a + contracted);
      b = arrange(b, lb, batch + contracted + keep_b);
      DimVec sa, sb, so;
      int64_t m = 1, k = 1, n = 1;
      for (size_t i = 0; i < batch.size(); ++i) sa.push_back(a.size(int64_t(i))), so.push_back(a.size(int64_t(i)));
      sb = sa;
      for (size_t i = 0; i < keep_a.size(); ++i)
        m *= a.size(int64_t(batch.size() + i)), so.push_back(a.size(int64_t(batch.size() + i)));
      for (size_t i = 0; i < contracted.size(); ++i) k *= b.size(int64_t(batch.size() + i));
      for (size_t i = 0; i < keep_b.size(); ++i)
        n *= b.size(int64_t(batch.size() + contracted.size() + i)),
            so.push_back(b.size(int64_t(batch.size() + contracted.size() + i)));
      sa.push_back(m), sa.push_back(k), sb.push_back(k), sb.push_back(n);
      const Tensor y = matmul(a.reshape(sa), b.reshape(sb)).reshape(so);
      return {arrange(y, batch + keep_a + keep_b, out)};
    }
  }
  // The general form: aligned, multiplied, summed.
  Tensor acc;
  std::string acc_labels;
  for (int i = 0; i < c.size(); ++i) {
    std::string l = labels[size_t(i)];
    Tensor t = arrange(c.in(i), l, order);
    std::string sorted;
    for (char ch : order)
      if (has(l, ch)) sorted += ch;
    DimVec shape;  // every label of `order`, 1 where t lacks it
    for (char ch : order) shape.push_back(has(sorted, ch) ? t.size(int64_t(sorted.find(ch))) : 1);
    t = t.reshape(shape);
    acc = i == 0 ? t : acc * t;
  }
  DimVec reduce;
  std::string left;
  for (size_t d = 0; d < order.size(); ++d) {
    if (has(out, order[d]))
      left += order[d];
    else
      reduce.push_back(int64_t(d));
  }
  if (!reduce.empty()) acc = sum(acc, reduce);
  return {arrange(acc, left, out)};
}

// ---- values computed at import from known operands ----

// HannWindow, HammingWindow, BlackmanWindow (opset 17): a0 - a1 cos(2 pi n / M) +
// a2 cos(4 pi n / M) for n = 0 .. size - 1, M = size when periodic, else size - 1 (as ONNX's
// reference: a symmetric window of size 1 is NaN), computed in f64 and cast to output_datatype.
Outs signal_window(const NodeCtx& c, double a0, double a1, double a2) {
  const double size = c.scalar(0);
  if (!(size >= 0 && size <= double(INT32_MAX))) throw Error(str("size ", size, " must be from 0 to ", INT32_MAX));
  const int64_t n = int64_t(size);
  const DType out = dtype_from_onnx(int32_t(c.attr_i("output_datatype", 1)), "output_datatype");
  const double m = c.attr_i("periodic", 1) ? double(n) : double(n - 1);
  Tensor w = empty({n}, DType::f64);  // under the import's allocation limit
  double* p = w.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) {
    const double x = 2 * std::numbers::pi * double(i) / m;
    p[i] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  return {w.to(out)};
}
Outs hann_window(const NodeCtx& c) { return signal_window(c, 0.5, 0.5, 0); }
Outs hamming_window(const NodeCtx& c) { return signal_window(c, 25.0 / 46, 21.0 / 46, 0); }
Outs blackman_window(const NodeCtx& c) { return signal_window(c, 0.42, 0.5, 0.08); }

// NonZero of a value known at import: [rank, count] indices in row-major order.
Outs non_zero(const NodeCtx& c) {
  const std::vector<double> v = c.numbers(0);
  const Tensor& x = c.in(0);
  const int64_t r = std::max<int64_t>(x.dim(), 1);  // a 0-d input gives [1, count], as numpy
  std::vector<int64_t> flat;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) flat.push_back(int64_t(i));
  const int64_t count = int64_t(flat.size());
  Tensor out = empty({r, count}, DType::i64);
  int64_t* p = out.data_ptr<int64_t>();
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = flat[size_t(k)];
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      p[d * count + k] = rest % x.size(d);
      rest /= x.size(d);
    }
    if (x.dim() == 0) p[k] = 0;
  }
  return {out};
}

// Compress with a condition known at import: index_select of the positions where it holds
// (along axis, or over the flattened input without one).
Outs compress(const NodeCtx& c) {
  Tensor x = c.in(0);
  const std::vector<double> cond = c.numbers(1);
  int64_t axis = 0;
  if (c.has_attr("axis"))
    axis = wrap_axis(c.attr_i("axis", 0), x.dim());
  else
    x = x.reshape({-1});
  if (int64_t(cond.size()) > x.size(axis))
    throw Error(
        str("condition of ", cond.size(), " values is longer than dim ", axis, " of the input (", x.size(axis), ")"));
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i] != 0) keep.push_back(int64_t(i));
  return {index_select(x, axis, i64_tensor(keep))};
}

// ReverseSequence with sequence_lens known at import: a gather along the time axis whose
// index reverses the first len[b] steps of each batch entry b and keeps the rest.
Outs reverse_sequence(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> lens = c.ints(1);
  const int64_t batch_axis = c.attr_i("batch_axis", 1), time_axis = c.attr_i("time_axis", 0);
  if (x.dim() < 2 || !((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    throw Error(str("batch_axis ", batch_axis, " and time_axis ", time_axis, " must be 0 and 1 in either order for ",
                    "input shape ", x.sizes()));
  const int64_t nb = x.size(batch_axis), nt = x.size(time_axis);
  if (int64_t(lens.size()) != nb) throw Error(str("sequence_lens holds ", lens.size(), " values for a batch of ", nb));
  Tensor index = empty(time_axis == 0 ? DimVec{nt, nb} : DimVec{nb, nt}, DType::i64);
  int64_t* p = index.data_ptr<int64_t>();
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t len = lens[size_t(b)];
    if (len < 0 || len > nt) throw Error(str("sequence_lens[", b, "] = ", len, " is outside 0 to ", nt));
    for (int64_t t = 0; t < nt; ++t) p[time_axis == 0 ? t * nb + b : b * nt + t] = t < len ? len - 1 - t : t;
  }
  DimVec view = index.sizes();
  for (int64_t d = 2; d < x.dim(); ++d) view.push_back(1);
  return {gather(x, time_axis, index.reshape(view).expand(x.sizes()).contiguous())};
}

Outs pad_(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::string mode = c.attr_s("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset < 11) {
    pads = c.attr_ints("pads");
    value = c.attr_f("value", 0.0f);
  } else {
    pads = c.ints(1);
    if (c.has(2)) value = c.scalar(2);
  }
  const int64_t r = x.dim();
  if (int64_t(pads.size()) != 2 * r) throw Error(str("pads must hold ", 2 * r, " values, got ", pads.size()));
  if (mode == "edge") mode = "replicate";
  if (mode != "constant" && mode != "reflect" && mode != "replicate") c.refuse(str("Pad mode '", mode, "'"));
  DimVec p;
  int64_t last = -1;  // F.pad takes pairs from the last dim; leading unpadded dims are left out
  for (int64_t i = 0; i < r; ++i)
    if (pads[size_t(i)] != 0 || pads[size_t(i + r)] != 0) last = std::max(last, r - 1 - i);
  if (mode == "constant") last = r - 1;
  for (int64_t i = r - 1; i >= r - 1 - last && i >= 0; --i)
    p.push_back(pads[size_t(i)]), p.push_back(pads[size_t(i + r)]);
  if (p.empty()) return {x};
  return {pad(x, p, mode, !is_floating(x.dtype()) ? Scalar(int64_t(value)) : Scalar(value))};
}

Outs cum_sum(const NodeCtx& c) {
  Tensor x = c.in(0);
  const int64_t axis = wrap_axis(int64_t(c.scalar(1)), x.dim());
  const bool reverse = c.attr_i("reverse", 0) != 0, exclusive = c.attr_i("exclusive", 0) != 0;
  if (reverse) x = flip(x, {axis});
  Tensor y = cumsum(x, axis);
  if (exclusive) y = y - x;
  if (reverse) y = flip(y, {axis});
  return {y};
}

Outs top_k(const NodeCtx& c) {
  const int64_t k = c.opset < 10 ? c.attr_i("k", 0) : c.ints(1).at(0);
  auto [v, i] = topk(c.in(0), k, c.attr_i("axis", -1), c.attr_i("largest", 1) != 0, c.attr_i("sorted", 1) != 0);
  return {v, i};
}

// Resize (opsets 10 to 17) and Upsample over the trailing dims of a 4-D or 5-D input, in the
// forms PyTorch's upsampling takes: nearest with asymmetric coordinates rounding down (any other
// as index_select), linear (and, 4-D, cubic with a = -0.75, no exclude_outside) with
// align_corners or (pytorch_)half_pixel coordinates. Sizes come from the sizes input or from
// floor(input size * scale).
Outs resize(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int rank = int(x.dim());
  if (rank != 4 && rank != 5)
    c.refuse(str("a ", rank, "-d input (Amber resizes the trailing dims of 4-d and 5-d inputs)"));
  const bool upsample = c.node.op_type() == "Upsample";
  const std::string mode = c.attr_s("mode", "nearest");
  const std::string ctm =
      (upsample || c.opset < 11) ? "asymmetric" : c.attr_s("coordinate_transformation_mode", "half_pixel");
  const int scales_at = (upsample || c.opset < 11) ? 1 : 2;
  std::vector<double> scales;
  DimVec out(x.sizes());
  if (c.opset >= 11 && !upsample && c.has(3) && c.in(3).numel() > 0) {
    const std::vector<int64_t> sizes = c.ints(3);
    if (int(sizes.size()) != rank) c.refuse(str("sizes holds ", sizes.size(), " values for a ", rank, "-d input"));
    for (int d = 0; d < rank; ++d) out[d] = sizes[size_t(d)];
  } else if (upsample && c.opset < 9) {
    for (float f : c.attr_floats("scales")) scales.push_back(f);
  } else {
    scales = c.numbers(scales_at);
  }
  if (!scales.empty()) {
    if (int(scales.size()) != rank) c.refuse(str("scales holds ", scales.size(), " values for a ", rank, "-d input"));
    for (int d = 0; d < rank; ++d) {
      const double size = std::floor(double(x.size(d)) * scales[size_t(d)]);
      if (!(size >= 0 && size < 0x1p40)) c.refuse(str("scale ", scales[size_t(d)], " of dim ", d));
      out[d] = int64_t(size);
    }
  }
  if (out[0] != x.size(0) || out[1] != x.size(1)) c.refuse("resizing the batch or channel dim");
  const DimVec spatial(std::span<const int64_t>(out.begin() + 2, out.end()));
  std::optional<double> sd, sh, sw;  // the spatial dims' scales (D: 5-d only)
  if (!scales.empty()) {
    sh = scales[size_t(rank) - 2], sw = scales[size_t(rank) - 1];
    if (rank == 5) sd = scales[2];
  }
  if (mode == "nearest") {
    const std::string rounding =
        (c.opset >= 11 && !upsample) ? c.attr_s("nearest_mode", "round_prefer_floor") : "floor";
    if (ctm == "asymmetric" && rounding == "floor")  // PyTorch's
      return {rank == 4 ? upsample_nearest2d(x, spatial, sh, sw) : upsample_nearest3d(x, spatial, sd, sh, sw)};
    // Any other: each spatial dim's source indices, as ONNX computes them, picked by index_select.
    if (ctm == "tf_crop_and_resize") c.refuse("nearest with coordinate_transformation_mode tf_crop_and_resize");
    if (rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" &&
        rounding != "ceil")
      throw Error(str("nearest_mode '", rounding, "'"));
    Tensor y = x;
    for (int d = 2; d < rank; ++d) {
      const int64_t in = x.size(d), n = out[d];
      const double scale = scales.empty() ? double(n) / double(in) : scales[size_t(d)];
      Tensor index = empty({n}, DType::i64);
      int64_t* p = index.data_ptr<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        double src = ctm == "half_pixel"             ? (double(i) + 0.5) / scale - 0.5
                     : ctm == "pytorch_half_pixel"   ? (n > 1 ? (double(i) + 0.5) / scale - 0.5 : 0.0)
                     : ctm == "align_corners"        ? (n > 1 ? double(i) * double(in - 1) / double(n - 1) : 0.0)
                     : ctm == "asymmetric"           ? double(i) / scale
                     : ctm == "tf_half_pixel_for_nn" ? (double(i) + 0.5) / scale
                                                     : std::nan("");
        if (std::isnan(src)) c.refuse(str("nearest with coordinate_transformation_mode ", ctm));
        const double fl = std::floor(src), frac = src - fl;
        if (rounding == "floor")
          src = fl;
        else if (rounding == "ceil")
          src = std::ceil(src);
        else if (frac == 0.5)
          src = rounding == "round_prefer_floor" ? fl : fl + 1;
        else
          src = std::round(src);
        p[i] = std::clamp<int64_t>(int64_t(src), 0, std::max<int64_t>(in - 1, 0));
      }
      y = index_select(y, d, index);
    }
    return {y};
  }
  if (mode != "linear" && mode != "cubic") c.refuse(str("mode ", mode));
  bool corners = false;
  if (ctm == "align_corners") {
    corners = true;
  } else if (ctm == "pytorch_half_pixel" && std::find(spatial.begin(), spatial.end(), 1) != spatial.end()) {
    c.refuse(
        "pytorch_half_pixel to an output size of 1 (it samples the first element; PyTorch's own, half_pixel, "
        "the middle)");
  } else if (ctm != "pytorch_half_pixel" && ctm != "half_pixel") {
    c.refuse(str(mode, " with coordinate_transformation_mode ", ctm));
  }
  if (corners && !scales.empty()) {  // ONNX then divides by the unrounded size, PyTorch by the size
    for (int d = 2; d < rank; ++d)
      if (double(x.size(d)) * scales[size_t(d)] != double(out[d]))
        c.refuse("align_corners with scales that do not give whole sizes (ONNX divides by the unrounded size)");
    sd = sh = sw = std::nullopt;
  }
  if (mode == "linear")
    return {rank == 4 ? upsample_bilinear2d(x, spatial, corners, sh, sw)
                      : upsample_trilinear3d(x, spatial, corners, sd, sh, sw)};
  if (rank == 5) c.refuse("cubic of a 5-d input (PyTorch has no tricubic)");
  if (c.attr_f("cubic_coeff_a", -0.75f) != -0.75f || c.attr_i("exclude_outside", 0) != 0)
    c.refuse("cubic with cubic_coeff_a other than -0.75 or exclude_outside (PyTorch's bicubic)");
  return {upsample_bicubic2d(x, spatial, corners, sh, sw)};
}

// GridSample (opset 16): PyTorch's grid_sample, whose rules ONNX's follow.
Outs grid_sample_(const NodeCtx& c) {
  if (c.in(0).dim() != 4) c.refuse(str("a ", c.in(0).dim(), "-d input (Amber samples 4-d inputs)"));
  return {grid_sample(c.in(0), c.in(1), c.attr_s("mode", "bilinear"), c.attr_s("padding_mode", "zeros"),
                      c.attr_i("align_corners", 0) != 0)};
}

template <bool Max>
Outs arg_reduce(const NodeCtx& c) {
  Tensor x = c.in(0);
  const int64_t axis = wrap_axis(c.attr_i("axis", 0), x.dim());
  const bool keep = c.attr_i("keepdims", 1) != 0, last = c.attr_i("select_last_index", 0) != 0;
  if (last) x = flip(x, {axis});
  Tensor i = Max ? argmax(x, axis, keep) : argmin(x, axis, keep);
  if (last) i = rsub(i, (x.dim() == 0 ? 1 : x.size(axis)) - 1);
  return {i};
}

// The reduced dims: the axes attribute (or input from ReduceSum 13), all dims when empty
// unless noop_with_empty_axes.
enum class Reduce { sum, prod, mean, max, min, sum_square, l1, l2, log_sum, log_sum_exp };
template <Reduce R>
Outs reduce(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes =
      (R == Reduce::sum && c.opset >= 13) ? (c.has(1) ? c.ints(1) : std::vector<int64_t>{}) : c.attr_ints("axes");
  const bool keep = c.attr_i("keepdims", 1) != 0;
  if (axes.empty()) {
    if (c.attr_i("noop_with_empty_axes", 0) != 0) return {x};
    for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
  }
  const DimVec d(axes);
  // Sums and products of integers run in i64 (as torch's) and are given back in the input's
  // type, as ONNX's reductions keep it.
  auto as_x = [&](const Tensor& y) { return y.dtype() == x.dtype() ? y : y.to(x.dtype()); };
  switch (R) {
    case Reduce::sum:
      return {as_x(sum(x, d, keep))};
    case Reduce::prod:
      return {as_x(prod(x, d, keep))};
    case Reduce::mean:
      return {mean(x, d, keep)};
    case Reduce::max:
      return {amax(x, d, keep)};
    case Reduce::min:
      return {amin(x, d, keep)};
    case Reduce::sum_square:
      return {as_x(sum(x * x, d, keep))};
    case Reduce::l1:
      return {as_x(sum(abs(x), d, keep))};
    case Reduce::l2:
      return {sqrt(sum(x * x, d, keep))};
    case Reduce::log_sum:
      return {log(sum(x, d, keep))};
    case Reduce::log_sum_exp: {
      const Tensor m = amax(x, d, true);
      Tensor y = log(sum(exp(x - m), d, true)) + m;
      if (!keep) {
        std::vector<int64_t> s = axes;
        for (int64_t& a : s) a = a < 0 ? a + x.dim() : a;
        std::sort(s.rbegin(), s.rend());
        for (int64_t a : s) y = y.squeeze(a);
      }
      return {y};
    }
  }
  return {};
}

Outs trilu(const NodeCtx& c) {
  const int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  return {c.attr_i("upper", 1) != 0 ? triu(c.in(0), k) : tril(c.in(0), k)};
}

Outs depth_to_space(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t b = c.attr_i("blocksize", 0);
  if (x.dim() != 4 || b <= 0) throw Error(str("DepthToSpace needs a 4-D input and a positive blocksize"));
  if (c.attr_s("mode", "DCR") == "CRD") return {pixel_shuffle(x, b)};
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  return {
      x.reshape({n, b, b, ch / (b * b), h, w}).permute({0, 3, 4, 1, 5, 2}).reshape({n, ch / (b * b), h * b, w * b})};
}

Outs space_to_depth(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const int64_t b = c.attr_i("blocksize", 0);
  if (x.dim() != 4 || b <= 0) throw Error(str("SpaceToDepth needs a 4-D input and a positive blocksize"));
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  return {x.reshape({n, ch, h / b, b, w / b, b}).permute({0, 3, 5, 1, 2, 4}).reshape({n, ch * b * b, h / b, w / b})};
}

// NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C]?): -input at
// the target class times its weight; ignore_index entries weigh 0; mean divides by the weights.
Tensor nll_loss(const NodeCtx& c, const Tensor& input, const Tensor& target, const Tensor& weight) {
  const std::string red = c.attr_s("reduction", "mean");
  if (red != "mean" && red != "sum" && red != "none") throw Error(str("reduction '", red, "'"));
  Tensor t = target.to(DType::i64);
  const bool ignore = c.has_attr("ignore_index");
  Tensor keep;
  if (ignore) {
    keep = ne(t, c.attr_i("ignore_index", 0));
    t = where(keep, t, Scalar(int64_t(0)));
  }
  const Tensor picked = gather(input, 1, t.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined() ? index_select(weight, 0, t.reshape({-1})).reshape(t.sizes()) : ones_like(picked);
  if (ignore) w = where(keep, w, Scalar(0.0)).to(picked.dtype());
  const Tensor loss = neg(picked * w);
  if (red == "none") return loss;
  if (red == "sum") return sum(loss);
  return sum(loss) / sum(w);
}

Outs negative_log_likelihood_loss(const NodeCtx& c) {
  return {nll_loss(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : Tensor{})};
}

Outs softmax_cross_entropy_loss(const NodeCtx& c) {
  const Tensor log_prob = log_softmax(c.in(0), 1);
  Outs o = {nll_loss(c, log_prob, c.in(1), c.has(2) ? c.in(2) : Tensor{})};
  if (c.output_used(1)) o.push_back(log_prob);
  return o;
}

// One-hot of the first maximum along axis (before opset 13: of the input coerced to 2-D).
Outs hardmax(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  const bool coerce = c.opset < 13;
  const int64_t axis = wrap_axis(c.attr_i("axis", coerce ? 1 : -1), x.dim());
  const Tensor x2 = coerce ? flatten_2d(x, axis) : x;
  const int64_t a = coerce ? 1 : axis, n = x2.size(a);
  DimVec shape = DimVec::filled(int(x2.dim()), 1);
  shape[int(a)] = n;
  const Tensor pos = arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::i64).reshape(shape);
  return {eq(pos, argmax(x2, a, true)).to(x.dtype()).reshape(x.sizes())};
}

Outs eye_like(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  if (x.dim() != 2) throw Error(str("EyeLike needs a 2-D input, got shape ", x.sizes()));
  const DType t = c.has_attr("dtype") ? dtype_from_onnx(int32_t(c.attr_i("dtype", 0)), "EyeLike's dtype") : x.dtype();
  const Tensor rows = arange(Scalar(int64_t(0)), Scalar(x.size(0)), Scalar(int64_t(1)), DType::i64).unsqueeze(1);
  const Tensor cols = arange(Scalar(int64_t(0)), Scalar(x.size(1)), Scalar(int64_t(1)), DType::i64);
  return {eq(cols - rows, c.attr_i("k", 0)).to(t)};
}

Outs one_hot(const NodeCtx& c) {
  const Tensor& idx = c.in(0);
  const int64_t depth = int64_t(c.scalar(1));
  const Tensor& values = c.in(2);
  if (values.numel() != 2) throw Error("OneHot's values must hold [off, on]");
  const int64_t axis = wrap_axis(c.attr_i("axis", -1), idx.dim() + 1);
  DimVec shape = DimVec::filled(int(idx.dim()) + 1, 1);
  shape[int(axis)] = depth;
  const Tensor pos = arange(Scalar(int64_t(0)), Scalar(depth), Scalar(int64_t(1)), DType::i64).reshape(shape);
  const Tensor i = wrap_indices(idx, depth).unsqueeze(axis);
  const Tensor v = values.reshape({2});
  return {where(eq(pos, i), v.select(0, 1), v.select(0, 0))};
}

// Local response normalisation across channels: x / (bias + alpha / size * sum of squares
// over the channel window)^beta; the window sum is an average pool over [N, 1, C, H*W].
Outs lrn(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  if (x.dim() != 4) c.refuse(str("LRN of a ", x.dim(), "-D input (Amber: 4-D)"));
  const int64_t size = c.attr_i("size", 0);
  if (size <= 0) throw Error("LRN needs a positive size");
  const double alpha = c.attr_f("alpha", 1e-4f), beta = c.attr_f("beta", 0.75f), bias = c.attr_f("bias", 1.0f);
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  const Tensor sq = (x * x).reshape({n, 1, ch, h * w});
  const Tensor padded = pad(sq, {0, 0, (size - 1) / 2, size - 1 - (size - 1) / 2});
  const Tensor sums = avg_pool2d(padded, {size, 1}, {1, 1}, {0, 0}, false, true) * double(size);
  return {x / pow(sums.reshape(x.sizes()) * (alpha / double(size)) + bias, Scalar(beta))};
}

Outs mean_variance_normalization(const NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (axes.empty()) axes = {0, 2, 3};
  const DimVec d(axes);
  const Tensor m = mean(x, d, true), diff = x - m;
  return {diff / (sqrt(mean(diff * diff, d, true)) + 1e-9)};
}

// data flattened over the indexed dims, and the indices' linear positions in it.
struct NdIndex {
  Tensor flat, lin;
  DimVec rest;  // data's dims after the indexed ones
};
NdIndex nd_index(const NodeCtx& c, const Tensor& data, const Tensor& indices) {
  if (c.attr_i("batch_dims", 0) != 0) c.refuse("GatherND with batch_dims");
  const int64_t k = indices.size(-1);
  if (k < 1 || k > data.dim()) throw Error(str("indices' last dim ", k, " does not fit data of rank ", data.dim()));
  std::vector<int64_t> strides(size_t(k), 1);
  int64_t rows = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    strides[size_t(j)] = rows;
    rows *= data.size(j);
  }
  NdIndex r;
  for (int64_t j = k; j < data.dim(); ++j) r.rest.push_back(data.size(j));
  DimVec flat_shape = {rows};
  for (int64_t d : r.rest) flat_shape.push_back(d);
  r.flat = data.reshape(flat_shape);
  Tensor idx = indices.to(DType::i64);
  DimVec sizes;
  for (int64_t j = 0; j < k; ++j) sizes.push_back(data.size(j));
  const Tensor dim_sizes = tensor(sizes.vec(), {k});
  idx = where(lt(idx, 0), idx + dim_sizes, idx);
  r.lin = sum(idx * tensor(strides, {k}), {-1});
  return r;
}

Outs gather_nd(const NodeCtx& c) {
  const Tensor &data = c.in(0), &indices = c.in(1);
  const NdIndex r = nd_index(c, data, indices);
  DimVec shape;
  for (int64_t j = 0; j + 1 < indices.dim(); ++j) shape.push_back(indices.size(j));
  for (int64_t d : r.rest) shape.push_back(d);
  return {index_select(r.flat, 0, r.lin.reshape({-1})).reshape(shape)};
}

Outs scatter_nd(const NodeCtx& c) {
  const Tensor &data = c.in(0), &indices = c.in(1), &updates = c.in(2);
  const std::string red = c.attr_s("reduction", "none");
  const std::string reduce = red == "none" ? "" : scatter_reduction(c, "ScatterND", red);
  const NdIndex r = nd_index(c, data, indices);
  DimVec ushape = {-1};
  for (int64_t d : r.rest) ushape.push_back(d);
  const Tensor u = updates.reshape(ushape);
  DimVec ishape = DimVec::filled(u.dim(), 1);
  ishape[0] = u.size(0);
  const Tensor i = r.lin.reshape(ishape).expand(u.sizes());
  const Tensor y = reduce.empty() ? scatter(r.flat, 0, i, u) : scatter_reduce(r.flat, 0, i, u, reduce);
  return {y.reshape(data.sizes())};
}

// Loop and If read their subgraphs and the environment, so the importer runs them itself
// (import.cpp); their entries only name them as supported.
std::vector<Tensor> control_flow_(const NodeCtx&) {
  throw Error("internal error: the importer runs Loop and If nodes itself");
}

// The table, sorted by type.
constexpr OnnxOp kOps[] = {
    {"Abs", unary<abs>},
    {"Acos", unary<acos>},
    {"Acosh", unary<acosh>},
    {"Add", add_},
    {"And", and_},
    {"ArgMax", arg_reduce<true>},
    {"ArgMin", arg_reduce<false>},
    {"Asin", unary<asin>},
    {"Asinh", unary<asinh>},
    {"Atan", unary<atan>},
    {"Atanh", unary<atanh>},
    {"AveragePool", average_pool},
    {"BatchNormalization", batch_normalization},
    {"BlackmanWindow", blackman_window},
    {"Cast", cast},
    {"CastLike", cast_like},
    {"Ceil", unary<ceil>},
    {"Celu", celu},
    {"Clip", clip},
    {"Compress", compress},
    {"Concat", concat},
    {"Constant", constant, true},
    {"ConstantOfShape", constant_of_shape, false, OnnxOp::by_operands},
    {"Conv", conv},
    {"ConvTranspose", conv_transpose},
    {"Cos", unary<cos>},
    {"Cosh", unary<cosh>},
    {"CumSum", cum_sum},
    {"DepthToSpace", depth_to_space},
    {"DequantizeLinear", dequantize_linear},
    {"Div", div_},
    {"Dropout", dropout_},
    {"DynamicQuantizeLinear", dynamic_quantize_linear},
    {"Einsum", einsum},
    {"Elu", elu_},
    {"Equal", equal},
    {"Erf", unary<erf>},
    {"Exp", unary<exp>},
    {"Expand", expand_, false, OnnxOp::by_operands_of_data},
    {"EyeLike", eye_like},
    {"Flatten", flatten_},
    {"Floor", unary<floor>},
    {"GRU", recurrent<Cell::gru>},
    {"Gather", gather_},
    {"GatherElements", gather_elements},
    {"GatherND", gather_nd},
    {"Gemm", gemm},
    {"GlobalAveragePool", global_average_pool},
    {"GlobalMaxPool", global_max_pool},
    {"Greater", greater},
    {"GreaterOrEqual", greater_equal},
    {"GridSample", grid_sample_},
    {"HammingWindow", hamming_window},
    {"HannWindow", hann_window},
    {"HardSigmoid", hard_sigmoid},
    {"HardSwish", hard_swish},
    {"Hardmax", hardmax},
    {"Identity", identity},
    {"If", control_flow_},
    {"InstanceNormalization", instance_normalization},
    {"IsInf", is_inf},
    {"IsNaN", is_nan},
    {"LRN", lrn},
    {"LSTM", recurrent<Cell::lstm>},
    {"LayerNormalization", layer_normalization},
    {"LeakyRelu", leaky_relu_},
    {"Less", less},
    {"LessOrEqual", less_equal},
    {"Log", unary<log>},
    {"LogSoftmax", softmax_<true>},
    {"Loop", control_flow_},
    {"MatMul", mat_mul},
    {"Max", fold<maximum>},
    {"MaxPool", max_pool},
    {"MaxUnpool", max_unpool},
    {"Mean", mean_},
    {"MeanVarianceNormalization", mean_variance_normalization},
    {"Min", fold<minimum>},
    {"Mod", mod},
    {"Mul", mul_},
    {"Neg", unary<neg>},
    {"NegativeLogLikelihoodLoss", negative_log_likelihood_loss},
    {"NonZero", non_zero},
    {"Not", not_},
    {"OneHot", one_hot},
    {"Or", or_},
    {"PRelu", prelu_},
    {"Pad", pad_},
    {"Pow", pow_},
    {"QuantizeLinear", quantize_linear},
    {"RNN", recurrent<Cell::rnn>},
    {"Range", range_, false, OnnxOp::by_operands},
    {"Reciprocal", unary<reciprocal>},
    {"ReduceL1", reduce<Reduce::l1>},
    {"ReduceL2", reduce<Reduce::l2>},
    {"ReduceLogSum", reduce<Reduce::log_sum>},
    {"ReduceLogSumExp", reduce<Reduce::log_sum_exp>},
    {"ReduceMax", reduce<Reduce::max>},
    {"ReduceMean", reduce<Reduce::mean>},
    {"ReduceMin", reduce<Reduce::min>},
    {"ReduceProd", reduce<Reduce::prod>},
    {"ReduceSum", reduce<Reduce::sum>},
    {"ReduceSumSquare", reduce<Reduce::sum_square>},
    {"Relu", unary<relu>},
    {"Reshape", reshape_, false, OnnxOp::by_operands_of_data},
    {"Resize", resize},
    {"ReverseSequence", reverse_sequence},
    {"RoiAlign", roi_align_},
    {"Round", unary<round>},
    {"Scatter", scatter_elements},
    {"ScatterElements", scatter_elements},
    {"ScatterND", scatter_nd},
    {"Selu", selu_},
    {"Shape", shape_, true},
    {"Shrink", shrink},
    {"Sigmoid", unary<sigmoid>},
    {"Sign", unary<sign>},
    {"Sin", unary<sin>},
    {"Sinh", unary<sinh>},
    {"Size", size_, true},
    {"Slice", slice_},
    {"Softmax", softmax_<false>},
    {"SoftmaxCrossEntropyLoss", softmax_cross_entropy_loss},
    {"Softplus", softplus_},
    {"Softsign", unary<softsign>},
    {"SpaceToDepth", space_to_depth},
    {"Split", split_},
    {"Sqrt", unary<sqrt>},
    {"Squeeze", squeeze_},
    {"Sub", sub_},
    {"Sum", fold<add2>},
    {"Tan", unary<tan>},
    {"Tanh", unary<tanh>},
    {"ThresholdedRelu", thresholded_relu},
    {"Tile", tile, false, OnnxOp::by_operands_of_data},
    {"TopK", top_k},
    {"Transpose", transpose_},
    {"Trilu", trilu},
    {"Unsqueeze", unsqueeze_},
    {"Upsample", resize},
    {"Where", where_},
    {"Xor", xor_},
};
static_assert(std::is_sorted(std::begin(kOps), std::end(kOps),
                             [](const OnnxOp& a, const OnnxOp& b) { return a.type < b.type; }),
              "kOps is searched by type: keep it sorted (ASCII order)");

}  // namespace

const OnnxOp* find_onnx_op(std::string_view type) {
  auto it = std::lower_bound(std::begin(kOps), std::end(kOps), type,
                             [](const OnnxOp& o, std::string_view t) { return o.type < t; });
  return it != std::end(kOps) && it->type == type ? it : nullptr;
}

std::vector<std::string> onnx_op_types() {
  std::vector<std::string> v;
  for (const OnnxOp& o : kOps) v.emplace_back(o.type);
  return v;
}

}  // namespace amber::onnx_in
