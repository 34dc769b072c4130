// Math functions for CPU kernels that vectorise: on x86-64 with GCC, libm's exp, log,
// tanh and erf are declared with their SIMD variants from glibc's libmvec
// (_ZGVeN16v_expf for AVX-512, _ZGVdN8v_expf for AVX2, ...), so loops compiled in the
// IsaVariants wrappers call the vector versions (measured here: expf 0.8 ns/element and
// tanhf 0.26 ns/element with AVX-512, 1-2 ulp). Kernel files using this are compiled with
// -fno-math-errno, which GCC needs to vectorise libm calls. Other compilers keep scalar calls
// (same results within the libm's accuracy). The f32 erf is a rational function instead
// (verf below): libmvec's erff took 1.7 ns an element on an AVX-512 Cascade Lake, GELU's
// whole cost in ViT-B/16 and the GPT-2 block.
#pragma once

#include <cmath>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define AMBER_SIMD_DECL __attribute__((simd("notinbranch")))
extern "C" {
AMBER_SIMD_DECL float expf(float) noexcept;
AMBER_SIMD_DECL float logf(float) noexcept;
AMBER_SIMD_DECL float tanhf(float) noexcept;
AMBER_SIMD_DECL float powf(float, float) noexcept;
AMBER_SIMD_DECL double exp(double) noexcept;
AMBER_SIMD_DECL double log(double) noexcept;
AMBER_SIMD_DECL double tanh(double) noexcept;
AMBER_SIMD_DECL double erf(double) noexcept;
AMBER_SIMD_DECL double pow(double, double) noexcept;
}
#undef AMBER_SIMD_DECL
#endif

namespace amber::cpu {

inline float vexp(float x) { return ::expf(x); }
inline double vexp(double x) { return ::exp(x); }
inline float vlog(float x) { return ::logf(x); }
inline double vlog(double x) { return ::log(x); }
inline float vtanh(float x) { return ::tanhf(x); }
inline double vtanh(double x) { return ::tanh(x); }
// erf(x) = x p(x^2) / q(x^2), p of degree 6 and q of degree 4, fitted to erf on [0, 3.84] by
// iterated weighted least squares on the relative error (scripts/fit_erf.py: 4.6e-8 in double;
// 3.5e-7, 5 ulp, evaluated in f32); beyond |x| = 3.8325 erf rounds to +-1 in f32. No branch
// and one division, so loops of it vectorise: 0.44 against libmvec's 1.7 ns an element on
// that Cascade Lake (one thread, in L1). NaN stays NaN, erf(+-inf) = +-1, erf(-0) = -0.
inline float verf(float x) {
  const float x2 = x * x;
  float p = 2.095826258555455e-08f;
  p = p * x2 - 1.9737261038714637e-06f;
  p = p * x2 + 0.00013437246676168178f;
  p = p * x2 + 0.003317346288336634f;
  p = p * x2 + 0.04932305124093257f;
  p = p * x2 + 0.19042947526003323f;
  p = p * x2 + 1.1283791520938573f;
  float q = 0.0008685315963009579f;
  q = q * x2 + 0.013555019640122982f;
  q = q * x2 + 0.11108213543642816f;
  q = q * x2 + 0.5020962183904789f;
  q = q * x2 + 1.0f;
  const float r = x * p / q;
  return std::fabs(x) > 3.8325069f ? std::copysign(1.0f, x) : r;
}
inline double verf(double x) { return ::erf(x); }

}  // namespace amber::cpu
