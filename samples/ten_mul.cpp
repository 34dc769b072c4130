// Sample 4 of DESIGN.md section 9: `for i in range(10): x = x * x` on a 5-vector. The ten
// muls fuse into one node; the per-call times of eager code (ten ops), of the traced graph
// and of the archive loaded by the runtime (planned, allocation-free) are printed.
#include <chrono>

#include "models/programs.h"

int main() {
  using namespace amber;
  Tensor x = tensor({1.01f, 0.99f, 1.0f, 0.5f, 1.1f});
  TracedModule traced = trace(models::ten_mul, {x});
  std::cout << traced.graph();
  Model loaded = load(traced.save_to_bytes());
  auto per_call_us = [](auto&& f) {
    for (int i = 0; i < 1000; ++i) f();
    const int n = 100000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  const std::vector<Tensor> in{x};
  const double eager = per_call_us([&] { (void)models::ten_mul(x); });
  const double graph = per_call_us([&] { (void)traced.forward(in); });
  const double runtime = per_call_us([&] { (void)loaded.forward(in); });
  std::cout << "eager  " << models::ten_mul(x) << "\ntraced " << traced.forward(in)[0] << "\nloaded "
            << loaded.forward(in)[0] << "\n";
  std::printf("per call: eager %.2f us (10 ops), traced graph %.2f us, loaded %.2f us (1 fused node)\n", eager, graph,
              runtime);
}
