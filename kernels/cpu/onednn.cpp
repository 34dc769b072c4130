// Shared oneDNN plumbing of the CPU kernels (onednn.h).
#include "amber/kernels/cpu/onednn.h"

#include <atomic>
#include <new>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "amber/core/mapped_pages.h"
#include "amber/core/storage.h"

namespace amber::cpu::onednn {
namespace {

struct WeightKey {
  uint64_t cache_id;
  const void* data;
  std::string user, target;  // serialised memory descs
  bool operator<(const WeightKey& o) const {
    return std::tie(cache_id, data, user, target) < std::tie(o.cache_id, o.data, o.user, o.target);
  }
};

std::string desc_key(const memory::desc& d) {
  const dnnl_memory_desc_t& c = d.data;
  return std::string(reinterpret_cast<const char*>(&c), sizeof c);
}

}  // namespace

std::mutex& creation_mutex() {
  static std::mutex m;
  return m;
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

PackedWeights::PackedWeights(size_t bytes) : data(static_cast<float*>(cpu_allocate_long_lived(bytes))), bytes(bytes) {
  if (!data) throw std::bad_alloc();
}
PackedWeights::~PackedWeights() { cpu_free_long_lived(data, bytes); }

std::shared_ptr<PackedWeights> packed_weights(uint64_t cache_id, const void* data, const memory::desc& user,
                                              const memory::desc& target) {
  static Lru<WeightKey, PackedWeights> cache(512);
  return cache.get(WeightKey{cache_id, data, desc_key(user), desc_key(target)}, [&] {
    PackedWeights p(target.get_size());
    dnnl::stream strm(engine());
    run_reorder(memory(user, engine(), const_cast<void*>(data)), memory(target, engine(), p.data), strm);
    // Weights mapped from an archive are not read again: their pages leave the resident set
    // (ResNet-18: 45 MiB), and come back from the file should another layout need them.
    drop_file_pages(data, user.get_size());
    return p;
  });
}

uint64_t next_primitive_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void execute(uint64_t id, const dnnl::primitive& prim, std::initializer_list<Arg> args,
             const memory::desc& scratch_desc) {
  thread_local dnnl::stream strm(engine());
  thread_local std::unordered_map<uint64_t, std::unordered_map<int, memory>> objects;
  if (objects.size() > 1024) objects.clear();  // primitives come and go with shapes: stay bounded
  auto [it, fresh] = objects.try_emplace(id);
  std::unordered_map<int, memory>& m = it->second;
  const size_t pad_bytes = scratch_desc.get_size();
  void* pad = pad_bytes ? scratch_buffer(pad_bytes) : nullptr;
  if (fresh) {
    try {
      for (const Arg& a : args) m.emplace(a.kind, memory(*a.desc, engine(), const_cast<void*>(a.data)));
      if (pad) m.emplace(DNNL_ARG_SCRATCHPAD, memory(scratch_desc, engine(), pad));
    } catch (...) {
      objects.erase(it);
      throw;
    }
  } else {
    for (const Arg& a : args) m.at(a.kind).set_data_handle(const_cast<void*>(a.data));
    if (pad) m.at(DNNL_ARG_SCRATCHPAD).set_data_handle(pad);
  }
  prim.execute(strm, m);
  strm.wait();
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void* scratch_buffer(size_t bytes) {
  thread_local std::vector<char> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  return buf.data();
}

memory scratchpad(const memory::desc& d) { return memory(d, engine(), scratch_buffer(d.get_size())); }

dnnl::reorder::primitive_desc reorder_pd(const memory::desc& from, const memory::desc& to) {
  return dnnl::reorder::primitive_desc(engine(), from, engine(), to, user_scratchpad());
}

void run_reorder(const memory& from, const memory& to, dnnl::stream& strm) {
  auto pd = reorder_pd(from.get_desc(), to.get_desc());
  dnnl::reorder(pd).execute(
      strm, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
  strm.wait();
}

}  // namespace amber::cpu::onednn
