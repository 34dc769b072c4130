// staging_copy_kernels.cuh's copy (host inputs recorded into a CUDA graph, up to 16 KiB) on the
// CPU (cuda_emulation.h): every length class (under one 16-byte group, whole groups, a partial
// last group, one thread's several groups, the most the kernel takes) copies every byte and
// writes nothing past the end. test_cuda runs it on a GPU.

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "cuda_emulation.h"
// After the emulation's macros:
#include "amber/kernels/cuda/staging_copy_kernels.cuh"

TEST_CASE("staging copy kernel (emulated): every byte, nothing past the end", "[emulated]") {
  namespace staging = amber::cuda::staging;
  for (size_t n :
       {size_t(1), size_t(15), size_t(16), size_t(17), size_t(148), size_t(4096 + 7),
        size_t(staging::kThreads * 16 + 16), amber::cuda::kKernelCopyMaxBytes - 3, amber::cuda::kKernelCopyMaxBytes}) {
    INFO(n << " bytes");
    std::vector<uint4> src(n / 16 + 2), dst(n / 16 + 2);
    auto* s = reinterpret_cast<unsigned char*>(src.data());
    auto* d = reinterpret_cast<unsigned char*>(dst.data());
    for (size_t i = 0; i < src.size() * 16; ++i) s[i] = static_cast<unsigned char>(i * 131 + 7);
    std::memset(d, 0xA5, dst.size() * 16);
    REQUIRE(amber::cuda::can_copy_by_kernel(d, s, n));
    amber::emulation::launch(staging::staging_copy_kernel, dim3(1), dim3(staging::kThreads), dst.data(),
                             static_cast<const uint4*>(src.data()), n);
    CHECK(std::memcmp(d, s, n) == 0);
    size_t past = 0;
    for (size_t i = n; i < dst.size() * 16; ++i) past += d[i] != 0xA5;
    CHECK(past == 0);
  }
  // What takes the copy engine instead: nothing, too much, or a misaligned end.
  alignas(16) static char buffer[64];
  CHECK(!amber::cuda::can_copy_by_kernel(buffer, buffer + 16, 0));
  CHECK(!amber::cuda::can_copy_by_kernel(buffer, buffer + 16, amber::cuda::kKernelCopyMaxBytes + 1));
  CHECK(!amber::cuda::can_copy_by_kernel(buffer + 4, buffer + 16, 16));
  CHECK(!amber::cuda::can_copy_by_kernel(buffer, buffer + 8, 16));
}
