// Sample 2 of DESIGN.md section 9: `y = x.mm(x); print(y); return y + t`, run eagerly on the
// CPU. Printing inside the function works because every op runs immediately.
#include <amber/amber.h>

#include <iostream>

amber::Tensor mm_add(const amber::Tensor& x, const amber::Tensor& t) {
  amber::Tensor y = x.mm(x);
  std::cout << "inside: y = x.mm(x) = " << y << "\n";
  return y + t;
}

int main() {
  amber::manual_seed(0);
  amber::Tensor x = amber::randn({3, 3});
  amber::Tensor t = amber::ones({3, 3});
  std::cout << "x = " << x << "\n";
  amber::Tensor out = mm_add(x, t);
  std::cout << "x.mm(x) + 1 = " << out << "\n";
}
