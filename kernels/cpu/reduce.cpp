// CPU kernels for reductions: sum over any set of dims. Floats accumulate in double,
// integers in int64. Work splits over output elements, or over the reduced elements when
// there are too few outputs to keep the threads busy (partials combined in a fixed order).

#include <algorithm>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"

namespace amber::cpu {
namespace {

struct DimSet {
  int n = 0;
  int64_t size[AMBER_MAX_DIMS];
  int64_t in_stride[AMBER_MAX_DIMS];
  int64_t out_stride[AMBER_MAX_DIMS];
  int64_t count() const {
    int64_t c = 1;
    for (int i = 0; i < n; ++i) c *= size[i];
    return c;
  }
  // Appends the next dim (outermost first); size-1 dims do not matter.
  void push(int64_t s, int64_t is, int64_t os) {
    if (s == 1) return;
    size[n] = s;
    in_stride[n] = is;
    out_stride[n] = os;
    ++n;
  }
  // Offsets of the flat index k (row-major over size[]).
  void offsets(int64_t k, int64_t& in_off, int64_t& out_off) const {
    in_off = out_off = 0;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t i = k % size[d];
      k /= size[d];
      in_off += i * in_stride[d];
      out_off += i * out_stride[d];
    }
  }
};

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Sums x over the reduced dims r (flat reduced indices [b, e)).
template <typename T>
Acc<T> sum_range(const T* x, const DimSet& r, int64_t b, int64_t e) {
  Acc<T> acc = 0;
  if (r.n == 0) return b < e ? Acc<T>(x[0]) : Acc<T>(0);
  const int inner = r.n - 1;
  const int64_t isz = r.size[inner], ist = r.in_stride[inner];
  int64_t k = b;
  while (k < e) {
    int64_t off, unused;
    r.offsets(k, off, unused);
    const int64_t start = k % isz;
    const int64_t len = std::min(isz - start, e - k);
    const T* p = x + off;
    if (ist == 1) {
      for (int64_t i = 0; i < len; ++i) acc += Acc<T>(p[i]);
    } else {
      for (int64_t i = 0; i < len; ++i) acc += Acc<T>(p[i * ist]);
    }
    k += len;
  }
  return acc;
}

// sum(self, dim, keepdim, dtype)
template <typename T>
struct SumKernel {
  static int run(const amber_kernel_args* a) {
    const amber_tensor_view& in = a->inputs[0];
    const amber_tensor_view& out = a->outputs[0];
    const bool keepdim = attr_bool(a, 1);
    uint32_t mask = 0;
    if (attr_none(a, 0) || a->attrs[0].count == 0) {
      mask = in.ndim == 0 ? 0u : (1u << in.ndim) - 1;
    } else {
      for (int64_t d : attr_ints(a, 0)) mask |= 1u << (d < 0 ? d + in.ndim : d);
    }
    DimSet kept, red;
    int od = 0;
    for (int d = 0; d < in.ndim; ++d) {
      if (mask & (1u << d)) {
        red.push(in.sizes[d], in.strides[d], 0);
        if (keepdim) ++od;
      } else {
        kept.push(in.sizes[d], in.strides[d], out.strides[od]);
        ++od;
      }
    }
    const T* x = static_cast<const T*>(in.data);
    T* y = static_cast<T*>(out.data);
    const int64_t m = kept.count(), l = red.count();
    if (m == 0) return 0;
    const int threads = std::max(1, a->num_threads);
    ThreadLimit limit(threads);
    if (l == 0 || numel(in) == 0) {
      for (int64_t i = 0; i < m; ++i) {
        int64_t io, oo;
        kept.offsets(i, io, oo);
        y[oo] = T(0);
      }
      return 0;
    }
    if (m >= threads || l < 32768) {
      parallel_for(m, std::max<int64_t>(1, 32768 / l), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          int64_t io, oo;
          kept.offsets(i, io, oo);
          y[oo] = T(sum_range(x + io, red, 0, l));
        }
      });
      return 0;
    }
    // Few outputs, long reductions: split each reduction into per-thread partials.
    const int64_t chunks = std::min<int64_t>(threads, l / 16384 + 1);
    std::vector<Acc<T>> partial(static_cast<size_t>(chunks));
    for (int64_t i = 0; i < m; ++i) {
      int64_t io, oo;
      kept.offsets(i, io, oo);
      parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c)
          partial[size_t(c)] = sum_range(x + io, red, l * c / chunks, l * (c + 1) / chunks);
      });
      Acc<T> acc = 0;
      for (Acc<T> p : partial) acc += p;
      y[oo] = T(acc);
    }
    return 0;
  }
};

AMBER_CPU_KERNELS(reduce) { register_typed<SumKernel, float, double, int64_t>("sum"); }

}  // namespace
}  // namespace amber::cpu
