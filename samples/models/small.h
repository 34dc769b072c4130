// The small models of shared/DESIGN.md section 9 (the LeNet-style Net of section 1 and an
// Elman RNN) and a U-Net-style decoder, with the parameter names their PyTorch twins in
// tests/gen_reference.py use.
#pragma once

#include <amber/amber.h>

namespace amber::models {

// Input [N, 1, 32, 32]: two 3x3 convolutions each followed by relu and 2x2 max-pooling,
// then three linear layers.
class LeNet : public nn::ModuleImpl<LeNet> {
 public:
  LeNet();
  Tensor forward(const Tensor& x);
  nn::Conv2d conv1{1, 6, 3}, conv2{6, 16, 3};
  nn::Linear fc1{576, 120}, fc2{120, 84}, fc3{84, 10};
};

// h = tanh(x[t] @ W_h + h @ U_h + b_h), y_t = tanh(h @ W_y + b_y); input [T, N, in],
// output [T, N, out] (the time loop unrolls when traced).
class ElmanRNN : public nn::ModuleImpl<ElmanRNN> {
 public:
  ElmanRNN(int64_t input_size, int64_t hidden_size, int64_t output_size);
  Tensor forward(const Tensor& x);
  Tensor W_h, U_h, b_h, W_y, b_y;
};

// Input [N, 16, H, W] -> [N, 3, 37, 29]: a stride-2 transposed convolution, group norm and
// relu; bilinear 2x upsampling; a 3x3 convolution, group norm and silu; nearest resizing to
// 37x29; a transposed-convolution head.
class Decoder : public nn::ModuleImpl<Decoder> {
 public:
  Decoder();
  Tensor forward(const Tensor& x);
  nn::ConvTranspose2d up1{16, 8, 4, {.stride = {2}, .padding = {1}}};
  nn::GroupNorm norm1{4, 8};
  nn::Upsample up2{{.scale_factor = {2}, .mode = "bilinear", .align_corners = false}};
  nn::Conv2d conv{8, 8, 3, {.padding = {1}}};
  nn::GroupNorm norm2{2, 8};
  nn::Upsample up3{{.size = {37, 29}}};
  nn::ConvTranspose2d head{8, 3, 3, {.padding = {1}}};
};

}  // namespace amber::models
