// PyTorch-compatible sampling (aten/src/ATen/core/DistributionsHelper.h and
// native/cpu/DistributionTemplates.h: uniform_real_distribution, normal_fill).

#include "amber/core/random.h"

#include <cmath>
#include <numbers>

namespace amber {

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  engine_.seed(uint32_t(seed & 0xffffffffu));
  has_cached_normal_ = false;
}

void Generator::fill_uniform(float* out, int64_t n, double from, double to) {
  for (int64_t i = 0; i < n; ++i) out[i] = float(uniform_float() * (to - from) + from);
}

void Generator::fill_uniform(double* out, int64_t n, double from, double to) {
  for (int64_t i = 0; i < n; ++i) out[i] = uniform_double() * (to - from) + from;
}

double Generator::normal_double() {
  if (has_cached_normal_) {
    has_cached_normal_ = false;
    return cached_normal_;
  }
  const double u1 = uniform_double(), u2 = uniform_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * std::numbers::pi * u1;
  cached_normal_ = r * std::sin(theta);
  has_cached_normal_ = true;
  return r * std::cos(theta);
}

namespace {
// torch's normal_fill_16: Box-Muller over 16 uniforms in place.
template <typename T>
void normal_fill_16(T* data, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    const T u1 = 1 - data[j];
    const T u2 = data[j + 8];
    const T radius = std::sqrt(-2 * std::log(u1));
    const T theta = T(2.0 * std::numbers::pi) * u2;
    data[j] = T(radius * std::cos(theta) * std + mean);
    data[j + 8] = T(radius * std::sin(theta) * std + mean);
  }
}
}  // namespace

void Generator::fill_normal(float* out, int64_t n, double mean, double std) {
  if (n < 16) {
    for (int64_t i = 0; i < n; ++i) out[i] = float(normal_double() * std + mean);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = uniform_float();
  for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out + i, mean, std);
  if (n % 16 != 0) {  // recompute the last 16 values, as torch does
    float* tail = out + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform_float();
    normal_fill_16(tail, mean, std);
  }
}

void Generator::fill_normal(double* out, int64_t n, double mean, double std) {
  if (n < 16) {
    for (int64_t i = 0; i < n; ++i) out[i] = normal_double() * std + mean;
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = uniform_double();
  for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out + i, mean, std);
  if (n % 16 != 0) {
    double* tail = out + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform_double();
    normal_fill_16(tail, mean, std);
  }
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) {
  Generator& g = default_generator();
  std::lock_guard lock(g.mutex());
  g.manual_seed(seed);
}

}  // namespace amber
