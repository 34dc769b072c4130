// cuda_util.cuh's strided elementwise launcher (operands, simplify, map_kernel), which every
// pointwise CUDA op runs through, on the CPU (cuda_emulation.h) against Amber's CPU add: size-1,
// missing and one-element broadcasts, transposed, channels-last and negative-stride operands, the
// dims simplify leaves; and batch_norm_kernels.cuh's inference batch_norm through it against the
// CPU's. scripts/gpu_check.sh runs the real kernels.

#include <amber/amber.h>

#include <catch2/catch.hpp>

#include <cmath>

#include "cuda_emulation.h"
#include "emulated_vs_cpu.h"
// After the emulation's macros:
#include "amber/kernels/cuda/batch_norm_kernels.cuh"
#include "amber/kernels/cuda/cuda_util.cuh"

namespace {

namespace cuda = amber::cuda;
using amber::DimVec;
using amber::Tensor;
using amber::emulation::launch_small;
using amber::emulation::reversed_layout;
using amber::emulation::same;
using amber::emulation::unwritten;
using amber::emulation::view_of;

struct AddF {  // p[0] = p[1] + p[2], f32
  __device__ void operator()(char* const* p) const {
    *reinterpret_cast<float*>(p[0]) = *reinterpret_cast<const float*>(p[1]) + *reinterpret_cast<const float*>(p[2]);
  }
};

// y = a + b through operands, simplify and map_kernel, as cuda_util.cuh's map; the walk's dims
// after simplify (and whether it is dense) through ndim and dense.
Tensor add(const amber_tensor_view& y, const amber_tensor_view& a, const amber_tensor_view& b, const Tensor& out,
           int* ndim, bool* dense) {
  const amber_tensor_view* v[3] = {&y, &a, &b};
  const int64_t items[3] = {4, 4, 4};
  cuda::Operands<3> o = cuda::operands<3>(v, items);
  cuda::simplify(o);
  *ndim = o.ndim, *dense = o.dense;
  launch_small(&cuda::map_kernel<3, AddF>, out.numel(), o, AddF{});
  return out;
}

// An output of `sizes`, NaN-filled, channels-last where asked.
Tensor output(const DimVec& sizes, bool channels_last) { return unwritten(sizes, amber::DType::f32, channels_last); }

}  // namespace

TEST_CASE("cuda emulated: the strided elementwise launcher equals the CPU's add", "[emulated]") {
  amber::manual_seed(61);
  int ndim = -1;
  bool dense = false;
  {
    INFO("dense operands: one dense dim");
    const Tensor a = amber::randn({4, 5, 6}), b = amber::randn({4, 5, 6}), y = output({4, 5, 6}, false);
    CHECK(same(add(view_of(y), view_of(a), view_of(b), y, &ndim, &dense), a + b));
    CHECK((ndim == 1 && dense));
  }
  {
    INFO("a transposed, b broadcast along the first and last dims ([5, 1]), b missing a dim");
    const Tensor a = reversed_layout(amber::randn({4, 5, 6})), b = amber::randn({5, 1}), y = output({4, 5, 6}, false);
    CHECK(same(add(view_of(y), view_of(a), view_of(b), y, &ndim, &dense), a + b));
    CHECK(!dense);
  }
  {
    INFO("channels-last output and input, a [3, 1, 1] per-channel operand");
    const Tensor x = amber::randn({2, 5, 4, 3}).permute({0, 3, 1, 2}), c = amber::randn({3, 1, 1});
    const Tensor y = output({2, 3, 5, 4}, true);
    CHECK(same(add(view_of(y), view_of(x), view_of(c), y, &ndim, &dense), x + c));
    CHECK(ndim == 2);  // channels, and N*H*W merged (the per-channel operand's zero stride there)
  }
  {
    INFO("channels-last output and input, both dense in memory: one dense dim");
    const Tensor x = amber::randn({2, 5, 4, 3}).permute({0, 3, 1, 2}),
                 z = amber::randn({2, 5, 4, 3}).permute({0, 3, 1, 2});
    const Tensor y = output({2, 3, 5, 4}, true);
    CHECK(same(add(view_of(y), view_of(x), view_of(z), y, &ndim, &dense), x + z));
    CHECK((ndim == 1 && dense));
  }
  {
    INFO("a one-element operand broadcast along one dim: one dim, not dense");
    const Tensor a = amber::randn({24}), b = amber::randn({1}), y = output({24}, false);
    CHECK(same(add(view_of(y), view_of(a), view_of(b), y, &ndim, &dense), a + b));
    CHECK((ndim == 1 && !dense));
  }
  {
    INFO("a reversed operand (negative stride) into a contiguous output");
    const Tensor a = amber::randn({7, 9}), b = amber::randn({7, 9}), y = output({7, 9}, false);
    amber_tensor_view r = view_of(a);  // a's rows in reverse order
    r.data = static_cast<float*>(r.data) + 6 * 9;
    r.strides[0] = -9;
    Tensor want = b.clone();
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 9; ++j) want.data_ptr<float>()[i * 9 + j] += a.const_data_ptr<float>()[(6 - i) * 9 + j];
    CHECK(same(add(view_of(y), r, view_of(b), y, &ndim, &dense), want));
    CHECK(!dense);
  }
}

TEST_CASE("cuda emulated: inference batch_norm through the launcher equals the CPU's", "[emulated]") {
  amber::manual_seed(62);
  const Tensor mean = amber::randn({3}), var = amber::rand({3}) + 0.5, w = amber::randn({6}).slice(0, 0, 6, 2),
               b = amber::randn({3});  // the weight strided
  const double eps = 1e-3;
  for (bool cl : {false, true})
    for (bool affine : {true, false}) {
      INFO((cl ? "channels-last" : "contiguous") << (affine ? ", weight and bias" : ", no weight or bias"));
      const Tensor x = cl ? amber::randn({2, 5, 4, 3}).permute({0, 3, 1, 2}) : amber::randn({2, 3, 5, 4});
      const Tensor want =
          amber::batch_norm(x, mean, var, affine ? w : Tensor{}, affine ? b : Tensor{}, false, 0.1, eps);
      const Tensor y = output({2, 3, 5, 4}, cl);
      amber_tensor_view absent{};
      absent.ndim = -1;
      const amber_tensor_view in[5] = {view_of(x), affine ? view_of(w) : absent, affine ? view_of(b) : absent,
                                       view_of(mean), view_of(var)};
      amber_tensor_view ch[4];
      cuda::batch_norm_channels(in, ch);
      const amber_tensor_view yv = view_of(y);
      const amber_tensor_view* v[6] = {&yv, &in[0], &ch[0], &ch[1], &ch[2], &ch[3]};
      const int64_t items[6] = {4, 4, 4, 4, 4, 4};
      cuda::Operands<6> o = cuda::operands<6>(v, items);
      cuda::simplify(o);
      launch_small(&cuda::map_kernel<6, cuda::BatchNormF<float>>, y.numel(), o, cuda::BatchNormF<float>{eps});
      CHECK(same(y, want));
    }
}
