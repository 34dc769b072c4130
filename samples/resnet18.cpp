// Sample 8 of DESIGN.md section 9, authoring half: ResNet-18 (torchvision's architecture,
// seeded weights or a state_dict converted with tools/torch2safetensors.py) traced at
// 1x3x224x224 with a dynamic batch and saved. samples/resnet18_service loads the archive in
// a separate program linked only against the runtime and prints the same logits.
// Usage: resnet18 [OUT.amber] [WEIGHTS.safetensors]   (default resnet18.amber, seeded weights)
#include <chrono>
#include <map>

#include "models/resnet.h"

int main(int argc, char** argv) {
  using namespace amber;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  const std::string path = argc > 1 ? argv[1] : "resnet18.amber";
  manual_seed(0);
  models::ResNet18 net;
  if (argc > 2) net.load_state(argv[2]);
  net.eval();
  manual_seed(1);  // the service sample builds the same input
  const Tensor x = randn({1, 3, 224, 224});
  auto t = Clock::now();
  const Tensor eager = net(x);
  const double eager_ms = ms(t);
  TraceOptions opts;
  opts.dynamic_batch = true;
  opts.input_names = {"image"};
  opts.output_names = {"logits"};
  t = Clock::now();
  TracedModule traced = trace(net, {x}, opts);
  const double trace_ms = ms(t);
  t = Clock::now();
  traced.save(path);
  const double save_ms = ms(t);
  std::map<std::string, int> ops;
  for (const graph::Node* n : traced.graph().nodes()) ++ops[n->op->name];
  std::printf("ResNet-18 (%s weights): %zu ops recorded, %zu after the passes:", argc > 2 ? argv[2] : "seeded",
              traced.recorded_graph().num_nodes(), traced.graph().num_nodes());
  for (const auto& [op, n] : ops) std::printf(" %s x%d", op.c_str(), n);
  std::printf("\neager forward %.1f ms, trace %.1f ms, save %.1f ms -> %s\n", eager_ms, trace_ms, save_ms,
              path.c_str());
  std::printf("eager first five logits:");
  for (float v : eager.flatten().slice(0, 0, 5).to_vector<float>()) std::printf(" %.6f", v);
  std::printf("\n");
}
