// Sample 10 of DESIGN.md section 9: a multithreaded C++ service. Many threads call one
// loaded model at once (linked only against the runtime); every answer is compared with a
// lone call and the throughput with one caller. Usage:
//   service_threads MODEL.amber [THREADS=8] [CALLS_PER_THREAD=50]
#include <amber/runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.amber [THREADS=8] [CALLS_PER_THREAD=50]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 8;
  const int calls = argc > 3 ? std::max(1, std::atoi(argv[3])) : 50;
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  try {
    amber::Model model = amber::load(argv[1]);
    std::vector<amber::Tensor> inputs;
    amber::manual_seed(0);
    const std::vector<amber::DimVec>& examples = model.metadata().example_input_shapes;
    for (size_t i = 0; i < model.inputs().size(); ++i) {
      const amber::IOInfo& io = model.inputs()[i];
      const amber::DimVec sizes = i < examples.size() ? examples[i] : io.sizes_at(1);
      inputs.push_back(amber::is_floating(io.dtype) ? amber::randn(sizes).to(io.dtype) : amber::zeros(sizes, io.dtype));
    }
    const amber::Tensor lone = model.forward(inputs)[0];
    auto t = Clock::now();
    for (int i = 0; i < calls; ++i) (void)model.forward(inputs);
    const double one_caller = calls / secs(t);

    std::atomic<int> bad{0};
    std::vector<double> max_diff(size_t(threads), 0.0);
    std::vector<std::thread> pool;
    t = Clock::now();
    for (int k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        for (int i = 0; i < calls; ++i) {
          const amber::Tensor y = model.forward(inputs)[0];
          const double d = (y - lone).abs().amax().item<float>();
          max_diff[size_t(k)] = std::max(max_diff[size_t(k)], d);
          bad += d > 1e-4;
        }
      });
    for (std::thread& th : pool) th.join();
    const double many = double(threads) * calls / secs(t);
    std::printf("%s: %d threads x %d calls on one model: %.1f calls/s (one caller: %.1f calls/s)\n", argv[1], threads,
                calls, many, one_caller);
    std::printf("largest difference from a lone call: %.3g (%d answers off by more than 1e-4)\n",
                *std::max_element(max_diff.begin(), max_diff.end()), bad.load());
    return bad == 0 ? 0 : 1;
  } catch (const amber::Error& e) {
    std::fprintf(stderr, "service_threads: %s\n", e.what());
    return 1;
  }
}
