// Sample 1 of DESIGN.md section 9: `2*x + y` on two 3-vectors, traced into a graph, printed,
// saved as an archive, read back and run from it. Usage: two_x_plus_y [archive path]
// (default two_x_plus_y.amber). The standalone loader arrives with [loader].
#include <amber/amber.h>

amber::Tensor two_x_plus_y(const amber::Tensor& x, const amber::Tensor& y) { return 2 * x + y; }

int main(int argc, char** argv) {
  using namespace amber;
  const std::string path = argc > 1 ? argv[1] : "two_x_plus_y.amber";
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  Tensor y = tensor({0.5f, -1.0f, 4.0f});
  TraceOptions opts;
  opts.optimize = false;  // show the ops as recorded
  TracedModule traced = trace(two_x_plus_y, {x, y}, opts);
  std::cout << "recorded graph:\n" << traced.graph();
  TracedModule optimised = trace(two_x_plus_y, {x, y});
  std::cout << "optimised graph (the two ops fused):\n" << optimised.graph();
  optimised.save(path);
  LoadedArchive loaded = read_archive(path);  // validates everything, verifies checksums
  std::cout << "saved " << path << " (format " << loaded.info.format_major << "." << loaded.info.format_minor << ", "
            << loaded.graph.num_nodes() << " node)\n";
  std::cout << "eager:  " << two_x_plus_y(x, y) << "\ntraced: " << optimised.forward({x, y})[0]
            << "\nloaded: " << graph::run_graph(loaded.graph, {x, y})[0] << "\n";
}
