// Sample 4 of DESIGN.md section 9: `for i in range(10): x = x * x` on a 5-vector. The ten
// muls fuse into one node; the per-call time of eager code and of the traced graph is
// printed (the loader's planned executor is faster still; see bench/).
#include <amber/amber.h>

#include <chrono>

int main() {
  using namespace amber;
  auto ten_mul = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 10; ++i) y = y * y;
    return y;
  };
  Tensor x = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f});
  TracedModule traced = trace(ten_mul, {x});
  std::cout << traced.graph();
  auto per_call_us = [](auto&& f) {
    for (int i = 0; i < 1000; ++i) f();
    const int n = 100000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  const double eager = per_call_us([&] { (void)ten_mul(x); });
  const double graph = per_call_us([&] { (void)traced.forward({x}); });
  std::cout << "eager " << ten_mul(x) << "\ntraced " << traced.forward({x})[0] << "\n";
  std::printf("per call: eager %.2f us (10 ops), traced graph %.2f us (1 fused node)\n", eager, graph);
}
