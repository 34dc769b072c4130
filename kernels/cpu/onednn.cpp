// Shared oneDNN plumbing of the CPU kernels (onednn.h).
#include "amber/kernels/cpu/onednn.h"

#include <new>
#include <span>

#include "amber/core/mapped_pages.h"
#include "amber/core/parallel.h"
#include "amber/core/storage.h"

namespace amber::cpu::onednn {

std::mutex& creation_mutex() {
  static std::mutex m;
  return m;
}

bool bf16_native() {
  static const bool yes = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16;
  return yes;
}

bool int8_native() {
  static const bool yes = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_vnni;
  return yes;
}

void to_bf16(const float* src, uint16_t* dst, int64_t n) {
  parallel_for(n, int64_t(1) << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = float_to_bf16(src[i]);
  });
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

PackedWeights::PackedWeights(size_t bytes) : data(static_cast<float*>(cpu_allocate_long_lived(bytes))), bytes(bytes) {
  if (!data) throw std::bad_alloc();
}
PackedWeights::~PackedWeights() { cpu_free_long_lived(data, bytes); }

std::unique_ptr<PackedWeights> pack_weights(const void* data, const memory::desc& user, const memory::desc& target) {
  auto p = std::make_unique<PackedWeights>(target.get_size());
  run_reorder(memory(user, engine(), const_cast<void*>(data)), memory(target, engine(), p->data));
  // Weights mapped from an archive are not read again: their pages leave the resident set
  // (ResNet-18: 45 MiB), and come back from the file should anything read them.
  drop_file_pages(data, user.get_size());
  return p;
}

std::shared_ptr<PackedWeights> PackedByLayout::get(const void* data, const memory::desc& user,
                                                   const memory::desc& target) {
  std::lock_guard lock(mutex_);
  for (auto& [desc, packed] : packs_)
    if (desc == target) return packed;
  std::shared_ptr<PackedWeights> packed = pack_weights(data, user, target);
  packs_.emplace_back(target, packed);
  return packed;
}

void Primitive::execute(const Arg* begin, const Arg* end, void* scratch, size_t scratch_bytes) {
  const std::span<const Arg> args(begin, end);
  std::unique_ptr<Context> c;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      c = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  const size_t pad_bytes = scratch_.get_size();
  void* pad = nullptr;
  if (pad_bytes) {
    if (scratch && scratch_bytes >= pad_bytes) {
      pad = scratch;
    } else {
      if (c && c->pad.size() < pad_bytes) c->pad.resize(pad_bytes);
      pad = c ? c->pad.data() : nullptr;  // set below for a new context
    }
  }
  if (!c) {
    c = std::make_unique<Context>(Context{dnnl::stream(engine()), {}, {}});
    if (pad_bytes && !pad) {
      c->pad.resize(pad_bytes);
      pad = c->pad.data();
    }
    for (const Arg& a : args) c->mem.emplace(a.kind, memory(*a.desc, engine(), const_cast<void*>(a.data)));
    if (pad) c->mem.emplace(DNNL_ARG_SCRATCHPAD, memory(scratch_, engine(), pad));
  } else {
    for (const Arg& a : args) c->mem.at(a.kind).set_data_handle(const_cast<void*>(a.data));
    if (pad) c->mem.at(DNNL_ARG_SCRATCHPAD).set_data_handle(pad);
  }
  struct GiveBack {
    Primitive* self;
    std::unique_ptr<Context>& c;
    ~GiveBack() {
      std::lock_guard lock(self->mutex_);
      self->idle_.push_back(std::move(c));
    }
  } give_back{this, c};
  prim_.execute(c->strm, c->mem);
  c->strm.wait();
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void run_reorder(const memory& from, const memory& to) {
  dnnl::reorder::primitive_desc pd(engine(), from.get_desc(), engine(), to.get_desc(), user_scratchpad());
  std::vector<char> pad(pd.scratchpad_desc().get_size());
  dnnl::stream strm(engine());
  dnnl::reorder(pd).execute(strm, {{DNNL_ARG_FROM, from},
                                   {DNNL_ARG_TO, to},
                                   {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), engine(), pad.data())}});
  strm.wait();
}

}  // namespace amber::cpu::onednn

namespace amber::cpu {
bool bf16_supported() { return cpu_isa() == Isa::avx512 && onednn::bf16_native(); }
bool int8_supported() { return cpu_isa() == Isa::avx512 && onednn::int8_native(); }
}  // namespace amber::cpu
