// Soak test: one loaded model served from 8 threads for a bounded number of calls with batch
// sizes varying per call; resident memory sampled after a warm-up must stay flat (growth
// under kMaxGrowthMiB). `--leak` is the control: every call also leaks 16 KiB on purpose,
// and the same check must catch it (exit 0 when it does).
// Usage: soak [--leak] [--calls N] [--threads T]   (N calls per thread, default 4000; T = 8)

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "models/small.h"

using namespace amber;

namespace {

constexpr double kMaxGrowthMiB = 4;
constexpr int kMaxBatch = 8;

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  bool leak = false;
  int calls = 4000, num_threads = 8;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--leak") == 0)
      leak = true;
    else if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
      calls = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      num_threads = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: soak [--leak] [--calls N] [--threads T]\n");
      return 2;
    }
  }
  try {
    manual_seed(5);
    models::LeNet net;
    net.eval();
    TraceOptions o;
    o.dynamic_batch = true;
    o.print_warnings = false;
    const Model model = load(trace(net, {randn({1, 1, 32, 32})}, o).save_to_bytes());
    std::vector<Tensor> inputs;
    for (int b = 1; b <= kMaxBatch; ++b) inputs.push_back(randn({b, 1, 32, 32}));
    std::vector<Tensor> want;
    for (const Tensor& x : inputs) want.push_back(model.forward({x})[0]);

    std::atomic<int> errors{0};
    std::vector<double> samples;
    auto serve = [&](int t, int n) {
      for (int i = 0; i < n; ++i) {
        const int k = (i * 5 + t * 3) % kMaxBatch;  // every batch size, in a different order per thread
        const Tensor y = model.forward({inputs[size_t(k)]})[0];
        if (std::memcmp(y.data(), want[size_t(k)].data(), y.nbytes()) != 0) ++errors;
        if (leak) std::memset(std::malloc(16 << 10), 1, 16 << 10);  // the control's leak
      }
    };
    // Warm-up: every thread runs every batch size a few times (plans, workspaces, arenas).
    std::vector<std::thread> threads;
    for (int t = 0; t < num_threads; ++t) threads.emplace_back(serve, t, 4 * kMaxBatch);
    for (std::thread& th : threads) th.join();
    threads.clear();
    const double warm = rss_mib();
    // The soak, in rounds, sampling resident memory after each.
    const int rounds = 8;
    for (int r = 0; r < rounds; ++r) {
      for (int t = 0; t < num_threads; ++t) threads.emplace_back(serve, t, calls / rounds);
      for (std::thread& th : threads) th.join();
      threads.clear();
      samples.push_back(rss_mib());
    }
    const double end = samples.back();
    double peak = warm;
    for (double s : samples) peak = std::max(peak, s);
    const double growth = end - warm;
    std::printf(
        "soak%s: %d threads x %d calls, batch 1..%d: resident %.1f MiB after warm-up, %.1f MiB at the end "
        "(peak %.1f), growth %.2f MiB (bound %.0f MiB); %d wrong outputs\n",
        leak ? " (leaking control)" : "", num_threads, calls / rounds * rounds, kMaxBatch, warm, end, peak, growth,
        kMaxGrowthMiB, errors.load());
    std::printf("resident MiB per round:");
    for (double s : samples) std::printf(" %.1f", s);
    std::printf("\n");
    const bool flat = growth <= kMaxGrowthMiB;
    if (errors != 0) return 1;
    if (leak) {
      std::printf(flat ? "FAIL: the check missed the deliberate leak\n" : "the check caught the deliberate leak\n");
      return flat ? 1 : 0;
    }
    if (!flat) std::printf("FAIL: resident memory grew by %.2f MiB after warm-up\n", growth);
    return flat ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "soak: %s\n", e.what());
    return 1;
  }
}
