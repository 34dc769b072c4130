// Sample 5 of DESIGN.md section 9: squared distances between every point of a (100x2) and
// b (200x2) by broadcasting, traced, compared with a double loop over the points.
#include <chrono>

#include "models/programs.h"

int main() {
  using namespace amber;
  manual_seed(0);
  auto& pairwise = models::pairwise_sq_dist;
  Tensor a = randn({100, 2}), b = randn({200, 2});
  TracedModule traced = trace(pairwise, {a, b});
  std::cout << traced.graph();
  auto time_ms = [](auto&& f, int n) {
    f();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  Tensor loops;
  const double t_loop = time_ms(
      [&] {
        std::vector<float> out(100 * 200);
        const auto av = a.to_vector<float>(SrcLoc::none()), bv = b.to_vector<float>(SrcLoc::none());
        for (int i = 0; i < 100; ++i)
          for (int j = 0; j < 200; ++j) {
            const float dx = av[i * 2] - bv[j * 2], dy = av[i * 2 + 1] - bv[j * 2 + 1];
            out[size_t(i * 200 + j)] = dx * dx + dy * dy;
          }
        loops = tensor(out, {100, 200});
      },
      20);
  const double t_graph = time_ms([&] { (void)traced.forward({a, b}); }, 200);
  Tensor diff = (traced.forward({a, b})[0] - loops).abs().amax();
  std::printf("double loop %.3f ms, traced broadcasting graph %.3f ms; max difference %g\n", t_loop, t_graph,
              diff.item<float>());
}
