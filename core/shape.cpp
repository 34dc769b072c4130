// DimVec storage and the checked shape arithmetic declared in core/shape.h.

#include "amber/core/shape.h"

#include <algorithm>

namespace amber {

void DimVec::assign(const int64_t* p, size_t n) {
  AMBER_CHECK(n <= size_t(kMaxDims), "tensor rank ", n, " exceeds the maximum of ", kMaxDims);
  std::copy(p, p + n, d_);
  n_ = int(n);
}

DimVec DimVec::filled(int n, int64_t value) {
  DimVec v;
  v.resize(n, value);
  return v;
}

void DimVec::push_back(int64_t v) {
  AMBER_CHECK(n_ < kMaxDims, "tensor rank ", n_ + 1, " exceeds the maximum of ", kMaxDims);
  d_[n_++] = v;
}

void DimVec::insert(int pos, int64_t v) {
  AMBER_CHECK(n_ < kMaxDims, "tensor rank ", n_ + 1, " exceeds the maximum of ", kMaxDims);
  AMBER_ASSERT(pos >= 0 && pos <= n_);
  std::copy_backward(d_ + pos, d_ + n_, d_ + n_ + 1);
  d_[pos] = v;
  ++n_;
}

void DimVec::erase(int pos) {
  AMBER_ASSERT(pos >= 0 && pos < n_);
  std::copy(d_ + pos + 1, d_ + n_, d_ + pos);
  --n_;
}

void DimVec::resize(int n, int64_t value) {
  AMBER_CHECK(n >= 0 && n <= kMaxDims, "tensor rank ", n, " exceeds the maximum of ", kMaxDims);
  for (int i = n_; i < n; ++i) d_[i] = value;
  n_ = n;
}

bool operator==(const DimVec& a, const DimVec& b) { return a.n_ == b.n_ && std::equal(a.d_, a.d_ + a.n_, b.d_); }

std::ostream& operator<<(std::ostream& os, DimsText d) {
  os << '[';
  for (size_t i = 0; i < d.dims.size(); ++i) os << (i ? ", " : "") << d.dims[i];
  return os << ']';
}

std::ostream& operator<<(std::ostream& os, const DimVec& d) { return os << DimsText{d}; }

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  AMBER_CHECK(!__builtin_mul_overflow(a, b, &r), what, ": ", a, " * ", b, " overflows 64 bits");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  AMBER_CHECK(!__builtin_add_overflow(a, b, &r), what, ": ", a, " + ", b, " overflows 64 bits");
  return r;
}

int64_t checked_numel(std::span<const int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    AMBER_CHECK(s >= 0, "invalid shape ", DimsText{sizes}, ": dimensions must be non-negative");
    AMBER_CHECK(!__builtin_mul_overflow(n, s, &n), "invalid shape ", DimsText{sizes},
                ": element count overflows 64 bits");
  }
  return n;
}

DimVec contiguous_strides(const DimVec& sizes) {
  DimVec st = DimVec::filled(sizes.size(), 1);
  int64_t acc = 1;
  for (int i = sizes.size() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

bool is_contiguous(const DimVec& sizes, const DimVec& strides) {
  int64_t expected = 1;
  for (int i = sizes.size() - 1; i >= 0; --i) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

DimVec channels_last_strides(const DimVec& sizes) {
  AMBER_ASSERT(sizes.size() == 4, "channels_last needs 4 dims, got ", sizes);
  const int64_t c = std::max<int64_t>(sizes[1], 1), h = std::max<int64_t>(sizes[2], 1),
                w = std::max<int64_t>(sizes[3], 1);
  return DimVec{h * w * c, 1, w * c, c};
}

bool is_channels_last(const DimVec& sizes, const DimVec& strides) {
  if (sizes.size() != 4 || is_contiguous(sizes, strides)) return false;
  const DimVec cl = channels_last_strides(sizes);
  for (int i = 0; i < 4; ++i)
    if (sizes[i] != 1 && strides[i] != cl[i]) return false;
  return true;
}

DimVec broadcast_shapes(const char* op, const DimVec& a, const DimVec& b) {
  const int n = std::max(a.size(), b.size());
  DimVec out = DimVec::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    const int ia = a.size() - n + i, ib = b.size() - n + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    AMBER_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b, " are not broadcastable (dimension ",
                i - n, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int wrap_dim(const char* op, int64_t dim, int ndim) {
  const int64_t n = std::max(ndim, 1);
  AMBER_CHECK(dim >= -n && dim < n, op, ": dimension ", dim, " is out of range for a tensor of rank ", ndim,
              " (expected a value in [", -n, ", ", n - 1, "])");
  return int(dim < 0 ? dim + n : dim);
}

}  // namespace amber
