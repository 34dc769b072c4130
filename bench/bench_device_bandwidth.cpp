// Fused elementwise bandwidth against the device's own copy bandwidth ([cuda]'s target: a
// fused pointwise node at >= 80% of a device-to-device copy). Both move the same bytes: read
// N floats, write N floats. The copy is the backend's (cudaMemcpyAsync on CUDA); the fused
// node is relu(x * 2 + 1) traced into one `fused` program (and, as a second line, relu(x * y + 1)
// of two inputs: 2N read, N written, its GB/s against the copy's), loaded on the device and called on
// a device input with device outputs, graphs off (a graphed call with device outputs copies
// them out of the recording's buffers, which would count as traffic here). Every call ends
// synchronised; each number is the median over rounds. Also a host input's way up, ResNet-18's
// b64 (38.5 MB) and b1 (588 KiB): a copy from pageable memory (the driver's staging), one through
// page-locked memory, and a call of relu(x) from the host (graphs on). Prints one JSON line.
// Usage: bench_device_bandwidth [--device cuda:0] [--mib 256] [--reps 20]
//   (--device sim:0 --mib 4 checks the harness without a GPU, not a GPU's speed)

#include <amber/amber.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "amber/core/backend_registry.h"
#include "bench_case.h"
#include "bench_util.h"

using namespace amber;

int main(int argc, char** argv) {
  std::string device = "cuda:0";
  double mib = 256;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && a == "--device") {
      device = argv[++i];
    } else if (i + 1 < argc && a == "--mib") {
      mib = std::atof(argv[++i]);
    } else if (i + 1 < argc && a == "--reps") {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_device_bandwidth [--device cuda:0] [--mib 256] [--reps 20]\n");
      return 2;
    }
  }
  try {
    const Device dev = Device::parse(device);
    const int64_t n = int64_t(mib * 1024 * 1024 / 4);
    AMBER_CHECK(n > 0 && reps > 0, "--mib and --reps must be positive");
    manual_seed(0);
    const Tensor host = randn({n});
    const Tensor x = host.to(dev);
    const Tensor copy_dst = empty({n}, {DType::f32, dev});
    const size_t bytes = x.nbytes();

    TraceOptions quiet;
    quiet.print_warnings = false;
    auto fn = [](const Tensor& t) { return relu(t * 2 + 1); };
    const TracedModule traced = trace(fn, {host}, quiet);
    AMBER_CHECK(traced.graph().num_nodes() == 1, "expected one fused node, got ", traced.graph().num_nodes(),
                " nodes:\n", graph::to_text(traced.graph()));
    LoadOptions lo;
    lo.device = dev;
    lo.device_graphs = false;
    const Model model = load(traced.save_to_bytes(), lo);
    // Two inputs: relu(x * y + 1), 2N floats read and N written.
    auto fn2 = [](const Tensor& a, const Tensor& b) { return relu(a * b + 1); };
    const Tensor host2 = randn({n});
    const Tensor x2 = host2.to(dev);
    const TracedModule traced2 = trace(fn2, {host, host2}, quiet);
    AMBER_CHECK(traced2.graph().num_nodes() == 1, "expected one fused node, got ", traced2.graph().num_nodes(),
                " nodes:\n", graph::to_text(traced2.graph()));
    const Model model2 = load(traced2.save_to_bytes(), lo);

    Tensor y;
    const double copy_s = amber::bench::median_seconds(
        [&] { copy_between_devices(copy_dst.mutable_data(), dev, x.data(), dev, bytes, "bench_device_bandwidth"); },
        reps);
    const double fused_s = amber::bench::median_seconds([&] { y = model.forward({x})[0]; }, reps);
    Tensor y2;
    const double fused2_s = amber::bench::median_seconds([&] { y2 = model2.forward({x, x2})[0]; }, reps);
    // The answers, checked on the host: the copy is exact, the programs relu(2x + 1) and
    // relu(x * y + 1).
    const float copy_diff = (copy_dst.to(Device::cpu()) - host).abs().amax().item<float>();
    const float fused_diff = (y.to(Device::cpu()) - fn(host)).abs().amax().item<float>();
    const float fused2_diff = (y2.to(Device::cpu()) - fn2(host, host2)).abs().amax().item<float>();
    AMBER_CHECK(copy_diff == 0 && fused_diff <= 1e-6f && fused2_diff <= 1e-5f, "wrong results: copy off by ", copy_diff,
                ", fused by ", fused_diff, ", two-input fused by ", fused2_diff);
    // A host input's way up, ResNet-18's at batch 64 (38.5 MB) and at batch 1 (588 KiB, under the
    // loader's 1 MiB bound for chunked uploads): a copy from pageable memory, the same copied into
    // page-locked memory first and sent from there (what the chunked upload does, in one piece),
    // and a call of relu(x) from the host (graphs on; the relu included).
    struct Upload {
      double pageable_s, staged_s, call_s, bytes;
    };
    const amber_backend& b = amber::backend(dev);
    auto upload = [&](int64_t batch) {
      const Tensor image = randn({batch, 3, 224, 224});
      const Tensor image_dst = empty({batch, 3, 224, 224}, {DType::f32, dev});
      Upload u{};
      u.bytes = double(image.nbytes());
      u.pageable_s = amber::bench::median_seconds(
          [&] {
            copy_between_devices(image_dst.mutable_data(), dev, image.data(), Device::cpu(), image.nbytes(),
                                 "bench_device_bandwidth");
          },
          reps);
      void* locked = b.host_alloc ? b.host_alloc(dev.index, image.nbytes()) : nullptr;
      if (locked) {
        u.staged_s = amber::bench::median_seconds(
            [&] {
              std::memcpy(locked, image.data(), image.nbytes());
              copy_between_devices(image_dst.mutable_data(), dev, locked, Device::cpu(), image.nbytes(),
                                   "bench_device_bandwidth");
            },
            reps);
        b.host_free(dev.index, locked);
        AMBER_CHECK((image_dst.to(Device::cpu()) - image).abs().amax().item<float>() == 0, "the staged copy differs");
      }
      LoadOptions graphed;
      graphed.device = dev;
      const Model up = load(trace([](const Tensor& t) { return relu(t); }, {image}, quiet).save_to_bytes(), graphed);
      Tensor y3;
      u.call_s = amber::bench::median_seconds([&] { y3 = up.forward({image})[0]; }, reps);
      AMBER_CHECK((y3.to(Device::cpu()) - relu(image)).abs().amax().item<float>() == 0, "the uploaded relu differs");
      return u;
    };
    const Upload big = upload(64), small = upload(1);
    auto gbps = [](double moved_bytes, double s) { return s > 0 ? moved_bytes / s / 1e9 : 0.0; };
    const double moved = 2.0 * double(bytes);  // read once, written once
    const double copy_gbps = moved / copy_s / 1e9, fused2_gbps = 3.0 * double(bytes) / fused2_s / 1e9;
    ::bench::report({{"mib", double(bytes) / (1024 * 1024)},
                     {"copy_ms", copy_s * 1e3},
                     {"copy_gbps", copy_gbps},
                     {"fused_ms", fused_s * 1e3},
                     {"fused_gbps", moved / fused_s / 1e9},
                     {"fused_over_copy", copy_s / fused_s},
                     {"fused2_ms", fused2_s * 1e3},
                     {"fused2_gbps", fused2_gbps},
                     {"fused2_over_copy", fused2_gbps / copy_gbps},
                     {"upload_mb", big.bytes / 1e6},
                     {"pageable_upload_gbps", gbps(big.bytes, big.pageable_s)},
                     {"staged_upload_gbps", gbps(big.bytes, big.staged_s)},
                     {"call_upload_gbps", gbps(big.bytes, big.call_s)},
                     {"small_upload_kib", small.bytes / 1024},
                     {"small_pageable_us", small.pageable_s * 1e6},
                     {"small_staged_us", small.staged_s * 1e6},
                     {"small_call_us", small.call_s * 1e6}});
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_device_bandwidth: %s\n", e.what());
    return 1;
  }
  return 0;
}
