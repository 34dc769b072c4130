// Shapes and strides: DimVec (an inline list of at most kMaxDims dims, never on the heap),
// overflow-checked element counts, contiguous strides, broadcasting and axis wrapping.
// Every size that may come from outside (archives, users) passes through these checks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <vector>

#include "amber/core/error.h"

namespace amber {

inline constexpr int kMaxDims = 8;  // also AMBER_MAX_DIMS in the C backend ABI

class DimVec {
 public:
  DimVec() = default;
  // Copies only the live dims.
  DimVec(const DimVec& o) : n_(o.n_) {
    for (int i = 0; i < n_; ++i) d_[i] = o.d_[i];
  }
  DimVec& operator=(const DimVec& o) {
    n_ = o.n_;
    for (int i = 0; i < n_; ++i) d_[i] = o.d_[i];
    return *this;
  }
  DimVec(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  explicit DimVec(std::span<const int64_t> dims) { assign(dims.data(), dims.size()); }
  DimVec(const std::vector<int64_t>& dims) { assign(dims.data(), dims.size()); }
  // n copies of value
  static DimVec filled(int n, int64_t value);

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t* data() { return d_; }
  const int64_t* data() const { return d_; }
  int64_t& operator[](int i) { return d_[i]; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + n_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t back() const { return d_[n_ - 1]; }
  void push_back(int64_t v);
  void insert(int pos, int64_t v);
  void erase(int pos);
  void resize(int n, int64_t value = 0);
  std::vector<int64_t> vec() const { return {d_, d_ + n_}; }
  operator std::span<const int64_t>() const { return {d_, size_t(n_)}; }

  friend bool operator==(const DimVec& a, const DimVec& b);

 private:
  void assign(const int64_t* p, size_t n);
  int64_t d_[kMaxDims];  // only the first n_ are meaningful
  int n_ = 0;
};

std::ostream& operator<<(std::ostream& os, const DimVec& d);
// Prints any list of dims as "[2, 3]" (a wrapper so that argument-dependent lookup finds it).
struct DimsText {
  std::span<const int64_t> dims;
};
std::ostream& operator<<(std::ostream& os, DimsText d);

// Product of dims; throws if any dim is negative or the product overflows int64.
int64_t checked_numel(std::span<const int64_t> sizes);
// a*b, throwing "what: ... overflows" on overflow.
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

DimVec contiguous_strides(const DimVec& sizes);
bool is_contiguous(const DimVec& sizes, const DimVec& strides);
// NHWC strides for a 4-D NCHW shape.
DimVec channels_last_strides(const DimVec& sizes);
// True when a 4-D tensor is laid out exactly as channels_last_strides (size-1 dims ignored)
// and not also contiguous (so the two never both hold).
bool is_channels_last(const DimVec& sizes, const DimVec& strides);

// PyTorch's broadcast_shapes for two shapes; op names the caller in the error.
DimVec broadcast_shapes(const char* op, const DimVec& a, const DimVec& b);

// Maps dim in [-ndim, ndim) to [0, ndim); throws naming op otherwise. A scalar (ndim 0)
// accepts -1 and 0 as PyTorch does.
int wrap_dim(const char* op, int64_t dim, int ndim);

}  // namespace amber
