// Op table entries for elementwise ops (arithmetic with tensors and scalars, powers,
// clamping, unary math and activations, dtype conversion, copies; the int8 addition of two
// uint8 tensors) and the factories full and arange. Inference implements PyTorch's
// broadcasting and result-type rules, including true division of integers to f32 and the
// priority of plain C++ numbers below tensors; outputs keep a channels-last input layout.

#include <cmath>

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

using infer::pointwise_format;
using infer::priority_of;

void check_alpha(const InferCtx& c, DType result) {
  const Attr& alpha = c.attr("alpha");
  c.check(!(is_integral(result, true) && alpha.kind() == AttrKind::f),
          "for integral input tensors, argument alpha must not be a floating point number (got ", alpha, ")");
}

void check_not_bool(const InferCtx& c, DType t, const char* what) {
  c.check(t != DType::b8, what, " with bool tensors is not supported; use logical ops instead");
}

// Binary op on two tensors: broadcast sizes, promoted dtype, both inputs cast to it.
DType binary_tensor(InferCtx& c) {
  ResultType rt;
  rt.add(c.in(0).dtype, priority_of(c.in(0)));
  rt.add(c.in(1).dtype, priority_of(c.in(1)));
  const DType t = rt.result();
  DimVec sizes = broadcast_shapes(c.op().name.c_str(), c.in(0).sizes, c.in(1).sizes);
  c.add_output(t, sizes).format = pointwise_format(c, sizes);
  c.cast_all_inputs_to(t);
  return t;
}

// Tensor op Scalar(s): numbers are wrapped numbers in result-type computation.
DType binary_scalar(InferCtx& c, std::initializer_list<const char*> scalar_attrs) {
  ResultType rt;
  rt.add(c.in(0).dtype, priority_of(c.in(0)));
  for (const char* a : scalar_attrs)
    if (!c.attr(a).is_none()) rt.add(c.attr(a).scalar().wrapped_dtype(), Priority::wrapped);
  const DType t = rt.result();
  c.add_output(t, c.in(0).sizes).format = c.in(0).format;
  c.cast_all_inputs_to(t);
  return t;
}

void infer_add(InferCtx& c) { check_alpha(c, binary_tensor(c)); }
void infer_add_scalar(InferCtx& c) { check_alpha(c, binary_scalar(c, {"other"})); }
void infer_sub(InferCtx& c) {
  const DType t = binary_tensor(c);
  check_not_bool(c, t, "subtraction");
  check_alpha(c, t);
}
void infer_sub_scalar(InferCtx& c) {
  const DType t = binary_scalar(c, {"other"});
  check_not_bool(c, t, "subtraction");
  check_alpha(c, t);
}
void infer_mul(InferCtx& c) { binary_tensor(c); }
void infer_mul_scalar(InferCtx& c) { binary_scalar(c, {"other"}); }

// rounding_mode None: true division, integers give f32. "trunc"/"floor": the promoted dtype.
void fix_division_dtype(InferCtx& c) {
  const Attr& mode = c.attr("rounding_mode");
  if (mode.is_none()) {
    if (is_integral(c.compute_dtype, true)) {
      c.output(0).dtype = DType::f32;
      c.cast_all_inputs_to(DType::f32);
    }
    return;
  }
  check_not_bool(c, c.compute_dtype, "division with a rounding mode");
}
void infer_div(InferCtx& c) {
  binary_tensor(c);
  fix_division_dtype(c);
}
void infer_div_scalar(InferCtx& c) {
  binary_scalar(c, {"other"});
  fix_division_dtype(c);
}

// pow: integers to negative integer powers are an error, as in PyTorch.
void infer_pow(InferCtx& c) { binary_tensor(c); }
void infer_pow_scalar(InferCtx& c) {
  const DType t = binary_scalar(c, {"exponent"});
  const Attr& e = c.attr("exponent");
  c.check(!(is_integral(t, false) && e.kind() == AttrKind::i && e.i() < 0),
          "integers to negative integer powers are not allowed (exponent ", e, ")");
}

void infer_clamp(InferCtx& c) {
  c.check(!c.attr("min").is_none() || !c.attr("max").is_none(), "at least one of 'min' or 'max' must not be None");
  check_not_bool(c, binary_scalar(c, {"min", "max"}), "clamp");
}
void infer_hardtanh(InferCtx& c) { check_not_bool(c, binary_scalar(c, {}), "hardtanh"); }

// Unary ops that keep the dtype (neg, relu, abs).
void infer_unary_same(InferCtx& c) {
  check_not_bool(c, c.in(0).dtype, c.op().name.c_str());
  c.add_output(c.in(0).dtype, c.in(0).sizes).format = c.in(0).format;
}
// Unary float math (exp, tanh, ...): integers and bool compute in f32, as PyTorch.
void infer_unary_float(InferCtx& c) {
  const DType t = is_integral(c.in(0).dtype, true) ? DType::f32 : c.in(0).dtype;
  c.add_output(t, c.in(0).sizes).format = c.in(0).format;
  c.cast_all_inputs_to(t);
}
// Activations defined only for floating inputs (gelu, silu): no integer promotion.
void infer_activation(InferCtx& c) { c.add_output(c.in(0).dtype, c.in(0).sizes).format = c.in(0).format; }

void infer_to(InferCtx& c) { c.add_output(c.attr("dtype").dtype(), c.in(0).sizes).format = c.in(0).format; }
void infer_clone(InferCtx& c) { c.add_output(c.in(0).dtype, c.in(0).sizes); }

void check_factory_size(const InferCtx& c, const DimVec& sizes) {
  for (int64_t s : sizes) c.check(s >= 0, "negative dimension ", s, " in size ", sizes);
  checked_numel(sizes);
}

void infer_full(InferCtx& c) {
  DimVec sizes(c.attr("size").ints());
  check_factory_size(c, sizes);
  const Scalar v = c.attr("fill_value").scalar();
  const DType t = c.attr("dtype").is_none() ? (v.is_floating() ? DType::f32
                                               : v.is_bool()   ? DType::b8
                                                               : DType::i64)
                                            : c.attr("dtype").dtype();
  c.add_output(t, sizes);
  c.compute_dtype = t;
}

// Number of elements of arange(start, end, step), computed as ATen does (in double).
int64_t arange_length(const InferCtx& c) {
  const double start = c.attr("start").f(), end = c.attr("end").f(), step = c.attr("step").f();
  c.check(step != 0, "step must be nonzero");
  c.check(std::isfinite(start) && std::isfinite(end), "unsupported range: ", start, " -> ", end);
  c.check((step > 0 && end >= start) || (step < 0 && end <= start),
          "upper bound and larger bound inconsistent with step sign (start ", c.attr("start"), ", end ", c.attr("end"),
          ", step ", c.attr("step"), ")");
  const double n = std::ceil((end - start) / step);
  c.check(n >= 0 && n < 9.0e18, "invalid number of elements ", n);
  return int64_t(n);
}
void infer_arange(InferCtx& c) {
  const int64_t n = arange_length(c);
  bool floating = false;
  for (const char* a : {"start", "end", "step"}) floating |= c.attr(a).kind() == AttrKind::f;
  const DType t = c.attr("dtype").is_none() ? (floating ? DType::f32 : DType::i64) : c.attr("dtype").dtype();
  c.add_output(t, DimVec{n});
  c.compute_dtype = t;
}

// quantized_add (made by `amber quantize` for a residual addition between int8 layers): two
// u8 tensors of one shape, each with its uint8 quantization, the output's, and an activation.
void infer_quantized_add(InferCtx& c) {
  const TensorMeta &a = c.in(0), &b = c.in(1);
  c.check(a.dtype == DType::u8 && b.dtype == DType::u8, "self and other must be u8, got ", a.dtype, " and ", b.dtype);
  c.check(a.sizes == b.sizes, "self and other must have one shape (no broadcasting), got ", a.sizes, " and ", b.sizes);
  infer::check_activation(c);
  for (const char* q : {"self", "other", "output"}) infer::check_uint8_quantization(c, q);
  c.add_output(DType::u8, a.sizes).format = pointwise_format(c, a.sizes);
}

using namespace op_flags;
const DTypeSet kNumeric = dtypes::numeric;
const DTypeSet kFloat = dtypes::floating;

const OpRegistrar registrar{
    {"add(Tensor self, Tensor other, Scalar alpha=1) -> Tensor", kNumeric, infer_add, pointwise, nullptr, 1,
     "self + alpha * other, broadcasting."},
    {"quantized_add(Tensor self, Tensor other, float self_scale=1.0, int self_zero_point=0, float other_scale=1.0, "
     "int other_zero_point=0, str{clamp,silu,hardswish,none} activation=\"none\", float min_val=0.0, float "
     "max_val=6.0, "
     "float output_scale=1.0, int output_zero_point=0) -> Tensor",
     DTypeSet{DType::u8}, infer_quantized_add, 0, nullptr, 1,
     "The sum of two uint8 tensors of one shape as the values they stand for, (self - self_zero_point) * self_scale + "
     "(other - other_zero_point) * other_scale in f32, through the activation (none, or fused_conv2d's), quantized "
     "to uint8: clamp(round_half_even(act(y) * (1 / output_scale)) + output_zero_point, 0, 255) (ONNX's "
     "QLinearAdd). Made by `amber quantize` for a residual addition between int8 layers.",
     OpCost::memory, 5},
    {"add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", kNumeric, infer_add_scalar, pointwise, nullptr,
     1, "self + alpha * other."},
    {"sub(Tensor self, Tensor other, Scalar alpha=1) -> Tensor", kNumeric, infer_sub, pointwise, nullptr, 1,
     "self - alpha * other, broadcasting."},
    {"sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", kNumeric, infer_sub_scalar, pointwise, nullptr,
     1, "self - alpha * other."},
    {"rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", kNumeric, infer_sub_scalar, pointwise, nullptr,
     1, "other - alpha * self (the `2 - x` operator)."},
    {"mul(Tensor self, Tensor other) -> Tensor", kNumeric, infer_mul, pointwise, nullptr, 1,
     "self * other, broadcasting."},
    {"mul.Scalar(Tensor self, Scalar other) -> Tensor", kNumeric, infer_mul_scalar, pointwise, nullptr, 1,
     "self * other."},
    {"div(Tensor self, Tensor other, str{trunc,floor}? rounding_mode=None) -> Tensor", kNumeric, infer_div, pointwise,
     nullptr, 1, "self / other: true division (integers give f32), or rounded with 'trunc' or 'floor'."},
    {"div.Scalar(Tensor self, Scalar other, str{trunc,floor}? rounding_mode=None) -> Tensor", kNumeric,
     infer_div_scalar, pointwise, nullptr, 1, "self / other, as div."},
    {"pow(Tensor self, Tensor exponent) -> Tensor", kNumeric, infer_pow, pointwise, nullptr, 1,
     "self ** exponent, broadcasting."},
    {"pow.Scalar(Tensor self, Scalar exponent) -> Tensor", kNumeric, infer_pow_scalar, pointwise, nullptr, 1,
     "self ** exponent; exponents 2, 3, 0.5, -0.5, -1, -2 take ATen's exact shortcuts."},
    {"clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", kNumeric, infer_clamp, pointwise, nullptr, 1,
     "min(max(self, min), max); NaN stays NaN."},
    {"hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", kNumeric, infer_hardtanh, pointwise,
     nullptr, 1, "clamp(self, min_val, max_val)."},
    {"neg(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1, "-self."},
    {"abs(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1, "|self|."},
    {"relu(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1, "max(self, 0)."},
    {"exp(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "e^self."},
    {"log(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Natural logarithm."},
    {"sqrt(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Square root."},
    {"rsqrt(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "1 / sqrt(self)."},
    {"tanh(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Hyperbolic tangent."},
    {"sigmoid(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "1 / (1 + e^-self)."},
    {"reciprocal(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1,
     "1 / self (the `2 / x` operator is reciprocal(x) * 2, as in libtorch)."},
    {"gelu(Tensor self, str{none,tanh} approximate=\"none\") -> Tensor", kFloat, infer_activation, pointwise, nullptr,
     1, "x * Phi(x) ('none', with erf) or its tanh approximation ('tanh')."},
    {"silu(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1, "x * sigmoid(x)."},
    {"sign(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1,
     "-1, 0 or 1 as self is negative, zero or positive (NaN gives 0, as ATen)."},
    {"erf(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "The error function."},
    {"log1p(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1,
     "log(1 + self), accurate near 0."},
    {"expm1(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "e^self - 1, accurate near 0."},
    {"sin(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Sine."},
    {"cos(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Cosine."},
    {"tan(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Tangent."},
    {"asin(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Arcsine (NaN outside [-1, 1])."},
    {"acos(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1,
     "Arccosine (NaN outside [-1, 1])."},
    {"atan(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Arctangent."},
    {"sinh(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Hyperbolic sine."},
    {"cosh(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Hyperbolic cosine."},
    {"asinh(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1, "Inverse hyperbolic sine."},
    {"acosh(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1,
     "Inverse hyperbolic cosine (NaN below 1)."},
    {"atanh(Tensor self) -> Tensor", kFloat, infer_unary_float, pointwise, nullptr, 1,
     "Inverse hyperbolic tangent (infinite at -1 and 1, NaN outside)."},
    {"floor(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1,
     "Rounds down (integers: themselves)."},
    {"ceil(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1,
     "Rounds up (integers: themselves)."},
    {"round(Tensor self) -> Tensor", kNumeric, infer_unary_same, pointwise, nullptr, 1,
     "Rounds to the nearest integer, halves to even, as torch.round (integers: themselves)."},
    {"relu6(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1, "min(max(self, 0), 6)."},
    {"hardsigmoid(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "min(max(self + 3, 0), 6) / 6."},
    {"hardswish(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "self * min(max(self + 3, 0), 6) / 6."},
    {"mish(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1, "self * tanh(log1p(e^self))."},
    {"softsign(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1, "self / (1 + |self|)."},
    {"selu(Tensor self) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "scale * (self if self > 0 else alpha * (e^self - 1)), SELU's alpha and scale."},
    {"leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "self if self > 0 else self * negative_slope."},
    {"elu(Tensor self, Scalar alpha=1) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "self if self > 0 else alpha * (e^self - 1) (ATen's scale and input_scale are 1)."},
    {"softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", kFloat, infer_activation, pointwise,
     nullptr, 1, "log1p(e^(beta * self)) / beta; self where beta * self > threshold."},
    {"hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "0 where -lambd <= self <= lambd, else self."},
    {"softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", kFloat, infer_activation, pointwise, nullptr, 1,
     "self - lambd above lambd, self + lambd below -lambd, else 0."},
    {"threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", kFloat, infer_activation, pointwise, nullptr,
     1, "value where self <= threshold, else self."},
    {"maximum(Tensor self, Tensor other) -> Tensor", kNumeric, infer_mul, pointwise, nullptr, 1,
     "The larger of self and other, broadcasting; NaN if either is NaN."},
    {"minimum(Tensor self, Tensor other) -> Tensor", kNumeric, infer_mul, pointwise, nullptr, 1,
     "The smaller of self and other, broadcasting; NaN if either is NaN."},
    {"to(Tensor self, ScalarType dtype) -> Tensor", dtypes::all, infer_to, pointwise | op_flags::no_in_place, nullptr,
     1,
     "Converts to dtype (float to int truncates; nonzero to bool is true). The kernel is keyed by the "
     "source dtype."},
    {"clone(Tensor self) -> Tensor", dtypes::all, infer_clone, 0, nullptr, 1, "A contiguous copy."},
    {"full(int[] size, Scalar fill_value, ScalarType? dtype=None) -> Tensor", dtypes::all, infer_full, factory, nullptr,
     1, "A tensor filled with fill_value; dtype defaults from the value (f32, i64 or bool)."},
    {"arange(Scalar start, Scalar end, Scalar step=1, ScalarType? dtype=None) -> Tensor", kNumeric, infer_arange,
     factory, nullptr, 1, "start, start+step, ... before end; f32 when any bound is floating, else i64."},
};

}  // namespace
}  // namespace amber
