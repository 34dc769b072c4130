// Storage allocation and release for every device: short-lived CPU memory is allocated
// directly; everything else goes through the device's backend table (core/backend.h).

#include "amber/core/storage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "amber/core/backend_registry.h"
#include "amber/core/error.h"

namespace amber {

namespace {

constexpr size_t kLongLivedMapped = size_t(256) << 10;  // smaller blocks come from malloc
// Short-lived CPU blocks from this size up are mapped as the long-lived ones are: glibc maps each
// afresh (its mmap threshold stops rising at 32 MiB), and its pages fault in 4 KiB at a time on
// first touch. cat of two [2048, 2048] f32 tensors took 80-100 ms a call here (8192 faults on
// this virtualised machine; PyTorch 86 ms), 24 MiB blocks 1.5 ms (reused by malloc).
constexpr size_t kShortLivedMapped = size_t(32) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

size_t mapped_length(size_t nbytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (nbytes + page - 1) / page * page;
}

}  // namespace

void* cpu_allocate_long_lived(size_t nbytes) {
  if (nbytes < kLongLivedMapped) {
    void* p = cpu_allocate(nbytes);
    if (p) std::memset(p, 0, nbytes);  // faulted in now, like the mapped blocks
    return p;
  }
  const size_t len = mapped_length(nbytes);
  const bool huge = len >= kHugePage;
  const size_t span = huge ? len + kHugePage : len;  // room to align to a huge page
  if (len < nbytes || span < len) return nullptr;
  void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  char* base = static_cast<char*>(m);
  char* p = base;
  if (huge) {
    p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~uintptr_t(kHugePage - 1));
    if (p > base) ::munmap(base, size_t(p - base));
    if (base + span > p + len) ::munmap(p + len, size_t(base + span - (p + len)));
    (void)::madvise(p, len, MADV_HUGEPAGE);  // advice only: fine if unsupported
  }
  // Fault the block in now, in one pass (advice only: kernels before 5.14 fault on first touch).
  (void)::madvise(p, len, MADV_POPULATE_WRITE);
  return p;
}

void cpu_free_long_lived(void* p, size_t nbytes) {
  if (!p) return;
  if (nbytes < kLongLivedMapped)
    cpu_free(p);
  else
    ::munmap(p, mapped_length(nbytes));
}

void* cpu_allocate(size_t nbytes) {
  void* p = nullptr;
  // Round up so the aligned block size is a multiple of the alignment (required by C11
  // aligned_alloc, harmless for posix_memalign) and never zero.
  size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  if (rounded < nbytes) return nullptr;
  if (posix_memalign(&p, kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded) != 0) return nullptr;
  return p;
}

void cpu_free(void* p) { std::free(p); }

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, Owner owner, bool read_only, uint32_t alloc_flags)
    : data_(data), nbytes_(nbytes), device_(device), read_only_(read_only), owner_(owner), alloc_flags_(alloc_flags) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
}

StorageImpl::~StorageImpl() {
  switch (owner_) {
    case Owner::cpu_heap:
      cpu_free(data_);
      break;
    case Owner::cpu_mapped:
      cpu_free_long_lived(data_, nbytes_);
      break;
    case Owner::backend: {
      const amber_backend* b = data_ ? backend_if_loaded(device_.type) : nullptr;
      if (b) b->deallocate(device_.index, data_, nbytes_, alloc_flags_);
      break;
    }
    case Owner::deleter:
      if (deleter) deleter(data_);
      break;
    case Owner::borrowed:
      break;
  }
}

namespace {
thread_local size_t t_allocation_limit = SIZE_MAX;
// Limits alive on any thread: while none is, allocate() skips the thread-local lookup (a call
// into the TLS resolver from a shared library, 5% of a 0.3 us model call).
std::atomic<int> g_allocation_limits{0};
}  // namespace

AllocationLimit::AllocationLimit(size_t max_bytes) : previous_(t_allocation_limit) {
  t_allocation_limit = std::min(previous_, max_bytes);
  g_allocation_limits.fetch_add(1, std::memory_order_relaxed);
}
AllocationLimit::~AllocationLimit() {
  t_allocation_limit = previous_;
  g_allocation_limits.fetch_sub(1, std::memory_order_relaxed);
}

Storage Storage::allocate(size_t nbytes, Device device, bool long_lived) {
  if (g_allocation_limits.load(std::memory_order_relaxed) != 0)
    AMBER_CHECK(nbytes <= t_allocation_limit, "allocating ", nbytes, " bytes on ", device,
                " exceeds this thread's limit of ", t_allocation_limit, " bytes");
  Storage s;
  if (device.is_cpu() && !long_lived) {
    const bool mapped = nbytes >= kShortLivedMapped;
    void* p = mapped ? cpu_allocate_long_lived(nbytes) : cpu_allocate(nbytes);
    AMBER_CHECK(p, "out of memory: failed to allocate ", nbytes, " bytes on the CPU");
    using Owner = StorageImpl::Owner;
    s.impl_ = Ref<StorageImpl>::make(p, nbytes, device, mapped ? Owner::cpu_mapped : Owner::cpu_heap, false);
    return s;
  }
  const amber_backend& b = backend(device);
  const uint32_t flags = long_lived ? AMBER_ALLOC_LONG_LIVED : 0;
  void* p = nbytes == 0 ? nullptr : b.allocate(device.index, nbytes, flags);
  AMBER_CHECK(p || nbytes == 0, "out of memory: failed to allocate ", nbytes, " bytes on ", device, ": ",
              b.last_error());
  s.impl_ = Ref<StorageImpl>::make(p, nbytes, device, StorageImpl::Owner::backend, false, flags);
  return s;
}

Storage Storage::as_read_only() const {
  auto keep = std::make_shared<Storage>(*this);
  return wrap(data(), nbytes(), device(), std::move(keep), /*read_only=*/true);
}

Storage Storage::wrap(void* data, size_t nbytes, Device device, std::shared_ptr<const void> keep_alive,
                      bool read_only) {
  Storage s;
  s.impl_ = Ref<StorageImpl>::make(data, nbytes, device, StorageImpl::Owner::borrowed, read_only);
  s.impl_->keep_alive = std::move(keep_alive);
  return s;
}

Storage Storage::adopt(void* data, size_t nbytes, Device device, StorageImpl::Deleter deleter) {
  Storage s;
  s.impl_ = Ref<StorageImpl>::make(data, nbytes, device, StorageImpl::Owner::deleter, false);
  s.impl_->deleter = std::move(deleter);
  return s;
}

}  // namespace amber
