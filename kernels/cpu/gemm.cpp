// CPU kernel for mm, on oneDNN's sgemm. oneDNN runs its threads on the same OpenMP pool as
// Amber's own loops (no second spinning pool); the call is limited to the kernel's thread
// budget. Operands with a unit stride in either dim are used in place (as transposed or
// not); others are packed first.

#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"

namespace amber::cpu {
namespace {

// A [rows, cols] f32 matrix as (pointer, transpose flag, leading dimension) for row-major
// sgemm, packing it when neither dim has unit stride.
struct GemmOperand {
  const float* data;
  char trans;
  int64_t ld;
  std::vector<float> packed;

  explicit GemmOperand(const amber_tensor_view& v) {
    const int64_t rows = v.sizes[0], cols = v.sizes[1];
    const int64_t rs = v.strides[0], cs = v.strides[1];
    data = static_cast<const float*>(v.data);
    if (cs == 1 && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
      trans = 'N';
      ld = std::max<int64_t>({rs, cols, 1});
    } else if (rs == 1 && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
      trans = 'T';
      ld = std::max<int64_t>({cs, rows, 1});
    } else {
      packed.resize(size_t(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) packed[size_t(i * cols + j)] = data[i * rs + j * cs];
      data = packed.data();
      trans = 'N';
      ld = std::max<int64_t>(cols, 1);
    }
  }
};

int sgemm(const amber_kernel_args* a, const amber_tensor_view& av, const amber_tensor_view& bv,
          const amber_tensor_view& cv) {
  const int64_t m = av.sizes[0], k = av.sizes[1], n = bv.sizes[1];
  float* c = static_cast<float*>(cv.data);
  if (m == 0 || n == 0) return 0;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = 0;
    return 0;
  }
  GemmOperand A(av), B(bv);
  omp_set_num_threads(std::max(1, a->num_threads));
  const dnnl_status_t st =
      dnnl_sgemm(A.trans, B.trans, m, n, k, 1.0f, A.data, A.ld, B.data, B.ld, 0.0f, c, std::max<int64_t>(n, 1));
  if (st != dnnl_success) return fail(a, "oneDNN sgemm failed with status %d", int(st));
  return 0;
}

template <typename T>
struct MmKernel {
  static int run(const amber_kernel_args* a) {
    return guarded(a, [&] { return sgemm(a, a->inputs[0], a->inputs[1], a->outputs[0]); });
  }
};

AMBER_CPU_KERNELS(gemm) { register_typed<MmKernel, float>("mm"); }

}  // namespace
}  // namespace amber::cpu
