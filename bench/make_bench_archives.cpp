// The Amber side of the Amber-vs-libtorch benchmark's models: for every case listed in
// DIR/cases.json (bench/gen_bench_models.py), builds the same model with Amber's API, loads
// PyTorch's weights (DIR/MODEL.safetensors), traces it on the case's inputs and saves
// DIR/CASE.amber; cases naming an "archive" share DIR/ARCHIVE.amber, traced once with dynamic
// sizes. Usage: make_bench_archives DIR

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "models/programs.h"
#include "models/resnet.h"
#include "models/small.h"

using namespace amber;

namespace {

template <typename M>
TracedModule trace_module(M& m, const std::string& weights, const std::vector<Tensor>& inputs) {
  m.load_state(weights);
  m.eval();
  TraceOptions o;
  o.print_warnings = false;
  o.strict = true;
  return trace(m, inputs, o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_bench_archives DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    nlohmann::json cases;
    std::ifstream(dir + "/cases.json") >> cases;
    std::map<std::string, std::optional<TracedModule>> shared_archives;
    for (const auto& c : cases) {
      const std::string name = c["case"], model = c["model"];
      SafetensorsFile io = SafetensorsFile::open(dir + "/" + name + ".io.safetensors");
      std::vector<Tensor> inputs;
      for (size_t i = 0; io.contains(str("input", i)); ++i) inputs.push_back(io.tensor(str("input", i)));
      const std::string weights = dir + "/" + model + ".safetensors";
      if (c.contains("archive")) {
        // One archive for every case naming it: the transformer traced once at [1, 128, 256]
        // with the batch N and the length T dynamic, checked here on this case's length.
        const std::string archive = c["archive"];
        auto& shared = shared_archives[archive];
        if (!shared) {
          nn::TransformerEncoder m(models::transformer_options(), models::kTransformerLayers);
          m.load_state(weights);
          m.eval();
          TraceOptions dyn;
          dyn.print_warnings = false;
          dyn.strict = true;
          dyn.dynamic_batch = true;
          dyn.dynamic_dims = {{0, 1, 'T'}};
          shared = trace(m, {randn({1, 128, 256})}, dyn);
          shared->save(dir + "/" + archive + ".amber");
        }
        const Tensor got = load(dir + "/" + archive + ".amber").forward(inputs)[0], want = io.tensor("expected0");
        std::printf("%-16s %3zu nodes, max |amber - torch| %.3g from %s.amber\n", name.c_str(),
                    shared->graph().num_nodes(), (got - want).abs().amax().item<float>(), archive.c_str());
        continue;
      }
      TraceOptions o;
      o.print_warnings = false;
      o.strict = true;
      std::optional<TracedModule> t;
      if (model == "ten_mul") {
        t = trace(models::ten_mul, inputs, o);
      } else if (model == "pairwise") {
        t = trace(models::pairwise_sq_dist, inputs, o);
      } else if (model == "topk_sort") {  // a sampler's sort of its logits
        t = trace([](const Tensor& x) { return topk(x, x.size(-1)).first; }, inputs, o);
      } else if (model == "topk_vocab") {  // a sampler's top 50 over a large vocabulary
        t = trace([](const Tensor& x) { return topk(x, 50).first; }, inputs, o);
      } else if (model == "resize_aa") {  // an image pipeline's downscale
        t = trace(
            [](const Tensor& x) {
              return upsample_bicubic2d_aa(x, {224, 224}, false, std::nullopt, std::nullopt);
            },
            inputs, o);
      } else if (model == "lenet") {
        models::LeNet m;
        t = trace_module(m, weights, inputs);
      } else if (model == "resnet18") {
        models::ResNet18 m;
        t = trace_module(m, weights, inputs);
      } else if (model == "transformer") {
        nn::TransformerEncoder m(models::transformer_options(), models::kTransformerLayers);
        t = trace_module(m, weights, inputs);
      } else if (model == "elman_rnn") {
        models::ElmanRNN m(10, 20, 5);
        t = trace_module(m, weights, inputs);
      } else {
        throw Error(str("make_bench_archives: unknown model '", model, "' in cases.json"));
      }
      const Tensor got = t->forward(inputs)[0], want = io.tensor("expected0");
      const float diff = (got - want).abs().amax().item<float>();
      t->save(dir + "/" + name + ".amber");
      std::printf("%-16s %3zu nodes, max |amber - torch| %.3g -> %s.amber\n", name.c_str(), t->graph().num_nodes(),
                  diff, name.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_bench_archives: %s\n", e.what());
    return 1;
  }
  return 0;
}
