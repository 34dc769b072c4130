// The seed programs of DESIGN.md section 9 and the transformer configuration (programs.h).
#include "models/programs.h"

#include <ostream>

namespace amber::models {

Tensor two_x_plus_y(const Tensor& x, const Tensor& y) { return 2 * x + y; }

Tensor mm_add(const Tensor& x, const Tensor& t, std::ostream* print) {
  Tensor y = x.mm(x);
  if (print) *print << "inside forward: y = " << y << "\n";  // printing is not a host read
  return y + t;
}

Tensor loop_rows(const Tensor& x, const Tensor& t) {
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < x.size(0); ++i) {
    Tensor r = x.select(0, i).reshape({1, -1});  // [1, n]
    rows.push_back(r.mm(r.t()) + t);             // [1, 1]
  }
  return cat(rows, 0);
}

Tensor ten_mul(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = y * y;
  return y;
}

Tensor pairwise_sq_dist(const Tensor& a, const Tensor& b) {
  Tensor d = a.unsqueeze(1) - b.unsqueeze(0);  // [M, K, 2] by broadcasting
  return (d * d).sum({-1});
}

nn::TransformerEncoderLayerOptions transformer_options() {
  nn::TransformerEncoderLayerOptions o;
  o.d_model = 256;
  o.nhead = 4;
  o.dim_feedforward = 1024;
  o.dropout = 0.0;
  o.batch_first = true;
  return o;
}

}  // namespace amber::models
