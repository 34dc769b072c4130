// The control-flow models (control.h).

#include "models/control.h"

namespace amber::models {

Tensor square_n(const Tensor& x, const Tensor& n) {
  return loop(n, x, [](const Tensor&, const Tensor& s) { return s * s; });
}

Tensor LoopElman::forward(const Tensor& x, const Tensor& n) const {
  AMBER_CHECK(x.dim() == 3, "LoopElman: expected input [T, N, in], got shape ", x.sizes());
  const Tensor h0 = zeros({x.size(1), U_h.size(0)}), y0 = zeros({x.size(0), x.size(1), W_y.size(1)});
  const auto out = loop(n, {h0, y0}, [&](const Tensor& i, const std::vector<Tensor>& s) {
    const Tensor xt = index_select(x, 0, i.reshape({1})).squeeze(0);
    const Tensor h = tanh(xt.matmul(W_h) + s[0].matmul(U_h) + b_h);
    const Tensor y = tanh(h.matmul(W_y) + b_y).unsqueeze(0);
    const Tensor rows = i.reshape({1, 1, 1}).expand(y.sizes());
    return std::vector<Tensor>{h, scatter(s[1], 0, rows, y)};
  });
  return out[1];
}

Tensor LoopGRU::forward(const Tensor& x, const Tensor& n) const {
  AMBER_CHECK(x.dim() == 3, "LoopGRU: expected input [T, N, in], got shape ", x.sizes());
  const Tensor h0 = zeros({x.size(1), weight_hh.size(1)});
  return loop(n, h0,
              [&](const Tensor& i, const Tensor& h) { return step(index_select(x, 0, i.reshape({1})).squeeze(0), h); });
}

Tensor LoopGRU::step(const Tensor& xt, const Tensor& h) const {
  const auto gi = linear(xt, weight_ih, bias_ih).chunk(3, 1), gh = linear(h, weight_hh, bias_hh).chunk(3, 1);
  const Tensor r = sigmoid(gi[0] + gh[0]), z = sigmoid(gi[1] + gh[1]);
  const Tensor c = tanh(gi[2] + r * gh[2]);
  return (1.0f - z) * c + z * h;
}

Tensor GreedyDecoder::forward(const Tensor& start, const Tensor& max_len) const {
  const std::vector<Tensor> state{full({kMaxTokens}, -1, {DType::i64}), zeros({}, {DType::i64}), start,
                                  zeros({U.size(0)})};
  const auto result = while_loop(
      [&](const std::vector<Tensor>& s) {
        return logical_and(logical_and(lt(s[1], max_len), lt(s[1], kMaxTokens)), ne(s[2], end_token));
      },
      [&](const std::vector<Tensor>& s) {
        const Tensor h = tanh(amber::embedding(embedding, s[2]) + s[3].matmul(U));
        const Tensor next = argmax(out.matmul(h));
        const Tensor tokens = scatter(s[0], 0, s[1].reshape({1}), next.reshape({1}));
        return std::vector<Tensor>{tokens, s[1] + 1, next, h};
      },
      state);
  return result[0];
}

Tensor SkipBlock::forward(const Tensor& x) const {
  return cond(
      gt(x.abs().mean(), 1.0), [&](const Tensor& v) { return v + linear(relu(linear(v, w1, b1)), w2, b2); },
      [](const Tensor& v) { return v; }, x);
}

LoopElman random_loop_elman() {
  manual_seed(31);
  return {randn({4, 8}) * 0.3, randn({8, 8}) * 0.3, randn({8}) * 0.1, randn({8, 3}) * 0.3, randn({3}) * 0.1};
}

LoopGRU random_loop_gru() {
  manual_seed(32);
  return {randn({24, 4}) * 0.3, randn({24, 8}) * 0.3, randn({24}) * 0.1, randn({24}) * 0.1};
}

GreedyDecoder random_greedy_decoder() {
  manual_seed(33);
  GreedyDecoder d{randn({10, 8}), randn({8, 8}) * 0.5, randn({10, 8}), -1};
  // The end token: the one greedy decoding from token 1 produces third.
  const Tensor tokens = d.forward(full({}, 1, {DType::i64}), full({}, GreedyDecoder::kMaxTokens, {DType::i64}));
  d.end_token = tokens[2].item<int64_t>();
  return d;
}

SkipBlock random_skip_block() {
  manual_seed(34);
  return {randn({12, 6}) * 0.3, randn({12}) * 0.1, randn({6, 12}) * 0.3, randn({6}) * 0.1};
}

}  // namespace amber::models
