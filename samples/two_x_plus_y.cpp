// Sample 1 of DESIGN.md section 9: `2*x + y` on two 3-vectors, run eagerly on the CPU.
// (Tracing, saving and loading this function arrive with [tracer], [archive], [loader].)
#include <amber/amber.h>

#include <iostream>

amber::Tensor two_x_plus_y(const amber::Tensor& x, const amber::Tensor& y) { return 2 * x + y; }

int main() {
  amber::Tensor x = amber::tensor({1.0f, 2.0f, 3.0f});
  amber::Tensor y = amber::tensor({0.5f, -1.0f, 4.0f});
  std::cout << "x = " << x << "\ny = " << y << "\n2*x + y = " << two_x_plus_y(x, y) << "\n";
}
