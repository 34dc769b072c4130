// The seed programs of shared/DESIGN.md section 9 (samples 1-5) and the transformer
// configuration of sample 9, shared by the samples, the end-to-end conformance test and the
// benchmarks. Their PyTorch twins live in tests/gen_reference.py (seed_reference).
#pragma once

#include <amber/amber.h>

#include <iosfwd>

namespace amber::models {

// Sample 1: 2*x + y.
Tensor two_x_plus_y(const Tensor& x, const Tensor& y);

// Sample 2: y = x.mm(x); prints y to `print` when given; returns y + t.
Tensor mm_add(const Tensor& x, const Tensor& t, std::ostream* print = nullptr);

// Sample 3: for each row r of x ([R, n]): r.mm(r.t()) + t with r as [1, n] and t [1, 1];
// the rows concatenated ([R, 1]). The loop runs R times, so a trace unrolls it.
Tensor loop_rows(const Tensor& x, const Tensor& t);

// Sample 4: x = x * x ten times.
Tensor ten_mul(const Tensor& x);

// Sample 5: squared distances between every point of a [M, 2] and b [K, 2] ([M, K]).
Tensor pairwise_sq_dist(const Tensor& a, const Tensor& b);

// Sample 9: TransformerEncoderLayer(d_model 256, 4 heads, dim_feedforward 1024, dropout 0,
// batch_first), stacked kTransformerLayers times (distinct weights per layer).
nn::TransformerEncoderLayerOptions transformer_options();
constexpr int kTransformerLayers = 4;

}  // namespace amber::models
