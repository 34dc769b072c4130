// Sample 2 of DESIGN.md section 9: `y = x.mm(x); print(y); return y + t`. Every op runs
// while it is recorded, so printing inside the traced function still works; the graph
// holds only the mm and the add (t is a captured tensor: a constant).
#include "models/programs.h"

int main() {
  using namespace amber;
  manual_seed(0);
  Tensor t = ones({3, 3});
  auto f = [&t](const Tensor& x) { return models::mm_add(x, t, &std::cout); };
  Tensor x = randn({3, 3});
  TracedModule traced = trace(f, {x});
  std::cout << traced.graph();
  Tensor x2 = randn({3, 3});
  std::cout << "traced on another input: " << traced.forward({x2})[0] << "\n";
}
