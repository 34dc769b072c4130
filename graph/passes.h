// Graph passes, one per file in graph/passes/, each tested text-in/text-out with the
// verifier run after it. optimize() is the pipeline the tracer runs before saving.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "amber/graph/graph.h"

namespace amber::graph {

// For the passes: the value of a one-element constant (an f32 one as the shortest decimal that
// is that float: an exporter's 1e-05, not 9.999999747378752e-06), or nullopt.
std::optional<double> constant_scalar(const Value* v);
// For the passes: the values the graph returns (each must survive a rewrite, whatever reads it).
std::set<const Value*> output_values(const Graph& g);
// v's one reader, where v has exactly one and is not among `outputs` (output_values(g): a pass
// may then fold v into that reader and drop it), else nullptr.
Node* sole_reader(const Value* v, const std::set<const Value*>& outputs);

// Bypasses ops that are the identity at inference (dropout with train=false, zero pads,
// one-tensor cats).
void remove_identities(Graph& g);
// Removes nodes whose outputs nothing uses, and unused constants.
void eliminate_dead_code(Graph& g);
// Merges nodes with the same op, inputs and attributes.
void eliminate_common_subexpressions(Graph& g);
// Evaluates nodes whose inputs are all constants (and factories with static sizes) into
// constants, unless the result would be larger than max(its inputs, max_new_elements).
void fold_constants(Graph& g, int64_t max_new_elements = 4096);
// conv2d followed by inference batch_norm with constant parameters becomes one conv2d
// with scaled weights and a new bias (PyTorch's fuse_conv_bn_weights).
void fold_batch_norm(Graph& g);
// add(linear(x, W, None), b) with b a constant of the layer's out_features values (an ONNX
// MatMul + Add) becomes linear(x, W, b).
void fold_linear_bias(Graph& g);
// matmul(softmax(scores, -1), v) with scores = matmul(q, k^T) scaled by 1 / sqrt(E) (on q
// or on the scores) and optionally masked becomes scaled_dot_product_attention.
void fuse_attention(Graph& g);
// scaled_dot_product_attention's output with its heads moved next to their values and merged
// (transpose(-3, -2) then a reshape) becomes attention_merge_heads (then the reshape, now a
// view, when it was to another shape than [*, L, H * Ev]).
void merge_attention_heads(Graph& g);
// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) over the last dim, optionally times a
// [D] weight plus a [D] bias, becomes layer_norm.
void fuse_layer_norm(Graph& g);
// x * (erf(x / sqrt(2)) + 1) * 0.5 (ONNX exporters' GELU, in its operand orders) becomes
// gelu(x).
void fuse_gelu(Graph& g);
// layer_norm(a + b) with a and b of one type, the sum read by nothing else, becomes
// add_layer_norm(a, b) (a post-norm residual connection and its norm).
void fuse_residual_norm(Graph& g);
// Chains of f32 pointwise ops whose intermediates have a single consumer become one
// `fused` node (program encoding in docs/OPS.md).
void fuse_pointwise(Graph& g);
// fuse_pointwise, and each lone f32 pointwise node a one-node `fused` node too (half_model:
// `fused` reads and writes 16-bit values itself on every device, where a lone op's kernel would
// run in f32 between conversions).
void fuse_pointwise_all(Graph& g);
// conv2d or linear whose f32 output only an activation reads (relu, relu6, hardtanh or clamp
// with bounds in order, silu, hardswish, or a one-input fused program spelling one) becomes
// fused_conv2d or fused_linear.
void fuse_product_activation(Graph& g);
// max_pool2d of a channel cat read by nothing else becomes a cat of max_pool2d's.
void pool_before_cat(Graph& g);

// Inserts a `to` node before every input the dispatcher would convert to the node's compute
// dtype (type promotion), so each node's inputs already have its kernel's dtype. Needs a
// static graph (the loader runs it on each instantiation).
void materialize_casts(Graph& g);

// The whole model in a 16-bit float (f16 or bf16; LoadOptions::precision bf16_model and
// f16_model): f32 weights rounded to it once, f32 inputs converted as they enter and outputs
// back to f32 as they leave (the signature is unchanged), and every value the model computed
// in f32 computed and stored in it, each node's types from the op table's inference. Explicit
// `to` nodes stay as written; a node that cannot take it (control flow, an op not listing it)
// runs in f32 between conversions; under f16 a weight with a finite value beyond f16's range
// stays f32 (its readers compute in f32). Lone f32 pointwise nodes become one-node `fused`
// programs first (fuse_pointwise_all): the same arithmetic, rounded once. Needs the graph's
// constants' data.
void half_model(Graph& g, DType half);

// The pipeline: constant folding, batch-norm and linear-bias folding, CSE, attention (and its
// heads' merge), layer-norm, residual-norm and pointwise fusion, DCE.
void optimize(Graph& g);

// Liveness-based buffer planning for a static graph: every intermediate that owns memory
// (kernel outputs, and maybe-view copies) gets an offset in one arena; values whose
// lifetimes do not overlap share memory. Views alias their base, extending its lifetime;
// so does a pointwise node's output written in place of an input that dies there (same
// layout and element size). Graph outputs (and the buffers they view) are left out:
// callers own them.
struct BufferAssignment {
  const Value* value;
  size_t offset, bytes;
  int first, last;  // node indices: produced by `first`, last read by `last`
};
struct MemoryPlan {
  size_t arena_bytes = 0;                      // the arena's size
  size_t naive_bytes = 0;                      // the sum of all planned buffers
  std::vector<BufferAssignment> buffers;       // in node order
  std::map<const Value*, const Value*> views;  // view value -> the value owning its memory
  std::set<const Value*> in_place;             // those of `views` that are pointwise outputs
  // Every value's layout; a view's offset counts elements from its owner's start.
  std::map<const Value*, Layout> layouts;
};
inline constexpr size_t kBufferAlignment = 64;
MemoryPlan plan_memory(const Graph& g);
std::string to_text(const MemoryPlan& p);

}  // namespace amber::graph
