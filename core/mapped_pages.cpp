// The registry of read-only file mappings and dropping their pages (mapped_pages.h).
#include "amber/core/mapped_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace amber {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<uintptr_t, size_t>& registry() {  // begin -> bytes
  static std::map<uintptr_t, size_t> r;
  return r;
}

}  // namespace

void register_file_mapping(const void* begin, size_t bytes) {
  std::lock_guard lock(registry_mutex());
  registry()[reinterpret_cast<uintptr_t>(begin)] = bytes;
}

void unregister_file_mapping(const void* begin) {
  std::lock_guard lock(registry_mutex());
  registry().erase(reinterpret_cast<uintptr_t>(begin));
}

bool drop_file_pages(const void* p, size_t bytes) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  if (bytes == 0 || b + bytes < b) return false;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (b + page - 1) & ~(page - 1), last = (b + bytes) & ~(page - 1);
  if (first >= last) return false;
  // Under the lock, so the mapping cannot be unmapped (and its range reused) meanwhile.
  std::lock_guard lock(registry_mutex());
  auto it = registry().upper_bound(b);
  if (it == registry().begin()) return false;
  --it;
  if (b + bytes > it->first + it->second) return false;  // not wholly inside one mapping
  return ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0;
}

}  // namespace amber
