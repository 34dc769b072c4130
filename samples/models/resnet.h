// ResNet-18 exactly as torchvision builds it (BasicBlock, [2, 2, 2, 2] layers, parameter
// names such as "layer2.0.downsample.0.weight"), so torchvision's state_dict loads as is.
#pragma once

#include <amber/amber.h>

namespace amber::models {

class BasicBlock : public nn::ModuleImpl<BasicBlock> {
 public:
  BasicBlock(int64_t inplanes, int64_t planes, int64_t stride);
  Tensor forward(const Tensor& x);
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Sequential downsample;  // empty when the shape does not change
};

class ResNet18 : public nn::ModuleImpl<ResNet18> {
 public:
  explicit ResNet18(int64_t num_classes = 1000);
  Tensor forward(const Tensor& x);
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu;
  nn::MaxPool2d maxpool;
  nn::Sequential layer1, layer2, layer3, layer4;
  nn::AdaptiveAvgPool2d avgpool;
  nn::Linear fc;
};

}  // namespace amber::models
