// Sample 3 of DESIGN.md section 9: a loop that applies sample 2's mm + add to each row of
// x. Tracing records what ran, so the loop is unrolled: one mm and one add per row of the
// example (and the graph takes exactly that many rows).
#include "models/programs.h"

int main() {
  using namespace amber;
  manual_seed(0);
  Tensor t = ones({1, 1});
  auto per_row = [&t](const Tensor& x) { return models::loop_rows(x, t); };
  Tensor x = randn({3, 4});
  TracedModule traced = trace(per_row, {x});
  std::cout << "the loop over " << x.size(0) << " rows, unrolled:\n" << traced.graph();
  std::cout << "eager:  " << per_row(x) << "\ntraced: " << traced.forward({x})[0] << "\n";
}
