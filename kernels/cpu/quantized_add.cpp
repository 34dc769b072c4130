// CPU kernel for quantized_add: the sum of two uint8 tensors of one shape as the values they
// stand for, activated and requantized (quant_math.h's add_u8, shared with CUDA), over any
// strides in the output's memory order (ElementwiseIter), one loop per activation so that the
// contiguous case vectorises.

#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/loops.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/quant_math.h"
#include "amber/op_attrs.h"

namespace amber::cpu {
namespace {

// p[0] the output, p[1] self, p[2] other (u8, byte strides s); ctx the AddParams.
template <Act A>
struct AddRun {
  static void run(char* const* p, const int64_t* s, int64_t n, const void* ctx) {
    const quant::AddParams q = *static_cast<const quant::AddParams*>(ctx);  // a copy: u8 stores alias anything
    uint8_t* __restrict y = reinterpret_cast<uint8_t*>(p[0]);
    const uint8_t* __restrict a = reinterpret_cast<const uint8_t*>(p[1]);
    const uint8_t* __restrict b = reinterpret_cast<const uint8_t*>(p[2]);
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
      for (int64_t i = 0; i < n; ++i) y[i] = quant::add_u8<A>(a[i], b[i], q);
      return;
    }
    for (int64_t i = 0; i < n; ++i) y[i * s[0]] = quant::add_u8<A>(a[i * s[1]], b[i * s[2]], q);
  }
};

template <Act A>
void run_add(const amber_kernel_args* a, const quant::AddParams& q) {
  ElementwiseIter<3> it({&a->outputs[0], &a->inputs[0], &a->inputs[1]}, {1, 1, 1});
  static const InnerFn inner = IsaVariants<AddRun<A>>::pick();
  it.run(inner, &q, a->num_threads, kGrainCheap);
}

int quantized_add(const amber_kernel_args* a) {
  namespace at = op_attrs::quantized_add;
  quant::AddParams q;
  q.sa = double(float(attr_float(a, at::self_scale)));
  q.za = double(attr_int(a, at::self_zero_point));
  q.sb = double(float(attr_float(a, at::other_scale)));
  q.zb = double(attr_int(a, at::other_zero_point));
  q.lo = float(attr_float(a, at::min_val));
  q.hi = float(attr_float(a, at::max_val));
  q.inv_so = 1.0f / float(attr_float(a, at::output_scale));
  q.zo = float(attr_int(a, at::output_zero_point));
  with_act(act_of(a->attrs[at::activation]), [&](auto act) { run_add<decltype(act)::value>(a, q); });
  return 0;
}

AMBER_CPU_KERNELS(quantized_add) { register_kernel("quantized_add", DType::u8, &quantized_add); }

}  // namespace
}  // namespace amber::cpu
