// OpenMP-backed implementation of core/parallel.h.

#include "amber/core/parallel.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "amber/core/error.h"
#include "amber/core/hot.h"

namespace amber {
namespace {
std::atomic<int> g_default_threads{0};  // 0: not yet computed
thread_local int t_limit = 0;           // 0: no limit on this thread
}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void set_num_threads(int n) {
  AMBER_CHECK(n >= 1, "set_num_threads: expected at least 1 thread, got ", n);
  g_default_threads.store(n);
}

int get_num_threads() {
  if (t_limit > 0) return t_limit;
  int n = g_default_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = available_cores();
    g_default_threads.store(n);
  }
  return n;
}

AMBER_HOT ThreadLimit::ThreadLimit(int n) : previous_(t_limit) {
  AMBER_CHECK(n >= 1, "ThreadLimit: expected at least 1 thread, got ", n);
  t_limit = n;
}
ThreadLimit::~ThreadLimit() { t_limit = previous_; }

void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> f) {
  parallel_for_slots(n, grain, [&](int, int64_t b, int64_t e) { f(b, e); });
}

void parallel_for_slots(int64_t n, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> f) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int nt = int(std::min<int64_t>(get_num_threads(), max_chunks));
  if (nt <= 1 || omp_in_parallel()) {
    f(0, 0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel num_threads(nt)
  {
    const int64_t tid = omp_get_thread_num(), count = omp_get_num_threads();  // count <= nt
    const int64_t chunk = (n + count - 1) / count;
    const int64_t b = tid * chunk, e = std::min(n, b + chunk);
    if (b < e) {
      try {
        f(int(tid), b, e);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace amber
