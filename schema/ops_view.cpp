// Op table entries for view ops: view, reshape, permute, transpose, slice, select,
// unsqueeze, squeeze, expand, flatten, contiguous. Each has an inference function (sizes)
// and a layout function (strides and offset). Semantics follow ATen's ops of the same name,
// including computeStride's rule for when view/reshape can alias.

#include <algorithm>
#include <optional>

#include "amber/schema/op_schema.h"

namespace amber {
namespace {

const TensorMeta& self(const InferCtx& c) { return c.in(0); }

// ATen's infer_size: resolves one -1 and checks the element count.
DimVec infer_view_size(const InferCtx& c, const std::vector<int64_t>& shape) {
  const DimVec& in = self(c).sizes;
  const int64_t numel = checked_numel(in);
  DimVec out(shape);
  int infer_at = -1;
  int64_t known = 1;
  for (int i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      c.check(infer_at < 0, "only one dimension can be inferred, got shape ", out);
      infer_at = i;
    } else {
      c.check(out[i] >= 0, "invalid shape dimension ", out[i], " in ", out);
      known = checked_mul(known, out[i], "view size");
    }
  }
  if (infer_at >= 0) {
    c.check(known != 0, "cannot reshape tensor of 0 elements into shape ", out,
            " because the unspecified dimension size -1 can be any value and is ambiguous");
    c.check(numel % known == 0, "shape ", out, " is invalid for input of size ", numel, " (input shape ", in, ")");
    out[infer_at] = numel / known;
  } else {
    c.check(known == numel, "shape ", out, " is invalid for input of size ", numel, " (input shape ", in, ")");
  }
  return out;
}

// ATen's computeStride: strides for viewing (old sizes, old strides) as new sizes, or
// nullopt when the view would need a copy.
std::optional<DimVec> compute_view_strides(const DimVec& oldshape, const DimVec& oldstride, const DimVec& newshape) {
  DimVec newstride = DimVec::filled(newshape.size(), 1);
  if (oldshape.empty()) return newstride;
  const int64_t numel = checked_numel(oldshape);
  if (numel == 0 && oldshape == newshape) return oldstride;
  if (numel == 0) {
    for (int d = newshape.size() - 1; d >= 0; --d)
      newstride[d] = d == newshape.size() - 1 ? 1 : std::max<int64_t>(newshape[d + 1], 1) * newstride[d + 1];
    return newstride;
  }
  int view_d = newshape.size() - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = oldshape.size() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

// ---- view / reshape / flatten ----
void infer_view(InferCtx& c) { c.add_output(self(c).dtype, infer_view_size(c, c.attr("size").ints())); }
void infer_reshape(InferCtx& c) { c.add_output(self(c).dtype, infer_view_size(c, c.attr("shape").ints())); }

bool layout_to_output_shape(const InferCtx& c, const Layout& in, int, Layout& out) {
  out.sizes = c.outputs().begin()->sizes;
  auto st = compute_view_strides(in.sizes, in.strides, out.sizes);
  if (!st) return false;
  out.strides = *st;
  out.offset = in.offset;
  return true;
}

void infer_flatten(InferCtx& c) {
  const DimVec& in = self(c).sizes;
  if (in.empty()) {
    c.add_output(self(c).dtype, DimVec{1});
    return;
  }
  const int s = c.wrap(c.attr("start_dim").i(), in.size()), e = c.wrap(c.attr("end_dim").i(), in.size());
  c.check(s <= e, "start_dim ", c.attr("start_dim").i(), " cannot come after end_dim ", c.attr("end_dim").i());
  DimVec out;
  for (int i = 0; i < s; ++i) out.push_back(in[i]);
  int64_t m = 1;
  for (int i = s; i <= e; ++i) m = checked_mul(m, in[i], "flatten");
  out.push_back(m);
  for (int i = e + 1; i < in.size(); ++i) out.push_back(in[i]);
  c.add_output(self(c).dtype, out);
}

// ---- contiguous ----
void infer_same(InferCtx& c) { c.add_output(self(c).dtype, self(c).sizes); }
bool layout_contiguous(const InferCtx&, const Layout& in, int, Layout& out) {
  if (!is_contiguous(in.sizes, in.strides)) return false;
  out = in;
  return true;
}

// ---- permute / transpose ----
std::vector<int> permutation(const InferCtx& c) {
  const int nd = self(c).sizes.size();
  const auto& dims = c.attr("dims").ints();
  c.check(int(dims.size()) == nd, "number of dims in permutation ", DimVec(dims), " does not match the rank of input ",
          self(c).sizes);
  std::vector<int> p(static_cast<size_t>(nd));
  std::vector<bool> seen(static_cast<size_t>(nd), false);
  for (int i = 0; i < nd; ++i) {
    const int d = c.wrap(dims[size_t(i)], nd);
    c.check(!seen[size_t(d)], "dim ", dims[size_t(i)], " repeats in permutation ", DimVec(dims));
    seen[size_t(d)] = true;
    p[size_t(i)] = d;
  }
  return p;
}
void infer_permute(InferCtx& c) {
  DimVec out;
  for (int d : permutation(c)) out.push_back(self(c).sizes[d]);
  c.add_output(self(c).dtype, out);
}
bool layout_permute(const InferCtx& c, const Layout& in, int, Layout& out) {
  for (int d : permutation(c)) {
    out.sizes.push_back(in.sizes[d]);
    out.strides.push_back(in.strides[d]);
  }
  out.offset = in.offset;
  return true;
}

std::pair<int, int> transpose_dims(const InferCtx& c) {
  const int nd = self(c).sizes.size();
  return {c.wrap(c.attr("dim0").i(), nd), c.wrap(c.attr("dim1").i(), nd)};
}
void infer_transpose(InferCtx& c) {
  auto [a, b] = transpose_dims(c);
  DimVec out = self(c).sizes;
  if (!out.empty()) std::swap(out[a], out[b]);
  c.add_output(self(c).dtype, out);
}
bool layout_transpose(const InferCtx& c, const Layout& in, int, Layout& out) {
  auto [a, b] = transpose_dims(c);
  out = in;
  if (!out.sizes.empty()) {
    std::swap(out.sizes[a], out.sizes[b]);
    std::swap(out.strides[a], out.strides[b]);
  }
  return true;
}

// ---- slice ----
struct SliceRange {
  int dim;
  int64_t start, length, step;
};
SliceRange slice_range(const InferCtx& c) {
  const DimVec& in = self(c).sizes;
  c.check(!in.empty(), "cannot slice a 0-dimensional tensor");
  const int dim = c.wrap(c.attr("dim").i(), in.size());
  const int64_t size = in[dim];
  const int64_t step = c.attr("step").i();
  c.check(step > 0, "slice step must be positive, got ", step);
  int64_t start = c.attr("start").is_none() ? 0 : c.attr("start").i();
  int64_t end = c.attr("end").is_none() ? size : c.attr("end").i();
  // ATen clamps rather than failing.
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  return {dim, start, (end - start + step - 1) / step, step};
}
void infer_slice(InferCtx& c) {
  SliceRange r = slice_range(c);
  DimVec out = self(c).sizes;
  out[r.dim] = r.length;
  c.add_output(self(c).dtype, out);
}
bool layout_slice(const InferCtx& c, const Layout& in, int, Layout& out) {
  SliceRange r = slice_range(c);
  out = in;
  out.offset = in.offset + r.start * in.strides[r.dim];
  out.sizes[r.dim] = r.length;
  out.strides[r.dim] = in.strides[r.dim] * r.step;
  return true;
}

// ---- select ----
std::pair<int, int64_t> select_index(const InferCtx& c) {
  const DimVec& in = self(c).sizes;
  c.check(!in.empty(), "select() cannot be applied to a 0-dim tensor");
  const int dim = c.wrap(c.attr("dim").i(), in.size());
  int64_t index = c.attr("index").i();
  c.check(index >= -in[dim] && index < in[dim], "index ", index, " is out of range for dimension ", dim, " with size ",
          in[dim], " (input shape ", in, ")");
  if (index < 0) index += in[dim];
  return {dim, index};
}
void infer_select(InferCtx& c) {
  auto [dim, index] = select_index(c);
  DimVec out = self(c).sizes;
  out.erase(dim);
  c.add_output(self(c).dtype, out);
}
bool layout_select(const InferCtx& c, const Layout& in, int, Layout& out) {
  auto [dim, index] = select_index(c);
  out = in;
  out.offset = in.offset + index * in.strides[dim];
  out.sizes.erase(dim);
  out.strides.erase(dim);
  return true;
}

// ---- unsqueeze / squeeze ----
int unsqueeze_dim(const InferCtx& c) { return c.wrap(c.attr("dim").i(), self(c).sizes.size() + 1); }
void infer_unsqueeze(InferCtx& c) {
  DimVec out = self(c).sizes;
  out.insert(unsqueeze_dim(c), 1);
  c.add_output(self(c).dtype, out);
}
bool layout_unsqueeze(const InferCtx& c, const Layout& in, int, Layout& out) {
  const int d = unsqueeze_dim(c);
  out = in;
  const int64_t st = d < in.sizes.size() ? in.sizes[d] * in.strides[d] : 1;
  out.sizes.insert(d, 1);
  out.strides.insert(d, st);
  return true;
}

void infer_squeeze(InferCtx& c) {
  DimVec out;
  for (int64_t s : self(c).sizes)
    if (s != 1) out.push_back(s);
  c.add_output(self(c).dtype, out);
}
bool layout_squeeze(const InferCtx&, const Layout& in, int, Layout& out) {
  for (int i = 0; i < in.sizes.size(); ++i)
    if (in.sizes[i] != 1) {
      out.sizes.push_back(in.sizes[i]);
      out.strides.push_back(in.strides[i]);
    }
  out.offset = in.offset;
  return true;
}
void infer_squeeze_dim(InferCtx& c) {
  DimVec out = self(c).sizes;
  if (!out.empty()) {
    const int d = c.wrap(c.attr("dim").i(), out.size());
    if (out[d] == 1) out.erase(d);
  } else {
    c.wrap(c.attr("dim").i(), 0);
  }
  c.add_output(self(c).dtype, out);
}
bool layout_squeeze_dim(const InferCtx& c, const Layout& in, int, Layout& out) {
  out = in;
  if (!in.sizes.empty()) {
    const int d = c.wrap(c.attr("dim").i(), in.sizes.size());
    if (in.sizes[d] == 1) {
      out.sizes.erase(d);
      out.strides.erase(d);
    }
  }
  return true;
}

// ---- expand ----
void infer_expand(InferCtx& c) {
  const DimVec& in = self(c).sizes;
  const auto& req = c.attr("size").ints();
  c.check(int(req.size()) >= in.size(), "the number of sizes provided (", req.size(),
          ") must be greater or equal to the number of dimensions in the tensor (", in.size(), ")");
  const int lead = int(req.size()) - in.size();
  DimVec out;
  for (int i = 0; i < int(req.size()); ++i) {
    int64_t r = req[size_t(i)];
    if (i < lead) {
      c.check(r >= 0, "the expanded size ", r, " is not allowed in a leading, non-existing dimension ", i);
      out.push_back(r);
      continue;
    }
    const int64_t s = in[i - lead];
    if (r == -1) r = s;
    c.check(s == r || s == 1, "the expanded size of the tensor (", r, ") must match the existing size (", s,
            ") at non-singleton dimension ", i, ".  Target sizes: ", DimVec(req), ".  Tensor sizes: ", in);
    out.push_back(r);
  }
  c.add_output(self(c).dtype, out);
}
bool layout_expand(const InferCtx& c, const Layout& in, int, Layout& out) {
  out.sizes = c.outputs().begin()->sizes;
  const int lead = out.sizes.size() - in.sizes.size();
  for (int i = 0; i < out.sizes.size(); ++i) {
    if (i < lead)
      out.strides.push_back(0);
    else
      out.strides.push_back(in.sizes[i - lead] == out.sizes[i] ? in.strides[i - lead] : 0);
  }
  out.offset = in.offset;
  return true;
}

using namespace op_flags;
const DTypeSet kAll = dtypes::all;

const OpRegistrar registrar{
    {"view(Tensor self, int[] size) -> Tensor", kAll, infer_view, view, layout_to_output_shape, 1,
     "Same data with a new shape; fails when the strides do not allow it (use reshape)."},
    {"reshape(Tensor self, int[] shape) -> Tensor", kAll, infer_reshape, maybe_view, layout_to_output_shape, 1,
     "A view when the strides allow it, otherwise a contiguous copy."},
    {"flatten(Tensor self, int start_dim=0, int end_dim=-1) -> Tensor", kAll, infer_flatten, maybe_view,
     layout_to_output_shape, 1, "Merges dims start_dim..end_dim into one."},
    {"contiguous(Tensor self) -> Tensor", kAll, infer_same, maybe_view, layout_contiguous, 1,
     "Self when already contiguous, otherwise a contiguous copy."},
    {"permute(Tensor self, int[] dims) -> Tensor", kAll, infer_permute, view, layout_permute, 1, "Reorders dims."},
    {"transpose(Tensor self, int dim0, int dim1) -> Tensor", kAll, infer_transpose, view, layout_transpose, 1,
     "Swaps two dims."},
    {"slice(Tensor self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor", kAll, infer_slice, view,
     layout_slice, 1, "Elements start, start+step, ... before end along dim (bounds clamp as in Python)."},
    {"select(Tensor self, int dim, int index) -> Tensor", kAll, infer_select, view, layout_select, 1,
     "The slice at index along dim, with dim removed."},
    {"unsqueeze(Tensor self, int dim) -> Tensor", kAll, infer_unsqueeze, view, layout_unsqueeze, 1,
     "Inserts a dim of size 1."},
    {"squeeze(Tensor self) -> Tensor", kAll, infer_squeeze, view, layout_squeeze, 1, "Removes every dim of size 1."},
    {"squeeze.dim(Tensor self, int dim) -> Tensor", kAll, infer_squeeze_dim, view, layout_squeeze_dim, 1,
     "Removes dim when its size is 1."},
    {"expand(Tensor self, int[] size) -> Tensor", kAll, infer_expand, view, layout_expand, 1,
     "Broadcasts size-1 dims (stride 0) and adds leading dims; -1 keeps a size."},
};

}  // namespace
}  // namespace amber
