// Models whose control flow survives tracing (schema/control_flow.h: loop, while_loop, cond),
// shared by the samples, the end-to-end test and the benchmarks. Their PyTorch twins, run
// through torch.jit.script, are in tests/gen_reference.py (control_reference); each model's
// weights load from a safetensors file by the names given here.
#pragma once

#include <amber/amber.h>

namespace amber::models {

// x = x * x, n times (n a 0-d i64 tensor): the seeds' loop with its count as data.
Tensor square_n(const Tensor& x, const Tensor& n);

// An Elman RNN over the first n steps of x [T, N, in] (a padded batch): h = tanh(x_t W_h +
// h U_h + b_h), y_t = tanh(h W_y + b_y); returns y [T, N, out] with the rows past n zero.
// Weights "W_h" [in, H], "U_h" [H, H], "b_h", "W_y" [H, out], "b_y" (as ElmanRNN's).
struct LoopElman {
  Tensor W_h, U_h, b_h, W_y, b_y;
  Tensor forward(const Tensor& x, const Tensor& n) const;
};

// torch.nn.GRUCell run over the first n steps of x [T, N, in]; returns the hidden state
// [N, H] after step n. Weights "weight_ih" [3H, in], "weight_hh" [3H, H], "bias_ih", "bias_hh"
// (gates r, z, n in that order, as PyTorch).
struct LoopGRU {
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  Tensor forward(const Tensor& x, const Tensor& n) const;
  // One step: the hidden state after input xt [N, in] from h [N, H].
  Tensor step(const Tensor& xt, const Tensor& h) const;
};

// Greedy decoding with a while_loop: from token `start` (0-d i64), h = tanh(embedding[last] +
// h U), next = argmax(out h); stops after `end_token` is produced or max_len (0-d i64) tokens,
// at most kMaxTokens. Returns the tokens [kMaxTokens], -1 past the last one. Weights
// "embedding" [V, d], "U" [d, d], "out" [V, d].
struct GreedyDecoder {
  static constexpr int64_t kMaxTokens = 12;
  Tensor embedding, U, out;
  int64_t end_token = 0;
  Tensor forward(const Tensor& start, const Tensor& max_len) const;
};

// A residual block applied only when the input's mean magnitude exceeds 1 (cond on a tensor
// predicate): x + w2 relu(w1 x + b1) + b2, else x unchanged. Weights "w1" [H, d], "b1", "w2"
// [d, H], "b2".
struct SkipBlock {
  Tensor w1, b1, w2, b2;
  Tensor forward(const Tensor& x) const;
};

// Random weights for the samples (seeded): in 4, hidden 8, out 3; GRU in 4, hidden 8; decoder
// vocabulary 10, width 8, its end token one that greedy decoding from token 1 reaches at
// step 3; block width 6, hidden 12.
LoopElman random_loop_elman();
LoopGRU random_loop_gru();
GreedyDecoder random_greedy_decoder();
SkipBlock random_skip_block();

}  // namespace amber::models
