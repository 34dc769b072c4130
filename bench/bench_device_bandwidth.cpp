// Fused elementwise bandwidth against the device's own copy bandwidth ([cuda]'s target: a
// fused pointwise node at >= 80% of a device-to-device copy). Both move the same bytes: read
// N floats, write N floats. The copy is the backend's (cudaMemcpyAsync on CUDA); the fused
// node is relu(x * 2 + 1) traced into one `fused` program (and, as a second line, relu(x * y + 1)
// of two inputs: 2N read, N written, its GB/s against the copy's), loaded on the device and called on
// a device input with device outputs, graphs off (a graphed call with device outputs copies
// them out of the recording's buffers, which would count as traffic here). Every call ends
// synchronised; each number is the median over rounds. Also a host input's way up: ResNet-18
// b64's 38.5 MB input copied from pageable memory (the driver's staging) against a call of
// relu(x) on it from the host (the loader's chunked copy through page-locked memory, graphs on).
// Prints one JSON line.
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
    // A host input's way up: 64 x 3 x 224 x 224 floats.
    const Tensor image = randn({64, 3, 224, 224});
    const Tensor image_dst = empty({64, 3, 224, 224}, {DType::f32, dev});
    const double pageable_s = amber::bench::median_seconds(
        [&] {
          copy_between_devices(image_dst.mutable_data(), dev, image.data(), Device::cpu(), image.nbytes(),
                               "bench_device_bandwidth");
        },
        reps);
    LoadOptions graphed;
    graphed.device = dev;
    const Model up = load(trace([](const Tensor& t) { return relu(t); }, {image}, quiet).save_to_bytes(), graphed);
    Tensor y3;
    const double upload_s = amber::bench::median_seconds([&] { y3 = up.forward({image})[0]; }, reps);
    AMBER_CHECK((y3.to(Device::cpu()) - relu(image)).abs().amax().item<float>() == 0, "the uploaded relu differs");
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
                     {"upload_mb", double(image.nbytes()) / 1e6},
                     {"pageable_upload_gbps", double(image.nbytes()) / pageable_s / 1e9},
                     {"call_upload_gbps", double(image.nbytes()) / upload_s / 1e9}});
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_device_bandwidth: %s\n", e.what());
    return 1;
  }
  return 0;
}
