// Post-training int8 quantization (quantize.h): finds the candidate nodes, runs the graph on
// the calibration samples through the interpreter, observing the candidates' inputs (their
// extremes, then for `percentile` a histogram over them), and rewrites each candidate with a
// usable range as its quantized op, with int8 weights and their scales as new constants.

#include "amber/tracer/quantize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "amber/core/backend.h"
#include "amber/graph/interpreter.h"
#include "amber/graph/passes.h"
#include "amber/graph/verify.h"

namespace amber {

int QuantizeReport::quantized() const {
  return int(std::count_if(nodes.begin(), nodes.end(), [](const QuantizedNode& n) { return n.quantized; }));
}

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

constexpr int kBins = 2048;

// What the calibration saw of one value: its finite extremes, then (percentile) a histogram
// of its finite values over them.
struct Observed {
  float lo = INFINITY, hi = -INFINITY;
  uint64_t count = 0;
  std::vector<uint64_t> hist;
};

// Calls f(v) for each finite element of t (any dtype but f32 is never a candidate's input).
template <typename F>
void for_each_finite(const Tensor& t, F&& f) {
  const Tensor c = t.contiguous(SrcLoc::none());
  const float* p = c.const_data_ptr<float>(SrcLoc::none());
  for (int64_t i = 0, n = c.numel(); i < n; ++i)
    if (std::isfinite(p[i])) f(p[i]);
}

// Whether a node of this op is a candidate: a convolution or a linear layer.
bool is_candidate(const std::string& op) { return op == "conv2d" || op == "fused_conv2d" || op == "linear"; }

// The candidate's reason to stay f32, or "" when it can be quantized.
std::string unsupported(const Node& n) {
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.inputs[2];
  if (!w->is_constant() || !w->data.defined()) return "its weight is computed, not a constant";
  if (x->type.dtype != DType::f32 || w->type.dtype != DType::f32 || (b && b->type.dtype != DType::f32))
    return "not f32";
  const int64_t out = w->data.size(0), reduction = w->data.numel() / std::max<int64_t>(out, 1);
  if (reduction > AMBER_MAX_INT8_REDUCTION)
    return str("each output sums ", reduction, " products, more than int8's ", AMBER_MAX_INT8_REDUCTION);
  if (n.op->name != "linear" && n.attr("groups").i() > 1 && w->data.size(1) == 1)
    return "depthwise: stays f32 (a few products per element loaded; int8 gains nothing)";
  if (b && !(b->type.shape.size() == 1 && b->type.shape[0] == graph::SymInt(out)))
    return str("a bias of shape ", b->type, " (the quantized ops take one value per output)");
  int64_t finite = 0;
  for_each_finite(w->data, [&](float) { ++finite; });
  if (finite != w->data.numel()) return "its weights hold an infinity or NaN";
  return "";
}

// The calibrated range of one value, widened to hold 0.
std::pair<float, float> range_of(const Observed& o, const QuantizeOptions& opt) {
  if (o.count == 0) return {0.0f, 0.0f};
  float lo = o.lo, hi = o.hi;
  if (opt.calibration == QuantizeOptions::Calibration::percentile && o.hi > o.lo) {
    const double tail = double(o.count) * (100.0 - opt.percentile) / 100.0;
    const double width = (double(o.hi) - double(o.lo)) / kBins;
    double below = 0;
    int first = 0;
    while (first < kBins - 1 && below + double(o.hist[size_t(first)]) <= tail) below += double(o.hist[size_t(first++)]);
    double above = 0;
    int last = kBins - 1;
    while (last > first && above + double(o.hist[size_t(last)]) <= tail) above += double(o.hist[size_t(last--)]);
    lo = std::max(o.lo, float(double(o.lo) + first * width));
    hi = std::min(o.hi, float(double(o.lo) + (last + 1) * width));
  }
  return {std::min(lo, 0.0f), std::max(hi, 0.0f)};
}

// w [out, ...] as int8 with a symmetric scale per output channel: q = round(w / s) in
// [-127, 127], s = max |w[o]| / 127 (0 for a channel of zeros).
std::pair<Tensor, Tensor> quantize_weights(const Tensor& w) {
  const Tensor c = w.contiguous(SrcLoc::none());
  const float* p = c.const_data_ptr<float>(SrcLoc::none());
  const int64_t out = c.size(0), k = c.numel() / std::max<int64_t>(out, 1);
  std::vector<int8_t> q(static_cast<size_t>(c.numel()));
  std::vector<float> scales(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0;
    for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(p[o * k + j]));
    const float s = amax / 127.0f;
    scales[size_t(o)] = s;
    for (int64_t j = 0; j < k; ++j)
      q[size_t(o * k + j)] = s > 0 ? int8_t(std::clamp(std::nearbyint(p[o * k + j] / s), -127.0f, 127.0f)) : int8_t(0);
  }
  return {tensor_from_raw(q.data(), DType::i8, c.sizes()), tensor(scales, {out}, SrcLoc::none())};
}

// A new constant named after `base`, unused in g.
Value* add_constant_like(Graph& g, const Value* base, const std::string& suffix, Tensor data) {
  std::string name = base->name + suffix;
  for (int k = 2; g.find(name); ++k) name = str(base->name, suffix, k);
  return g.add_constant(name, std::move(data), base->source);
}

// Reports each convolution and linear layer in the bodies of g's control-flow nodes (at any
// depth) as staying f32: a body runs once per iteration or branch taken, and its values are
// not observed by the calibration runs.
void report_bodies(const Graph& g, QuantizeReport& report) {
  for (const Node* n : g.nodes())
    for (const auto& body : n->bodies) {
      for (const Node* b : body->nodes()) {
        if (!is_candidate(b->op->name)) continue;
        QuantizedNode r;
        r.value = b->outputs[0]->name;
        r.op = b->op->name;
        r.reason = str("in a body of %", n->outputs.empty() ? std::string("?") : n->outputs[0]->name, " (", n->op->name,
                       "): control-flow bodies stay f32");
        report.nodes.push_back(r);
      }
      report_bodies(*body, report);
    }
}

bool is_graph_output(const Graph& g, const Value* v) {
  for (const auto& [name, out] : g.outputs())
    if (out == v) return true;
  return false;
}

// The activation a quantized op can absorb from the node after it: relu, or clamp / hardtanh
// with number bounds (min <= max), as (lo, hi); nullopt for anything else.
std::optional<std::pair<double, double>> absorbable(const Node& n) {
  const std::string& op = n.op->name;
  if (op == "relu") return std::pair{0.0, double(INFINITY)};
  if (op != "clamp" && op != "hardtanh") return std::nullopt;
  const Attr &lo = n.attr(op == "clamp" ? "min" : "min_val"), &hi = n.attr(op == "clamp" ? "max" : "max_val");
  const double l = lo.is_none() ? -double(INFINITY) : lo.f(), h = hi.is_none() ? double(INFINITY) : hi.f();
  if (!(l <= h)) return std::nullopt;  // NaN bounds, or clamp's lo > hi rule (gives hi)
  return std::pair{l, h};
}

// Whether a node passes uint8 activations through unchanged in meaning (the same scale and
// zero point hold for its output): max_pool2d (the maximum of quantized values is the
// quantized maximum) and the views (view, reshape, flatten, ...) that take u8.
bool passes_u8(const Node& n) {
  if (n.outputs.size() != 1 || n.op->num_tensor_args != 1 || !n.op->dtypes.contains(DType::u8)) return false;
  return n.op->name == "max_pool2d" || n.op->is_view() || n.op->is_maybe_view();
}

// Whether n is an addition quantized_add can take: `add` with alpha 1, or a fused program
// "add(i0, i1)" / "add(i0, i1); relu(t0)", of two f32 inputs of the output's type (no
// broadcasting); sets relu when the program ends in a ReLU.
bool is_addition(const Node& n, bool& relu) {
  relu = false;
  if (n.outputs.size() != 1 || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1]) return false;
  const graph::ValueType& t = n.outputs[0]->type;
  if (t.dtype != DType::f32 || !(n.inputs[0]->type == t) || !(n.inputs[1]->type == t)) return false;
  if (n.op->name == "add") return n.attr("alpha").f() == 1.0;
  if (n.op->name != "fused") return false;
  const std::string& program = n.attr("program").s();
  relu = program == "add(i0, i1); relu(t0)";
  return relu || program == "add(i0, i1)";
}

// A node that may write uint8: an int8 layer (conv2d, fused_conv2d or linear to be quantized)
// or an addition, with the activation after it that it absorbs, and what it then produces.
struct Producer {
  Node* node = nullptr;
  bool addition = false;
  Node* act = nullptr;                              // relu, clamp or hardtanh after it, absorbed
  std::optional<std::pair<double, double>> bounds;  // its clamp bounds (an addition's fused ReLU too)
  Value* out = nullptr;                             // the node's output, or act's
  bool u8 = false;                                  // writes uint8 (decided by the fixpoint of quantize_int8)
  std::vector<Value*> through;                      // the values between `out` and its readers, passed on in uint8
};

// The readers of value u, directly or through nodes that pass uint8 on (their outputs
// appended to `through`): each (node, input index), or nullopt when a graph output is among
// those values or a node of another kind reads one of them.
std::optional<std::vector<std::pair<Node*, size_t>>> readers_of(const Graph& g, Value* u,
                                                                std::vector<Value*>& through) {
  std::vector<std::pair<Node*, size_t>> readers;
  std::vector<Value*> todo{u};
  while (!todo.empty()) {
    Value* v = todo.back();
    todo.pop_back();
    if (is_graph_output(g, v) || v->uses.empty()) return std::nullopt;
    for (Node* user : v->uses) {
      if (std::find(readers.begin(), readers.end(), std::pair{user, size_t(0)}) != readers.end() ||
          std::find(readers.begin(), readers.end(), std::pair{user, size_t(1)}) != readers.end())
        continue;  // a node reading v twice, seen
      if (passes_u8(*user) && user->inputs[0] == v) {
        through.push_back(user->outputs[0]);
        todo.push_back(user->outputs[0]);
        continue;
      }
      for (size_t i = 0; i < user->inputs.size(); ++i)
        if (user->inputs[i] == v) readers.emplace_back(user, i);
    }
  }
  return readers;
}

// Each fused_linear (a linear layer and its activation, the product-activation fusion's) as the
// two nodes it was made of: an int8 linear layer takes its activation only with a uint8 output
// (quantized_linear.u8), so the calibration decides each one as it did before that fusion; what
// stays f32 is fused again at the end. The activation's output keeps the fused node's name.
void split_fused_linear(Graph& g) {
  const OpSchema& linear = op_schema("linear");
  std::vector<Node*> fused;
  for (Node* n : g.nodes())
    if (n->op->name == "fused_linear") fused.push_back(n);
  for (Node* n : fused) {
    Value* y = n->outputs[0];
    const std::string name = y->name, act = n->attr("activation").s();
    const double lo = n->attr("min_val").f(), hi = n->attr("max_val").f();
    Node* product = g.insert_node(n, &linear, n->inputs, {}, {{g.fresh_name(), y->type}});
    const bool relu = act == "clamp" && lo == 0 && hi == double(INFINITY);
    std::vector<Attr> attrs;
    if (act == "clamp" && !relu) attrs = {Attr(Scalar(lo)), Attr(Scalar(hi))};
    Node* a = g.insert_node(n, &op_schema(relu ? "relu" : act), {product->outputs[0]}, std::move(attrs),
                            {{g.fresh_name(), y->type}});
    for (Node* m : {product, a}) {
      m->source = n->source;
      m->scope = n->scope;
    }
    g.replace_uses(y, a->outputs[0]);
    g.remove_node(n);
    a->outputs[0]->name = name;
  }
}

// Runs g over the calibration samples, `chunk` at a time, calling visit(name, tensor) for
// each observed value: graph inputs as they enter, node outputs as they are computed.
template <typename F>
void calibrate(const Graph& g, const std::vector<Tensor>& calibration, int64_t samples, int64_t chunk,
               const std::set<std::string>& observed, F&& visit) {
  graph::Interpreter interpreter(g);
  for (int64_t s0 = 0; s0 < samples; s0 += chunk) {
    const int64_t end = std::min(samples, s0 + chunk);
    std::vector<Tensor> ins;
    for (size_t i = 0; i < calibration.size(); ++i) {
      ins.push_back(calibration[i].slice(0, s0, end, 1, SrcLoc::none()));
      if (observed.count(g.inputs()[i]->name)) visit(g.inputs()[i]->name, ins.back());
    }
    interpreter.run(ins, [&](const Node& n, const std::vector<Tensor>& outs) {
      for (size_t i = 0; i < outs.size(); ++i)
        if (observed.count(n.outputs[i]->name)) visit(n.outputs[i]->name, outs[i]);
    });
  }
}

}  // namespace

QuantizeReport quantize_int8(Graph& g, const std::vector<Tensor>& calibration, const QuantizeOptions& options) {
  AMBER_CHECK(options.percentile > 50 && options.percentile <= 100, "quantize: percentile must be in (50, 100], got ",
              options.percentile);
  AMBER_CHECK(calibration.size() == g.inputs().size(), "quantize: the graph has ", g.inputs().size(),
              " inputs, the calibration data ", calibration.size(), " tensors");
  QuantizeReport report;
  split_fused_linear(g);
  std::vector<Node*> candidates;
  std::set<std::string> observed;
  std::set<const Node*> quantizable;
  for (Node* n : g.nodes()) {
    if (!is_candidate(n->op->name)) continue;
    QuantizedNode r;
    r.value = n->outputs[0]->name;
    r.op = n->op->name;
    r.reason = unsupported(*n);
    report.nodes.push_back(r);
    candidates.push_back(r.reason.empty() ? n : nullptr);
    if (r.reason.empty()) {
      observed.insert(n->inputs[0]->name);
      quantizable.insert(n);
    }
  }
  report_bodies(g, report);  // after the candidates: report.nodes[k] is candidates[k]
  // Nothing to calibrate: the graph stays as it is (whatever the samples' shapes).
  if (observed.empty()) {
    graph::fuse_product_activation(g);
    return report;
  }

  // The chains (options.chain): the nodes that may write uint8 (the int8 layers, and the
  // additions, as quantized_add), each with the activation it absorbs. A producer writes
  // uint8 when every reader of what it produces (through max_pool2d and views) takes uint8: an
  // int8 layer at its input, or an addition that is itself quantized, which it is when both
  // its operands come uint8 and it writes uint8. The greatest set that holds, found by
  // dropping what breaks it until nothing does, first from the graph's shape, then again once
  // the calibration has said which outputs have a usable range.
  std::map<const Node*, Producer> producers;                           // by node, in the order of `order`
  std::vector<Node*> order;                                            // producers in graph order
  std::map<const Value*, const Node*> head_of;                         // a producer's `out` -> the producer
  std::map<const Node*, std::vector<std::pair<Node*, size_t>>> reads;  // a producer's readers
  if (options.chain) {
    for (Node* n : g.nodes()) {
      bool relu = false;
      const bool layer = quantizable.count(n) > 0, addition = !layer && options.additions && is_addition(*n, relu);
      if (!layer && !addition) continue;
      Producer p;
      p.node = n;
      p.addition = addition;
      p.out = n->outputs[0];
      if (relu) p.bounds = std::pair{0.0, double(INFINITY)};
      Value* v = n->outputs[0];
      if (!relu && n->op->name != "fused_conv2d" && !is_graph_output(g, v) && v->uses.size() == 1 &&
          v->uses[0]->inputs[0] == v)
        if (const auto bounds = absorbable(*v->uses[0])) {
          p.act = v->uses[0];
          p.bounds = bounds;
          p.out = p.act->outputs[0];
        }
      const auto readers = readers_of(g, p.out, p.through);
      p.u8 = readers.has_value();
      if (readers) reads[n] = *readers;
      head_of[p.out] = n;
      order.push_back(n);
      producers[n] = std::move(p);
    }
  }
  // The producer whose uint8 output value v is (through max_pool2d and views), or null.
  auto head = [&](const Value* v) -> const Producer* {
    while (v) {
      const auto it = head_of.find(v);
      if (it != head_of.end()) return &producers.at(it->second);
      if (!v->producer || !passes_u8(*v->producer)) return nullptr;
      v = v->producer->inputs[0];
    }
    return nullptr;
  };
  auto u8_input = [&](const Value* v) {
    const Producer* h = head(v);
    return h && h->u8;
  };
  // Drops producers and additions until every uint8 writer's readers take uint8; once
  // calibrated (usable), also those whose output range is unusable and the int8 layers whose
  // f32 input's is (they stay f32 altogether).
  std::function<bool(const std::string&)> usable;
  auto settle = [&]() {
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* n : order) {
        Producer& p = producers.at(n);
        if (!p.u8) continue;
        bool ok = !p.addition || (u8_input(n->inputs[0]) && u8_input(n->inputs[1]));
        for (const auto& [r, i] : reads.at(n)) {
          const auto it = producers.find(r);
          const bool layer_input =
              quantizable.count(r) && i == 0 && std::count(r->inputs.begin(), r->inputs.end(), r->inputs[0]) == 1;
          ok = ok && (layer_input || (it != producers.end() && it->second.addition && it->second.u8));
        }
        if (usable)
          ok = ok && usable(p.out->name) && (p.addition || u8_input(n->inputs[0]) || usable(n->inputs[0]->name));
        if (!ok) {
          p.u8 = false;
          changed = true;
        }
      }
    }
  };
  settle();
  for (Node* n : order)
    if (producers.at(n).u8 || producers.at(n).addition) observed.insert(producers.at(n).out->name);

  int64_t samples = -1, chunk = options.batch;
  for (size_t i = 0; i < calibration.size(); ++i) {
    const Value* in = g.inputs()[i];
    const Tensor& t = calibration[i];
    AMBER_CHECK(t.defined() && t.dim() >= 1 && !in->type.shape.empty(), "quantize: calibration input %", in->name,
                " must stack its samples along the first dim (the input is ", in->type, ")");
    AMBER_CHECK(samples < 0 || t.size(0) == samples, "quantize: calibration input %", in->name, " holds ", t.size(0),
                " samples, the first held ", samples);
    samples = t.size(0);
    if (in->type.shape[0].is_static()) {  // a static batch: runs of exactly it
      const int64_t b = in->type.shape[0].value;
      AMBER_CHECK(options.batch == 0 || options.batch == b, "quantize: input %", in->name, " has a static batch of ", b,
                  "; the batch asked, ", options.batch, ", cannot run");
      chunk = b;
    }
  }
  AMBER_CHECK(samples > 0, "quantize: the calibration data holds no samples");
  if (chunk <= 0) chunk = 32;
  AMBER_CHECK(samples % chunk == 0 || !g.inputs()[0]->type.shape[0].is_static(), "quantize: ", samples,
              " calibration samples do not split into runs of the model's static batch ", chunk);

  report.samples = samples;

  std::map<std::string, Observed> seen;
  calibrate(g, calibration, samples, chunk, observed, [&](const std::string& name, const Tensor& t) {
    Observed& o = seen[name];
    for_each_finite(t, [&](float v) {
      o.lo = std::min(o.lo, v);
      o.hi = std::max(o.hi, v);
      ++o.count;
    });
  });
  if (options.calibration == QuantizeOptions::Calibration::percentile) {
    for (auto& [name, o] : seen) o.hist.assign(kBins, 0);
    calibrate(g, calibration, samples, chunk, observed, [&](const std::string& name, const Tensor& t) {
      Observed& o = seen[name];
      const double w = double(o.hi) - double(o.lo);
      for_each_finite(t, [&](float v) {
        const int bin = w > 0 ? int(std::min<double>(kBins - 1, (double(v) - o.lo) * kBins / w)) : 0;
        ++o.hist[size_t(bin)];
      });
    });
  }

  // A calibrated range's uint8 quantization, or nullopt when it holds no non-zero finite value.
  struct Quant {
    float lo = 0, hi = 0, scale = 0;
    int64_t zero_point = 0;
  };
  auto quant_of = [&](const std::string& value) -> std::optional<Quant> {
    const auto [lo, hi] = range_of(seen[value], options);
    const float scale = (hi - lo) / 255.0f;
    if (!(scale > 0) || !std::isfinite(scale)) return std::nullopt;
    return Quant{lo, hi, scale, int64_t(std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f))};
  };
  usable = [&](const std::string& value) { return quant_of(value).has_value(); };
  settle();
  std::map<const Node*, Quant> out_quant;  // the uint8 writers' output quantization
  for (Node* n : order)
    if (producers.at(n).u8) out_quant[n] = *quant_of(producers.at(n).out->name);
  // A uint8 input's quantization: its head producer's.
  auto input_quant = [&](const Value* v) -> std::optional<Quant> {
    const Producer* h = head(v);
    if (!h || !h->u8) return std::nullopt;
    return out_quant.at(h->node);
  };

  const OpSchema &qconv = op_schema("quantized_conv2d"), &qlinear = op_schema("quantized_linear");
  const OpSchema &qconv_u8 = op_schema("quantized_conv2d.u8"), &qlinear_u8 = op_schema("quantized_linear.u8");
  const OpSchema& qadd = op_schema("quantized_add");
  // Replaces node n (and the activation it absorbs) by op over inputs with attrs, its output
  // (named as the replaced one) of dtype u8 when the producer writes uint8.
  auto replace = [&](Node* n, Node* act, const OpSchema& op, std::vector<Value*> inputs, std::vector<Attr> attrs,
                     bool u8) {
    Value* old = act ? act->outputs[0] : n->outputs[0];
    const std::string name = old->name;
    graph::ValueType type = old->type;
    if (u8) type.dtype = DType::u8;
    Node* q = g.insert_node(n, &op, std::move(inputs), std::move(attrs), {{g.fresh_name(), type}});
    q->source = n->source;
    q->scope = n->scope;
    g.replace_uses(old, q->outputs[0]);
    if (act) g.remove_node(act);
    g.remove_node(n);
    q->outputs[0]->name = name;
  };

  std::map<const Node*, size_t> report_of;
  for (size_t k = 0; k < candidates.size(); ++k)
    if (candidates[k]) report_of[candidates[k]] = k;
  // In graph order: a chain's producers before its readers (their inputs are u8 by then).
  std::vector<Node*> todo;
  for (Node* n : g.nodes())
    if (report_of.count(n) || (producers.count(n) && producers.at(n).addition && producers.at(n).u8)) todo.push_back(n);
  // Each one's uint8 operands' quantization, read before any node is replaced (head_of knows
  // the original values).
  std::map<const Node*, std::array<std::optional<Quant>, 2>> operand_quant;
  for (Node* n : todo)
    for (size_t i = 0; i < std::min<size_t>(2, n->inputs.size()); ++i)
      if (n->inputs[i]) operand_quant[n][i] = input_quant(n->inputs[i]);
  for (Node* n : todo) {
    const auto pit = producers.find(n);
    const Producer* p = pit == producers.end() ? nullptr : &pit->second;
    const bool u8_out = p && p->u8;
    const Quant out = u8_out ? out_quant.at(n) : Quant{};  // (no optional: GCC 12 warns it may be unset)
    if (p && p->addition) {                                // a quantized_add, both operands u8
      AMBER_ASSERT(operand_quant[n][0] && operand_quant[n][1],
                   "quantize: an addition made int8 without uint8 operands");
      const Quant a = *operand_quant[n][0], b = *operand_quant[n][1];
      ++report.additions;
      replace(n, p->act, qadd, {n->inputs[0], n->inputs[1]},
              {Attr(double(a.scale)), Attr(a.zero_point), Attr(double(b.scale)), Attr(b.zero_point),
               Attr(p->bounds ? "clamp" : "none"), Attr(p->bounds ? p->bounds->first : 0.0),
               Attr(p->bounds ? p->bounds->second : 6.0), Attr(double(out.scale)), Attr(out.zero_point)},
              true);
      for (Value* v : p->through) v->type.dtype = DType::u8;
      continue;
    }
    QuantizedNode& r = report.nodes[report_of.at(n)];
    const std::optional<Quant> upstream = operand_quant[n][0];
    r.input_u8 = upstream.has_value();
    const std::optional<Quant> in = r.input_u8 ? upstream : quant_of(n->inputs[0]->name);
    if (!in) {
      r.reason = "its input was never seen with a non-zero finite value";
      continue;
    }
    r.lo = in->lo;
    r.hi = in->hi;
    r.input_scale = in->scale;
    r.input_zero_point = in->zero_point;
    const bool lin = n->op->name == "linear";
    // A linear layer absorbs its activation only into quantized_linear.u8 (the f32 op has none).
    Node* act = p && p->act && (u8_out || !lin) ? p->act : nullptr;
    if (u8_out) {
      r.output_u8 = true;
      r.output_scale = out.scale;
      r.output_zero_point = out.zero_point;
    }
    auto [qw, ws] = quantize_weights(n->inputs[1]->data);
    Value* wq = add_constant_like(g, n->inputs[1], ".int8", std::move(qw));
    Value* wsv = add_constant_like(g, n->inputs[1], ".scale", std::move(ws));
    const bool fused = n->op->name == "fused_conv2d";
    const Attr activation = act ? Attr("clamp") : fused ? n->attr("activation") : Attr("none");
    const Attr min_val = act ? Attr(p->bounds->first) : fused ? n->attr("min_val") : Attr(0.0);
    const Attr max_val = act ? Attr(p->bounds->second) : fused ? n->attr("max_val") : Attr(6.0);
    std::vector<Attr> attrs;
    if (!lin) attrs = {n->attr("stride"), n->attr("padding"), n->attr("dilation"), n->attr("groups")};
    attrs.insert(attrs.end(), {Attr(double(in->scale)), Attr(in->zero_point)});
    if (!lin || u8_out) attrs.insert(attrs.end(), {activation, min_val, max_val});
    if (u8_out) attrs.insert(attrs.end(), {Attr(double(out.scale)), Attr(out.zero_point)});
    if (act) {
      r.folded = act->op->name;
      r.folded_value = act->outputs[0]->name;
    }
    const OpSchema* op = lin ? (u8_out ? &qlinear_u8 : &qlinear) : (u8_out ? &qconv_u8 : &qconv);
    replace(n, act, *op, {n->inputs[0], wq, wsv, n->inputs[2]}, std::move(attrs), u8_out);
    if (u8_out)
      for (Value* v : p->through) v->type.dtype = DType::u8;
    r.quantized = true;
  }
  g.remove_unused_constants();
  graph::fuse_product_activation(g);  // the linear layers left f32 and their activations, as before
  graph::verify_or_throw(g, "the quantized graph");
  return report;
}

}  // namespace amber
