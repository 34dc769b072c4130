// Sample 3 of DESIGN.md section 9: a loop that applies sample 2 to each row of x. Tracing
// records what ran, so the loop is unrolled: one mm and one add per row of the example.
#include <amber/amber.h>

int main() {
  using namespace amber;
  manual_seed(0);
  Tensor t = ones({1, 1});
  auto per_row = [&t](const Tensor& x) {
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < x.size(0); ++i) {
      Tensor r = x.select(0, i).reshape({1, -1});  // [1, n]
      Tensor y = r.mm(r.t());                      // [1, 1]
      rows.push_back(y + t);
    }
    return cat(rows, 0);
  };
  Tensor x = randn({3, 4});
  TracedModule traced = trace(per_row, {x});
  std::cout << "the loop over " << x.size(0) << " rows, unrolled:\n" << traced.graph();
  std::cout << "eager:  " << per_row(x) << "\ntraced: " << traced.forward({x})[0] << "\n";
}
