// Helpers for Amber's tests: reference-data location, scratch directories removed when done,
// seeded int8 layers, tolerance comparison of tensors (|amber - ref| <= atol + rtol * |ref|;
// exact for integers and bools), and checking that a call throws amber::Error with a given
// message fragment.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "amber/core/random.h"
#include "amber/core/tensor.h"
#include "amber/schema/eager.h"

namespace amber::test {

// Directory the reference-data fixture wrote (AMBER_REFDATA), or "" when unset.
inline std::string refdata_dir() {
  const char* d = std::getenv("AMBER_REFDATA");
  return d ? d : "";
}

// A fresh directory <temp>/<name>_<pid> (emptied if a dead process left one), removed with all
// it holds when this goes out of scope: when its test ends, passed or failed, or, for a static
// one, when the test program exits.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Seeded int8 layers for the quantized ops' tests: a quantized_conv2d's weight [4, 2, 3, 3]
// (levels in [-127, 127]), its scales and bias, and a quantized_linear's weight [3, 16] and scales.
struct Int8Layers {
  Tensor w, ws, b, lw, ls;
  explicit Int8Layers(uint64_t seed) {
    manual_seed(seed);
    w = clamp(randn({4, 2, 3, 3}) * 40.0, -127.0, 127.0).to(DType::i8);
    ws = rand({4}) * 0.01 + 0.001;
    b = randn({4});
    lw = clamp(randn({3, 16}) * 40.0, -127.0, 127.0).to(DType::i8);
    ls = rand({3}) * 0.01 + 0.001;
  }
};

struct Diff {
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  std::string message;
};

// Compares dtype, shape and values.
inline Diff compare(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  Diff d;
  if (actual.dtype() != expected.dtype()) {
    d.ok = false;
    d.message = str("dtype ", actual.dtype(), " != expected ", expected.dtype());
    return d;
  }
  if (!(actual.sizes() == expected.sizes())) {
    d.ok = false;
    d.message = str("shape ", actual.sizes(), " != expected ", expected.sizes());
    return d;
  }
  const bool exact = !is_floating(expected.dtype());
  const auto a = actual.to_vector<double>(SrcLoc::none());
  const auto e = expected.to_vector<double>(SrcLoc::none());
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = e[i];
    if (std::isnan(y) || std::isnan(x)) {
      if (std::isnan(x) != std::isnan(y)) {
        d.ok = false;
        d.message = str("element ", i, ": ", x, " vs expected ", y);
        return d;
      }
      continue;
    }
    if (std::isinf(y) || std::isinf(x)) {
      if (x != y) {
        d.ok = false;
        d.message = str("element ", i, ": ", x, " vs expected ", y);
        return d;
      }
      continue;
    }
    const double diff = std::fabs(x - y);
    d.max_abs = std::max(d.max_abs, diff);
    if (y != 0) d.max_rel = std::max(d.max_rel, diff / std::fabs(y));
    // Integers match exactly unless the case allows whole levels (atol >= 1: a u8 output of a
    // quantized op rounded from a float that may sit on a rounding boundary).
    const double bound = exact ? std::floor(atol) : atol + rtol * std::fabs(y);
    if (diff > bound && d.ok) {
      d.ok = false;
      d.message = str("element ", i, ": ", x, " vs expected ", y, " (|diff| ", diff, " > ", bound, ")");
    }
  }
  return d;
}

}  // namespace amber::test

// Marks the shared/RELIABILITY.md checklist case (an id of docs/security.md's case table)
// that the enclosing test reaches; tests/check_security_cases.py keeps that table and these
// marks in agreement. In Python and fuzz sources the mark is a comment "checklist case: ID".
// The mark also names the case for save_case_seed.
#define AMBER_CASE(id)        \
  INFO("checklist case " id); \
  ::amber::test::current_case() = id

namespace amber::test {

// The checklist case the running test last marked.
inline std::string& current_case() {
  static std::string id = "none";
  return id;
}

// With AMBER_CASE_SEEDS=DIR set, writes bytes (an input a test feeds to a reader) to
// DIR/<case>-<n>.amber when under the fuzzers' 64 KiB input limit: tests/fuzz/run_fuzz.sh
// seeds the fuzzers with every checklist case the tests build this way.
inline void save_case_seed(const std::vector<uint8_t>& bytes) {
  static int n = 0;
  const char* dir = std::getenv("AMBER_CASE_SEEDS");
  if (!dir || !*dir || bytes.size() > 65536) return;
  const std::string path = std::string(dir) + "/" + current_case() + "-" + std::to_string(n++) + ".amber";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

}  // namespace amber::test

// Requires that expr throws amber::Error whose message contains fragment.
#define AMBER_REQUIRE_ERROR(expr, fragment)                                             \
  do {                                                                                  \
    bool amber_threw_ = false;                                                          \
    try {                                                                               \
      (void)(expr);                                                                     \
    } catch (const ::amber::Error& e) {                                                 \
      amber_threw_ = true;                                                              \
      INFO("message: " << e.what());                                                    \
      CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains(fragment));           \
    }                                                                                   \
    if (!amber_threw_) FAIL("expected amber::Error containing \"" << fragment << "\""); \
  } while (0)
