// The eager C++ API: free functions and operators over amber::Tensor, each a thin call into
// the dispatcher (so the tracer records it). Defaults mirror the op table's signatures;
// the trailing SrcLoc argument captures the caller's line and is never passed by hand.
#pragma once

#include <vector>

#include "amber/core/random.h"
#include "amber/core/tensor.h"

namespace amber {

// ---- Arithmetic (PyTorch's broadcasting and type promotion). ----
Tensor add(const Tensor& self, const Tensor& other, Scalar alpha = 1, SrcLoc loc = {});
Tensor add(const Tensor& self, Scalar other, Scalar alpha = 1, SrcLoc loc = {});
Tensor sub(const Tensor& self, const Tensor& other, Scalar alpha = 1, SrcLoc loc = {});
Tensor sub(const Tensor& self, Scalar other, Scalar alpha = 1, SrcLoc loc = {});
Tensor rsub(const Tensor& self, Scalar other, Scalar alpha = 1, SrcLoc loc = {});  // other - alpha * self
Tensor mul(const Tensor& self, const Tensor& other, SrcLoc loc = {});
Tensor mul(const Tensor& self, Scalar other, SrcLoc loc = {});
// rounding_mode: "" (true division), "trunc" or "floor".
Tensor div(const Tensor& self, const Tensor& other, const std::string& rounding_mode = "", SrcLoc loc = {});
Tensor div(const Tensor& self, Scalar other, const std::string& rounding_mode = "", SrcLoc loc = {});
Tensor neg(const Tensor& self, SrcLoc loc = {});
Tensor exp(const Tensor& self, SrcLoc loc = {});
Tensor tanh(const Tensor& self, SrcLoc loc = {});
Tensor relu(const Tensor& self, SrcLoc loc = {});
Tensor reciprocal(const Tensor& self, SrcLoc loc = {});

// ---- Reductions and products. ----
Tensor sum(const Tensor& self, SrcLoc loc = {});
Tensor sum(const Tensor& self, const DimVec& dims, bool keepdim = false, SrcLoc loc = {});
Tensor mm(const Tensor& self, const Tensor& mat2, SrcLoc loc = {});

// ---- Factories. ----
Tensor full(const DimVec& size, Scalar fill_value, TensorOptions options = {}, SrcLoc loc = {});
Tensor zeros(const DimVec& size, TensorOptions options = {}, SrcLoc loc = {});
Tensor ones(const DimVec& size, TensorOptions options = {}, SrcLoc loc = {});
Tensor zeros_like(const Tensor& t, SrcLoc loc = {});
Tensor ones_like(const Tensor& t, SrcLoc loc = {});
// start, start+step, ... before end. dtype: f32 if any bound is floating, else i64, unless
// options.dtype is given explicitly through the overload with options.
Tensor arange(Scalar end, SrcLoc loc = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, SrcLoc loc = {});
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options, SrcLoc loc = {});
// Uniform [0, 1) and standard normal samples from gen (the default generator when null);
// equal to torch.rand / torch.randn after the same manual_seed. Recorded by the tracer as
// frozen constants, with a warning.
Tensor rand(const DimVec& size, TensorOptions options = {}, Generator* gen = nullptr, SrcLoc loc = {});
Tensor randn(const DimVec& size, TensorOptions options = {}, Generator* gen = nullptr, SrcLoc loc = {});

// ---- Operators. A C++ operator carries no source line of its own; the tracer records the
// nearest user line available. ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);

}  // namespace amber
