// LeNet and the Elman RNN (small.h).

#include "small.h"

namespace amber::models {

LeNet::LeNet() { register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}}); }

Tensor LeNet::forward(const Tensor& x) {
  Tensor y = max_pool2d(relu(conv1(x)), {2});
  y = max_pool2d(relu(conv2(y)), {2});
  y = y.flatten(1);
  y = relu(fc1(y));
  y = relu(fc2(y));
  return fc3(y);
}

Decoder::Decoder() {
  register_modules(
      {{"up1", up1}, {"norm1", norm1}, {"up2", up2}, {"conv", conv}, {"norm2", norm2}, {"up3", up3}, {"head", head}});
}

Tensor Decoder::forward(const Tensor& x) {
  Tensor y = relu(norm1(up1(x)));
  y = silu(norm2(conv(up2(y))));
  return head(up3(y));
}

ElmanRNN::ElmanRNN(int64_t in, int64_t hidden, int64_t out) {
  W_h = randn({in, hidden}) * 0.1;
  U_h = randn({hidden, hidden}) * 0.1;
  b_h = zeros({hidden});
  W_y = randn({hidden, out}) * 0.1;
  b_y = zeros({out});
  register_parameter("W_h", W_h);
  register_parameter("U_h", U_h);
  register_parameter("b_h", b_h);
  register_parameter("W_y", W_y);
  register_parameter("b_y", b_y);
}

Tensor ElmanRNN::forward(const Tensor& x) {
  AMBER_CHECK(x.dim() == 3, "ElmanRNN: expected input [T, N, in], got shape ", x.sizes());
  Tensor h = zeros({x.size(1), U_h.size(0)});
  std::vector<Tensor> ys;
  for (int64_t t = 0; t < x.size(0); ++t) {
    h = tanh(x[t].matmul(W_h) + h.matmul(U_h) + b_h);
    ys.push_back(tanh(h.matmul(W_y) + b_y));
  }
  return stack(ys);
}

}  // namespace amber::models
