// The CUDA kernels for upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d (and the last
// two antialiased, _aa), upsample_nearest3d and upsample_trilinear3d, launched (device code in
// upsample_kernels.cuh; elements and weights from kernels/resample.h, ATen's rules and the CPU
// kernels' formulas): 4-D and 5-D tensors of any strides; f16 and bf16 blended in f32, rounded once.

#include <cstddef>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "amber/kernels/cuda/capture_lock.h"
#include "amber/kernels/cuda/cuda_util.cuh"
#include "amber/kernels/cuda/device_memory.h"
#include "amber/kernels/cuda/registry.h"
#include "amber/kernels/cuda/upsample_kernels.cuh"
#include "amber/kernels/resample.h"

namespace amber::cuda {
namespace {

using namespace upsample;  // the kernels and their geometry (upsample_kernels.cuh)

// upsample_nearest2d(self, output_size, scales_h, scales_w) and upsample_nearest3d(self,
// output_size, scales_d, scales_h, scales_w)
template <typename T>
struct NearestKernel {
  static int run(const amber_kernel_args* a) {
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const resample::ResizeAttrs& r = resample::resize_attrs::nearest(a->inputs[0].ndim);
    DeviceScope scope(a->device);
    enqueue(a, &nearest_kernel<T>, dim3(grid_for(total(g))), dim3(256), static_cast<const T*>(a->inputs[0].data),
            static_cast<T*>(a->outputs[0].data), g, resample::scale_of(a, r, 0), resample::scale_of(a, r, 1),
            resample::scale_of(a, r, 2));
    return launched(a, a->inputs[0].ndim == 5 ? "upsample_nearest3d" : "upsample_nearest2d");
  }
};

// upsample_bilinear2d / upsample_bicubic2d(self, output_size, align_corners, scales_h, scales_w)
// and upsample_trilinear3d(self, output_size, align_corners, scales_d, scales_h, scales_w), told
// apart by the input's dims.
template <typename T, bool Cubic>
struct Interpolating {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  static int run(const amber_kernel_args* a) {
    namespace ra = resample::resize_attrs;
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const bool volumetric = a->inputs[0].ndim == 5;
    const resample::ResizeAttrs& r = volumetric ? ra::trilinear3d : ra::interp2d;
    const bool corners = resample::align_corners_of(a, r);
    const A rd = resample::linear_scale<A>(g.d, g.od, corners, resample::scale_of(a, r, 0)),
            rh = resample::linear_scale<A>(g.h, g.oh, corners, resample::scale_of(a, r, 1)),
            rw = resample::linear_scale<A>(g.w, g.ow, corners, resample::scale_of(a, r, 2));
    DeviceScope scope(a->device);
    enqueue(a, &interpolating_kernel<T, A, Cubic>, dim3(grid_for(total(g))), dim3(256),
            static_cast<const T*>(a->inputs[0].data), static_cast<T*>(a->outputs[0].data), g, rd, rh, rw, corners,
            volumetric);
    return launched(a, Cubic ? "upsample_bicubic2d" : volumetric ? "upsample_trilinear3d" : "upsample_bilinear2d");
  }
};
template <typename T>
using LinearKernel = Interpolating<T, false>;
template <typename T>
using CubicKernel = Interpolating<T, true>;

// upsample_bilinear2d_aa / upsample_bicubic2d_aa(self, output_size, align_corners, scales_h,
// scales_w): upsample_kernels.cuh's two passes, the columns' into the workspace the setup sizes.
// Its state: the row and column windows' tables, built on the host from the attributes and
// shapes once and copied into device memory the state owns (freed with it).
template <typename T, bool Cubic>
struct Antialiased {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's scalar_t
  struct Plan {
    AaTables<A> tables{};  // pointers into `memory`
    DeviceBuffer memory;
  };
  static constexpr const char* kName = Cubic ? "upsample_bicubic2d_aa" : "upsample_bilinear2d_aa";
  // The columns' pass's output (N, C, H, W_out in A).
  static size_t across_bytes(const Geometry& g) { return size_t(g.n * g.c * g.h * g.ow) * sizeof(A); }
  static int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = 0;
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    auto p = std::make_unique<Plan>();
    if (total(g) != 0) {
      const resample::ResizeAttrs& r = resample::resize_attrs::interp2d;
      const bool corners = resample::align_corners_of(a, r);
      const A rh = resample::linear_scale<A>(g.h, g.oh, corners, resample::scale_of(a, r, 1)),
              rw = resample::linear_scale<A>(g.w, g.ow, corners, resample::scale_of(a, r, 2));
      const int64_t nh = aa_widest<Cubic>(g.oh, g.h, rh), nw = aa_widest<Cubic>(g.ow, g.w, rw);
      const size_t bytes = aa_tables<A>(g, nh, nw, nullptr).bytes;
      std::vector<std::max_align_t> host((bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
      const AaTables<A> h = aa_tables<A>(g, nh, nw, host.data());
      aa_fill<Cubic>(h.rows, g.oh, g.h, rh);
      aa_fill<Cubic>(h.cols, g.ow, g.w, rw);
      std::unique_lock no_capture(capture_lock());  // a synchronous copy would spoil a capture in flight
      DeviceScope scope(a->device);
      if (p->memory.take(a, bytes, kName, "window tables") != 0) return 1;
      if (const cudaError_t e = cudaMemcpy(p->memory.get(), host.data(), bytes, cudaMemcpyHostToDevice);
          e != cudaSuccess)
        return fail(a, "%s: copying %zu bytes of window tables failed: %s", kName, bytes, cudaGetErrorString(e));
      p->tables = aa_tables<A>(g, nh, nw, p->memory.get());
      *workspace_bytes = across_bytes(g);
    }
    *state = p.release();
    return 0;
  }
  static void destroy(void* state) { delete static_cast<Plan*>(state); }
  static int run(const amber_kernel_args* a) {
    const Geometry g = geometry(a->inputs[0], a->outputs[0]);
    if (total(g) == 0) return 0;
    const Plan* p = setup_state<const Plan>(a, kName);
    if (!p) return 1;
    if (!a->workspace || a->workspace_bytes < across_bytes(g))
      return fail(a, "%s: its workspace (%zu bytes) is smaller than its setup asked (%zu)", kName, a->workspace_bytes,
                  across_bytes(g));
    A* across = static_cast<A*>(a->workspace);
    DeviceScope scope(a->device);
    enqueue(a, &aa_columns_kernel<T, A>, dim3(grid_for(g.n * g.c * g.h * g.ow)), dim3(256),
            static_cast<const T*>(a->inputs[0].data), g, p->tables.cols, across);
    enqueue(a, &aa_rows_kernel<T, A>, dim3(grid_for(total(g))), dim3(256), static_cast<const A*>(across),
            static_cast<T*>(a->outputs[0].data), g, p->tables.rows);
    return launched(a, kName);
  }
};
template <typename T>
using BilinearAaKernel = Antialiased<T, false>;
template <typename T>
using BicubicAaKernel = Antialiased<T, true>;

AMBER_CUDA_KERNELS(upsample) {
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest2d");
  register_typed<NearestKernel, AMBER_CUDA_NUMERIC, AMBER_CUDA_HALF>("upsample_nearest3d");
  register_typed<LinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_trilinear3d");
  register_typed<LinearKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d");
  register_typed<CubicKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d");
  register_typed_setup<BilinearAaKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bilinear2d_aa");
  register_typed_setup<BicubicAaKernel, AMBER_CUDA_FLOATING, AMBER_CUDA_HALF>("upsample_bicubic2d_aa");
}

}  // namespace
}  // namespace amber::cuda
