// Archive benchmarks ([archive]): saving a traced ResNet-18 and opening its archive from a
// file, with and without the XXH3-64 verification of every weight record, cold-ish (first
// open of a fresh mapping each time) and as a median over repeated opens.
// Prints numbers; asserts nothing. Usage: bench_archive [path] (default /tmp/amber_bench_resnet18.amber).

#include <amber/amber.h>
#include <amber/serialize/archive.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "models/resnet.h"

using namespace amber;

namespace {
double median_ms(const std::function<void()>& f, int rounds) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/amber_bench_resnet18.amber";
  set_num_threads(2);
  models::ResNet18 net;
  net.eval();
  manual_seed(0);
  TraceOptions quiet;
  quiet.print_warnings = false;
  TracedModule traced = trace(net, {randn({1, 3, 224, 224})}, quiet);
  const double save = median_ms([&] { traced.save(path); }, 5);
  struct stat st {};
  stat(path.c_str(), &st);
  ArchiveReadOptions fast;
  fast.verify_checksums = false;
  size_t mapped = 0, weights = 0;
  const double with = median_ms(
      [&] {
        LoadedArchive a = read_archive(path);
        mapped = a.info.weights_mapped;
        weights = a.info.weight_count;
      },
      21);
  const double without = median_ms([&] { (void)read_archive(path, fast); }, 21);
  std::printf("ResNet-18 archive: %.1f MiB, %zu weight records (%zu mapped zero-copy), %zu nodes\n",
              double(st.st_size) / (1 << 20), weights, mapped, traced.graph().num_nodes());
  std::printf("save (write, fsync, rename): %.1f ms (median of 5)\n", save);
  std::printf("open with XXH3 checksums: %.2f ms; without: %.2f ms (median of 21 opens; file in page cache)\n", with,
              without);
  return 0;
}
