// Construction and forward passes of the basic layers (layers.h).

#include "amber/nn/layers.h"

#include <cmath>

namespace amber::nn {
namespace {

// uniform(-bound, bound), as torch.nn.init.uniform_ from Amber's default generator.
Tensor uniform(const DimVec& sizes, double bound) {
  return rand(sizes, {}, nullptr, SrcLoc::none()) * (2 * bound) - bound;
}

// PyTorch's default init for Linear and Conv2d: kaiming_uniform(a = sqrt(5)) on the weight,
// which is uniform(+-1/sqrt(fan_in)), and the same bound for the bias.
void default_init(Tensor& weight, Tensor* bias, int64_t fan_in, const DimVec& wsizes, int64_t out) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  weight = uniform(wsizes, bound);
  if (bias) *bias = uniform({out}, bound);
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias) {
  AMBER_CHECK(in_features >= 0 && out_features >= 0, "Linear: feature counts must be non-negative, got ", in_features,
              " and ", out_features);
  default_init(weight, with_bias ? &bias : nullptr, in_features, {out_features, in_features}, out_features);
  register_parameter("weight", weight);
  if (with_bias) register_parameter("bias", bias);
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, DimVec kernel_size, Conv2dOptions o) : options(o) {
  AMBER_CHECK(kernel_size.size() == 2, "Conv2d: kernel_size must have two elements, got ", kernel_size);
  AMBER_CHECK(o.groups > 0 && in_channels % o.groups == 0 && out_channels % o.groups == 0, "Conv2d: in_channels ",
              in_channels, " and out_channels ", out_channels, " must be divisible by groups ", o.groups);
  const int64_t fan_in = in_channels / o.groups * kernel_size[0] * kernel_size[1];
  default_init(weight, o.bias ? &bias : nullptr, fan_in,
               {out_channels, in_channels / o.groups, kernel_size[0], kernel_size[1]}, out_channels);
  register_parameter("weight", weight);
  if (o.bias) register_parameter("bias", bias);
}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight, bias, options.stride, options.padding, options.dilation, options.groups);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, DimVec kernel_size,
                                 ConvTranspose2dOptions o)
    : options(o) {
  AMBER_CHECK(kernel_size.size() == 2, "ConvTranspose2d: kernel_size must have two elements, got ", kernel_size);
  AMBER_CHECK(o.groups > 0 && in_channels % o.groups == 0 && out_channels % o.groups == 0,
              "ConvTranspose2d: in_channels ", in_channels, " and out_channels ", out_channels,
              " must be divisible by groups ", o.groups);
  // PyTorch's fan-in of a [in, out/groups, kH, kW] weight is its dim 1 times the kernel.
  const int64_t fan_in = out_channels / o.groups * kernel_size[0] * kernel_size[1];
  default_init(weight, o.bias ? &bias : nullptr, fan_in,
               {in_channels, out_channels / o.groups, kernel_size[0], kernel_size[1]}, out_channels);
  register_parameter("weight", weight);
  if (o.bias) register_parameter("bias", bias);
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight, bias, options.stride, options.padding, options.output_padding, options.groups,
                          options.dilation);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine) : num_groups(groups), eps(eps_) {
  AMBER_CHECK(groups > 0 && channels % groups == 0, "GroupNorm: num_channels ", channels,
              " must be divisible by num_groups ", groups);
  if (affine) {
    weight = ones({channels});
    bias = zeros({channels});
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
}

BatchNorm2d::BatchNorm2d(int64_t n, double eps_, double momentum_, bool affine) : eps(eps_), momentum(momentum_) {
  if (affine) {
    weight = ones({n});
    bias = zeros({n});
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
  running_mean = zeros({n});
  running_var = ones({n});
  num_batches_tracked = zeros({}, DType::i64);
  register_buffer("running_mean", running_mean);
  register_buffer("running_var", running_var);
  register_buffer("num_batches_tracked", num_batches_tracked);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  AMBER_CHECK(x.dim() == 4, "BatchNorm2d: expected a 4-D input (N, C, H, W), got shape ", x.sizes());
  return batch_norm(x, running_mean, running_var, weight, bias, is_training(), momentum, eps);
}

LayerNorm::LayerNorm(DimVec shape, double eps_, bool affine) : normalized_shape(shape), eps(eps_) {
  if (affine) {
    weight = ones(shape);
    bias = zeros(shape);
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, normalized_shape, weight, bias, eps); }

Embedding::Embedding(int64_t num, int64_t dim) {
  weight = randn({num, dim}, {}, nullptr, SrcLoc::none());
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices); }

}  // namespace amber::nn
