// Sample 7 of DESIGN.md section 9: an Elman RNN, h = tanh(x[t] @ W_h + h @ U_h + b_h),
// y_t = tanh(h @ W_y + b_y), over 4 time steps. The time loop unrolls in the trace; the
// weights appear under their parameter names.
#include "models/small.h"

int main() {
  using namespace amber;
  manual_seed(0);
  models::ElmanRNN rnn(3, 5, 2);
  rnn.eval();
  Tensor x = randn({4, 1, 3});  // [T, N, in]
  TracedModule traced = trace(rnn, {x});
  std::cout << "4 time steps, unrolled:\n" << traced.graph();
  std::cout << "eager:  " << rnn(x) << "\ntraced: " << traced.forward({x})[0] << "\n";
}
