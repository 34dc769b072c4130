// Intra-op parallelism on one pool: libgomp's OpenMP threads, the runtime Debian's oneDNN
// also uses, so GEMM/convolution and Amber's own loops never run two spinning pools
// against each other. Defaults to every core in the process's affinity mask; a thread-local
// limit lets concurrent callers (the loader) share the cores instead of oversubscribing.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace amber {

// A non-owning reference to a callable; cheap to pass to non-template functions.
template <typename Sig>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>, int> = 0>
  FunctionRef(F&& f)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

// The process-wide default (all cores unless set).
void set_num_threads(int n);
// Threads an op started on this thread may use: the thread's limit if one is set, else
// the default.
int get_num_threads();
// Cores in this process's affinity mask.
int available_cores();

// Limits intra-op threads for ops started on this thread while alive.
class ThreadLimit {
 public:
  explicit ThreadLimit(int n);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int previous_;
};

// Calls f(begin, end) over [0, n) split into at most get_num_threads() contiguous chunks of
// at least grain items. Runs inline when n is small, one thread is allowed, or already
// inside a parallel region. An exception thrown by f is rethrown on the calling thread.
void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> f);

// parallel_for whose f also gets its chunk's slot: a number below get_num_threads() that no
// other chunk of this call running at the same time has (0 when the call runs inline), so
// f can use the slot-th of get_num_threads() per-thread scratch buffers.
void parallel_for_slots(int64_t n, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> f);

}  // namespace amber
