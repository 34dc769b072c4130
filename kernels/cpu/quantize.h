// The CPU's dynamic int8 path (AMBER_PRECISION_DYNAMIC_INT8): weights symmetric int8 per output
// channel, quantized once at setup; a linear layer's rows (a scale and zero point each) and a
// convolution's images (each) uint8 as they enter, all 256 levels spanning the range, zero exact;
// and a product's int32 accumulators back to f32 with both scales, the zero points and the bias,
// or (quantized_linear.u8) to uint8 after an activation.
#pragma once

#include <cstdint>
#include <vector>

#include "amber/core/backend.h"
#include "amber/kernels/quant_math.h"

namespace amber::cpu {

// w[out, in] (element strides s0, s1) into q[out, in] dense, rounded to nearest (ties to
// even) in [-127, 127]; scales[o] = max |w[o, :]| / 127 (0 for a row of zeros, whose q is 0);
// sums[o] the sum of q[o, :] (what a zero point of the rows multiplies). Calling thread only.
void quantize_channels(const float* w, int64_t out, int64_t in, int64_t s0, int64_t s1, int8_t* q, float* scales,
                       int32_t* sums);

// x[rows, cols] dense into q[rows, cols]: q = round(x / scales[r]) + zero_points[r] in
// [0, 255], the scale (max(x, 0) - min(x, 0)) / 255 over the row. A row of zeros gets scale
// 0; a row holding an infinity or NaN gets scale NaN (and q 0), so every output of that row
// is NaN. On the calling kernel's threads.
void quantize_rows(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scales, int32_t* zero_points);

// In place over io[rows, cols] dense: the int32 accumulator acc of row r and column c
// (sum over k of q_x[r, k] q_w[c, k]) becomes the float
// (acc - zero_points[r] * sums[c]) * row_scales[r] * col_scales[c] (+ bias[c] when bias is
// not null). On the calling kernel's threads.
void dequantize_products(void* io, int64_t rows, int64_t cols, const float* row_scales, const int32_t* zero_points,
                         const float* col_scales, const int32_t* sums, const float* bias);

// What turns a quantized linear layer's int32 accumulators into uint8 outputs
// (quantized_linear.u8): the input's scale and zero point, each output column's scale, weight
// sum and bias (null: none), the activation and the output's quantization.
struct Requantization {
  float input_scale = 1;
  int32_t input_zero_point = 0;
  const float* col_scales = nullptr;
  const int32_t* sums = nullptr;
  const float* bias = nullptr;
  Act act = Act::none;
  float lo = 0, hi = 0;  // clamp's bounds
  float output_scale = 1;
  int32_t output_zero_point = 0;
};
// acc[rows, cols] dense int32 into y[rows, cols] dense uint8 (quant_math.h: dequantized,
// activate, to_u8). On the calling kernel's threads.
void requantize_products(const int32_t* acc, int64_t rows, int64_t cols, const Requantization& r, uint8_t* y);

// A whole tensor's range: lo = min(x, 0), hi = max(x, 0) over x[0, n); returns false (and
// leaves lo and hi unspecified) when one element is an infinity or NaN. On the calling
// kernel's threads.
bool tensor_range(const float* x, int64_t n, float& lo, float& hi);

// The uint8 quantization of a whole tensor whose range is [lo, hi] (tensor_range): its scale
// and zero point (0 when lo == 0, so a non-negative tensor uses all 256 levels above it).
struct TensorQuant {
  float scale = 0;  // 0 for a tensor of zeros
  int32_t zero_point = 0;
};
TensorQuant tensor_quant(float lo, float hi);
// q[i] = round(x[i] / t.scale) + t.zero_point in [0, 255] over x[0, n) (infinities saturate, a
// NaN gives 0); returns whether x held a NaN, seen in the same pass. On the calling kernel's
// threads.
bool quantize_tensor(const float* x, int64_t n, TensorQuant t, uint8_t* q);

// quantized_conv2d's and quantized_linear's weight scales (f32 [n], any stride) as a dense
// vector, each checked finite and non-negative, and their bias (f32 [n], absent when
// ndim < 0) checked finite: a std::runtime_error naming `op`, the element and its value
// otherwise (a kernel error at setup: the archive is refused at load).
std::vector<float> given_scales(const amber_tensor_view& scales, const amber_tensor_view& bias, int64_t n,
                                const char* op);
// Whether x[0, n) holds a NaN (one row of a linear layer's source, after quantize_tensor saw one).
bool has_nan(const float* x, int64_t n);

// The largest reduction length (in_f) whose int32 accumulators, and their zero point
// corrections, cannot overflow (backend.h). Longer ones stay f32.
constexpr int64_t kMaxInt8Reduction = AMBER_MAX_INT8_REDUCTION;

// quantized_conv2d (U8Out: .u8) and quantized_linear (.u8) without oneDNN, for processors whose
// int8 products could saturate (!int8_supported(): no VNNI): exact int32 sums, the same numbers
// as the CUDA kernels' (quant_direct.cpp). On the calling kernel's threads. `weights`: the weight
// input widened by the functions below, made at setup when the weights are immutable (null:
// widened in the call). Their scratch lies in the call's workspace when it holds the bytes the
// *_workspace functions give for these arguments (setup asks for them), else in the call's own.
template <bool U8Out>
int quantized_conv_direct(const amber_kernel_args* a, const int16_t* weights);
template <bool U8Out>
int quantized_linear_direct(const amber_kernel_args* a, const int16_t* weights);
size_t quantized_conv_direct_workspace(const amber_kernel_args* a);
size_t quantized_linear_direct_workspace(const amber_kernel_args* a);
// A quantized_conv2d's int8 weights [OC, C/groups, KH, KW] (any strides) as the direct loops read
// them: int16, [OC][KH][KW][C/groups] dense; a quantized_linear's [out, in] as int16 [out][in].
std::vector<int16_t> quantized_conv_direct_weights(const amber_tensor_view& w);
std::vector<int16_t> quantized_linear_direct_weights(const amber_tensor_view& w);

}  // namespace amber::cpu
