// scatter_reduce's arithmetic, one source for the CPU and CUDA kernels (AMBER_HD): the reduction
// its attribute chose, each one's identity (where an element scattered to starts when
// include_self is false), how a source element folds into an output element (integers wrap,
// NaN wins amax and amin, as PyTorch's), and mean's division (integers floor, as PyTorch's).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "amber/core/backend.h"
#include "amber/kernels/arith.h"
#include "amber/kernels/hd.h"
#include "amber/op_attrs.h"

namespace amber::scatter_fold {

// The reduce attribute's choice (amber_attr::i, its index in the op table's list).
namespace choice = op_attrs::scatter_reduce::reduce_is;
enum Reduce : int {
  kSum = choice::sum,
  kProd = choice::prod,
  kMean = choice::mean,
  kAmax = choice::amax,
  kAmin = choice::amin
};

// The reduction a scatter_reduce kernel was given.
inline Reduce reduce_of(const amber_kernel_args* a) { return Reduce(a->attrs[op_attrs::scatter_reduce::reduce].i); }

template <typename T>
AMBER_HD inline T identity(Reduce r) {
  if (r == kProd) return T(1);
  if (r == kAmax) {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  if (r == kAmin) {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
  return T(0);  // sum, mean
}

// acc with v folded in. A NaN acc stays (std::max's and std::min's keep their first argument
// on an unordered pair), a NaN v replaces it.
template <typename T>
AMBER_HD inline T combine(Reduce r, T acc, T v) {
  bool v_nan = false;
  if constexpr (std::is_floating_point_v<T>) v_nan = v != v;
  switch (r) {
    case kProd:
      return pw::wrap_mul(acc, v);
    case kAmax:
      return v_nan || acc < v ? v : acc;
    case kAmin:
      return v_nan || v < acc ? v : acc;
    default:
      return pw::wrap_add(acc, v);  // sum, mean
  }
}

// mean's result from the sum of `count` elements (count > 0): floats divide, integers floor.
template <typename T>
AMBER_HD inline T mean_of(T sum, int64_t count) {
  if constexpr (std::is_floating_point_v<T>)
    return sum / T(count);
  else
    return T(pw::div_floor_int(int64_t(sum), count));
}

}  // namespace amber::scatter_fold
