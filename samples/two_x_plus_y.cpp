// Sample 1 of DESIGN.md section 9: `2*x + y` on two 3-vectors, traced into a graph, printed,
// and run from the graph. (Saving and loading arrive with [archive] and [loader].)
#include <amber/amber.h>

amber::Tensor two_x_plus_y(const amber::Tensor& x, const amber::Tensor& y) { return 2 * x + y; }

int main() {
  using namespace amber;
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  Tensor y = tensor({0.5f, -1.0f, 4.0f});
  TraceOptions opts;
  opts.optimize = false;  // show the ops as recorded
  TracedModule traced = trace(two_x_plus_y, {x, y}, opts);
  std::cout << "recorded graph:\n" << traced.graph();
  TracedModule optimised = trace(two_x_plus_y, {x, y});
  std::cout << "optimised graph (the two ops fused):\n" << optimised.graph();
  std::cout << "eager:  " << two_x_plus_y(x, y) << "\ntraced: " << optimised.forward({x, y})[0] << "\n";
}
