// `amber bench FILE [--batch N] [--sizes T=64,...] [--iters N] [--seconds S] [--json]
// [--profile]`: load time, first-call latency, latency percentiles over repeated calls,
// throughput and peak memory; --profile adds the per-node table. Progress goes to stderr on runs longer than a second.
// The --json fields are documented in docs/CLI.md.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"

namespace amber::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(p / 100.0 * double(v.size() - 1) + 0.5));
  return v[i];
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  Args a(argv, {"json", "profile"}, {"batch", "sizes", "iters", "seconds", "seed"});
  LoadOptions o = load_options(a);
  o.profile = a.flag("profile");
  const int64_t iters = a.get_int("iters", 100, 1, 100'000'000);
  const int64_t seconds = a.get_int("seconds", 60, 1, 86'400);
  const bool json = a.flag("json");

  Clock::time_point t = Clock::now();
  Model m = load(a.file(), o);
  const double load_ms = ms_since(t);
  std::vector<Tensor> inputs = make_inputs(m, a);
  const int64_t batch = inputs.empty() || inputs[0].dim() == 0 ? 1 : inputs[0].size(0);
  t = Clock::now();
  (void)m.forward(inputs);
  const double first_ms = ms_since(t);
  m.reset_profile();  // the profile covers the timed calls

  std::vector<double> lat;
  lat.reserve(size_t(std::min<int64_t>(iters, 1'000'000)));
  const bool tty = isatty(STDERR_FILENO);
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress = start;
  bool showed_progress = false;
  for (int64_t i = 0; i < iters; ++i) {
    t = Clock::now();
    (void)m.forward(inputs);
    lat.push_back(ms_since(t));
    if (Clock::now() - last_progress > std::chrono::seconds(1)) {
      last_progress = Clock::now();
      std::fprintf(stderr, "%sbench: %lld/%lld calls, %.1f s%s", tty ? "\r" : "", static_cast<long long>(i + 1),
                   static_cast<long long>(iters), ms_since(start) / 1000, tty ? "" : "\n");
      showed_progress = true;
    }
    if (Clock::now() - start > std::chrono::seconds(seconds)) break;
  }
  if (showed_progress && tty) std::fprintf(stderr, "\n");
  const double total_ms = ms_since(start);
  double sum = 0;
  for (double x : lat) sum += x;
  const double throughput = double(lat.size()) * double(batch) / (sum / 1000.0);
  const std::vector<NodeProfile> prof = o.profile ? m.profile() : std::vector<NodeProfile>{};
  // On a device with timing marks the nodes' own device times lead (the host times add each
  // node's launch and synchronisation); elsewhere the host times are the kernels' times.
  double prof_total = 0, device_total = 0;
  for (const NodeProfile& p : prof) prof_total += p.total_ms, device_total += p.device_ms;
  const bool device_timed = device_total > 0;

  if (json) {
    nlohmann::ordered_json j;
    j["file"] = a.file();
    j["device"] = str(o.device);
    j["threads"] = o.num_threads > 0 ? o.num_threads : available_cores();
    j["precision"] = precision_name(o.precision);
    j["batch"] = batch;
    j["load_ms"] = load_ms;
    j["first_call_ms"] = first_ms;
    j["calls"] = lat.size();
    j["total_ms"] = total_ms;
    j["mean_ms"] = sum / double(lat.size());
    j["min_ms"] = *std::min_element(lat.begin(), lat.end());
    j["p50_ms"] = percentile(lat, 50);
    j["p90_ms"] = percentile(lat, 90);
    j["p99_ms"] = percentile(lat, 99);
    j["max_ms"] = *std::max_element(lat.begin(), lat.end());
    j["throughput_per_s"] = throughput;
    j["peak_rss_mib"] = peak_rss_mib();
    j["workspace_bytes"] = m.workspace_bytes(graph::symbol_values(m.graph(), inputs));
    if (o.profile) {
      nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
      for (const NodeProfile& p : prof)
        nodes.push_back({{"node", p.node},
                         {"op", p.op},
                         {"source", p.source},
                         {"calls", p.calls},
                         {"total_ms", p.total_ms},
                         {"device_ms", p.device_ms},
                         {"bytes", p.bytes}});
      j["profile"] = nodes;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s on %s, batch %lld, %d intra-op threads, %s\n", a.file().c_str(), str(o.device).c_str(),
              static_cast<long long>(batch), o.num_threads > 0 ? o.num_threads : available_cores(),
              precision_name(o.precision));
  std::printf("load           %10.3f ms\n", load_ms);
  std::printf("first call     %10.3f ms\n", first_ms);
  std::printf("calls          %10zu in %.2f s\n", lat.size(), total_ms / 1000);
  std::printf("latency p50    %10.3f ms\n", percentile(lat, 50));
  std::printf("latency p90    %10.3f ms\n", percentile(lat, 90));
  std::printf("latency p99    %10.3f ms\n", percentile(lat, 99));
  std::printf("latency min    %10.3f ms\n", *std::min_element(lat.begin(), lat.end()));
  std::printf("throughput     %10.1f samples/s\n", throughput);
  std::printf("peak memory    %10.1f MiB (resident)\n", peak_rss_mib());
  if (o.profile) {
    std::vector<NodeProfile> sorted = prof;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const NodeProfile& x, const NodeProfile& y) {
      return device_timed ? x.device_ms > y.device_ms : x.total_ms > y.total_ms;
    });
    if (device_timed) {
      std::printf(
          "\nper node (timed calls), slowest on the device first (device: between timing marks around the "
          "node; host: with its launch and a synchronisation):\n");
      std::printf("%-28s %-22s %8s %10s %7s %10s %10s %10s  %s\n", "node", "op", "calls", "device ms", "share",
                  "device us", "host us", "out MiB", "source");
      for (const NodeProfile& p : sorted)
        std::printf("%-28s %-22s %8llu %10.3f %6.1f%% %10.2f %10.2f %10.2f  %s\n", p.node.c_str(), p.op.c_str(),
                    static_cast<unsigned long long>(p.calls), p.device_ms, 100.0 * p.device_ms / device_total,
                    p.calls ? 1000.0 * p.device_ms / double(p.calls) : 0.0,
                    p.calls ? 1000.0 * p.total_ms / double(p.calls) : 0.0, double(p.bytes) / (1 << 20),
                    p.source.c_str());
      std::printf("device total %.3f ms over the timed calls, host total %.3f ms\n", device_total, prof_total);
    } else {
      std::printf("\nper node (timed calls), slowest first:\n");
      std::printf("%-28s %-22s %8s %10s %7s %10s %10s  %s\n", "node", "op", "calls", "total ms", "share", "avg us",
                  "out MiB", "source");
      for (const NodeProfile& p : sorted)
        std::printf("%-28s %-22s %8llu %10.3f %6.1f%% %10.2f %10.2f  %s\n", p.node.c_str(), p.op.c_str(),
                    static_cast<unsigned long long>(p.calls), p.total_ms,
                    prof_total > 0 ? 100.0 * p.total_ms / prof_total : 0.0,
                    p.calls ? 1000.0 * p.total_ms / double(p.calls) : 0.0, double(p.bytes) / (1 << 20),
                    p.source.c_str());
    }
  }
  return kExitOk;
}

}  // namespace amber::cli
