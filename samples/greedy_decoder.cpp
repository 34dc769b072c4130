// Greedy decoding with amber::while_loop: from a start token, emit the argmax token until the
// end token or a maximum length, both decided by data at run time. The traced graph keeps
// the loop as one `while_loop` node with a condition and a body.
#include "models/control.h"

int main() {
  using namespace amber;
  const models::GreedyDecoder decoder = models::random_greedy_decoder();
  auto scalar = [](int64_t v) { return full({}, v, {DType::i64}); };
  auto fn = [&](const Tensor& start, const Tensor& max_len) { return decoder.forward(start, max_len); };
  TracedModule traced = trace(fn, {scalar(1), scalar(12)});
  std::cout << traced.graph() << "end token " << decoder.end_token << "\n";
  const Model loaded = load(traced.save_to_bytes());
  int bad = 0;
  for (auto [start, max_len] : {std::pair<int64_t, int64_t>{1, 12}, {5, 12}, {1, 2}}) {
    const Tensor eager = fn(scalar(start), scalar(max_len));
    const Tensor got = loaded.forward({scalar(start), scalar(max_len)})[0];
    const bool same = eager.to_vector<int64_t>() == got.to_vector<int64_t>();
    std::cout << "start " << start << ", at most " << max_len << " tokens: " << got << (same ? "" : "  (differs!)")
              << "\n";
    bad += !same;
  }
  return bad;
}
