// The small models of shared/DESIGN.md section 9: the LeNet-style Net of section 1 and
// an Elman RNN, with the parameter names their PyTorch twins in tests/gen_reference.py use.
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

}  // namespace amber::models
