// CPU kernels for softmax and log_softmax along one dim. Each row along the dim is
// processed by an AVX-512/AVX2/portable row function (max, exp with libmvec, sum, scale);
// rows that are not contiguous in the input are gathered into a per-thread buffer first.

#include <algorithm>
#include <vector>

#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/cpu/row_ops.h"
#include "amber/kernels/cpu/vec_math.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// p[0]: output row, p[1]: input row (both contiguous, n long); ctx: bool* log.
template <typename T>
struct SoftmaxRow {
  static void run(char* const* p, const int64_t*, int64_t n, const void* ctx) {
    T* out = reinterpret_cast<T*>(p[0]);
    const T* in = reinterpret_cast<const T*>(p[1]);
    const bool log = *static_cast<const bool*>(ctx);
    const T mx = row_max(in, n);
    for (int64_t i = 0; i < n; ++i) out[i] = vexp(in[i] - mx);
    const T sum = row_sum(out, n);
    if (log) {
      const T shift = mx + vlog(sum);
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] - shift;
    } else {
      const T inv = T(1) / sum;
      for (int64_t i = 0; i < n; ++i) out[i] *= inv;
    }
  }
};

template <bool Log>
struct Softmax {
  template <typename T>
  struct Kernel {  // softmax(self, dim, dtype)
    static int run(const amber_kernel_args* a) {
      const amber_tensor_view& in = a->inputs[0];
      const amber_tensor_view& out = a->outputs[0];
      const int nd = in.ndim;
      if (numel(in) == 0) return 0;
      if (nd == 0) {  // a single element: 1 (softmax) or 0 (log_softmax)
        *static_cast<T*>(out.data) = Log ? T(0) : T(1);
        return 0;
      }
      static_assert(op_attrs::softmax::dim == op_attrs::log_softmax::dim);
      int64_t dim = attr_int(a, op_attrs::softmax::dim);
      if (dim < 0) dim += nd;
      const int64_t n = in.sizes[dim], in_step = in.strides[dim], out_step = out.strides[dim];
      // Rows: every index of the other dims.
      int64_t rows = 1;
      int64_t osz[AMBER_MAX_DIMS], ist[AMBER_MAX_DIMS], ost[AMBER_MAX_DIMS];
      int k = 0;
      for (int d = 0; d < nd; ++d) {
        if (d == dim) continue;
        osz[k] = in.sizes[d];
        ist[k] = in.strides[d];
        ost[k] = out.strides[d];
        rows *= in.sizes[d];
        ++k;
      }
      static const InnerFn row_fn = IsaVariants<SoftmaxRow<T>>::pick();
      const bool log = Log;
      const T* x = static_cast<const T*>(in.data);
      T* y = static_cast<T*>(out.data);
      ThreadLimit limit(std::max(1, a->num_threads));
      parallel_for(rows, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
        std::vector<T> xin, xout;
        for (int64_t r = b; r < e; ++r) {
          int64_t rem = r, io = 0, oo = 0;
          for (int d = k - 1; d >= 0; --d) {
            const int64_t i = rem % osz[d];
            rem /= osz[d];
            io += i * ist[d];
            oo += i * ost[d];
          }
          const T* src = x + io;
          T* dst = y + oo;
          if (in_step != 1) {
            xin.resize(size_t(n));
            for (int64_t i = 0; i < n; ++i) xin[size_t(i)] = src[i * in_step];
            src = xin.data();
          }
          T* target = dst;
          if (out_step != 1) {
            xout.resize(size_t(n));
            target = xout.data();
          }
          char* ptrs[2] = {reinterpret_cast<char*>(target), reinterpret_cast<char*>(const_cast<T*>(src))};
          row_fn(ptrs, nullptr, n, &log);
          if (out_step != 1)
            for (int64_t i = 0; i < n; ++i) dst[i * out_step] = xout[size_t(i)];
        }
      });
      return 0;
    }
  };
};

AMBER_CPU_KERNELS(softmax) {
  register_typed<Softmax<false>::Kernel>(ctypes::floating{}, "softmax");
  register_typed<Softmax<true>::Kernel>(ctypes::floating{}, "log_softmax");
}

}  // namespace
}  // namespace amber::cpu
