// Op table entries for reductions (sum, prod, mean, amax, amin, argmax, argmin, any, all), cumsum, topk and
// the normalisations along one dim (softmax, log_softmax). Integer and bool sums and products
// accumulate in i64; mean and softmax need floating inputs, as in PyTorch.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

using infer::reduced_dims_mask;
using infer::reduced_sizes;

void infer_sum(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const uint32_t mask = reduced_dims_mask(c, x.sizes.size(), c.attr("dim"));
  const DType t =
      c.attr("dtype").is_none() ? (is_integral(x.dtype, true) ? DType::i64 : x.dtype) : c.attr("dtype").dtype();
  c.add_output(t, reduced_sizes(x.sizes, mask, c.attr("keepdim").b()));
  c.cast_all_inputs_to(t);
}

void infer_mean(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const DType t = c.attr("dtype").is_none() ? x.dtype : c.attr("dtype").dtype();
  c.check(is_floating(t), "could not infer output dtype; the input dtype must be floating, got ", t);
  const uint32_t mask = reduced_dims_mask(c, x.sizes.size(), c.attr("dim"));
  c.add_output(t, reduced_sizes(x.sizes, mask, c.attr("keepdim").b()));
  c.cast_all_inputs_to(t);
}

// amax/amin: every reduced dim must be non-empty.
void infer_extremum(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const uint32_t mask = reduced_dims_mask(c, x.sizes.size(), c.attr("dim"));
  for (int i = 0; i < x.sizes.size(); ++i)
    c.check(!(mask & (1u << i)) || x.sizes[i] != 0, "expected reduction dim ", i,
            " to have non-zero size (input shape ", x.sizes, ")");
  c.add_output(x.dtype, reduced_sizes(x.sizes, mask, c.attr("keepdim").b()));
}

void infer_argmax(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const bool keepdim = c.attr("keepdim").b();
  if (c.attr("dim").is_none()) {
    c.check(checked_numel(x.sizes) > 0, "expected reduction dim to be specified for an input with no elements");
    c.add_output(DType::i64, keepdim ? DimVec::filled(x.sizes.size(), 1) : DimVec{});
    return;
  }
  const int d = c.wrap(c.attr("dim").i(), x.sizes.size());
  c.check(x.sizes.empty() || x.sizes[d] != 0, "expected reduction dim ", d, " to have non-zero size (input shape ",
          x.sizes, ")");
  c.add_output(DType::i64, x.sizes.empty() ? DimVec{} : reduced_sizes(x.sizes, 1u << d, keepdim));
}

void infer_softmax(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  c.wrap(c.attr("dim").i(), x.sizes.size());
  const DType t = c.attr("dtype").is_none() ? x.dtype : c.attr("dtype").dtype();
  c.check(is_floating(t), "softmax needs a floating dtype, got ", t);
  c.add_output(t, x.sizes);
  c.cast_all_inputs_to(t);
}

// any/all(self, dim, keepdim): a bool per output; f16/bf16 inputs are read as f32.
void infer_any_all(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const uint32_t mask = reduced_dims_mask(c, x.sizes.size(), c.attr("dim"));
  c.add_output(DType::b8, reduced_sizes(x.sizes, mask, c.attr("keepdim").b()));
  c.cast_all_inputs_to(x.dtype == DType::f16 || x.dtype == DType::bf16 ? DType::f32 : x.dtype);
}

// topk(self, k, dim, largest, sorted): values in self's dtype and i64 indices, k along dim.
void infer_topk(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const int64_t k = c.attr("k").i();
  const int d = c.wrap(c.attr("dim").i(), x.sizes.size());
  const int64_t size = x.sizes.empty() ? 1 : x.sizes[d];
  c.check(k >= 0 && k <= size, "k ", k, " is out of range for dim ", d, " of size ", size, " (self ", x.sizes, ")");
  DimVec out = x.sizes;
  if (!out.empty()) out[d] = k;
  c.add_output(x.dtype, out);
  c.add_output(DType::i64, out);
}

// cumsum(self, dim, dtype): self's shape; integer and bool inputs sum in i64 unless dtype says.
void infer_cumsum(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  c.wrap(c.attr("dim").i(), x.sizes.size());
  const DType t =
      c.attr("dtype").is_none() ? (is_integral(x.dtype, true) ? DType::i64 : x.dtype) : c.attr("dtype").dtype();
  c.add_output(t, x.sizes);
  c.cast_all_inputs_to(t);
}

constexpr DTypeSet kAnyAll{DType::f32, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8, DType::u8, DType::b8};

constexpr DTypeSet kTopk{DType::f32, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8, DType::u8};

const OpRegistrar registrar{
    {"sum(Tensor self, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
     DTypeSet{DType::f32, DType::f64, DType::i64}, infer_sum, 0, nullptr, 1,
     "Sum over dim (all dims when None or empty); integer inputs sum in i64."},
    {"prod(Tensor self, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor",
     DTypeSet{DType::f32, DType::f64, DType::i64}, infer_sum, 0, nullptr, 1,
     "Product over dim (all dims when None or empty; torch.prod takes one dim, this any set); integer inputs "
     "multiply in i64 (wrapping on overflow), floats in double."},
    {"any(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", kAnyAll, infer_any_all, 0, nullptr, 1,
     "Whether any element over dim (all dims when empty) is nonzero (NaN counts); the result is bool for every "
     "input dtype (PyTorch gives u8 for u8)."},
    {"all(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", kAnyAll, infer_any_all, 0, nullptr, 1,
     "Whether every element over dim (all dims when empty) is nonzero (NaN counts); the result is bool for every "
     "input dtype (PyTorch gives u8 for u8)."},
    {"topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
     kTopk, infer_topk, 0, nullptr, 1,
     "The k largest (smallest) elements along dim and their indices, always in order (sorted=False is accepted and "
     "sorts too); NaN counts as the largest; equal values keep their index order."},
    {"cumsum(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", DTypeSet{DType::f32, DType::f64, DType::i64},
     infer_cumsum, 0, nullptr, 1,
     "Running sums along dim (self's shape); integer inputs sum in i64; floats accumulate in double."},
    {"mean(Tensor self, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor", dtypes::floating,
     infer_mean, 0, nullptr, 1, "Mean over dim (all dims when None or empty)."},
    {"amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", dtypes::numeric, infer_extremum, 0, nullptr, 1,
     "Maximum over dim (all dims when empty); NaN propagates."},
    {"amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", dtypes::numeric, infer_extremum, 0, nullptr, 1,
     "Minimum over dim (all dims when empty); NaN propagates."},
    {"argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", dtypes::numeric, infer_argmax, 0, nullptr, 1,
     "Index (i64) of the first maximum along dim, or in the flattened tensor when dim is None; NaN is the maximum."},
    {"argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", dtypes::numeric, infer_argmax, 0, nullptr, 1,
     "Index (i64) of the first minimum along dim, or in the flattened tensor when dim is None; NaN is the minimum."},
    {"softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", dtypes::floating, infer_softmax, 0, nullptr, 1,
     "exp(x - max) / sum(exp(x - max)) along dim."},
    {"log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", dtypes::floating, infer_softmax, 0, nullptr,
     1, "x - max - log(sum(exp(x - max))) along dim."},
};

}  // namespace
}  // namespace amber
