// The custom-op sample's authoring half: loads the op library libmyops.so, runs a small
// model using its two ops eagerly, traces it (with a dynamic batch) and saves the archive,
// and writes the eager input and output beside it for the service to match.
// Usage: custom_op_model LIBMYOPS.so MODEL.amber EXPECTED.safetensors
#include "myops.h"

class GatedMlp : public amber::nn::ModuleImpl<GatedMlp> {
 public:
  GatedMlp() { register_modules({{"value", value}, {"gate", gate}, {"out", out}}); }
  amber::Tensor forward(const amber::Tensor& x) {
    const amber::Tensor h = myops::swish_gate(value(x), gate(x), /*beta=*/1.5);
    return myops::soft_clip(out(h), /*scale=*/2.0);
  }
  amber::nn::Linear value{8, 16}, gate{8, 16}, out{16, 4};
};

int main(int argc, char** argv) {
  using namespace amber;
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " LIBMYOPS.so MODEL.amber EXPECTED.safetensors\n";
    return 2;
  }
  try {
    load_op_library(argv[1]);  // before any myops:: op runs
    manual_seed(7);
    GatedMlp net;
    net.eval();
    TraceOptions opts;
    opts.dynamic_batch = true;
    opts.input_names = {"x"};
    TracedModule traced = trace(net, {randn({2, 8})}, opts);
    std::cout << traced.graph();
    traced.save(argv[2]);
    const Tensor x = randn({5, 8});
    const Tensor eager = net(x);
    save_safetensors(argv[3], {{"x", x}, {"y", eager}});
    std::cout << "saved " << argv[2] << "; eager output " << eager.sizes() << ", first row " << eager[0] << "\n";
  } catch (const Error& e) {
    std::cerr << "custom_op_model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
