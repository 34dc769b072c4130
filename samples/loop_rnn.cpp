// An Elman RNN and a GRU over a variable number of steps of a padded sequence [T, N, in]:
// amber::loop keeps the time loop, so one archive serves every length and its size does not
// depend on the length it was traced at (sample 7 unrolls its loop instead).
#include "models/control.h"

int main() {
  using namespace amber;
  const models::LoopElman elman = models::random_loop_elman();
  const models::LoopGRU gru = models::random_loop_gru();
  manual_seed(5);
  const Tensor x = randn({16, 2, 4});
  auto count = [](int64_t n) { return full({}, n, {DType::i64}); };
  auto elman_fn = [&](const Tensor& xs, const Tensor& n) { return elman.forward(xs, n); };
  auto gru_fn = [&](const Tensor& xs, const Tensor& n) { return gru.forward(xs, n); };
  int bad = 0;
  for (const auto& [name, fn] :
       {std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&)>>{"elman", elman_fn},
        {"gru", gru_fn}}) {
    const std::vector<uint8_t> at2 = trace(fn, {x, count(2)}).save_to_bytes();
    const std::vector<uint8_t> at16 = trace(fn, {x, count(16)}).save_to_bytes();
    std::cout << name << ": archive traced at 2 steps " << at2.size() << " bytes, at 16 steps " << at16.size()
              << " bytes\n";
    bad += at2.size() != at16.size();
    const Model loaded = load(at2);
    for (int64_t n : {1, 7, 16}) {
      const float diff = (fn(x, count(n)) - loaded.forward({x, count(n)})[0]).abs().amax().item<float>();
      std::cout << name << " " << n << " steps: max |eager - loaded| " << diff << " \n";
      bad += !(diff <= 1e-5f);
    }
  }
  return bad;
}
