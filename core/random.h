// Seedable random numbers for rand()/randn(). The generator is PyTorch's CPU generator
// (mt19937, 24-bit floats, 53-bit doubles), so amber::manual_seed(s) followed by rand()
// gives exactly torch.manual_seed(s); torch.rand(...). randn() follows torch's scalar
// Box-Muller paths (equal to torch within float rounding).
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

namespace amber {

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's default seed
  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  uint64_t seed() const { return seed_; }

  // Fill n floats/doubles; hold the lock (mutex()) around a whole fill.
  void fill_uniform(float* out, int64_t n, double from, double to);
  void fill_uniform(double* out, int64_t n, double from, double to);
  void fill_normal(float* out, int64_t n, double mean, double std);
  void fill_normal(double* out, int64_t n, double mean, double std);
  std::mutex& mutex() { return mutex_; }

 private:
  uint32_t random32() { return uint32_t(engine_()); }
  uint64_t random64() {
    uint64_t hi = random32(), lo = random32();
    return (hi << 32) | lo;
  }
  float uniform_float() { return float((random32() & ((1u << 24) - 1)) * 0x1p-24); }
  double uniform_double() { return double(random64() & ((1ull << 53) - 1)) * 0x1p-53; }
  double normal_double();  // Box-Muller with one cached sample, as torch's normal_distribution

  std::mt19937 engine_;
  uint64_t seed_ = kDefaultSeed;
  bool has_cached_normal_ = false;
  double cached_normal_ = 0;
  std::mutex mutex_;
};

Generator& default_generator();
// Reseeds the default generator.
void manual_seed(uint64_t seed);

}  // namespace amber
