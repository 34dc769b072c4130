// torchvision's ResNet-18 in Amber's eager API (resnet.h).

#include "resnet.h"

namespace amber::models {

namespace {
nn::Conv2dOptions conv_opts(int64_t stride, int64_t padding) {
  nn::Conv2dOptions o;
  o.stride = {stride};
  o.padding = {padding};
  o.bias = false;
  return o;
}
}  // namespace

BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride)
    : conv1(inplanes, planes, 3, conv_opts(stride, 1)),
      bn1(planes),
      conv2(planes, planes, 3, conv_opts(1, 1)),
      bn2(planes) {
  register_modules({{"conv1", conv1}, {"bn1", bn1}, {"relu", relu}, {"conv2", conv2}, {"bn2", bn2}});
  if (stride != 1 || inplanes != planes) {
    downsample.emplace_back<nn::Conv2d>(inplanes, planes, 1, conv_opts(stride, 0));
    downsample.emplace_back<nn::BatchNorm2d>(planes);
    register_module("downsample", downsample);
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = relu(bn1(conv1(x)));
  out = bn2(conv2(out));
  Tensor identity = downsample.empty() ? x : downsample(x);
  return relu(out + identity);
}

ResNet18::ResNet18(int64_t num_classes)
    : conv1(3, 64, 7, conv_opts(2, 3)), bn1(64), maxpool({3}, {2}, {1}), avgpool({1}), fc(512, num_classes) {
  register_modules({{"conv1", conv1}, {"bn1", bn1}, {"relu", relu}, {"maxpool", maxpool}});
  int64_t inplanes = 64;
  nn::Sequential* layers[4] = {&layer1, &layer2, &layer3, &layer4};
  for (int i = 0; i < 4; ++i) {
    const int64_t planes = 64 << i, stride = i == 0 ? 1 : 2;
    layers[i]->emplace_back<BasicBlock>(inplanes, planes, stride);
    layers[i]->emplace_back<BasicBlock>(planes, planes, 1);
    inplanes = planes;
    register_module("layer" + std::to_string(i + 1), *layers[i]);
  }
  register_modules({{"avgpool", avgpool}, {"fc", fc}});
}

Tensor ResNet18::forward(const Tensor& x) {
  Tensor y = maxpool(relu(bn1(conv1(x))));
  y = layer4(layer3(layer2(layer1(y))));
  return fc(avgpool(y).flatten(1));
}

}  // namespace amber::models
