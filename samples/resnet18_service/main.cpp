// Sample 8 of DESIGN.md section 9, serving half: a small C++ service program, built in its
// own CMake project against the installed Amber package (find_package(Amber) ->
// Amber::runtime), that loads a ResNet-18 archive saved by samples/resnet18 and prints the
// first five logits for the same seeded input, with the time of each step.
// Usage: resnet18_service MODEL.amber
#include <amber/runtime.h>

#include <chrono>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.amber\n", argv[0]);
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  try {
    auto t = Clock::now();
    amber::Model model = amber::load(argv[1]);
    const double load_ms = ms(t);
    const amber::IOInfo& in = model.inputs()[0];
    std::printf("loaded %s in %.1f ms: %s : %s%s -> %s : %s%s\n", argv[1], load_ms, in.name.c_str(),
                std::string(amber::dtype_name(in.dtype)).c_str(), in.shape.c_str(), model.outputs()[0].name.c_str(),
                std::string(amber::dtype_name(model.outputs()[0].dtype)).c_str(), model.outputs()[0].shape.c_str());
    amber::manual_seed(1);  // the input samples/resnet18 traced with
    const amber::Tensor x = amber::randn({1, 3, 224, 224});
    t = Clock::now();
    std::vector<amber::Tensor> out = model.forward({x});
    const double first_ms = ms(t);
    t = Clock::now();
    for (int i = 0; i < 10; ++i) out = model.forward({x});
    const double steady_ms = ms(t) / 10;
    std::printf("first call %.2f ms, then %.2f ms per call\n", first_ms, steady_ms);
    std::printf("loaded first five logits:");
    for (float v : out[0].flatten().slice(0, 0, 5).to_vector<float>()) std::printf(" %.6f", v);
    std::printf("\n");
  } catch (const amber::Error& e) {
    std::fprintf(stderr, "resnet18_service: %s\n", e.what());
    return 1;
  }
  return 0;
}
