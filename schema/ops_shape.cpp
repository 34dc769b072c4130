// Op table entries that join, split and gather tensors: cat, stack, split, split_with_sizes,
// chunk (views), index_select, gather, scatter (src, value, add, reduce), flip, pad, roll, repeat,
// and the triangles tril and triu. cat and stack promote mixed dtypes as PyTorch; their kernels
// convert each input while copying, so no cast runs first.

#include "amber/schema/infer_util.h"

namespace amber {
namespace {

DType list_result_type(const InferCtx& c) {
  ResultType rt;
  for (int i = 0; i < c.num_inputs(); ++i) rt.add(c.in(i).dtype, Priority::dimensioned);
  return rt.result();
}

// A 1-D tensor with no elements is skipped by cat, as in PyTorch (legacy behaviour).
bool skipped_by_cat(const TensorMeta& m) { return m.sizes.size() == 1 && m.sizes[0] == 0; }

void infer_cat(InferCtx& c) {
  int ref = -1;
  for (int i = 0; i < c.num_inputs() && ref < 0; ++i)
    if (!skipped_by_cat(c.in(i))) ref = i;
  const DType t = list_result_type(c);
  if (ref < 0) {  // every input is an empty 1-D tensor
    c.add_output(t, DimVec{0});
  } else {
    const DimVec& r = c.in(ref).sizes;
    c.check(!r.empty(), "zero-dimensional tensor (at position ", ref, ") cannot be concatenated");
    const int dim = c.wrap(c.attr("dim").i(), r.size());
    DimVec out = r;
    out[dim] = 0;
    for (int i = 0; i < c.num_inputs(); ++i) {
      const DimVec& s = c.in(i).sizes;
      if (skipped_by_cat(c.in(i))) continue;
      c.check(s.size() == r.size(), "tensors must have the same number of dimensions: got ", r.size(), " and ",
              s.size(), " (tensor ", i, ")");
      for (int d = 0; d < r.size(); ++d)
        c.check(d == dim || s[d] == r[d], "sizes of tensors must match except in dimension ", dim, ". Expected size ",
                r[d], " but got size ", s[d], " for tensor number ", i, " in the list");
      out[dim] = checked_add(out[dim], s[dim], "cat");
    }
    // Channels-last when every input is, as ATen keeps a memory format all inputs share (the
    // convolutions around a 4-D cat then need no layout change)
    bool channels_last = out.size() == 4;
    for (int i = 0; i < c.num_inputs(); ++i)
      if (!skipped_by_cat(c.in(i))) channels_last = channels_last && c.in(i).format == MemoryFormat::channels_last;
    c.add_output(t, out).format = channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous;
  }
  c.compute_dtype = t;
  c.cast_mask = 0;
}

void infer_stack(InferCtx& c) {
  const DimVec& r = c.in(0).sizes;
  for (int i = 1; i < c.num_inputs(); ++i)
    c.check(c.in(i).sizes == r, "expects each tensor to be equal size, but got ", r, " at entry 0 and ", c.in(i).sizes,
            " at entry ", i);
  const int dim = c.wrap(c.attr("dim").i(), r.size() + 1);
  DimVec out = r;
  out.insert(dim, c.num_inputs());
  c.compute_dtype = list_result_type(c);
  c.add_output(c.compute_dtype, out);
  c.cast_mask = 0;
}

// ---- split / split_with_sizes / chunk: views along one dim ----
struct Pieces {
  int dim;
  std::vector<int64_t> sizes;
};

Pieces split_pieces(const InferCtx& c, int64_t split_size) {
  const DimVec& in = c.in(0).sizes;
  c.check(!in.empty(), "cannot split a 0-dimensional tensor");
  const int dim = c.wrap(c.attr("dim").i(), in.size());
  const int64_t n = in[dim];
  c.check(split_size > 0 || (split_size == 0 && n == 0), "split_size can only be 0 if dimension size is 0, but got ",
          split_size);
  Pieces p{dim, {}};
  const int64_t count = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  c.check(count <= 1'000'000, "split would produce ", count, " pieces");
  for (int64_t i = 0; i < count; ++i) p.sizes.push_back(split_size == 0 ? 0 : std::min(split_size, n - i * split_size));
  return p;
}

Pieces pieces_of(const InferCtx& c) {
  const std::string& name = c.op().name;
  if (name == "split") return split_pieces(c, c.attr("split_size").i());
  if (name == "chunk") {
    const int64_t chunks = c.attr("chunks").i();
    c.check(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
    const DimVec& in = c.in(0).sizes;
    c.check(!in.empty(), "chunk expects at least a 1-dimensional tensor");
    const int dim = c.wrap(c.attr("dim").i(), in.size());
    if (in[dim] == 0) return Pieces{dim, std::vector<int64_t>(size_t(chunks), 0)};
    return split_pieces(c, (in[dim] + chunks - 1) / chunks);
  }
  // split_with_sizes
  const DimVec& in = c.in(0).sizes;
  c.check(!in.empty(), "cannot split a 0-dimensional tensor");
  const int dim = c.wrap(c.attr("dim").i(), in.size());
  int64_t total = 0;
  for (int64_t s : c.attr("split_sizes").ints()) {
    c.check(s >= 0, "split_with_sizes expects split_sizes to have non-negative entries, got ",
            DimVec(c.attr("split_sizes").ints()));
    total = checked_add(total, s, "split_with_sizes");
  }
  c.check(total == in[dim], "split_with_sizes expects split_sizes to sum exactly to ", in[dim],
          " (input tensor's size at dimension ", dim,
          "), but got split_sizes=", DimsText{c.attr("split_sizes").ints()});
  return Pieces{dim, c.attr("split_sizes").ints()};
}

void infer_split(InferCtx& c) {
  const Pieces p = pieces_of(c);
  for (int64_t s : p.sizes) {
    DimVec out = c.in(0).sizes;
    out[p.dim] = s;
    c.add_output(c.in(0).dtype, out);
  }
}

bool layout_split(const InferCtx& c, const Layout& in, int output, Layout& out) {
  const Pieces p = pieces_of(c);
  int64_t start = 0;
  for (int i = 0; i < output; ++i) start += p.sizes[size_t(i)];
  out = in;
  out.offset = in.offset + start * in.strides[p.dim];
  out.sizes[p.dim] = p.sizes[size_t(output)];
  return true;
}

void infer_index_select(InferCtx& c) {
  const TensorMeta &x = c.in(0), &idx = c.in(1);
  c.check(idx.dtype == DType::i64 || idx.dtype == DType::i32, "index must be i64 or i32, got ", idx.dtype);
  c.check(idx.sizes.size() <= 1, "index must be 0-D or 1-D, got shape ", idx.sizes);
  DimVec out = x.sizes;
  if (!out.empty()) {
    const int dim = c.wrap(c.attr("dim").i(), x.sizes.size());
    out[dim] = idx.sizes.empty() ? 1 : idx.sizes[0];
  } else {
    c.wrap(c.attr("dim").i(), 0);
  }
  c.add_output(x.dtype, out);
  c.compute_dtype = x.dtype;
  c.cast_mask = 0;
}

// gather's and scatter's index (input 1) against self (input 0) along attribute 0's dim:
// i64 or i32, self's dims, no larger than self but along dim. Returns the wrapped dim.
int check_index(InferCtx& c) {
  const TensorMeta &x = c.in(0), &idx = c.in(1);
  c.check(idx.dtype == DType::i64 || idx.dtype == DType::i32, "index must be i64 or i32, got ", idx.dtype);
  c.check(idx.sizes.size() == x.sizes.size(), "index must have as many dims as self: index ", idx.sizes, ", self ",
          x.sizes);
  const int dim = c.wrap(c.attr("dim").i(), x.sizes.size());
  for (int d = 0; d < int(x.sizes.size()); ++d)
    c.check(d == dim || idx.sizes[d] <= x.sizes[d], "index ", idx.sizes, " is larger than self ", x.sizes, " in dim ",
            d, " (only dim ", dim, " may be)");
  return dim;
}

void infer_gather(InferCtx& c) {
  const TensorMeta &x = c.in(0), &idx = c.in(1);
  check_index(c);
  c.add_output(x.dtype, idx.sizes);
  c.compute_dtype = x.dtype;
  c.cast_mask = 0;
}

// scatter / scatter_add(self, index, src, dim) and scatter.value(self, index, dim, value):
// ATen's scatter_shape_check; the result has self's shape and dtype.
void infer_scatter(InferCtx& c) {
  const TensorMeta &x = c.in(0), &idx = c.in(1);
  check_index(c);
  if (c.has_input(2)) {
    const TensorMeta& src = c.in(2);
    c.check(src.dtype == x.dtype, "src dtype ", src.dtype, " differs from self dtype ", x.dtype);
    c.check(src.sizes.size() == x.sizes.size(), "src must have as many dims as self: src ", src.sizes, ", self ",
            x.sizes);
    for (int d = 0; d < int(x.sizes.size()); ++d)
      c.check(idx.sizes[d] <= src.sizes[d], "index ", idx.sizes, " is larger than src ", src.sizes, " in dim ", d);
  }
  c.add_output(x.dtype, x.sizes);
  c.compute_dtype = x.dtype;
  c.cast_mask = 0;
}

void infer_flip(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  uint32_t seen = 0;
  for (int64_t d : c.attr("dims").ints()) {
    const int w = c.wrap(d, x.sizes.size());
    c.check(!(seen & (1u << w)), "dim ", w, " appears multiple times in dims ", c.attr("dims"));
    seen |= 1u << w;
  }
  c.add_output(x.dtype, x.sizes);
}

// pad(self, pad, mode, value): pad holds (before, after) pairs from the last dim backwards.
void infer_pad(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const std::vector<int64_t>& p = c.attr("pad").ints();
  const std::string& mode = c.attr("mode").s();
  c.check(p.size() % 2 == 0, "pad must hold a (before, after) pair per padded dim, last dim first; got ",
          c.attr("pad"));
  c.check(p.size() / 2 <= size_t(x.sizes.size()), "pad ", c.attr("pad"), " pads ", p.size() / 2, " dims but self has ",
          x.sizes.size(), " (shape ", x.sizes, ")");
  DimVec out = x.sizes;
  for (size_t k = 0; k < p.size() / 2; ++k) {
    const size_t d = size_t(x.sizes.size()) - 1 - k;
    const int64_t before = p[2 * k], after = p[2 * k + 1], size = x.sizes[d];
    if (mode != "constant")
      c.check(before >= 0 && after >= 0, mode, " padding (", before, ", ", after, ") of dim ", d,
              " is negative: only constant padding crops");
    if (mode == "reflect")
      c.check(before < size && after < size, "reflect padding (", before, ", ", after, ") of dim ", d,
              " must be less than its size ", size, " (self ", x.sizes, ")");
    if (mode == "replicate")
      c.check(size > 0 || before + after == 0, "replicate padding of dim ", d, " needs a non-empty dim (self ", x.sizes,
              ")");
    if (mode == "circular")
      c.check(before <= size && after <= size, "circular padding (", before, ", ", after, ") of dim ", d,
              " wraps around more than once: at most its size ", size, " (self ", x.sizes, ")");
    out[d] = checked_add(checked_add(size, before, "pad"), after, "pad");
    c.check(out[d] >= 0, "padding (", before, ", ", after, ") of dim ", d, " of size ", size, " gives a negative size ",
            out[d]);
  }
  c.add_output(x.dtype, out);
  c.compute_dtype = x.dtype;
  c.cast_mask = 0;
}

void infer_roll(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const std::vector<int64_t>&shifts = c.attr("shifts").ints(), &dims = c.attr("dims").ints();
  c.check(!dims.empty(), "roll needs dims (the eager roll flattens for none)");
  c.check(!x.sizes.empty(), "a 0-d self has no dim to roll along (dims ", c.attr("dims"), "), as in PyTorch");
  c.check(shifts.size() == dims.size(), "shifts ", c.attr("shifts"), " and dims ", c.attr("dims"),
          " must have the same length");
  for (int64_t d : dims) c.wrap(d, x.sizes.size());
  c.add_output(x.dtype, x.sizes);
}

void infer_repeat(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  const std::vector<int64_t>& r = c.attr("repeats").ints();
  c.check(r.size() >= size_t(x.sizes.size()), "repeats ", c.attr("repeats"),
          " must have at least as many entries as self has dims (shape ", x.sizes, ")");
  DimVec out;
  const size_t lead = r.size() - size_t(x.sizes.size());
  for (size_t d = 0; d < r.size(); ++d) {
    c.check(r[d] >= 0, "repeats ", c.attr("repeats"), " must not be negative");
    out.push_back(d < lead ? r[d] : checked_mul(x.sizes[d - lead], r[d], "repeat"));
  }
  c.add_output(x.dtype, out);
}

void infer_triangle(InferCtx& c) {
  const TensorMeta& x = c.in(0);
  c.check(x.sizes.size() >= 2, "the input must have at least 2 dims (a matrix or a batch of them), got shape ",
          x.sizes);
  c.add_output(x.dtype, x.sizes);
}

using namespace op_flags;
const DTypeSet kAll = dtypes::all;

const OpRegistrar registrar{
    {"cat(Tensor[] tensors, int dim=0) -> Tensor", kAll, infer_cat, 0, nullptr, 1,
     "Concatenates along dim, promoting dtypes; empty 1-D tensors are skipped (as PyTorch). The kernel is keyed by "
     "the result dtype."},
    {"stack(Tensor[] tensors, int dim=0) -> Tensor", kAll, infer_stack, 0, nullptr, 1,
     "Stacks equal-shaped tensors along a new dim, promoting dtypes."},
    {"split(Tensor self, int split_size, int dim=0) -> Tensor[]", kAll, infer_split, view, layout_split, 1,
     "Views of split_size elements along dim (the last may be smaller)."},
    {"split_with_sizes(Tensor self, int[] split_sizes, int dim=0) -> Tensor[]", kAll, infer_split, view, layout_split,
     1, "Views of the given sizes along dim."},
    {"chunk(Tensor self, int chunks, int dim=0) -> Tensor[]", kAll, infer_split, view, layout_split, 1,
     "At most `chunks` views of ceil(size/chunks) elements along dim."},
    {"index_select(Tensor self, Tensor index, int dim) -> Tensor", kAll, infer_index_select, 0, nullptr, 1,
     "Entries of self at index (i64 or i32) along dim (tensor arguments first, unlike ATen)."},
    {"gather(Tensor self, Tensor index, int dim) -> Tensor", kAll, infer_gather, 0, nullptr, 1,
     "out[i][j][k] = self[index[i][j][k]][j][k] for dim 0 (and so on): index (i64 or i32) has self's dims, no larger "
     "than self's except along dim (tensor arguments first, unlike ATen)."},
    {"scatter(Tensor self, Tensor index, Tensor src, int dim) -> Tensor", kAll, infer_scatter, 0, nullptr, 1,
     "self with out[index[i][j][k]][j][k] = src[i][j][k] for dim 0 (and so on); index (i64 or i32) no larger than src, "
     "nor than self except along dim; with repeated indices the last write wins (tensor arguments first, unlike "
     "ATen)."},
    {"scatter.value(Tensor self, Tensor index, int dim, Scalar value) -> Tensor", kAll, infer_scatter, 0, nullptr, 1,
     "self with value written where index points along dim, as scatter with a constant src."},
    {"scatter_add(Tensor self, Tensor index, Tensor src, int dim) -> Tensor",
     DTypeSet{DType::f32, DType::f64, DType::i64, DType::i32}, infer_scatter, 0, nullptr, 1,
     "self with src added where index points along dim (repeated indices accumulate; on CUDA in no fixed order)."},
    {"scatter_reduce(Tensor self, Tensor index, Tensor src, int dim, str{sum,prod,mean,amax,amin} reduce, bool "
     "include_self=True) -> Tensor",
     DTypeSet{DType::f32, DType::f64, DType::i64, DType::i32}, infer_scatter, 0, nullptr, 1,
     "self with src folded in where index points along dim by reduce: sum, prod, mean, amax or amin (NaN wins); "
     "include_self false leaves self out of the elements scattered to; integer means floor (torch.scatter_reduce; "
     "sums and products on CUDA in no fixed order)."},
    {"flip(Tensor self, int[] dims) -> Tensor", kAll, infer_flip, 0, nullptr, 1,
     "A copy with the order of elements reversed along each of dims."},
    {"pad(Tensor self, int[] pad, str{constant,reflect,replicate,circular} mode=\"constant\", Scalar value=0) -> "
     "Tensor",
     kAll, infer_pad, 0, nullptr, 1,
     "self padded by pad's (before, after) pairs, last dim first (torch.nn.functional.pad): with value (constant; "
     "negative pads crop), mirrored without the edge (reflect), the edge repeated (replicate) or wrapped around "
     "(circular)."},
    {"roll(Tensor self, int[] shifts, int[] dims) -> Tensor", kAll, infer_roll, 0, nullptr, 1,
     "self's elements shifted along each of dims by its shift, wrapping around (torch.roll with dims; a dim named "
     "twice rolls by both)."},
    {"repeat(Tensor self, int[] repeats) -> Tensor", kAll, infer_repeat, 0, nullptr, 1,
     "self tiled repeats[d] times along each dim (Tensor.repeat; extra leading repeats add dims)."},
    {"tril(Tensor self, int diagonal=0) -> Tensor", kAll, infer_triangle, 0, nullptr, 1,
     "The lower triangle of each matrix in the last two dims: element (i, j) where j - i <= diagonal, zero elsewhere."},
    {"triu(Tensor self, int diagonal=0) -> Tensor", kAll, infer_triangle, 0, nullptr, 1,
     "The upper triangle of each matrix in the last two dims: element (i, j) where j - i >= diagonal, zero elsewhere."},
};

}  // namespace
}  // namespace amber
