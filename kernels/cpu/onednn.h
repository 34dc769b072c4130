// What the CPU kernels built on oneDNN primitives (conv2d, linear, attention) share: the
// engine, weights packed into a primitive's layout, and Primitive, a primitive made at a
// step's setup together with what its executions reuse. Everything lives in the kernel state
// of the plan step (or eager call) that made it and goes with it: nothing is cached process
// wide. Primitives run from many threads at once (the loader's concurrent calls, attention's
// workers): every primitive, reorders included, uses a user-managed scratchpad, and each
// execution passes its own, as oneDNN requires for concurrent execution of one primitive.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "amber/kernels/cpu/kernel_util.h"

namespace amber::cpu::onednn {

using dnnl::memory;
using Dims = memory::dims;

dnnl::engine& engine();

// Serialises primitive creation: oneDNN's own primitive cache synchronises concurrent
// creations with code ThreadSanitizer cannot see (concurrent loads raised reports there);
// creations happen at setup, never on a call's path once the step is set up.
std::mutex& creation_mutex();

// Weights in a primitive's layout (cpu_allocate_long_lived), owned by a kernel state.
struct PackedWeights {
  float* data = nullptr;
  size_t bytes = 0;
  explicit PackedWeights(size_t bytes);
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;
  ~PackedWeights();
};

// `user` weights reordered into `target`. Pages of weights mapped from a file are dropped
// after packing (core/mapped_pages.h): the packed copy is what calls read.
std::unique_ptr<PackedWeights> pack_weights(const void* data, const memory::desc& user, const memory::desc& target);

// A kernel state's packed weights, one copy per target layout: the state's primitives (one
// per thread count) usually share one layout. Thread-safe.
class PackedByLayout {
 public:
  std::shared_ptr<PackedWeights> get(const void* data, const memory::desc& user, const memory::desc& target);

 private:
  std::mutex mutex_;
  std::vector<std::pair<memory::desc, std::shared_ptr<PackedWeights>>> packs_;
};

// One execution argument: DNNL_ARG_* kind, its memory desc (alive while the primitive is) and
// this call's buffer.
struct Arg {
  int kind;
  const memory::desc* desc;
  const void* data;
};

// A primitive and its scratchpad layout, with a free list of execution contexts (stream,
// memory objects, scratchpad): a call borrows one, re-points its memory objects at its
// buffers and gives it back. Creating a stream and the memory objects per call cost about
// 1.4 us here, as much as a whole 1 x 120 x 84 product. The args of one primitive must be the
// same kinds on every call. Thread-safe.
class Primitive {
 public:
  Primitive(dnnl::primitive prim, memory::desc scratch) : prim_(std::move(prim)), scratch_(std::move(scratch)) {}
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;
  // Runs and waits. scratch: the call's workspace when at least scratch_bytes() (else the
  // context's own scratchpad is used).
  void execute(std::initializer_list<Arg> args, void* scratch = nullptr, size_t scratch_bytes = 0) {
    execute(args.begin(), args.end(), scratch, scratch_bytes);
  }
  void execute(const std::vector<Arg>& args, void* scratch = nullptr, size_t scratch_bytes = 0) {
    execute(args.data(), args.data() + args.size(), scratch, scratch_bytes);
  }
  size_t scratch_bytes() const { return scratch_.get_size(); }

 private:
  struct Context {
    dnnl::stream strm;
    std::unordered_map<int, memory> mem;
    std::vector<char> pad;
  };
  void execute(const Arg* begin, const Arg* end, void* scratch, size_t scratch_bytes);
  dnnl::primitive prim_;
  memory::desc scratch_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Context>> idle_;
};

// Per thread count variants of a step's primitive, made on first use (oneDNN tunes a
// primitive for the threads it is created with; a call's thread count depends on how many
// calls share the cores). make(threads) runs under creation_mutex().
template <typename V>
class ByThreads {
 public:
  template <typename Make>
  V& get(int threads, Make make) {
    {
      std::lock_guard lock(mutex_);
      auto it = map_.find(threads);
      if (it != map_.end()) return *it->second;
    }
    std::lock_guard creating(creation_mutex());
    {
      std::lock_guard lock(mutex_);
      auto it = map_.find(threads);
      if (it != map_.end()) return *it->second;
    }
    std::unique_ptr<V> v = make(threads);
    std::lock_guard lock(mutex_);
    return *map_.emplace(threads, std::move(v)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<int, std::unique_ptr<V>> map_;
};

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

// A convolution's or matrix product's primitive for one thread count, its layouts and, for
// immutable weights, the weights packed into its layout.
struct ProductPrim {
  std::unique_ptr<Primitive> prim;
  memory::desc src, wei, bias, dst;  // the primitive's layouts
  std::shared_ptr<PackedWeights> packed;
  // Takes a primitive and its descriptor's layouts.
  template <typename P, typename PD>
  void keep(P primitive, const PD& pd) {
    prim = std::make_unique<Primitive>(std::move(primitive), pd.scratchpad_desc());
    src = pd.src_desc();
    wei = pd.weights_desc();
    bias = pd.bias_desc();
    dst = pd.dst_desc();
  }
};

// make()'s primitive descriptor moved on (next_impl) to oneDNN's first implementation whose
// name starts with `prefix`, or make()'s own when it has none: for shapes where oneDNN's
// first choice measured slower (attention's matmuls, depthwise convolutions). A oneDNN that
// renames the implementation keeps its first choice.
template <typename Make>
auto prefer_impl(Make make, const char* prefix) {
  auto named = [&](const auto& pd) { return std::string_view(pd.impl_info_str()).rfind(prefix, 0) == 0; };
  auto pd = make();
  while (!named(pd) && pd.next_impl()) {
  }
  return named(pd) ? pd : make();  // none: oneDNN's first choice (next_impl moved pd on)
}

// Primitive attributes asking for a user-managed scratchpad.
dnnl::primitive_attr user_scratchpad();
// Runs a reorder from `from` to `to` once (a scratchpad of its own; waits for it).
void run_reorder(const memory& from, const memory& to);
// n floats to bf16 (round to nearest even), on the calling kernel's threads.
void to_bf16(const float* src, uint16_t* dst, int64_t n);
// The floats a buffer for d needs (its bytes rounded up: a bf16 desc may be an odd half).
inline size_t floats_for(const memory::desc& d) { return (d.get_size() + sizeof(float) - 1) / sizeof(float); }

// The data type a convolution's or matrix product's source and weights compute in: bf16 when
// the step asked for AMBER_PRECISION_BF16 and its weights are immutable (packed once).
inline memory::data_type product_type(const amber_kernel_args* a, const amber_tensor_view& w) {
  return a->precision == AMBER_PRECISION_BF16 && w.cache_id != 0 && w.data ? memory::data_type::bf16
                                                                           : memory::data_type::f32;
}

// The state of a kernel with a setup, made by make(args) (which returns a std::unique_ptr of
// a type with `size_t workspace_bytes() const`), as the amber_kernel setup/destroy pair.
template <typename State, auto Make>
struct StateOf {
  static int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
    return guarded_onednn(a, "oneDNN setup failed", [&] {
      std::unique_ptr<State> s = Make(a);
      *workspace_bytes = s ? s->workspace_bytes() : 0;
      *state = s.release();
      return 0;
    });
  }
  static void destroy(void* state) { delete static_cast<State*>(state); }
};

}  // namespace amber::cpu::onednn
