// The basic nn layers with PyTorch's constructor arguments and parameter names: Linear,
// Conv2d, ConvTranspose2d, BatchNorm2d, GroupNorm, LayerNorm, Embedding, ReLU, GELU, MaxPool2d,
// AvgPool2d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, Upsample, Flatten, Dropout. Parameters are
// initialised as PyTorch does by default (kaiming-uniform weights, uniform biases, unit norms) from
// Amber's generator; models usually overwrite them with load_state().
#pragma once

#include <optional>
#include <string>

#include "amber/nn/module.h"
#include "amber/schema/eager.h"

namespace amber::nn {

class Linear : public BuiltinModule<Linear> {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x);
  Tensor weight, bias;  // [out, in], [out]
};

struct Conv2dOptions {
  DimVec stride{1}, padding{0}, dilation{1};
  int64_t groups = 1;
  bool bias = true;
};
class Conv2d : public BuiltinModule<Conv2d> {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, DimVec kernel_size, Conv2dOptions options = {});
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options = {})
      : Conv2d(in_channels, out_channels, DimVec{kernel_size, kernel_size}, options) {}
  Tensor forward(const Tensor& x);
  Tensor weight, bias;  // [out, in/groups, kH, kW], [out]
  Conv2dOptions options;
};

struct ConvTranspose2dOptions {
  DimVec stride{1}, padding{0}, output_padding{0}, dilation{1};
  int64_t groups = 1;
  bool bias = true;
};
class ConvTranspose2d : public BuiltinModule<ConvTranspose2d> {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, DimVec kernel_size, ConvTranspose2dOptions options = {});
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, ConvTranspose2dOptions options = {})
      : ConvTranspose2d(in_channels, out_channels, DimVec{kernel_size, kernel_size}, options) {}
  Tensor forward(const Tensor& x);
  Tensor weight, bias;  // [in, out/groups, kH, kW], [out]
  ConvTranspose2dOptions options;
};

class BatchNorm2d : public BuiltinModule<BatchNorm2d> {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true);
  Tensor forward(const Tensor& x);
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  double eps, momentum;
};

class GroupNorm : public BuiltinModule<GroupNorm> {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }
  Tensor weight, bias;  // [num_channels] each
  int64_t num_groups;
  double eps;
};

class LayerNorm : public BuiltinModule<LayerNorm> {
 public:
  explicit LayerNorm(DimVec normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNorm(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNorm(DimVec{normalized_shape}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x);
  Tensor weight, bias;
  DimVec normalized_shape;
  double eps;
};

class Embedding : public BuiltinModule<Embedding> {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices);
  Tensor weight;  // [num_embeddings, embedding_dim]
};

class ReLU : public BuiltinModule<ReLU> {
 public:
  Tensor forward(const Tensor& x) { return relu(x); }
};

class GELU : public BuiltinModule<GELU> {
 public:
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) { return gelu(x, approximate); }
  std::string approximate;
};

class MaxPool2d : public BuiltinModule<MaxPool2d> {
 public:
  explicit MaxPool2d(DimVec kernel_size, DimVec stride = {}, DimVec padding = {0}, DimVec dilation = {1},
                     bool ceil_mode = false)
      : kernel_size(kernel_size), stride(stride), padding(padding), dilation(dilation), ceil_mode(ceil_mode) {}
  Tensor forward(const Tensor& x) { return max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode); }
  DimVec kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

class AvgPool2d : public BuiltinModule<AvgPool2d> {
 public:
  explicit AvgPool2d(DimVec kernel_size, DimVec stride = {}, DimVec padding = {0}, bool ceil_mode = false,
                     bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt)
      : kernel_size(kernel_size),
        stride(stride),
        padding(padding),
        ceil_mode(ceil_mode),
        count_include_pad(count_include_pad),
        divisor_override(divisor_override) {}
  Tensor forward(const Tensor& x) {
    return avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  }
  DimVec kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

class AdaptiveAvgPool2d : public BuiltinModule<AdaptiveAvgPool2d> {
 public:
  explicit AdaptiveAvgPool2d(OptionalSize2d output_size) : output_size(std::move(output_size)) {}
  Tensor forward(const Tensor& x) { return adaptive_avg_pool2d(x, output_size); }
  OptionalSize2d output_size;
};
class AdaptiveAvgPool3d : public BuiltinModule<AdaptiveAvgPool3d> {
 public:
  explicit AdaptiveAvgPool3d(OptionalSize3d output_size) : output_size(std::move(output_size)) {}
  Tensor forward(const Tensor& x) { return adaptive_avg_pool3d(x, output_size); }
  OptionalSize3d output_size;
};

// torch.nn.Upsample: interpolate with fixed options (size or scale_factor, mode, align_corners).
class Upsample : public BuiltinModule<Upsample> {
 public:
  explicit Upsample(InterpolateOptions options) : options(std::move(options)) {}
  Tensor forward(const Tensor& x) { return interpolate(x, options); }
  InterpolateOptions options;
};

class Flatten : public BuiltinModule<Flatten> {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
  int64_t start_dim, end_dim;
};

// Identity in eval mode; in training mode it refuses to run (inference only).
class Dropout : public BuiltinModule<Dropout> {
 public:
  explicit Dropout(double p = 0.5) : p(p) {}
  Tensor forward(const Tensor& x) { return dropout(x, p, is_training()); }
  double p;
};

}  // namespace amber::nn
