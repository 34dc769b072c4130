// Timing helper shared by the benchmark programs: the median over rounds of the mean time
// per call, after one warm-up call (these machines are shared: medians resist noise).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace amber::bench {

// Median, over `rounds` rounds of `reps` calls, of the seconds per call of f.
inline double median_seconds(const std::function<void()>& f, int reps, int rounds = 7) {
  f();
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace amber::bench
