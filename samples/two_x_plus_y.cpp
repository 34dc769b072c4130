// Sample 1 of DESIGN.md section 9: `2*x + y` on two 3-vectors, traced into a graph, printed,
// saved as an archive, loaded by the standalone runtime (amber::load) and run from it.
// Usage: two_x_plus_y [archive path]   (default two_x_plus_y.amber)
#include "models/programs.h"

int main(int argc, char** argv) {
  using namespace amber;
  const std::string path = argc > 1 ? argv[1] : "two_x_plus_y.amber";
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  Tensor y = tensor({0.5f, -1.0f, 4.0f});
  TraceOptions opts;
  opts.optimize = false;  // show the ops as recorded
  TracedModule traced = trace(models::two_x_plus_y, {x, y}, opts);
  std::cout << "recorded graph:\n" << traced.graph();
  TracedModule optimised = trace(models::two_x_plus_y, {x, y});
  std::cout << "optimised graph (the two ops fused):\n" << optimised.graph();
  optimised.save(path);
  Model loaded = load(path);  // validates everything, verifies checksums, plans the run
  std::cout << "saved and loaded " << path << " (format " << loaded.metadata().format_major << "."
            << loaded.metadata().format_minor << ", inputs " << loaded.inputs()[0].name << " "
            << loaded.inputs()[0].shape << ", " << loaded.inputs()[1].name << " " << loaded.inputs()[1].shape << ")\n";
  std::cout << "eager:  " << models::two_x_plus_y(x, y) << "\ntraced: " << optimised.forward({x, y})[0]
            << "\nloaded: " << loaded.forward({x, y})[0] << "\n";
}
