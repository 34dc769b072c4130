// What bench_amber_case and bench_torch_case share: argument parsing, the timing loop
// (first call, then calls until a time budget: p50, p99, throughput) and the one-line JSON
// report the driver (bench/run_vs_torch.py) reads. No Amber or libtorch types here.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Args {
  std::vector<std::string> positional;
  double seconds = 2;  // time budget of the steady-state loop
  int threads = 0;     // 0: the library's default
  int iters = 0;       // > 0: exactly this many timed calls
  bool optimize = false, no_verify = false;
  bool no_open = false;           // Amber: skip timing read_archive (exec + load + one call + exit runs)
  std::string device = "cpu";     // Amber: LoadOptions::device ("cuda:0", "sim:0")
  std::string precision = "f32";  // Amber: LoadOptions::precision by its name (amber::precision_name)
};

inline Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string("0"); };
    if (s == "--seconds")
      a.seconds = std::atof(value().c_str());
    else if (s == "--threads")
      a.threads = std::atoi(value().c_str());
    else if (s == "--iters")
      a.iters = std::atoi(value().c_str());
    else if (s == "--optimize")
      a.optimize = true;
    else if (s == "--no-verify")
      a.no_verify = true;
    else if (s == "--no-open")
      a.no_open = true;
    else if (s == "--device")
      a.device = value();
    else if (s == "--precision")
      a.precision = value();
    else
      a.positional.push_back(s);
  }
  return a;
}

struct Timing {
  double first_ms = 0, p50_ms = 0, p99_ms = 0, mean_ms = 0;
  double second_ms = 0;  // the call after the first
  double idle_ms = 0;    // the median of 5 calls each after 20 ms of nothing (cold caches, idle clocks)
  int calls = 0;
};

// Times `call`: the first call alone, then calls until the budget (at least 5, or exactly
// args.iters), then 5 calls each after 20 ms idle: whether a first call's excess over the steady
// state is the first call's own or any call's after a pause.
inline Timing time_calls(const Args& args, const std::function<void()>& call) {
  Timing t;
  auto t0 = Clock::now();
  call();
  t.first_ms = ms_since(t0);
  std::vector<double> lat;
  const auto start = Clock::now();
  while (args.iters > 0 ? int(lat.size()) < args.iters
                        : (lat.size() < 5 || (ms_since(start) < args.seconds * 1e3 && lat.size() < 200000))) {
    t0 = Clock::now();
    call();
    lat.push_back(ms_since(t0));
  }
  if (lat.empty()) return t;
  t.second_ms = lat[0];
  std::vector<double> idle;
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    t0 = Clock::now();
    call();
    idle.push_back(ms_since(t0));
  }
  std::sort(idle.begin(), idle.end());
  t.idle_ms = idle[idle.size() / 2];
  std::sort(lat.begin(), lat.end());
  t.p50_ms = lat[lat.size() / 2];
  t.p99_ms = lat[std::min(lat.size() - 1, size_t(double(lat.size()) * 0.99))];
  double sum = 0;
  for (double x : lat) sum += x;
  t.mean_ms = sum / double(lat.size());
  t.calls = int(lat.size());
  return t;
}

inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024;
}

// {"load_ms": ..., ...} on one line.
inline void report(const std::vector<std::pair<std::string, double>>& fields) {
  std::printf("{");
  for (size_t i = 0; i < fields.size(); ++i)
    std::printf("%s\"%s\": %.6g", i ? ", " : "", fields[i].first.c_str(), fields[i].second);
  std::printf("}\n");
  std::fflush(stdout);
}

}  // namespace bench
