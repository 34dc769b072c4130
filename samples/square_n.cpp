// The seeds' `for i in range(10): x = x * x`, with the count an input: amber::loop traces the
// body once into one `loop` node, and the loaded archive runs any count (sample 4 unrolls ten
// muls instead).
#include "models/control.h"
#include "models/programs.h"

int main() {
  using namespace amber;
  const Tensor x = tensor({1.001f, 0.999f, 1.0f, 0.5f, 1.0005f});
  auto count = [](int64_t n) { return full({}, n, {DType::i64}); };
  TracedModule traced = trace(models::square_n, {x, count(10)});
  std::cout << traced.graph();
  const Model loaded = load(traced.save_to_bytes());
  int bad = 0;
  for (int64_t n : {0, 3, 10}) {
    const Tensor eager = models::square_n(x, count(n)), got = loaded.forward({x, count(n)})[0];
    const float diff = (eager - got).abs().amax().item<float>();
    std::cout << "n=" << n << ": " << got << "  max |eager - loaded| " << diff << " \n";
    bad += !(diff <= 1e-6f);
  }
  const float vs_unrolled = (loaded.forward({x, count(10)})[0] - models::ten_mul(x)).abs().amax().item<float>();
  std::cout << "n=10 against the unrolled ten_mul: max |diff| " << vs_unrolled << " \n";
  return bad || !(vs_unrolled <= 1e-6f);
}
