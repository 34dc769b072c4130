// Views and coordinates derived from a kernel's tensor views by index arithmetic alone,
// shared by the CPU and CUDA kernels: flip's reversed view (host code, built before a
// launch), the span of an output's elements, and pad's walk from output to source element,
// which roll and repeat reuse.
#pragma once

#include <cstdint>

#include "amber/core/backend.h"
#include "amber/kernels/hd.h"
#include "amber/op_attrs.h"

namespace amber::views {

// v walking each dim of dims (negative dims count from the end) backwards: its data points
// at the last element along them and their strides are negated. itemsize: v's element bytes.
// Sets *empty when a flipped dim has no elements (nothing to read). A 0-d v (whose dims 0
// and -1 inference accepts, as PyTorch does) has nothing to flip and is returned as it is.
inline amber_tensor_view flipped(amber_tensor_view v, const amber_attr& dims, int64_t itemsize, bool* empty) {
  *empty = false;
  if (v.ndim == 0) return v;
  for (int i = 0; i < dims.count; ++i) {
    const int d = int(dims.ints[i] < 0 ? dims.ints[i] + v.ndim : dims.ints[i]);
    if (v.sizes[d] == 0) {
      *empty = true;
      return v;
    }
    v.data = static_cast<char*>(v.data) + (v.sizes[d] - 1) * v.strides[d] * itemsize;
    v.strides[d] = -v.strides[d];
  }
  return v;
}

// The elements from v.data to one past v's last (0 when v has none): a buffer of a slot per
// element of a view with no negative strides, such as a kernel's output.
inline int64_t span(const amber_tensor_view& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.sizes[d] == 0) return 0;
    n += (v.sizes[d] - 1) * v.strides[d];
  }
  return n;
}

// pad's mode attribute: its choice (amber_attr::i, its index in the op table's list).
enum PadMode : int {
  kPadConstant = op_attrs::pad::mode_is::constant,
  kPadReflect = op_attrs::pad::mode_is::reflect,
  kPadReplicate = op_attrs::pad::mode_is::replicate,
  kPadCircular = op_attrs::pad::mode_is::circular
};
inline PadMode pad_mode(const amber_kernel_args* a) { return PadMode(a->attrs[op_attrs::pad::mode].i); }

// Along one dim of pad: the source coordinate of output coordinate o, for `before` elements
// of padding ahead of a dim of `size`. Returns false where constant padding leaves the
// value (no source); the other modes always find one (inference bounds their pads).
AMBER_HD inline bool pad_source(int64_t o, int64_t before, int64_t size, PadMode mode, int64_t* src) {
  int64_t s = o - before;
  if (s < 0 || s >= size) {
    if (mode == kPadConstant) return false;
    if (mode == kPadReflect)
      s = s < 0 ? -s : 2 * (size - 1) - s;
    else if (mode == kPadReplicate)
      s = s < 0 ? 0 : size - 1;
    else
      s = (s % size + size) % size;
  }
  *src = s;
  return true;
}

// pad's dims, as the kernels walk them: the output's and self's sizes and strides (elements)
// and the padding ahead of each dim (0 for dims pad leaves alone).
struct PadDims {
  int ndim;
  int64_t ysizes[AMBER_MAX_DIMS], ystrides[AMBER_MAX_DIMS], xsizes[AMBER_MAX_DIMS], xstrides[AMBER_MAX_DIMS],
      before[AMBER_MAX_DIMS];
};
inline PadDims pad_dims(const amber_tensor_view& y, const amber_tensor_view& x, const amber_attr& pads) {
  PadDims p{y.ndim, {}, {}, {}, {}, {}};
  for (int d = 0; d < y.ndim; ++d)
    p.ysizes[d] = y.sizes[d], p.ystrides[d] = y.strides[d], p.xsizes[d] = x.sizes[d], p.xstrides[d] = x.strides[d];
  for (int k = 0; k < pads.count / 2; ++k) p.before[y.ndim - 1 - k] = pads.ints[2 * k];
  return p;
}

// roll(self, shifts, dims) as pad's walk: circular padding of shift (mod the size) ahead of
// each rolled dim, the output of self's shape (a dim named twice rolls by both shifts).
inline PadDims roll_dims(const amber_tensor_view& y, const amber_tensor_view& x, const amber_attr& shifts,
                         const amber_attr& dims) {
  PadDims p = pad_dims(y, x, amber_attr{});
  for (int i = 0; i < dims.count; ++i) {
    const int d = int(dims.ints[i] < 0 ? dims.ints[i] + y.ndim : dims.ints[i]);
    if (y.sizes[d] > 0) p.before[d] = ((p.before[d] + shifts.ints[i]) % y.sizes[d] + y.sizes[d]) % y.sizes[d];
  }
  return p;
}

// repeat(self, repeats) as pad's walk: self under the output's dims (leading new dims of size
// 1), no padding ahead, and circular mode wrapping each output coordinate into self's size.
inline PadDims repeat_dims(const amber_tensor_view& y, const amber_tensor_view& x) {
  PadDims p{y.ndim, {}, {}, {}, {}, {}};
  const int lead = y.ndim - x.ndim;
  for (int d = 0; d < y.ndim; ++d) {
    p.ysizes[d] = y.sizes[d], p.ystrides[d] = y.strides[d];
    p.xsizes[d] = d < lead ? 1 : x.sizes[d - lead];
    p.xstrides[d] = d < lead ? 0 : x.strides[d - lead];
  }
  return p;
}

// Output element k (in the output's row-major order): its offset in y, and in x where it has
// a source (returns false where constant padding gives it the value).
AMBER_HD inline bool pad_element(const PadDims& p, PadMode mode, int64_t k, int64_t* yo, int64_t* xo) {
  bool inside = true;
  *yo = *xo = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    const int64_t o = k % p.ysizes[d];
    k /= p.ysizes[d];
    *yo += o * p.ystrides[d];
    int64_t src = 0;
    inside = inside && pad_source(o, p.before[d], p.xsizes[d], mode, &src);
    *xo += src * p.xstrides[d];
  }
  return inside;
}

}  // namespace amber::views
