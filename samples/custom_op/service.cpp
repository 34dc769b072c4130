// The custom-op sample's serving half: links only the runtime, loads the op libraries it is
// given and the archive, runs the saved input and compares with the eager output. Without
// the library the load fails, naming every missing op and its namespace.
// Usage: custom_op_service MODEL.amber EXPECTED.safetensors [LIB.so ...]
#include <amber/runtime.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.amber EXPECTED.safetensors [LIB.so ...]\n", argv[0]);
    return 2;
  }
  try {
    amber::LoadOptions options;
    for (int i = 3; i < argc; ++i) options.op_libraries.push_back(argv[i]);
    const amber::Model model = amber::load(argv[1], options);
    const amber::SafetensorsFile expected = amber::SafetensorsFile::open(argv[2]);
    const amber::Tensor y = model.forward({expected.tensor("x")})[0];
    const float diff = (y - expected.tensor("y")).abs().amax().item<float>();
    std::printf("loaded %s with %d op librar%s; output [%lld, %lld], max |eager - loaded| %g\n", argv[1], argc - 3,
                argc - 3 == 1 ? "y" : "ies", (long long)y.size(0), (long long)y.size(1), diff);
    return diff <= 1e-6f ? 0 : 1;
  } catch (const amber::Error& e) {
    std::fprintf(stderr, "custom_op_service: %s\n", e.what());
    return 1;
  }
}
