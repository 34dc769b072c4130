// CPU kernels for upsample_nearest2d, upsample_bilinear2d, upsample_bicubic2d (and the last two
// antialiased, _aa), upsample_nearest3d and upsample_trilinear3d: each output position's source
// elements and weights come from kernels/resample.h (ATen's rules, shared with the CUDA kernels)
// as tables built once, at setup (the kernels' state); channels-last outputs run with the channel
// loop innermost, NCHW ones of bilinear and bicubic a row at a time. 4-D and 5-D inputs of any
// strides.

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/kernels/cpu/kernel_util.h"
#include "amber/kernels/cpu/registry.h"
#include "amber/kernels/resample.h"

namespace amber::cpu {
namespace {

using resample::Geometry;
using resample::ResizeAttrs;

// Runs px(x_volume, d, row, col) for every output element of every (n, c) volume of x (a plane
// where D = 1; x's strides g.xs), an output row per task; channels innermost where the output is
// channels-last.
template <typename T, typename S, typename Pixel>
void for_each_pixel(const amber_kernel_args* a, const Geometry& g, const S* x, Pixel px) {
  T* y = static_cast<T*>(a->outputs[0].data);
  ThreadLimit limit(std::max(1, a->num_threads));
  const int64_t rows = g.od * g.oh;
  parallel_for(g.n * rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow * g.c)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / rows, od = r % rows / g.oh, oh = r % g.oh;
      const S* xn = x + n * g.xs[0];
      T* yr = y + n * g.ys[0] + od * g.ys[2] + oh * g.ys[3];
      if (g.channels_last) {
        for (int64_t ow = 0; ow < g.ow; ++ow)
          for (int64_t c = 0; c < g.c; ++c) yr[ow * g.ys[4] + c * g.ys[1]] = px(xn + c * g.xs[1], od, oh, ow);
      } else {
        for (int64_t c = 0; c < g.c; ++c)
          for (int64_t ow = 0; ow < g.ow; ++ow) yr[ow * g.ys[4] + c * g.ys[1]] = px(xn + c * g.xs[1], od, oh, ow);
      }
    }
  });
}
template <typename T, typename Pixel>
void for_each_pixel(const amber_kernel_args* a, const Geometry& g, Pixel px) {
  for_each_pixel<T>(a, g, static_cast<const T*>(a->inputs[0].data), px);
}

// A kernel's state: the taps of each output position along D, H and W (D's one entry where the
// input is 4-D), built at setup from the shapes and attributes, which is all they depend on.
// tap(dst, in, out, scale, corners) makes one; r: where the op keeps its attributes.
template <typename Tap>
struct Taps {
  std::vector<Tap> dim[3];

  template <typename MakeTap>
  static int setup(const amber_kernel_args* a, const ResizeAttrs& r, void** state, size_t* workspace_bytes,
                   MakeTap tap) {
    *workspace_bytes = 0;
    const Geometry g = resample::geometry(a->inputs[0], a->outputs[0]);
    const int64_t in[3] = {g.d, g.h, g.w}, out[3] = {g.od, g.oh, g.ow};
    const bool corners = resample::align_corners_of(a, r);
    auto* s = new Taps;
    for (int k = 0; k < 3; ++k) {
      s->dim[k].reserve(size_t(out[k]));
      for (int64_t i = 0; i < out[k]; ++i)
        s->dim[k].push_back(tap(i, in[k], out[k], resample::scale_of(a, r, k), corners));
    }
    *state = s;
    return 0;
  }
  static void destroy(void* state) { delete static_cast<Taps*>(state); }
};

// upsample_nearest2d(self, output_size, scales_h, scales_w) and upsample_nearest3d(self,
// output_size, scales_d, scales_h, scales_w): each dim's source positions.
template <typename T>
struct NearestKernel {
  using State = Taps<int64_t>;
  static int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
    return State::setup(a, resample::resize_attrs::nearest(a->inputs[0].ndim), state, workspace_bytes,
                        [](int64_t i, int64_t in, int64_t out, double scale, bool) {
                          return resample::nearest_source(i, in, out, scale);
                        });
  }
  static constexpr auto destroy = &State::destroy;
  static int run(const amber_kernel_args* a) {
    const Geometry g = resample::geometry(a->inputs[0], a->outputs[0]);
    if (resample::total(g) == 0) return 0;
    const State* s = setup_state<const State>(a, "upsample");
    if (!s) return 1;
    const int64_t *planes = s->dim[0].data(), *rows = s->dim[1].data(), *cols = s->dim[2].data();
    for_each_pixel<T>(a, g, [&](const T* v, int64_t d, int64_t i, int64_t j) {
      return v[planes[d] * g.xs[2] + rows[i] * g.xs[3] + cols[j] * g.xs[4]];
    });
    return 0;
  }
};

// upsample_bilinear2d / upsample_bicubic2d(self, output_size, align_corners, scales_h, scales_w)
// and upsample_trilinear3d(self, output_size, align_corners, scales_d, scales_h, scales_w): a 5-D
// input's planes blended after their pixels (ATen's trilinear).
template <typename T, bool Cubic>
struct Interpolating {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's opmath type
  using Tap = decltype(resample::tap_of<Cubic, A>(0, 1, 1, A(1), false));
  using State = Taps<Tap>;
  static int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
    namespace ra = resample::resize_attrs;
    const int failed = State::setup(a, a->inputs[0].ndim == 5 ? ra::trilinear3d : ra::interp2d, state, workspace_bytes,
                                    [](int64_t i, int64_t in, int64_t out, double scale, bool corners) {
                                      const A step = resample::linear_scale<A>(in, out, corners, scale);
                                      return resample::tap_of<Cubic, A>(i, in, out, step, corners);
                                    });
    *workspace_bytes = held_bytes(a, resample::geometry(a->inputs[0], a->outputs[0]));
    return failed;
  }
  static constexpr auto destroy = &State::destroy;
  static constexpr int kTaps = Cubic ? 4 : 2;  // the input rows (and columns) an output pixel blends
  static int64_t source(const Tap& t, int u) {
    if constexpr (Cubic)
      return t.i[u];
    else
      return u == 0 ? t.i0 : t.i1;
  }
  // 4-D inputs to outputs whose rows are dense along W: each input row the output rows blend
  // resampled along W once (into one of kTaps rows a task holds, the row's index mod kTaps), then
  // each output row summed from them a whole row at a time; the terms and their order blend's.
  // The rows a task holds are its thread's slot of the workspace (held_bytes).
  static bool by_rows_apply(const amber_kernel_args* a, const Geometry& g) {
    return a->inputs[0].ndim == 4 && !g.channels_last && g.ys[4] == 1;
  }
  static size_t held_bytes(const amber_kernel_args* a, const Geometry& g) {
    return by_rows_apply(a, g) ? size_t(std::max(1, a->num_threads) * kTaps * g.ow) * sizeof(A) : 0;
  }
  static void by_rows(const amber_kernel_args* a, const Geometry& g, const Tap* rows, const Tap* cols) {
    const T* x = static_cast<const T*>(a->inputs[0].data);
    T* y = static_cast<T*>(a->outputs[0].data);
    const int threads = std::max(1, a->num_threads);
    ThreadLimit limit(threads);
    CallScratch scratch(a);
    A* slots = scratch.take_array<A>(size_t(threads * kTaps * g.ow));
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow));
    parallel_for_slots(g.n * g.c * g.oh, grain, [&](int thread_slot, int64_t b, int64_t e) {
      A* held = slots + thread_slot * kTaps * g.ow;
      int64_t held_row[kTaps], plane = -1;
      for (int64_t r = b; r < e; ++r) {
        if (r / g.oh != plane) {
          plane = r / g.oh;
          std::fill_n(held_row, kTaps, int64_t(-1));
        }
        const int64_t n = plane / g.c, c = plane % g.c, i = r % g.oh;
        const A* line[kTaps];
        for (int u = 0; u < kTaps; ++u) {
          const int64_t src = source(rows[i], u), slot = src % kTaps;
          A* at = held + slot * g.ow;
          if (held_row[slot] != src) {
            const T* in = x + n * g.xs[0] + c * g.xs[1] + src * g.xs[3];
            for (int64_t j = 0; j < g.ow; ++j) at[j] = resample::blend_row<A>(in, cols[j], g.xs[4]);
            held_row[slot] = src;
          }
          line[u] = at;
        }
        T* out = y + n * g.ys[0] + c * g.ys[1] + i * g.ys[3];
        for (int64_t j = 0; j < g.ow; ++j) {
          A t[kTaps];
          for (int u = 0; u < kTaps; ++u) t[u] = line[u][j];
          out[j] = T(resample::blend_rows(rows[i], t));
        }
      }
    });
  }
  static int run(const amber_kernel_args* a) {
    const Geometry g = resample::geometry(a->inputs[0], a->outputs[0]);
    if (resample::total(g) == 0) return 0;
    const State* s = setup_state<const State>(a, "upsample");
    if (!s) return 1;
    const auto *planes = s->dim[0].data(), *rows = s->dim[1].data(), *cols = s->dim[2].data();
    if (by_rows_apply(a, g)) {
      by_rows(a, g, rows, cols);
      return 0;
    }
    if constexpr (!Cubic) {
      if (a->inputs[0].ndim == 5) {
        for_each_pixel<T>(a, g, [&](const T* v, int64_t d, int64_t i, int64_t j) {
          return T(resample::blend3<A>(v, planes[d], rows[i], cols[j], g.xs[2], g.xs[3], g.xs[4]));
        });
        return 0;
      }
    }
    for_each_pixel<T>(a, g, [&](const T* p, int64_t, int64_t i, int64_t j) {
      return T(resample::blend<A>(p, rows[i], cols[j], g.xs[3], g.xs[4]));
    });
    return 0;
  }
};
template <typename T>
using LinearKernel = Interpolating<T, false>;
template <typename T>
using CubicKernel = Interpolating<T, true>;

// upsample_bilinear2d_aa / upsample_bicubic2d_aa(self, output_size, align_corners, scales_h,
// scales_w): each output row's and column's window and its normalised weights (the state), applied
// separably as ATen: every input row resampled along W into the workspace (N, C, H, W_out in A),
// then each output pixel summed along H from it, a whole row at a time where the output's rows are
// dense (ATen's sums, in its order; the CUDA kernels' too).
template <typename A>
struct AaTap {
  resample::AaWindow<A> window;
  std::vector<A> weights;
};
template <typename T, bool Cubic>
struct Antialiased {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // ATen's scalar_t
  using State = Taps<AaTap<A>>;
  static int setup(const amber_kernel_args* a, void** state, size_t* workspace_bytes) {
    const int failed = State::setup(a, resample::resize_attrs::interp2d, state, workspace_bytes,
                                    [](int64_t i, int64_t in, int64_t out, double scale, bool corners) {
                                      const A step = resample::linear_scale<A>(in, out, corners, scale);
                                      AaTap<A> t{resample::aa_window<Cubic, A>(i, in, step), {}};
                                      for (int64_t j = 0; j < t.window.n; ++j)
                                        t.weights.push_back(resample::aa_weight<Cubic, A>(t.window, j));
                                      return t;
                                    });
    const Geometry g = resample::geometry(a->inputs[0], a->outputs[0]);
    *workspace_bytes = across_bytes(g) + tiles_bytes(a, g);  // `across`, then sum_columns' tile per thread
    return failed;
  }
  static constexpr auto destroy = &State::destroy;
  // The first pass: every input row resampled along W into `across`, kLanes rows at a time: their
  // elements interleaved into a tile (W x kLanes, in A; a last block's spare lanes repeat its last
  // row, unstored), so that each output column's sums run on all of them at once, each lane's the
  // one row's (the same terms in the same order: the result is the scalar loop's, bit for bit).
  typedef A V __attribute__((vector_size(16)));  // two of them: a tile's row
  static constexpr int64_t kLanes = 2 * int64_t(16 / sizeof(A));
  static size_t across_bytes(const Geometry& g) { return size_t(g.n * g.c * g.h * g.ow) * sizeof(A); }
  static size_t tiles_bytes(const amber_kernel_args* a, const Geometry& g) {
    return size_t(std::max(1, a->num_threads) * g.w * kLanes) * sizeof(A);
  }
  static void sum_columns(const amber_kernel_args* a, const Geometry& g, const AaTap<A>* cols, A* across,
                          CallScratch& scratch) {
    const T* x = static_cast<const T*>(a->inputs[0].data);
    const int64_t rows = g.n * g.c * g.h, blocks = (rows + kLanes - 1) / kLanes;
    const int threads = std::max(1, a->num_threads);
    ThreadLimit limit(threads);
    A* tiles = scratch.take_array<A>(tiles_bytes(a, g) / sizeof(A));
    const int64_t grain = std::max<int64_t>(1, 512 / std::max<int64_t>(1, g.ow));
    parallel_for_slots(blocks, grain, [&](int slot, int64_t b, int64_t e) {
      A* tile = tiles + slot * g.w * kLanes;
      for (int64_t block = b; block < e; ++block) {
        const int64_t r0 = block * kLanes, lanes = std::min(kLanes, rows - r0);
        const T* line[kLanes];
        for (int64_t l = 0; l < kLanes; ++l) {
          const int64_t r = r0 + std::min(l, lanes - 1), n = r / (g.c * g.h), c = r / g.h % g.c, h = r % g.h;
          line[l] = x + n * g.xs[0] + c * g.xs[1] + h * g.xs[3];
        }
        for (int64_t w = 0; w < g.w; ++w)
          for (int64_t l = 0; l < kLanes; ++l) tile[w * kLanes + l] = A(line[l][w * g.xs[4]]);
        for (int64_t j = 0; j < g.ow; ++j) {
          const A* in = tile + cols[j].window.lo * kLanes;
          const A* weight = cols[j].weights.data();
          V sum0 = {}, sum1 = {};
          for (int64_t v = 0; v < cols[j].window.n; ++v) {
            V x0, x1;
            std::memcpy(&x0, in + v * kLanes, sizeof(V));
            std::memcpy(&x1, in + v * kLanes + kLanes / 2, sizeof(V));
            sum0 += x0 * weight[v];
            sum1 += x1 * weight[v];
          }
          for (int64_t l = 0; l < lanes; ++l)
            across[(r0 + l) * g.ow + j] = l < kLanes / 2 ? sum0[l] : sum1[l - kLanes / 2];
        }
      }
    });
  }
  // The second pass where the output's rows are dense: each a weighted sum of rows of `across`,
  // summed a whole row at a time (the sums and their order the per-pixel pass's).
  static void sum_rows(const amber_kernel_args* a, const Geometry& g, const A* across, const AaTap<A>* rows) {
    T* y = static_cast<T*>(a->outputs[0].data);
    ThreadLimit limit(std::max(1, a->num_threads));
    parallel_for(g.n * g.c * g.oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t n = r / (g.c * g.oh), c = r / g.oh % g.c, i = r % g.oh;
        const A* src = across + ((n * g.c + c) * g.h + rows[i].window.lo) * g.ow;
        const A* w = rows[i].weights.data();
        T* out = y + n * g.ys[0] + c * g.ys[1] + i * g.ys[3];
        std::fill_n(out, g.ow, A(0));
        for (int64_t u = 0; u < rows[i].window.n; ++u)
          for (int64_t j = 0; j < g.ow; ++j) out[j] += src[u * g.ow + j] * w[u];
      }
    });
  }
  static int run(const amber_kernel_args* a) {
    const Geometry g = resample::geometry(a->inputs[0], a->outputs[0]);
    if (resample::total(g) == 0) return 0;
    const State* s = setup_state<const State>(a, "upsample");
    if (!s) return 1;
    const AaTap<A>*rows = s->dim[1].data(), *cols = s->dim[2].data();
    CallScratch scratch(a);
    A* across = scratch.take_array<A>(across_bytes(g) / sizeof(A));
    sum_columns(a, g, cols, across, scratch);
    if constexpr (std::is_same_v<T, A>) {
      if (!g.channels_last && g.ys[4] == 1) {  // output rows dense along W
        sum_rows(a, g, across, rows);
        return 0;
      }
    }
    Geometry along = g;  // the workspace as the second pass's input: (N, C, 1, H, W_out), dense
    along.xs[0] = g.c * g.h * g.ow, along.xs[1] = g.h * g.ow, along.xs[2] = 0, along.xs[3] = g.ow, along.xs[4] = 1;
    for_each_pixel<T>(a, along, static_cast<const A*>(across), [&](const A* p, int64_t, int64_t i, int64_t j) {
      const A* w = rows[i].weights.data();
      const A* column = p + rows[i].window.lo * g.ow + j;
      A out = 0;
      for (int64_t u = 0; u < rows[i].window.n; ++u) out += column[u * g.ow] * w[u];
      return T(out);
    });
    return 0;
  }
};
template <typename T>
using BilinearAaKernel = Antialiased<T, false>;
template <typename T>
using BicubicAaKernel = Antialiased<T, true>;

AMBER_CPU_KERNELS(upsample) {
  register_typed_setup<NearestKernel>(ctypes::numeric{}, "upsample_nearest2d");
  register_typed_setup<NearestKernel>(ctypes::numeric{}, "upsample_nearest3d");
  register_typed_setup<LinearKernel>(ctypes::floating{}, "upsample_trilinear3d");
  register_typed_setup<LinearKernel>(ctypes::floating{}, "upsample_bilinear2d");
  register_typed_setup<CubicKernel>(ctypes::floating{}, "upsample_bicubic2d");
  register_typed_setup<BilinearAaKernel>(ctypes::floating{}, "upsample_bilinear2d_aa");
  register_typed_setup<BicubicAaKernel>(ctypes::floating{}, "upsample_bicubic2d_aa");
}

}  // namespace
}  // namespace amber::cpu
