// What the CPU kernels built on oneDNN primitives (conv2d, linear) share: the engine, small
// thread-safe LRU caches (primitives by shape), weights packed into a primitive's layout and
// cached for the life of immutable weights, and per-thread scratchpads. Cached primitives run
// from many threads at once (the loader's concurrent calls): every primitive, reorders
// included, is created with a user-managed scratchpad and each execution passes its own
// thread's, as oneDNN requires for concurrent execution of one primitive.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>

#include "amber/kernels/cpu/kernel_util.h"

namespace amber::cpu::onednn {

using dnnl::memory;
using Dims = memory::dims;

dnnl::engine& engine();

// Serialises primitive creation: oneDNN's own primitive cache synchronises concurrent
// creations with code ThreadSanitizer cannot see (concurrent loads raised reports there);
// creations are rare (load time), lookups never take it.
std::mutex& creation_mutex();

// A small thread-safe LRU cache: get(k, make) returns the cached value or make()'s.
template <typename K, typename V>
class Lru {
 public:
  explicit Lru(size_t cap) : cap_(cap) {}
  template <typename Make>
  std::shared_ptr<V> get(const K& k, Make make) {
    {
      std::lock_guard lock(m_);
      auto it = map_.find(k);
      if (it != map_.end()) {
        order_.splice(order_.begin(), order_, it->second.second);
        return it->second.first;
      }
    }
    std::lock_guard creating(creation_mutex());
    {
      std::lock_guard lock(m_);
      auto it = map_.find(k);  // made by another thread meanwhile
      if (it != map_.end()) return it->second.first;
    }
    auto v = std::make_shared<V>(make());
    std::lock_guard lock(m_);
    auto [it, inserted] = map_.try_emplace(k, v, order_.end());
    if (inserted) {
      order_.push_front(k);
      it->second.second = order_.begin();
      if (map_.size() > cap_) {
        map_.erase(order_.back());
        order_.pop_back();
      }
    }
    return it->second.first;
  }

 private:
  size_t cap_;
  std::mutex m_;
  std::list<K> order_;
  std::map<K, std::pair<std::shared_ptr<V>, typename std::list<K>::iterator>> map_;
};

// Weights in a primitive's layout (cpu_allocate_long_lived).
struct PackedWeights {
  float* data = nullptr;
  size_t bytes = 0;
  explicit PackedWeights(size_t bytes);
  PackedWeights(PackedWeights&& o) noexcept : data(std::exchange(o.data, nullptr)), bytes(o.bytes) {}
  PackedWeights(const PackedWeights&) = delete;
  ~PackedWeights();
};

// `user` weights (immutable: cache_id != 0 names their storage) reordered into `target`,
// cached by storage, address, layout and target for as long as the cache keeps them. Pages
// of weights mapped from a file are dropped after packing (core/mapped_pages.h).
std::shared_ptr<PackedWeights> packed_weights(uint64_t cache_id, const void* data, const memory::desc& user,
                                              const memory::desc& target);

// A new id for a primitive being created: keys its per-thread execution objects below.
uint64_t next_primitive_id();

// One execution argument: DNNL_ARG_* kind, its memory desc (alive while the primitive is) and
// this call's buffer.
struct Arg {
  int kind;
  const memory::desc* desc;
  const void* data;
};
// Runs primitive `id` with args (and this thread's scratchpad, of scratch_desc) on this
// thread's stream, and waits. The memory objects are made on this thread's first run of the
// primitive and only re-pointed at the buffers afterwards: creating a stream and the memory
// objects per call cost about 1.4 us here, as much as a whole 1 x 120 x 84 product. The
// args of one primitive must be the same kinds on every call.
void execute(uint64_t id, const dnnl::primitive& prim, std::initializer_list<Arg> args,
             const memory::desc& scratch_desc);

// Runs a kernel body f like guarded() (kernel_util.h), reporting a oneDNN failure as
// "<what>: <oneDNN's message> (status <n>)".
template <typename F>
int guarded_onednn(const amber_kernel_args* a, const char* what, F&& f) {
  return guarded(a, [&] {
    try {
      return f();
    } catch (const dnnl::error& e) {
      return fail(a, "%s: %s (status %d)", what, e.what(), int(e.status));
    }
  });
}

// Primitive attributes asking for a user-managed scratchpad.
dnnl::primitive_attr user_scratchpad();
// This thread's scratchpad, grown to at least `bytes` / d's size (one execution per thread
// at a time; the buffer moves when it grows).
void* scratch_buffer(size_t bytes);
memory scratchpad(const memory::desc& d);
// A reorder from `from` to `to` (from oneDNN's primitive cache after the first).
dnnl::reorder::primitive_desc reorder_pd(const memory::desc& from, const memory::desc& to);
// Runs that reorder with this thread's scratchpad (and waits for it).
void run_reorder(const memory& from, const memory& to, dnnl::stream& strm);

}  // namespace amber::cpu::onednn
