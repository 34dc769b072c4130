// Read-only file mappings whose pages a process may give back once it has copied what it
// needs out of them (weights packed into another layout at load): the mapping stays valid,
// and a later read faults the pages back in from the file. Mappings register here while
// they live (serialize/file_io.cpp); kernels ask to drop a range after packing it.
#pragma once

#include <cstddef>

namespace amber {

void register_file_mapping(const void* begin, size_t bytes);
void unregister_file_mapping(const void* begin);
// Drops the whole pages inside [p, p + bytes) when that range lies in a registered read-only
// file mapping (MADV_DONTNEED: the resident set shrinks, the contents stay readable); does
// nothing otherwise. Returns whether pages were dropped.
bool drop_file_pages(const void* p, size_t bytes);

}  // namespace amber
