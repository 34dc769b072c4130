// The hand-written eager API checked against the op table: for every op with attributes, a
// call through the eager function (or Tensor method) with a distinct value for each of its
// arguments must reach the op with each value in the attribute of its name and each tensor
// in the input of its name, so a swapped, dropped or misplaced argument fails here. Every
// such op of the table must have an entry (ops the table gains need one).

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "amber/nn/layers.h"
#include "amber/schema/dispatcher.h"
#include "amber/schema/eager.h"
#include "amber/schema/op_library.h"
#include "test_util.h"

using namespace amber;

namespace {

struct Call {
  std::string op;
  std::vector<const TensorImpl*> inputs;  // as the caller passed them (nullptr: absent)
  std::vector<Attr> attrs;
};

// Records the outermost op calls on this thread.
class Recorder : public DispatchHook {
 public:
  void on_op(const OpSchema& op, std::span<const Tensor* const> inputs, std::span<const Attr> attrs,
             std::span<const Tensor> outputs, SrcLoc loc) override {
    Call c{op.name, {}, {attrs.begin(), attrs.end()}};
    for (const Tensor* t : inputs) c.inputs.push_back(t && t->defined() ? t->impl() : nullptr);
    calls.push_back(std::move(c));
  }
  void on_host_read(const Tensor&, const char*, SrcLoc) override {}
  void on_random(const Tensor&, const char*, SrcLoc) override {}
  std::vector<Call> calls;
};

struct Case {
  std::string op;
  std::function<void()> call;
  std::map<std::string, Attr> attrs;     // every attribute of the op, by name
  std::map<std::string, Tensor> inputs;  // tensor arguments checked by identity, by name
};

}  // namespace

TEST_CASE("every eager argument reaches the op argument of its name", "[eager][op_table]") {
  manual_seed(3);
  const Tensor x4 = randn({2, 3, 4, 5}), m = randn({3, 4}), m2 = randn({3, 4}) + 3.0, x5 = randn({1, 2, 2, 3, 4});
  const Tensor gr = rand({2, 3, 2, 2}) * 2.0 - 1.0;          // grid_sample's grid
  const Tensor w4t = randn({3, 2, 2, 2}), b4t = randn({2});  // conv_transpose2d's weight [in, out, kh, kw]
  const Tensor w = randn({3}), b = randn({3}), rm = randn({3}), rv = rand({3}) + 1.0;
  const Tensor cw = randn({6, 1, 2, 2}), cb = randn({6});
  // quantized_conv2d's and quantized_linear's int8 weights and their scales
  const Tensor qw4 = (cw * 50.0).to(DType::i8), qw2 = (randn({6, 4}) * 50.0).to(DType::i8), qs6 = rand({6}) * 0.01;
  const Tensor qa = (rand({2, 3}) * 255.0).to(DType::u8), qb = (rand({2, 3}) * 255.0).to(DType::u8);  // quantized_add's
  const Tensor ln_w = randn({4, 5}), ln_b = randn({4, 5});
  const Tensor lw = randn({6, 4});  // fused_linear's weight [out, in]
  const Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 6}), mask = randn({3, 5});
  const Tensor table = randn({5, 3}), idx = tensor(std::vector<int64_t>{4, 0, 2});
  const Tensor idx2 = tensor(std::vector<int64_t>{3, 0, 2, 1}).reshape({2, 2});
  const Tensor idx4 = zeros({2, 3, 4, 5}, DType::i64);
  const Tensor boxes = tensor({1.0f, 0.5f, 0.5f, 3.0f, 2.5f}).reshape({1, 5});
  const Tensor col = randn({3, 1}), mid = randn({3, 1, 4});
  const Attr none = Attr::none();
  using I = std::vector<int64_t>;
  const std::vector<Case> cases = {
      {"adaptive_avg_pool2d",
       [&] {
         (void)adaptive_avg_pool2d(x4, {2, 3});
       },
       {{"output_size", I{2, 3}}},
       {{"self", x4}}},
      {"add", [&] { (void)add(m, m2, 3); }, {{"alpha", int64_t(3)}}, {{"self", m}, {"other", m2}}},
      {"add.Scalar", [&] { (void)add(m, Scalar(2.5), 4); }, {{"other", 2.5}, {"alpha", int64_t(4)}}, {{"self", m}}},
      {"add_layer_norm",
       [&] {
         (void)add_layer_norm(x4, x4, {4, 5}, ln_w, ln_b, 1e-3);
       },
       {{"normalized_shape", I{4, 5}}, {"eps", 1e-3}},
       {{"input", x4}, {"other", x4}, {"weight", ln_w}, {"bias", ln_b}}},
      {"amax",
       [&] {
         (void)amax(x4, {1, 2}, true);
       },
       {{"dim", I{1, 2}}, {"keepdim", true}},
       {{"self", x4}}},
      {"amin",
       [&] {
         (void)amin(x4, {0, 3}, true);
       },
       {{"dim", I{0, 3}}, {"keepdim", true}},
       {{"self", x4}}},
      {"arange",
       [&] { (void)arange(2, 11, 3, TensorOptions(DType::f64)); },
       {{"start", int64_t(2)}, {"end", int64_t(11)}, {"step", int64_t(3)}, {"dtype", DType::f64}},
       {}},
      {"argmax", [&] { (void)argmax(x4, 2, true); }, {{"dim", int64_t(2)}, {"keepdim", true}}, {{"self", x4}}},
      {"argmin", [&] { (void)argmin(x4, 3, true); }, {{"dim", int64_t(3)}, {"keepdim", true}}, {{"self", x4}}},
      {"attention_merge_heads",
       [&] { (void)attention_merge_heads(q, k, v, mask, 0.0, false); },
       {{"dropout_p", 0.0}, {"is_causal", false}},
       {{"query", q}, {"key", k}, {"value", v}, {"attn_mask", mask}}},
      {"avg_pool2d",
       [&] {
         (void)avg_pool2d(x4, {2, 1}, {1, 2}, {1, 0}, true, false, 3);
       },
       {{"kernel_size", I{2, 1}},
        {"stride", I{1, 2}},
        {"padding", I{1, 0}},
        {"ceil_mode", true},
        {"count_include_pad", false},
        {"divisor_override", int64_t(3)}},
       {{"self", x4}}},
      {"batch_norm",
       [&] { (void)batch_norm(x4, rm, rv, w, b, false, 0.3, 1e-3); },
       {{"training", false}, {"momentum", 0.3}, {"eps", 1e-3}},
       {{"input", x4}, {"weight", w}, {"bias", b}, {"running_mean", rm}, {"running_var", rv}}},
      {"cat",
       [&] {
         (void)cat({m, m2}, 1);
       },
       {{"dim", int64_t(1)}},
       {}},
      {"chunk", [&] { (void)chunk(m, 2, 1); }, {{"chunks", int64_t(2)}, {"dim", int64_t(1)}}, {{"self", m}}},
      {"clamp", [&] { (void)clamp(m, -0.5, 0.75); }, {{"min", -0.5}, {"max", 0.75}}, {{"self", m}}},
      {"conv2d",
       [&] {
         (void)conv2d(x4, cw, cb, {2, 3}, {1, 0}, {1, 2}, 3);
       },
       {{"stride", I{2, 3}}, {"padding", I{1, 0}}, {"dilation", I{1, 2}}, {"groups", int64_t(3)}},
       {{"input", x4}, {"weight", cw}, {"bias", cb}}},
      {"fused_conv2d",
       [&] {
         (void)fused_conv2d(x4, cw, cb, {2, 3}, {1, 0}, {1, 2}, 3, "clamp", -0.5, 1.5);
       },
       {{"stride", I{2, 3}},
        {"padding", I{1, 0}},
        {"dilation", I{1, 2}},
        {"groups", int64_t(3)},
        {"activation", "clamp"},
        {"min_val", -0.5},
        {"max_val", 1.5}},
       {{"input", x4}, {"weight", cw}, {"bias", cb}}},
      {"fused_linear",
       [&] { (void)fused_linear(m, lw, cb, "clamp", -0.25, 2.5); },
       {{"activation", "clamp"}, {"min_val", -0.25}, {"max_val", 2.5}},
       {{"input", m}, {"weight", lw}, {"bias", cb}}},
      {"div", [&] { (void)div(m, m2, "floor"); }, {{"rounding_mode", "floor"}}, {{"self", m}, {"other", m2}}},
      {"div.Scalar",
       [&] { (void)div(m, Scalar(2.0), "trunc"); },
       {{"other", 2.0}, {"rounding_mode", "trunc"}},
       {{"self", m}}},
      {"dropout", [&] { (void)dropout(m, 0.25, false); }, {{"p", 0.25}, {"train", false}}, {{"input", m}}},
      {"elu", [&] { (void)elu(m, 0.7); }, {{"alpha", 0.7}}, {{"self", m}}},
      // The eager function does not expose padding_idx: the op's default.
      {"embedding",
       [&] { (void)embedding(table, idx); },
       {{"padding_idx", int64_t(-1)}},
       {{"weight", table}, {"indices", idx}}},
      {"eq.Scalar", [&] { (void)eq(m, Scalar(0.5)); }, {{"other", 0.5}}, {{"self", m}}},
      {"ne.Scalar", [&] { (void)ne(m, Scalar(0.25)); }, {{"other", 0.25}}, {{"self", m}}},
      {"lt.Scalar", [&] { (void)lt(m, Scalar(1.5)); }, {{"other", 1.5}}, {{"self", m}}},
      {"le.Scalar", [&] { (void)le(m, Scalar(-1.5)); }, {{"other", -1.5}}, {{"self", m}}},
      {"gt.Scalar", [&] { (void)gt(m, Scalar(0.125)); }, {{"other", 0.125}}, {{"self", m}}},
      {"ge.Scalar", [&] { (void)ge(m, Scalar(-0.125)); }, {{"other", -0.125}}, {{"self", m}}},
      {"expand",
       [&] {
         (void)col.expand({3, 4});
       },
       {{"size", I{3, 4}}},
       {{"self", col}}},
      {"flatten",
       [&] { (void)x4.flatten(1, 2); },
       {{"start_dim", int64_t(1)}, {"end_dim", int64_t(2)}},
       {{"self", x4}}},
      {"full",
       [&] {
         (void)full({2, 3}, 1.5, TensorOptions(DType::f64));
       },
       {{"size", I{2, 3}}, {"fill_value", 1.5}, {"dtype", DType::f64}},
       {}},
      {"any",
       [&] {
         (void)any(x4, {1, 3}, true);
       },
       {{"dim", I{1, 3}}, {"keepdim", true}},
       {{"self", x4}}},
      {"all", [&] { (void)all(x4, {-1}); }, {{"dim", I{-1}}, {"keepdim", false}}, {{"self", x4}}},
      {"topk",
       [&] { (void)topk(x4, 2, 1, false, false); },
       {{"k", int64_t(2)}, {"dim", int64_t(1)}, {"largest", false}, {"sorted", false}},
       {{"self", x4}}},
      {"cumsum",
       [&] { (void)cumsum(m, -1, DType::f64); },
       {{"dim", int64_t(-1)}, {"dtype", DType::f64}},
       {{"self", m}}},
      {"gather", [&] { (void)gather(m, -1, idx2); }, {{"dim", int64_t(-1)}}, {{"self", m}, {"index", idx2}}},
      {"gelu", [&] { (void)gelu(m, "tanh"); }, {{"approximate", "tanh"}}, {{"self", m}}},
      {"hardshrink", [&] { (void)hardshrink(m, 0.3); }, {{"lambd", 0.3}}, {{"self", m}}},
      {"hardtanh", [&] { (void)hardtanh(m, -0.5, 2.0); }, {{"min_val", -0.5}, {"max_val", 2.0}}, {{"self", m}}},
      {"index_select",
       [&] { (void)index_select(table, 0, idx); },
       {{"dim", int64_t(0)}},
       {{"self", table}, {"index", idx}}},
      {"layer_norm",
       [&] {
         (void)layer_norm(x4, {4, 5}, ln_w, ln_b, 1e-3);
       },
       {{"normalized_shape", I{4, 5}}, {"eps", 1e-3}},
       {{"input", x4}, {"weight", ln_w}, {"bias", ln_b}}},
      {"leaky_relu", [&] { (void)leaky_relu(m, 0.2); }, {{"negative_slope", 0.2}}, {{"self", m}}},
      // The eager functions do not expose dtype: the op's default.
      {"log_softmax",
       [&] { (void)log_softmax(m, -1, DType::f64); },
       {{"dim", int64_t(-1)}, {"dtype", DType::f64}},
       {{"self", m}}},
      {"softmax",
       [&] { (void)softmax(m, 1, DType::f64); },
       {{"dim", int64_t(1)}, {"dtype", DType::f64}},
       {{"self", m}}},
      {"sum",
       [&] { (void)sum(x4, {1}, false, DType::f64); },
       {{"dim", I{1}}, {"keepdim", false}, {"dtype", DType::f64}},
       {{"self", x4}}},
      {"prod",
       [&] {
         (void)prod(x4, {2, 0}, true, DType::f64);
       },
       {{"dim", I{2, 0}}, {"keepdim", true}, {"dtype", DType::f64}},
       {{"self", x4}}},
      {"prod", [&] { (void)x4.prod({1}); }, {{"dim", I{1}}, {"keepdim", false}, {"dtype", none}}, {{"self", x4}}},
      {"mean",
       [&] {
         (void)mean(x4, {0, 3}, true, DType::f64);
       },
       {{"dim", I{0, 3}}, {"keepdim", true}, {"dtype", DType::f64}},
       {{"self", x4}}},
      {"embedding",
       [&] { (void)embedding(table, idx, 2); },
       {{"padding_idx", int64_t(2)}},
       {{"weight", table}, {"indices", idx}}},
      {"log_softmax", [&] { (void)log_softmax(m, 1); }, {{"dim", int64_t(1)}, {"dtype", none}}, {{"self", m}}},
      {"softmax", [&] { (void)softmax(m, 0); }, {{"dim", int64_t(0)}, {"dtype", none}}, {{"self", m}}},
      {"conv_transpose2d",
       [&] {
         (void)conv_transpose2d(x4, w4t, b4t, {2, 3}, {1, 0}, {1, 2}, 1, {2, 1});
       },
       {{"stride", I{2, 3}},
        {"padding", I{1, 0}},
        {"output_padding", I{1, 2}},
        {"groups", int64_t(1)},
        {"dilation", I{2, 1}}},
       {{"input", x4}, {"weight", w4t}, {"bias", b4t}}},
      {"roi_align",
       [&] {
         (void)roi_align(x4, boxes, {3, 2}, 0.25, 2, true);
       },
       {{"output_size", I{3, 2}}, {"spatial_scale", 0.25}, {"sampling_ratio", int64_t(2)}, {"aligned", true}},
       {{"input", x4}, {"boxes", boxes}}},
      {"max_unpool2d",
       [&] {
         (void)max_unpool2d(x4, idx4, {7, 6});
       },
       {{"output_size", I{7, 6}}},
       {{"self", x4}, {"indices", idx4}}},
      {"max_pool2d_with_indices",
       [&] {
         (void)max_pool2d_with_indices(x4, {3, 2}, {2, 1}, {1, 0}, {1, 2}, true);
       },
       {{"kernel_size", I{3, 2}},
        {"stride", I{2, 1}},
        {"padding", I{1, 0}},
        {"dilation", I{1, 2}},
        {"ceil_mode", true}},
       {{"self", x4}}},
      {"max_pool2d",
       [&] {
         (void)max_pool2d(x4, {2, 2}, {1, 2}, {1, 0}, {2, 1}, true);
       },
       {{"kernel_size", I{2, 2}},
        {"stride", I{1, 2}},
        {"padding", I{1, 0}},
        {"dilation", I{2, 1}},
        {"ceil_mode", true}},
       {{"self", x4}}},
      {"masked_fill.Scalar",
       [&] { (void)masked_fill(m, gt(m2, Scalar(3.0)), Scalar(-7.5)); },
       {{"value", -7.5}},
       {{"self", m}}},
      {"mean", [&] { (void)mean(x4, {1}, true); }, {{"dim", I{1}}, {"keepdim", true}, {"dtype", none}}, {{"self", x4}}},
      {"sum",
       [&] {
         (void)sum(x4, {0, 2}, true);
       },
       {{"dim", I{0, 2}}, {"keepdim", true}, {"dtype", none}},
       {{"self", x4}}},
      {"mul.Scalar", [&] { (void)mul(m, Scalar(1.75)); }, {{"other", 1.75}}, {{"self", m}}},
      {"repeat",
       [&] {
         (void)repeat(m, {2, 1, 3});
       },
       {{"repeats", I{2, 1, 3}}},
       {{"self", m}}},
      {"roll",
       [&] {
         (void)roll(x4, {2, -1}, {3, 0});
       },
       {{"shifts", I{2, -1}}, {"dims", I{3, 0}}},
       {{"self", x4}}},
      {"pad",
       [&] {
         (void)pad(x4, {1, 2, 0, 3}, "reflect", Scalar(2.5));
       },
       {{"pad", I{1, 2, 0, 3}}, {"mode", "reflect"}, {"value", 2.5}},
       {{"self", x4}}},
      {"permute", [&] { (void)x4.permute({3, 1, 0, 2}); }, {{"dims", I{3, 1, 0, 2}}}, {{"self", x4}}},
      {"pow.Scalar", [&] { (void)pow(m2, Scalar(3)); }, {{"exponent", int64_t(3)}}, {{"self", m2}}},
      {"quantized_conv2d",
       [&] { (void)quantized_conv2d(x4, qw4, qs6, cb, {2, 3}, {1, 0}, {1, 2}, 3, 0.25, 17, "clamp", -0.5, 1.5); },
       {{"stride", I{2, 3}},
        {"padding", I{1, 0}},
        {"dilation", I{1, 2}},
        {"groups", int64_t(3)},
        {"input_scale", 0.25},
        {"input_zero_point", int64_t(17)},
        {"activation", "clamp"},
        {"min_val", -0.5},
        {"max_val", 1.5}},
       {{"input", x4}, {"weight", qw4}, {"weight_scale", qs6}, {"bias", cb}}},
      {"quantized_conv2d.u8",
       [&] {
         (void)quantized_conv2d_u8(x4, qw4, qs6, cb, {2, 3}, {1, 0}, {1, 2}, 3, 0.25, 17, "clamp", -0.5, 1.5, 0.0625,
                                   201);
       },
       {{"stride", I{2, 3}},
        {"padding", I{1, 0}},
        {"dilation", I{1, 2}},
        {"groups", int64_t(3)},
        {"input_scale", 0.25},
        {"input_zero_point", int64_t(17)},
        {"activation", "clamp"},
        {"min_val", -0.5},
        {"max_val", 1.5},
        {"output_scale", 0.0625},
        {"output_zero_point", int64_t(201)}},
       {{"input", x4}, {"weight", qw4}, {"weight_scale", qs6}, {"bias", cb}}},
      {"quantized_linear",
       [&] { (void)quantized_linear(m, qw2, qs6, cb, 0.125, 3); },
       {{"input_scale", 0.125}, {"input_zero_point", int64_t(3)}},
       {{"input", m}, {"weight", qw2}, {"weight_scale", qs6}, {"bias", cb}}},
      {"quantized_add",
       [&] { (void)quantized_add(qa, qb, 0.25, 3, 0.5, 7, "clamp", -1.0, 2.0, 0.125, 11); },
       {{"self_scale", 0.25},
        {"self_zero_point", int64_t(3)},
        {"other_scale", 0.5},
        {"other_zero_point", int64_t(7)},
        {"activation", "clamp"},
        {"min_val", -1.0},
        {"max_val", 2.0},
        {"output_scale", 0.125},
        {"output_zero_point", int64_t(11)}},
       {{"self", qa}, {"other", qb}}},
      {"quantized_linear.u8",
       [&] { (void)quantized_linear_u8(m, qw2, qs6, cb, 0.125, 3, "hardswish", -1.0, 2.0, 0.5, 9); },
       {{"input_scale", 0.125},
        {"input_zero_point", int64_t(3)},
        {"activation", "hardswish"},
        {"min_val", -1.0},
        {"max_val", 2.0},
        {"output_scale", 0.5},
        {"output_zero_point", int64_t(9)}},
       {{"input", m}, {"weight", qw2}, {"weight_scale", qs6}, {"bias", cb}}},
      {"reshape", [&] { (void)m.reshape({4, 3}); }, {{"shape", I{4, 3}}}, {{"self", m}}},
      {"view", [&] { (void)m.view({2, 6}); }, {{"size", I{2, 6}}}, {{"self", m}}},
      {"rsub.Scalar", [&] { (void)rsub(m, 2.5, 3); }, {{"other", 2.5}, {"alpha", int64_t(3)}}, {{"self", m}}},
      {"scaled_dot_product_attention",
       [&] { (void)scaled_dot_product_attention(q, k, v, mask, 0.0, false); },
       {{"dropout_p", 0.0}, {"is_causal", false}},
       {{"query", q}, {"key", k}, {"value", v}, {"attn_mask", mask}}},
      {"scaled_dot_product_attention",  // a mask and is_causal exclude each other
       [&] { (void)scaled_dot_product_attention(q, k, v, {}, 0.0, true); },
       {{"dropout_p", 0.0}, {"is_causal", true}},
       {{"query", q}, {"key", k}, {"value", v}}},
      {"select", [&] { (void)x4.select(2, 3); }, {{"dim", int64_t(2)}, {"index", int64_t(3)}}, {{"self", x4}}},
      {"slice",
       [&] { (void)x4.slice(3, 1, 4, 2); },
       {{"dim", int64_t(3)}, {"start", int64_t(1)}, {"end", int64_t(4)}, {"step", int64_t(2)}},
       {{"self", x4}}},
      {"softplus",
       [&] { (void)softplus(m, 2, 15); },
       {{"beta", int64_t(2)}, {"threshold", int64_t(15)}},
       {{"self", m}}},
      {"softshrink", [&] { (void)softshrink(m, 0.4); }, {{"lambd", 0.4}}, {{"self", m}}},
      {"split", [&] { (void)split(m, 3, 1); }, {{"split_size", int64_t(3)}, {"dim", int64_t(1)}}, {{"self", m}}},
      {"split_with_sizes",
       [&] { (void)split_with_sizes(m, {1, 3}, 1); },
       {{"split_sizes", I{1, 3}}, {"dim", int64_t(1)}},
       {{"self", m}}},
      {"squeeze.dim", [&] { (void)mid.squeeze(1); }, {{"dim", int64_t(1)}}, {{"self", mid}}},
      {"stack", [&] { (void)stack({m, m2}, 2); }, {{"dim", int64_t(2)}}, {}},
      {"sub", [&] { (void)sub(m, m2, 2); }, {{"alpha", int64_t(2)}}, {{"self", m}, {"other", m2}}},
      {"sub.Scalar", [&] { (void)sub(m, Scalar(1.5), 5); }, {{"other", 1.5}, {"alpha", int64_t(5)}}, {{"self", m}}},
      {"threshold", [&] { (void)threshold(m, 0.1, -3); }, {{"threshold", 0.1}, {"value", int64_t(-3)}}, {{"self", m}}},
      {"to", [&] { (void)m.to(DType::f64); }, {{"dtype", DType::f64}}, {{"self", m}}},
      {"flip", [&] { (void)flip(x4, {3, 1}); }, {{"dims", I{3, 1}}}, {{"self", x4}}},
      {"tril", [&] { (void)tril(x4, -2); }, {{"diagonal", int64_t(-2)}}, {{"self", x4}}},
      {"triu", [&] { (void)triu(x4, 3); }, {{"diagonal", int64_t(3)}}, {{"self", x4}}},
      {"scatter",
       [&] { (void)scatter(m, 1, idx2, m2); },
       {{"dim", int64_t(1)}},
       {{"self", m}, {"index", idx2}, {"src", m2}}},
      {"scatter.value",
       [&] { (void)scatter(m, -1, idx2, Scalar(2.5)); },
       {{"dim", int64_t(-1)}, {"value", 2.5}},
       {{"self", m}, {"index", idx2}}},
      {"scatter_add",
       [&] { (void)scatter_add(m, 1, idx2, m2); },
       {{"dim", int64_t(1)}},
       {{"self", m}, {"index", idx2}, {"src", m2}}},
      {"scatter_reduce",
       [&] { (void)scatter_reduce(m, 1, idx2, m2, "amax", false); },
       {{"dim", int64_t(1)}, {"reduce", "amax"}, {"include_self", false}},
       {{"self", m}, {"index", idx2}, {"src", m2}}},
      {"transpose", [&] { (void)x4.transpose(1, 3); }, {{"dim0", int64_t(1)}, {"dim1", int64_t(3)}}, {{"self", x4}}},
      {"unsqueeze", [&] { (void)m.unsqueeze(2); }, {{"dim", int64_t(2)}}, {{"self", m}}},
      {"grid_sample",
       [&] { (void)grid_sample(x4, gr, "bicubic", "reflection", true); },
       {{"mode", "bicubic"}, {"padding_mode", "reflection"}, {"align_corners", true}},
       {{"input", x4}, {"grid", gr}}},
      {"upsample_nearest2d",
       [&] { (void)upsample_nearest2d(x4, {7, 9}, 1.5, std::nullopt); },
       {{"output_size", I{7, 9}}, {"scales_h", 1.5}, {"scales_w", Attr::none()}},
       {{"self", x4}}},
      {"upsample_bicubic2d",
       [&] { (void)upsample_bicubic2d(x4, {5, 6}, true, 1.25, std::nullopt); },
       {{"output_size", I{5, 6}}, {"align_corners", true}, {"scales_h", 1.25}, {"scales_w", Attr::none()}},
       {{"self", x4}}},
      {"upsample_bilinear2d",
       [&] { (void)upsample_bilinear2d(x4, {3, 8}, true, std::nullopt, 2.25); },
       {{"output_size", I{3, 8}}, {"align_corners", true}, {"scales_h", Attr::none()}, {"scales_w", 2.25}},
       {{"self", x4}}},
      {"upsample_nearest3d",
       [&] { (void)upsample_nearest3d(x5, {3, 2, 7}, 1.5, std::nullopt, 1.75); },
       {{"output_size", I{3, 2, 7}}, {"scales_d", 1.5}, {"scales_h", Attr::none()}, {"scales_w", 1.75}},
       {{"self", x5}}},
      {"upsample_trilinear3d",
       [&] { (void)upsample_trilinear3d(x5, {1, 5, 2}, true, std::nullopt, 1.25, std::nullopt); },
       {{"output_size", I{1, 5, 2}},
        {"align_corners", true},
        {"scales_d", Attr::none()},
        {"scales_h", 1.25},
        {"scales_w", Attr::none()}},
       {{"self", x5}}},
      {"upsample_bilinear2d_aa",
       [&] { (void)upsample_bilinear2d_aa(x4, {3, 8}, false, 0.75, std::nullopt); },
       {{"output_size", I{3, 8}}, {"align_corners", false}, {"scales_h", 0.75}, {"scales_w", Attr::none()}},
       {{"self", x4}}},
      {"upsample_bicubic2d_aa",
       [&] { (void)upsample_bicubic2d_aa(x4, {2, 9}, true, std::nullopt, 1.5); },
       {{"output_size", I{2, 9}}, {"align_corners", true}, {"scales_h", Attr::none()}, {"scales_w", 1.5}},
       {{"self", x4}}},

  };

  std::set<std::string> covered;
  for (const Case& c : cases) {
    INFO("op " << c.op);
    const OpSchema& op = op_schema(c.op);
    covered.insert(c.op);
    Recorder rec;
    {
      DispatchHookGuard guard(&rec);
      c.call();
    }
    const Call* call = nullptr;
    for (const Call& r : rec.calls)
      if (r.op == c.op && !call) call = &r;
    REQUIRE(call);
    // Every attribute named, each with its value (as the table canonicalises it).
    REQUIRE(int(c.attrs.size()) == op.num_attrs());
    std::vector<Attr> want(size_t(op.num_attrs()));
    for (int i = 0; i < op.num_attrs(); ++i) {
      INFO("attribute " << op.attr_spec(i).name);
      REQUIRE(c.attrs.count(op.attr_spec(i).name));
      want[size_t(i)] = c.attrs.at(op.attr_spec(i).name);
    }
    want = normalize_attrs(op, want);
    for (int i = 0; i < op.num_attrs(); ++i) {
      INFO("attribute " << op.attr_spec(i).name << ": the eager call gave " << call->attrs[size_t(i)] << ", expected "
                        << want[size_t(i)]);
      CHECK(call->attrs[size_t(i)] == want[size_t(i)]);
    }
    // The named tensors in the inputs of their names.
    for (const auto& [name, t] : c.inputs) {
      INFO("input " << name);
      int pos = -1;
      for (int i = 0; i < op.num_tensor_args; ++i)
        if (op.args[size_t(i)].name == name) pos = i;
      REQUIRE(pos >= 0);
      REQUIRE(size_t(pos) < call->inputs.size());
      CHECK(call->inputs[size_t(pos)] == t.impl());
    }
  }
  // Every op with attributes a user calls has a case.
  for (const OpSchema* op : all_ops()) {
    if (op->num_attrs() == 0 || (op->flags & (op_flags::program | op_flags::control_flow)) ||
        op_namespace(op->name).size())
      continue;  // control flow: test_control_flow
    INFO("op " << op->name << " has attributes but no case here");
    CHECK(covered.count(op->name));
  }
}

TEST_CASE("eager roll without dims rolls the flattened tensor", "[eager]") {
  const Tensor x =
      tensor(std::vector<int64_t>{0, 1, 2, 3, 4, 5}).reshape({2, 3}).transpose(0, 1);  // [[0,3],[1,4],[2,5]]
  const Tensor y = roll(x, {2});
  REQUIRE(y.sizes() == DimVec{3, 2});
  const std::vector<int64_t> want{2, 5, 0, 3, 1, 4};  // flattened [0,3,1,4,2,5] shifted right by 2
  for (int64_t i = 0; i < 6; ++i) CHECK(y.reshape({-1})[i].item<int64_t>() == want[size_t(i)]);
  AMBER_REQUIRE_ERROR(roll(x, {1, 2}), "shifts must hold one shift");
}

TEST_CASE("eager clamp with tensor bounds is minimum(maximum(self, min), max)", "[eager]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor(std::vector<float>{-5, 0.5, 9, nan, 2, 3});
  const Tensor lo = tensor(std::vector<float>{-1, 0, 0, 0, nan, 4});  // lo > hi in the last: hi wins, as PyTorch
  const Tensor hi = tensor(std::vector<float>{1, 1, 8, 1, 5, 3.5});
  const Tensor y = clamp(x, lo, hi);
  const std::vector<float> want{-1, 0.5, 8, nan, nan, 3.5};
  for (int64_t i = 0; i < 6; ++i) {
    const float v = y[i].item<float>();
    CHECK((std::isnan(want[size_t(i)]) ? std::isnan(v) : v == want[size_t(i)]));
  }
  // Broadcast bounds and promotion: an i64 self against f32 bounds gives f32.
  const Tensor z = clamp(tensor(std::vector<int64_t>{-3, 7}), tensor(std::vector<float>{0.5f}), full({1}, 6.5));
  CHECK(z.dtype() == DType::f32);
  CHECK(z[0].item<float>() == 0.5f);
  CHECK(z[1].item<float>() == 6.5f);
}

TEST_CASE("eager max/min along a dim give values and first indices", "[eager]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rows: a tie (first index wins), a NaN (wins, its index), plain.
  const Tensor x = tensor(std::vector<float>{3, 7, 7, 1, 2, nan, 5, nan, -4, 0, 8, -9}).reshape({3, 4});
  const auto [vmax, imax] = max(x, 1);
  const auto [vmin, imin] = min(x, -1, true);
  REQUIRE(vmax.sizes() == DimVec{3});
  REQUIRE(imin.sizes() == DimVec{3, 1});
  CHECK(imin.dtype() == DType::i64);
  const std::vector<int64_t> want_imax{1, 1, 2}, want_imin{3, 1, 3};
  const std::vector<float> want_vmin{1, nan, -9};
  for (int64_t r = 0; r < 3; ++r) {
    CHECK(imax[r].item<int64_t>() == want_imax[size_t(r)]);
    CHECK(imin[r][0].item<int64_t>() == want_imin[size_t(r)]);
    const float v = vmin[r][0].item<float>();
    CHECK((std::isnan(want_vmin[size_t(r)]) ? std::isnan(v) : v == want_vmin[size_t(r)]));
  }
  CHECK(vmax[0].item<float>() == 7.0f);
  CHECK(std::isnan(vmax[1].item<float>()));
}

TEST_CASE("eager pixel_shuffle and pixel_unshuffle move channels to space and back", "[eager]") {
  const Tensor x = arange(0, 2 * 8 * 3 * 5, 1, TensorOptions(DType::i64)).reshape({2, 8, 3, 5});
  const int64_t r = 2;
  const Tensor y = pixel_shuffle(x, r);
  REQUIRE(y.sizes() == DimVec{2, 2, 6, 10});
  // y[n, c, h r + i, w r + j] = x[n, c r^2 + i r + j, h, w], as torch.nn.functional.pixel_shuffle.
  for (int64_t n : {0, 1})
    for (int64_t c : {0, 1})
      for (int64_t h : {0, 2})
        for (int64_t w : {1, 4})
          for (int64_t i : {0, 1})
            for (int64_t j : {0, 1})
              CHECK(y[n][c][h * r + i][w * r + j].item<int64_t>() == x[n][c * r * r + i * r + j][h][w].item<int64_t>());
  CHECK(test::compare(pixel_unshuffle(y, r), x, 0, 0).ok);
  AMBER_REQUIRE_ERROR(pixel_shuffle(x, 3), "divisible by 3");
  AMBER_REQUIRE_ERROR(pixel_unshuffle(x, 2), "height and width divisible by 2");
}

TEST_CASE("eager prelu scales negatives by their channel's weight", "[eager]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor(std::vector<float>{-2, 3, -4, nan, 0, -1, 5, -6}).reshape({2, 2, 2});  // N=2, C=2, L=2
  const Tensor w = tensor(std::vector<float>{0.5, -3});
  const Tensor y = prelu(x, w);
  const std::vector<float> want{-1, 3, 12, nan, 0, -0.5, 5, 18};
  for (int64_t i = 0; i < 8; ++i) {
    const float v = y.reshape({-1})[i].item<float>();
    CHECK((std::isnan(want[size_t(i)]) ? std::isnan(v) : v == want[size_t(i)]));
  }
  CHECK(prelu(x, tensor(std::vector<float>{0.25}))[0][0][0].item<float>() == -0.5f);
  AMBER_REQUIRE_ERROR(prelu(x, tensor(std::vector<float>{1, 2, 3})), "one per channel (2");
}

TEST_CASE("eager where with a number for a branch", "[eager]") {
  const Tensor c = ne(tensor(std::vector<float>{1, 0, 2}), Scalar(0));
  const Tensor x = tensor(std::vector<float>{1, 2, 3});
  const Tensor y = where(c, x, 0.5);
  REQUIRE(y.dtype() == DType::f32);
  CHECK(test::compare(y, tensor(std::vector<float>{1, 0.5, 3}), 0, 0).ok);
  CHECK(test::compare(where(c, -1, x), tensor(std::vector<float>{-1, 2, -1}), 0, 0).ok);
  // A float number with an integer tensor gives f32, as torch.where; two numbers their type.
  const Tensor z = where(c, tensor(std::vector<int64_t>{4, 5, 6}), 0.25);
  CHECK(z.dtype() == DType::f32);
  CHECK(test::compare(z, tensor(std::vector<float>{4, 0.25, 6}), 0, 0).ok);
  CHECK(where(c, 1, 0).dtype() == DType::i64);
  CHECK(test::compare(where(c, 1.5, 0), tensor(std::vector<float>{1.5, 0, 1.5}), 0, 0).ok);
}

namespace {
// conv1d by its definition, for [N, C, L] x, [K, C, k] w, [K] b (no groups).
Tensor conv1d_by_definition(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t pad,
                            int64_t dil) {
  const int64_t n = x.size(0), c = x.size(1), l = x.size(2), k_out = w.size(0), k = w.size(2);
  const int64_t out = (l + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  std::vector<float> y;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < k_out; ++o)
      for (int64_t p = 0; p < out; ++p) {
        double acc = b[o].item<float>();
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t j = 0; j < k; ++j) {
            const int64_t at = p * stride - pad + j * dil;
            if (at >= 0 && at < l) acc += double(x[i][ci][at].item<float>()) * w[o][ci][j].item<float>();
          }
        y.push_back(float(acc));
      }
  return tensor(y).reshape({n, k_out, out});
}
}  // namespace

TEST_CASE("eager conv1d and padding same/valid match their definitions", "[eager]") {
  manual_seed(11);
  const Tensor x = randn({2, 3, 9}), w = randn({4, 3, 3}), b = randn({4});
  CHECK(test::compare(conv1d(x, w, b, {2}, {1}, {2}), conv1d_by_definition(x, w, b, 2, 1, 2), 1e-5, 1e-5).ok);
  CHECK(test::compare(conv1d(x[0], w, b), conv1d_by_definition(x, w, b, 1, 0, 1)[0], 1e-5, 1e-5).ok);
  // kSame with an even kernel: 3 of padding, 1 before and 2 after (PyTorch puts the odd one last).
  const Tensor w4 = randn({4, 3, 4});
  const Tensor same = conv1d(x, w4, b, {1}, kSame);
  REQUIRE(same.sizes() == DimVec{2, 4, 9});
  CHECK(test::compare(same, conv1d_by_definition(pad(x, {0, 1}), w4, b, 1, 1, 1), 1e-5, 1e-5).ok);
  CHECK(test::compare(conv1d(x, w, b, {1}, kValid), conv1d_by_definition(x, w, b, 1, 0, 1), 1e-5, 1e-5).ok);
  // conv2d: kSame with an odd dilated extent in one dim and an even one in the other.
  const Tensor x2 = randn({1, 2, 5, 6}), w2 = randn({3, 2, 2, 3}), b2 = randn({3});
  const Tensor s2 = conv2d(x2, w2, b2, {1}, kSame, {1, 2});
  REQUIRE(s2.sizes() == DimVec{1, 3, 5, 6});
  CHECK(test::compare(s2, conv2d(pad(x2, {0, 0, 0, 1}), w2, b2, {1}, {0, 2}, {1, 2}), 1e-6, 1e-6).ok);
  CHECK(test::compare(conv2d(x2, w2, b2, {1}, kValid), conv2d(x2, w2, b2), 0, 0).ok);
  AMBER_REQUIRE_ERROR(conv2d(x2, w2, b2, {2}, kSame), "needs stride 1");
  AMBER_REQUIRE_ERROR(conv1d(x2, w, b), "[N, C, L]");
}

TEST_CASE("eager group_norm and instance_norm normalise each group per sample", "[eager]") {
  manual_seed(12);
  const int64_t n = 2, c = 6, h = 3, wd = 2, groups = 3;
  const Tensor x = randn({n, c, h, wd}) * 3 + 1, w = randn({c}), b = randn({c});
  const Tensor y = group_norm(x, groups, w, b, 1e-5);
  REQUIRE(y.sizes() == x.sizes());
  const int64_t per = c / groups;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      double s = 0, s2 = 0;
      const int64_t count = per * h * wd;
      for (int64_t ch = g * per; ch < (g + 1) * per; ++ch)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t q = 0; q < wd; ++q) s += x[i][ch][r][q].item<float>();
      const double mean = s / double(count);
      for (int64_t ch = g * per; ch < (g + 1) * per; ++ch)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t q = 0; q < wd; ++q) s2 += std::pow(x[i][ch][r][q].item<float>() - mean, 2);
      const double inv = 1 / std::sqrt(s2 / double(count) + 1e-5);
      for (int64_t ch = g * per; ch < (g + 1) * per; ++ch)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t q = 0; q < wd; ++q) {
            const double want = (x[i][ch][r][q].item<float>() - mean) * inv * w[ch].item<float>() + b[ch].item<float>();
            CHECK(std::abs(y[i][ch][r][q].item<float>() - want) <= 1e-5 + 1e-5 * std::abs(want));
          }
    }
  CHECK(test::compare(instance_norm(x, {}, {}, w, b), group_norm(x, c, w, b), 0, 0).ok);
  const Tensor rm = randn({c}), rv = rand({c}) + 0.5;
  CHECK(test::compare(instance_norm(x, rm, rv, w, b, false), batch_norm(x, rm, rv, w, b), 0, 0).ok);
  AMBER_REQUIRE_ERROR(group_norm(x, 4), "must divide into num_groups=4");
  AMBER_REQUIRE_ERROR(group_norm(x, 3, randn({5})), "must be [6]");
  AMBER_REQUIRE_ERROR(instance_norm(x, {}, {}, {}, {}, false), "needs running_mean");
}

TEST_CASE("eager sort orders values with their indices, stably", "[eager]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor(std::vector<float>{3, 1, 2, nan, 0, 0}).reshape({2, 3});
  const auto [v, i] = sort(x);
  const auto [vd, id] = sort(x, 1, true);
  const std::vector<float> want_v{1, 2, 3, 0, 0, nan}, want_vd{3, 2, 1, nan, 0, 0};
  const std::vector<int64_t> want_i{1, 2, 0, 1, 2, 0}, want_id{0, 2, 1, 0, 1, 2};
  for (int64_t k = 0; k < 6; ++k) {
    const float a = v.reshape({-1})[k].item<float>(), d = vd.reshape({-1})[k].item<float>();
    CHECK((std::isnan(want_v[size_t(k)]) ? std::isnan(a) : a == want_v[size_t(k)]));
    CHECK((std::isnan(want_vd[size_t(k)]) ? std::isnan(d) : d == want_vd[size_t(k)]));
    CHECK(i.reshape({-1})[k].item<int64_t>() == want_i[size_t(k)]);
    CHECK(id.reshape({-1})[k].item<int64_t>() == want_id[size_t(k)]);
  }
  CHECK(sort(x, 0).second[0][1].item<int64_t>() == 1);  // along dim 0: 0 < 1
}

TEST_CASE("eager interpolate is F.interpolate over the upsample ops", "[eager]") {
  const Tensor x = arange(0, 2 * 3 * 5 * 7, 1, TensorOptions(DType::f32)).reshape({2, 3, 5, 7});
  // scale_factor: floor(in * scale) and the scales passed on (unless recomputed).
  const Tensor a = interpolate(x, {.scale_factor = {1.7}});
  REQUIRE(a.sizes() == DimVec{2, 3, 8, 11});
  CHECK(test::compare(a, upsample_nearest2d(x, {8, 11}, 1.7, 1.7), 0, 0).ok);
  CHECK(test::compare(interpolate(x, {.scale_factor = {1.7, 2}, .recompute_scale_factor = true}),
                      upsample_nearest2d(x, {8, 14}), 0, 0)
            .ok);
  const Tensor b = interpolate(x, {.size = {4, 9}, .mode = "bilinear", .align_corners = true});
  CHECK(test::compare(b, upsample_bilinear2d(x, {4, 9}, true), 0, 0).ok);
  CHECK(
      test::compare(interpolate(x, {.size = {6}, .mode = "bilinear"}), upsample_bilinear2d(x, {6, 6}, false), 0, 0).ok);
  // Corners aligned: the output's corners are the input's.
  CHECK(b[1][2][3][8].item<float>() == x[1][2][4][6].item<float>());
  AMBER_REQUIRE_ERROR(interpolate(x, {}), "exactly one of size and scale_factor");
  AMBER_REQUIRE_ERROR(interpolate(x, {.size = {4}, .mode = "cubic"}), "\"trilinear\" or \"area\", got");
  AMBER_REQUIRE_ERROR(interpolate(x, {.size = {4}, .mode = "trilinear"}), "trilinear mode needs a 5-D");
  CHECK(test::compare(interpolate(x, {.size = {3, 4}, .mode = "area"}), adaptive_avg_pool2d(x, {3, 4}), 0, 0).ok);
  CHECK(test::compare(interpolate(x, {.scale_factor = {1.5}, .mode = "bicubic", .align_corners = true}),
                      upsample_bicubic2d(x, {7, 10}, true, 1.5, 1.5), 0, 0)
            .ok);
  AMBER_REQUIRE_ERROR(interpolate(x, {.size = {4}, .align_corners = false}), "align_corners can only be set");
  AMBER_REQUIRE_ERROR(interpolate(x[0][0], {.size = {4}}),
                      "needs a 3-D (N, C, L), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input");
}

TEST_CASE("resizes sum alike by rows (NCHW) and by pixels (channels-last)", "[eager]") {
  // The CPU's bilinear and bicubic (and the antialiased kernels' second pass) sum a whole output
  // row at a time where rows are dense, a pixel at a time otherwise: the same sums in the same
  // order, so the same bits.
  manual_seed(5);
  for (DType t : {DType::f32, DType::f64})
    for (const char* mode : {"bilinear", "bicubic"})
      for (const DimVec& size : {DimVec{5, 9}, DimVec{23, 31}, DimVec{40, 35}})
        for (bool antialias : {true, false}) {
          INFO(dtype_name(t) << " " << mode << " to " << size << (antialias ? ", antialiased" : ""));
          const Tensor x = randn({2, 3, 13, 17}).to(t);
          const InterpolateOptions o{.size = size, .mode = mode, .antialias = antialias};
          const Tensor rows = interpolate(x, o),
                       pixels = interpolate(x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}), o);
          REQUIRE(pixels.strides()[1] == 1);  // channels-last
          CHECK(test::compare(rows, pixels, 0, 0).ok);
        }
}

// A permuted tensor made contiguous (or cast) walks in tiles over its input's unit-stride dim and
// its output's (loops.h's run_tiled): every element where it belongs, on sizes that leave partial
// tiles, for each element width.
TEST_CASE("contiguous and to() of permuted tensors put every element in place", "[eager]") {
  manual_seed(9);
  const Tensor base = randn({3, 45, 70});
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::i8}) {
    const Tensor want_base = base.to(t).to(DType::f64);  // contiguous: base's strides
    const double* w = want_base.data_ptr<double>();
    for (const DimVec& order : {DimVec{0, 2, 1}, DimVec{2, 1, 0}, DimVec{1, 2, 0}, DimVec{2, 0, 1}}) {
      INFO("permute " << order << " to " << dtype_name(t));
      const Tensor view = base.permute(order);
      const Tensor copy = view.contiguous().to(t), cast = view.to(t).contiguous();
      REQUIRE((copy.is_contiguous() && cast.is_contiguous()));
      const Tensor copied = copy.to(DType::f64), casted = cast.to(DType::f64);
      const double *c = copied.data_ptr<double>(), *g = casted.data_ptr<double>();
      bool same = true;
      int64_t k = 0;
      for (int64_t i = 0; i < view.size(0); ++i)
        for (int64_t j = 0; j < view.size(1); ++j)
          for (int64_t l = 0; l < view.size(2); ++l, ++k) {
            const double want = w[i * view.stride(0) + j * view.stride(1) + l * view.stride(2)];
            same = same && c[k] == want && g[k] == want;
          }
      CHECK(same);
    }
  }
}

TEST_CASE("eager interpolate: nearest-exact and 3-D input as F.interpolate", "[eager]") {
  // Expected: PyTorch 1.13's F.interpolate of the same arange inputs (printed by
  // F.interpolate(torch.arange(5.).view(1, 1, 1, 5), size=(1, 7), mode="nearest-exact") and kin).
  auto values = [](const Tensor& t) {
    const Tensor c = t.contiguous();
    return std::vector<float>(c.const_data_ptr<float>(), c.const_data_ptr<float>() + c.numel());
  };
  auto near = [&](const Tensor& t, const std::vector<float>& want) {
    const std::vector<float> got = values(t);
    bool ok = got.size() == want.size();
    for (size_t i = 0; ok && i < got.size(); ++i) ok = std::fabs(got[i] - want[i]) <= 1e-6f * (1 + std::fabs(want[i]));
    INFO("got " << ::Catch::Detail::stringify(got));
    return ok;
  };
  const Tensor row = arange(0, 5, 1, TensorOptions(DType::f32)).reshape({1, 1, 1, 5});
  CHECK(near(interpolate(row, {.size = {1, 7}, .mode = "nearest-exact"}), {0, 1, 1, 2, 3, 3, 4}));
  CHECK(near(interpolate(row, {.size = {1, 3}, .mode = "nearest-exact"}), {0, 2, 4}));
  CHECK(near(interpolate(row, {.scale_factor = {1, 1.7}, .mode = "nearest-exact"}), {0, 0, 1, 2, 2, 3, 3, 4}));
  CHECK(near(interpolate(row, {.scale_factor = {1, 1.7}, .mode = "nearest-exact", .recompute_scale_factor = true}),
             {0, 0, 1, 2, 2, 3, 4, 4}));
  const Tensor line = arange(0, 5, 1, TensorOptions(DType::f32)).reshape({1, 1, 5}), sq = line * line;
  CHECK(near(interpolate(line, {.size = {8}, .mode = "nearest-exact"}), {0, 0, 1, 2, 2, 3, 4, 4}));
  CHECK(near(interpolate(line, {.scale_factor = {1.7}}), {0, 0, 1, 1, 2, 2, 3, 4}));
  CHECK(
      near(interpolate(sq, {.size = {8}, .mode = "linear"}), {0, 0.4375, 1.1875, 3.0625, 5.5625, 8.6875, 12.9375, 16}));
  CHECK(near(interpolate(sq, {.size = {8}, .mode = "linear", .align_corners = true}),
             {0, 0.5714285969734192f, 1.4285715818405151f, 3.142857313156128f, 5.428571701049805f, 8.285715103149414f,
              12.000000953674316f, 16}));
  CHECK(near(interpolate(sq, {.scale_factor = {1.7}, .mode = "linear"}),
             {0, 0.3823529779911041f, 0.9705883264541626f, 2.6764707565307617f, 4.735294342041016f, 7.67647123336792f,
              11.2647066116333f, 15.382353782653809f}));
  CHECK(near(interpolate(sq, {.size = {3}, .mode = "area"}), {0.5, 4.666666507720947f, 12.5}));
  // A 3-D input keeps its rank; a strided one reads through its strides.
  const Tensor wide = randn({3, 2, 6}).transpose(0, 1);  // [2, 3, 6]
  const Tensor y = interpolate(wide, {.size = {9}, .mode = "linear", .align_corners = true});
  REQUIRE(y.sizes() == DimVec{2, 3, 9});
  CHECK(test::compare(y, upsample_bilinear2d(wide.unsqueeze(2), {1, 9}, true).squeeze(2), 0, 0).ok);
  AMBER_REQUIRE_ERROR(interpolate(line, {.size = {8}, .mode = "bilinear"}), "bilinear mode needs a 4-D");
  AMBER_REQUIRE_ERROR(interpolate(row, {.size = {8}, .mode = "linear"}), "linear mode needs a 3-D (N, C, L) input");
  AMBER_REQUIRE_ERROR(interpolate(line, {.size = {8, 8}}), "take 1 value (L) for a 3-D input, got 2");
  AMBER_REQUIRE_ERROR(interpolate(randn({1, 1, 2, 2, 2}), {.size = {3, 3}}), "take 1 or 3 values (D, H, W)");
  AMBER_REQUIRE_ERROR(interpolate(line, {.size = {0}, .mode = "nearest-exact"}), "sizes greater than 0");
  // 5-D input: upsample_nearest3d, upsample_trilinear3d and nearest-exact along D, H and W.
  const Tensor vol = arange(0, 12, 1, TensorOptions(DType::f32)).reshape({1, 1, 2, 2, 3});
  CHECK(near(interpolate(vol, {.size = {3, 1, 2}, .mode = "trilinear"}),
             {1.75, 3.25, 4.75, 6.25, 7.749999523162842f, 9.25}));
  const Tensor tri = interpolate(vol, {.scale_factor = {1.5, 1, 0.7}, .mode = "trilinear", .align_corners = true});
  REQUIRE(tri.sizes() == DimVec{1, 1, 3, 2, 2});
  CHECK(near(tri, {0, 2, 3, 5, 3, 5, 6, 8, 6, 8, 9, 11}));
  const Tensor up3 = interpolate(vol, {.scale_factor = {1.6}});
  REQUIRE(up3.sizes() == DimVec{1, 1, 3, 3, 4});
  CHECK(near(up3, {0, 0, 1, 1, 0, 0, 1, 1, 3, 3, 4, 4, 0, 0, 1, 1, 0,  0,
                   1, 1, 3, 3, 4, 4, 6, 6, 7, 7, 6, 6, 7, 7, 9, 9, 10, 10}));
  CHECK(test::compare(up3, upsample_nearest3d(vol, {3, 3, 4}, 1.6, 1.6, 1.6), 0, 0).ok);
  CHECK(near(interpolate(vol, {.size = {3, 3, 2}, .mode = "nearest-exact"}),
             {0, 2, 3, 5, 3, 5, 6, 8, 9, 11, 9, 11, 6, 8, 9, 11, 9, 11}));
  // area of 5-D input: adaptive_avg_pool3d (F.adaptive_avg_pool3d of arange(60.).view(1, 2, 3, 2, 5)
  // squared): uneven boxes along D and W, H averaged whole.
  const Tensor box = arange(0, 60, 1, TensorOptions(DType::f32)).reshape({1, 2, 3, 2, 5}), box2 = box * box;
  const std::vector<float> pooled{95.5,   122.16666412353516f, 152.5,  355.5,  412.1666564941406f, 472.5,
                                  1475.5, 1592.1666259765625f, 1712.5, 2335.5, 2482.166748046875f, 2632.5};
  CHECK(near(adaptive_avg_pool3d(box2, {2, 1, 3}), pooled));
  CHECK(near(interpolate(box2, {.size = {2, 1, 3}, .mode = "area"}), pooled));
  CHECK(near(adaptive_avg_pool3d(box2[0], {2, 1, 3}), pooled));  // 4-D (C, D, H, W)
  // One value for all three dims (H from 2 to 4 windows: each row twice); None keeps a dim.
  const Tensor four = adaptive_avg_pool3d(box2, {4});
  REQUIRE(four.sizes() == DimVec{1, 2, 4, 4, 4});
  CHECK(near(four.flatten().slice(0, 0, 6), {0.5, 2.5, 6.5, 12.5, 0.5, 2.5}));
  CHECK(adaptive_avg_pool3d(box2[0], {std::nullopt, 2, std::nullopt}).sizes() == DimVec{2, 3, 2, 5});
  CHECK(test::compare(adaptive_avg_pool3d(box2, {std::nullopt}), box2, 0, 0).ok);
  CHECK(adaptive_avg_pool3d(box2, {0, 2, 2}).sizes() == DimVec{1, 2, 0, 2, 2});
  AMBER_REQUIRE_ERROR(adaptive_avg_pool3d(box2[0][0], {2}), "expected a 4-D (C, D, H, W) or 5-D");
  AMBER_REQUIRE_ERROR(adaptive_avg_pool3d(box2, {2, 2}), "output_size takes 1 or 3 values (D, H, W), got 2");
  AMBER_REQUIRE_ERROR(adaptive_avg_pool3d(box2, {-1}), "output_size must be non-negative, got -1");
  AMBER_REQUIRE_ERROR(adaptive_avg_pool3d(box2.slice(2, 0, 0), {2}), "non-empty channel and spatial dims");
  // antialias: the _aa ops, scales passed on as for the plain ones.
  const Tensor x = arange(0, 20, 1, TensorOptions(DType::f32)).reshape({1, 1, 4, 5});
  CHECK(near(interpolate(x, {.size = {2, 3}, .mode = "bilinear", .antialias = true}),
             {4, 5.5714287757873535f, 7.142857074737549f, 11.85714340209961f, 13.428570747375488f, 15}));
  CHECK(near(interpolate(x, {.size = {2, 3}, .mode = "bicubic", .align_corners = true, .antialias = true}),
             {6.697778701782227f, 8.736872673034668f, 10.138221740722656f, 15.008220672607422f, 17.047313690185547f,
              18.44866371154785f}));
  const Tensor aa = interpolate(x, {.scale_factor = {0.6}, .mode = "bicubic", .antialias = true});
  CHECK(near(aa, {2.123077392578125f, 3.7692315578460693f, 5.415384769439697f, 10.712590217590332f, 12.358745574951172f,
                  14.004897117614746f}));
  CHECK(test::compare(aa, upsample_bicubic2d_aa(x, {2, 3}, false, 0.6, 0.6), 0, 0).ok);
  AMBER_REQUIRE_ERROR(interpolate(x, {.size = {2, 3}, .antialias = true}),
                      "antialias is only supported for the bilinear and bicubic modes");
  AMBER_REQUIRE_ERROR(interpolate(line, {.size = {3}, .mode = "linear", .antialias = true}),
                      "antialias is only supported for the bilinear and bicubic modes");
}

TEST_CASE("eager adaptive_avg_pool2d takes None sizes as the input's own", "[eager]") {
  const Tensor x = randn({2, 3, 7, 5}).transpose(2, 3);  // [2, 3, 5, 7], not contiguous
  CHECK(test::compare(adaptive_avg_pool2d(x, {std::nullopt, 3}), adaptive_avg_pool2d(x, {5, 3}), 0, 0).ok);
  CHECK(test::compare(adaptive_avg_pool2d(x, {4, std::nullopt}), adaptive_avg_pool2d(x, {4, 7}), 0, 0).ok);
  CHECK(test::compare(adaptive_avg_pool2d(x, {std::nullopt}), x, 1e-6, 1e-6).ok);
  CHECK(test::compare(adaptive_avg_pool2d(x, {std::nullopt, 1}), x.mean({3}, true), 1e-6, 1e-6).ok);
  CHECK(test::compare(adaptive_avg_pool2d(x[0], {1, std::nullopt}), x[0].mean({1}, true), 1e-6, 1e-6).ok);
  nn::AdaptiveAvgPool2d pool({std::nullopt, 2});
  CHECK(pool(x).sizes() == DimVec{2, 3, 5, 2});
  nn::AdaptiveAvgPool3d pool3({1, std::nullopt, 2});  // x as (C, D, H, W)
  const Tensor p3 = pool3(x);
  REQUIRE(p3.sizes() == DimVec{2, 1, 5, 2});
  CHECK(test::compare(p3, adaptive_avg_pool2d(x.mean({1}, true), {5, 2}), 1e-6, 1e-6).ok);
  AMBER_REQUIRE_ERROR(adaptive_avg_pool2d(x, {std::nullopt, 2, 2}), "needs 1 or 2 values");
  AMBER_REQUIRE_ERROR(adaptive_avg_pool2d(x[0][0], {std::nullopt}), "3-D or 4-D input, got 1 values and shape [5, 7]");
}

// topk's order on the CPU, on lines long enough for each of its routes (one pass keeping a heap
// for small k, selection then sort, the radix sort of packed ranks for k from n / 8, and pairs of
// 64-bit ranks for f64), dense and strided: values then index, NaN above every number, -0 tied
// with +0, against a stable sort of the indices by that order written here.
TEST_CASE("topk orders ties by index, NaN first when largest, on every route", "[eager]") {
  manual_seed(31);
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor xd = (round(randn({2, 3000}) * 3.0) * 0.5).to(DType::f64);  // ties everywhere
    double* xp = xd.data_ptr<double>();
    xp[5] = xp[2999] = xp[3000 + 1500] = NAN;
    xp[3000] = -0.0;  // and zeros of both signs
    const Tensor dense = xd.to(dtype), strided = dense.t().contiguous().t();
    for (bool largest : {true, false})
      for (int64_t k : {int64_t(20), int64_t(200), int64_t(400), int64_t(3000)})
        for (const Tensor& x : {dense, strided}) {
          INFO(dtype_name(dtype) << ", k " << k << ", largest " << largest << ", line stride " << x.stride(1));
          const auto [v, i] = topk(x, k, 1, largest);
          const Tensor vd = v.to(DType::f64);
          for (int64_t line = 0; line < 2; ++line) {
            const double* row = xp + line * 3000;
            std::vector<int64_t> order(3000);
            for (int64_t j = 0; j < 3000; ++j) order[size_t(j)] = j;
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
              const bool an = std::isnan(row[a]), bn = std::isnan(row[b]);
              if (an != bn) return largest ? an : bn;
              return !an && (largest ? row[a] > row[b] : row[a] < row[b]);
            });
            bool same = true;
            for (int64_t j = 0; j < k; ++j) {
              const double got = vd.data_ptr<double>()[line * k + j], want = row[order[size_t(j)]];
              same = same && i.data_ptr<int64_t>()[line * k + j] == order[size_t(j)] &&
                     (got == want || (std::isnan(got) && std::isnan(want))) && std::signbit(got) == std::signbit(want);
            }
            CHECK(same);
          }
        }
  }
}

// Ops that take a dim on a 0-d tensor: PyTorch accepts dim 0 and -1 for most (the scalar
// acts as one element) and refuses them for a few; each must give PyTorch's value or an
// amber::Error, never read a stride the tensor does not have (a fuzzed ONNX ArgMax with
// select_last_index on a scalar flipped dim 0 of a 0-d tensor).
TEST_CASE("eager ops given a dim on a 0-d tensor act as PyTorch's", "[eager]") {
  const Tensor x = tensor(std::vector<float>{3.f}).reshape({});
  const Tensor i0 = tensor(std::vector<int64_t>{0}).reshape({});
  const auto value = [](const Tensor& t) { return t.to(DType::f32).item<float>(); };
  for (const int64_t d : {int64_t(0), int64_t(-1)}) {
    INFO("dim " << d);
    CHECK(value(argmax(x, d, true)) == 0.f);
    CHECK(value(argmin(x, d)) == 0.f);
    CHECK(value(softmax(x, d)) == 1.f);
    CHECK(value(log_softmax(x, d)) == 0.f);
    CHECK(value(topk(x, 1, d).first) == 3.f);
    CHECK(value(topk(x, 1, d).second) == 0.f);
    CHECK(value(sort(x, d).first) == 3.f);
    CHECK(value(cumsum(x, d)) == 3.f);
    CHECK(stack({x, x}, d).sizes() == DimVec{2});
    CHECK(value(index_select(x, d, tensor(std::vector<int64_t>{0}))) == 3.f);
    CHECK(value(gather(x, d, i0)) == 3.f);
    CHECK(value(scatter(x, d, i0, x * 2.f)) == 6.f);
    CHECK(value(flip(x, {d})) == 3.f);
    CHECK(flip(x, {d}).dim() == 0);
    CHECK(x.flatten(d, d).sizes() == DimVec{1});
    CHECK(value(x.transpose(d, d)) == 3.f);
    CHECK(x.unsqueeze(d).sizes() == DimVec{1});
    CHECK(x.squeeze(d).dim() == 0);
    CHECK(value(sum(x, {d})) == 3.f);
    CHECK(value(amax(x, {d})) == 3.f);
    AMBER_REQUIRE_ERROR(cat({x, x}, d), "cat");
    AMBER_REQUIRE_ERROR(split(x, 1, d), "split");
    AMBER_REQUIRE_ERROR(chunk(x, 1, d), "chunk");
    AMBER_REQUIRE_ERROR(roll(x, {1}, {d}), "roll");
    AMBER_REQUIRE_ERROR(x.slice(d, 0, 1), "slice");
    AMBER_REQUIRE_ERROR(x.select(d, 0), "select");
  }
}

TEST_CASE("eager roi_align refuses what torchvision leaves undefined", "[eager]") {
  const Tensor x = randn({2, 3, 6, 5});
  // A batch index outside the batch (torchvision reads past the input), NaN included.
  AMBER_REQUIRE_ERROR(roi_align(x, tensor({2.0f, 0.0f, 0.0f, 3.0f, 3.0f}).reshape({1, 5}), {2}),
                      "roi_align: box 0's batch index 2 is not an index into the input's batch of 2");
  AMBER_REQUIRE_ERROR(
      roi_align(x, tensor({0.0f, 0.0f, 0.0f, 3.0f, 3.0f, -1.0f, 0.0f, 0.0f, 3.0f, 3.0f}).reshape({2, 5}), {2}),
      "box 1's batch index -1");
  AMBER_REQUIRE_ERROR(roi_align(x, tensor({NAN, 0.0f, 0.0f, 3.0f, 3.0f}).reshape({1, 5}), {2}), "batch index nan");
  // More than 64 samples a bin side; an adaptive grid has no such bound, and NaN boxes give 0.
  AMBER_REQUIRE_ERROR(roi_align(x, tensor({0.0f, 0.0f, 0.0f, 3.0f, 3.0f}).reshape({1, 5}), {2}, 1.0, 65),
                      "sampling_ratio 65 is more than 64 samples per bin side");
  const Tensor nan_box = roi_align(x, tensor({1.0f, NAN, 0.0f, 3.0f, 3.0f}).reshape({1, 5}), {2, 2}, 1.0, 0, true);
  CHECK(nan_box.abs().sum().item<float>() == 0.0f);
  // An adaptive grid of 500000 samples a bin side visits only the few that fall on the 6 x 5
  // image (at once, not 2.5e11 samples a bin); past 2^31 - 1 a side the box is refused.
  const Tensor huge = roi_align(x, tensor({0.0f, -1e6f, -1e6f, 1e6f, 1e6f}).reshape({1, 5}), {2, 2}, 1.0, 0);
  CHECK(std::isfinite(huge.abs().sum().item<float>()));
  AMBER_REQUIRE_ERROR(roi_align(x, tensor({0.0f, -1e30f, 0.0f, 1e30f, 3.0f}).reshape({1, 5}), {2}),
                      "box 0 needs more than 2^31 - 1 samples a bin side");
}
