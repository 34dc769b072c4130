// Writes the archives the command-line checks of tests/CMakeLists.txt read: a small traced
// model (convolution, pooling, linear, fused pointwise ops, every storage dtype among its
// constants, dynamic batch) saved normally and with zip64 records, and the expected weight
// values as safetensors; with --fuzz-seeds, small archives of varied programs (formats 1.3 to
// 1.8's ops among them) and broken variants of one (the fuzzers' seed corpus,
// tests/fuzz/run_fuzz.sh).
// Usage: archive_fixture OUT_DIR | --golden OUT_DIR (format 1.8) | --golden-1.7 OUT_DIR | --golden-1.6 OUT_DIR |
//        --golden-1.5 OUT_DIR |
//        --golden-1.4 OUT_DIR | --golden-1.3 OUT_DIR | --golden-1.2 OUT_DIR | --golden-1.1 OUT_DIR |
//        --golden-1.0 OUT_DIR | --fuzz-seeds OUT_DIR

#include <amber/amber.h>

#include <functional>

using namespace amber;

// The golden archive of format 1.0 (committed under tests/golden/, never regenerated): a
// small dynamic-batch model and its inputs and outputs at batch 1 and 3.
int write_golden_1_0(const std::string& out) {
  manual_seed(2026);
  Tensor w = randn({4, 3, 3, 3}), b = randn({4}), fc = randn({5, 16}), fb = randn({5});
  auto model = [&](const Tensor& x) {
    Tensor y = gelu(conv2d(x, w, b, {2}, {1}) * 0.5);
    y = adaptive_avg_pool2d(y, {2}).flatten(1);
    return linear(y, fc, fb).log_softmax(-1);
  };
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  TracedModule t = trace(model, {randn({1, 3, 8, 8})}, o);
  t.save(out + "/format_1_0.amber");
  std::vector<std::pair<std::string, Tensor>> io;
  for (int64_t n : {1, 3}) {
    Tensor x = randn({n, 3, 8, 8});
    io.emplace_back(str("input.b", n), x);
    io.emplace_back(str("output.b", n), model(x));
  }
  save_safetensors(out + "/format_1_0_io.safetensors", io);
  std::printf("wrote the golden archive to %s\n", out.c_str());
  return 0;
}

// The golden archive of format 1.1 (committed under tests/golden/, never regenerated): an
// Elman RNN whose loop runs the count given as input, and its inputs and outputs at counts 0,
// 2 and 5.
int write_golden_1_1(const std::string& out) {
  manual_seed(2027);
  Tensor w = randn({6, 4}) * 0.5, u = randn({6, 6}) * 0.5, b = randn({6}) * 0.1;
  auto model = [&](const Tensor& x, const Tensor& n) {
    return loop(n, zeros({x.size(1), 6}), [&](const Tensor& i, const Tensor& h) {
      return tanh(linear(index_select(x, 0, i.reshape({1})).squeeze(0), w, b) + linear(h, u));
    });
  };
  auto count = [](int64_t n) { return full({}, n, {DType::i64}); };
  TraceOptions o;
  o.print_warnings = false;
  const Tensor x = randn({5, 2, 4});
  TracedModule t = trace(model, {x, count(3)}, o);
  t.save(out + "/format_1_1.amber");
  std::vector<std::pair<std::string, Tensor>> io{{"x", x}};
  for (int64_t n : {0, 2, 5}) io.emplace_back(str("output.n", n), model(x, count(n)));
  save_safetensors(out + "/format_1_1_io.safetensors", io);
  std::printf("wrote the golden archive to %s\n", out.c_str());
  return 0;
}

// Seeds for the fuzzers: small archives covering many ops (each well under the fuzzers'
// 64 KiB input limit), and the checklist's damage to one of them: truncations, a flipped
// weight byte, junk appended, two archives concatenated.
int write_fuzz_seeds(const std::string& out) {
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = true;
  auto save = [&](const std::string& name, const TracedModule& t) {
    t.save(out + "/" + name + ".amber");
    return t.save_to_bytes();
  };
  manual_seed(11);
  save("ten_mul", trace(
                      [](const Tensor& x) {
                        auto y = x;
                        for (int i = 0; i < 10; ++i) y = y * y;
                        return y;
                      },
                      {randn({2, 5})}, o));
  Tensor emb = randn({10, 4});
  save("embed_softmax", trace(
                            [&](const Tensor& ids, const Tensor& x) {
                              return std::vector<Tensor>{embedding(emb, ids).softmax(-1),
                                                         where(gt(x, 0), x, x.exp() - 1).amax({1}), x.argmax(1),
                                                         cat({x, x * 2}, 1).mean({1}, true)};
                            },
                            {tensor(std::vector<int64_t>{1, 2, 3, 4}, {2, 2}), randn({2, 3})}, o));
  nn::TransformerEncoderLayerOptions to;
  to.d_model = 8;
  to.nhead = 2;
  to.dim_feedforward = 16;
  to.dropout = 0.0;
  to.batch_first = true;
  nn::TransformerEncoder enc(to, 1);
  enc.eval();
  save("transformer_tiny", trace(enc, {randn({1, 3, 8})}, o));
  Tensor w = randn({3, 2, 3, 3}), bw = randn({3});
  nn::BatchNorm2d bn(3);
  bn.eval();
  const std::vector<uint8_t> conv =
      save("conv_bn_pool",
           trace(
               [&](const Tensor& x) {
                 Tensor y = bn(conv2d(x, w, bw, {1}, {1}, {1}, 1));
                 return avg_pool2d(max_pool2d(relu(y), {2}, {}, {0}, {1}, true), {2}).flatten(1).log_softmax(-1);
               },
               {randn({1, 2, 9, 9})}, o));
  Tensor wd = randn({3, 1, 3, 3});  // fused_conv2d's three activations (fuse_product_activation)
  save("conv_activations", trace(
                               [&](const Tensor& x) {
                                 Tensor y = relu6(conv2d(x, w, bw, {1}, {1}));
                                 y = silu(conv2d(y, wd, {}, {2}, {1}, {1}, 3));
                                 return hardswish(conv2d(y, wd, bw, {1}, {1}, {1}, 3));
                               },
                               {randn({1, 2, 9, 9})}, o));
  // Control flow (format 1.1): a loop with a constant count, and nested loops whose counts
  // are inputs and whose bodies read the weights and the outer body's values.
  save("loop_ten_mul",
       trace([](const Tensor& x) { return loop(10, x, [](const Tensor&, const Tensor& s) { return s * s; }); },
             {randn({2, 5})}, o));
  TraceOptions fixed = o;
  fixed.dynamic_batch = false;
  Tensor lw = randn({4, 4});
  save("loop_nested", trace(
                          [&](const Tensor& x, const Tensor& n, const Tensor& m) {
                            return loop(n, x, [&](const Tensor& i, const Tensor& h) {
                              const Tensor scale = i.to(DType::f32) + 1.0;
                              return loop(m, h,
                                          [&](const Tensor&, const Tensor& g) { return tanh(linear(g, lw) * scale); });
                            });
                          },
                          {randn({2, 4}), full({}, 2, {DType::i64}), full({}, 3, {DType::i64})}, fixed));
  // Named dynamic dims (format 1.2): a tiny encoder over [N, T, 8], and a product N*T.
  TraceOptions nt = o;
  nt.dynamic_dims = {{0, 1, 'T'}};
  save("transformer_any_t", trace(enc, {randn({1, 3, 8})}, nt));
  save("flatten_n_t", trace(
                          [](const Tensor& x) {
                            return x.reshape({x.size(0) * x.size(1), -1}).softmax(1);
                          },
                          {randn({2, 3, 4})}, nt));
  // Format 1.3: int8 convolution and linear layer (what `amber quantize` writes).
  const Tensor qw = (randn({4, 3, 3, 3}) * 40.0).to(DType::i8), qs = rand({4}) * 0.01, qb = randn({4});
  const Tensor qlw = (randn({5, 16}) * 40.0).to(DType::i8), qls = rand({5}) * 0.01;
  save("quantized_conv_linear", trace(
                                    [&](const Tensor& x) {
                                      const Tensor y = quantized_conv2d(x, qw, qs, qb, {2}, {1}, {1}, 1, 0.02, 128,
                                                                        "clamp", 0.0, 6.0);
                                      return quantized_linear(y.flatten(1), qlw, qls, {}, 0.03, 0);
                                    },
                                    {randn({1, 3, 4, 4})}, o));
  // Formats 1.4 and 1.5: int8 layers passing uint8 on, through a uint8 addition, a max pool and a flattening.
  const Tensor ql1 = (randn({6, 16}) * 40.0).to(DType::i8), qs1 = rand({6}) * 0.01;
  save("quantized_u8_chain", trace(
                                 [&](const Tensor& x) {
                                   const Tensor y = quantized_conv2d_u8(x, qw, qs, qb, {1}, {1}, {1}, 1, 0.02, 128,
                                                                        "clamp", 0.0, 6.0, 0.03, 0);
                                   const Tensor r = quantized_add(y, y, 0.03, 0, 0.03, 0, "none", 0.0, 6.0, 0.06, 0);
                                   const Tensor h = quantized_linear_u8(max_pool2d(r, {2}).flatten(1), ql1, qs1, {},
                                                                        0.03, 0, "none", 0.0, 6.0, 0.05, 100);
                                   return quantized_linear(h, qlw.slice(1, 0, 6, 1), qls, {}, 0.05, 100);
                                 },
                                 {randn({1, 3, 4, 4})}, o));
  auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    FILE* f = std::fopen((out + "/" + name).c_str(), "wb");
    AMBER_CHECK(f && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fclose(f) == 0,
                "cannot write ", out, "/", name);
  };
  for (size_t cut : {size_t(22), conv.size() / 2, conv.size() - 23})
    write(str("truncated_", cut, ".amber"), std::vector<uint8_t>(conv.begin(), conv.begin() + long(cut)));
  std::vector<uint8_t> flipped = conv;
  flipped[256] ^= 0x40;  // inside the first 64-byte-aligned weight record
  write("flipped.amber", flipped);
  std::vector<uint8_t> twice = conv;
  twice.insert(twice.end(), conv.begin(), conv.end());
  write("concatenated.amber", twice);
  std::vector<uint8_t> junk = conv;
  junk.insert(junk.begin(), {'j', 'u', 'n', 'k'});
  write("junk_before.amber", junk);
  save_safetensors(out + "/weights.safetensors", {{"w", w}, {"b", bw}, {"ids", tensor(std::vector<int64_t>{1, 2})}});
  std::printf("wrote the fuzz seeds to %s\n", out.c_str());
  return 0;
}

// The golden archive of format 1.2 (committed under tests/golden/, never regenerated): over x [N, T, 4], a linear layer
// on the [N*T, 4] flattening, a position ramp of length T, and the first T-1 steps; inputs and outputs at (N, T) = (1,
// 1), (2, 5) and (3, 9).
int write_golden(const std::string& out) {
  manual_seed(2028);
  Tensor w = randn({3, 4}), b = randn({3});
  auto model = [&](const Tensor& x) {
    const int64_t n = x.size(0), t = x.size(1);
    Tensor y = linear(x.reshape({n * t, 4}), w, b).reshape({n, t, 3});
    y = tanh(y + arange(int64_t(0), t, int64_t(1), {DType::f32}).reshape({1, t, 1}) * 0.1);
    return y.slice(1, 0, t - 1);
  };
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = true;
  o.dynamic_dims = {{0, 1, 'T'}};
  TracedModule t = trace(model, {randn({2, 3, 4})}, o);
  t.save(out + "/format_1_2.amber");
  std::vector<std::pair<std::string, Tensor>> io;
  for (auto [n, len] : {std::pair<int64_t, int64_t>{1, 1}, {2, 5}, {3, 9}}) {
    Tensor x = randn({n, len, 4});
    io.emplace_back(str("input.n", n, ".t", len), x);
    io.emplace_back(str("output.n", n, ".t", len), model(x));
  }
  save_safetensors(out + "/format_1_2_io.safetensors", io);
  std::printf("wrote the golden archive to %s\n", out.c_str());
  return 0;
}

// What the golden writers from format 1.3 on share: `model` traced with a dynamic batch on an
// input of [2, sample...] and saved as format_<version>.amber, then its inputs (standard normal
// times `spread`) and outputs at N = 1 and 3 as format_<version>_io.safetensors.
int save_golden(const std::string& out, const std::string& version, const std::function<Tensor(const Tensor&)>& model,
                const DimVec& sample, double spread) {
  auto batch_of = [&](int64_t n) {
    DimVec shape = sample;
    shape.insert(0, n);
    return shape;
  };
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = true;
  TracedModule t = trace(model, {randn(batch_of(2))}, o);
  t.save(str(out, "/format_", version, ".amber"));
  std::vector<std::pair<std::string, Tensor>> io;
  for (int64_t n : {1, 3}) {
    Tensor x = randn(batch_of(n));
    if (spread != 1.0) x = x * spread;
    io.emplace_back(str("input.b", n), x);
    io.emplace_back(str("output.b", n), model(x));
  }
  save_safetensors(str(out, "/format_", version, "_io.safetensors"), io);
  std::printf("wrote the golden archive to %s\n", out.c_str());
  return 0;
}

// The golden archive of format 1.3 (committed under tests/golden/, never regenerated): over
// x [N, 3, 6, 6], an int8 convolution (stride 2, a bias,
// clamp to [0, 6]) and an int8 linear layer on its flattening, weights and scales seeded;
// inputs and outputs at N = 1 and 3, the inputs' values spanning past the convolution's
// calibrated range (saturation) and the linear layer's.
int write_golden_1_3(const std::string& out) {
  manual_seed(2029);
  const Tensor w = clamp(randn({4, 3, 3, 3}) * 40.0, -127.0, 127.0).to(DType::i8), ws = rand({4}) * 0.01 + 0.001,
               b = randn({4});
  const Tensor lw = clamp(randn({5, 36}) * 40.0, -127.0, 127.0).to(DType::i8), ls = rand({5}) * 0.01 + 0.001,
               lb = randn({5});
  auto model = [&](const Tensor& x) {
    const Tensor y = quantized_conv2d(x, w, ws, b, {2}, {1}, {1}, 1, 0.02, 128, "clamp", 0.0, 6.0);
    return quantized_linear(y.flatten(1), lw, ls, lb, 0.03, 0);
  };
  return save_golden(out, "1_3", model, {3, 6, 6}, 1.5);
}

// The golden archive of format 1.4 (committed under tests/golden/, never regenerated): over x [N, 3, 7, 7], an int8
// convolution writing uint8 (ReLU absorbed), a max pool and flattening in uint8, an int8 linear layer reading and
// writing uint8 (hardswish), a last int8 linear layer back to f32; weights, scales and zero points seeded; inputs and
// outputs at N = 1 and 3, their values spanning past the ranges.
int write_golden_1_4(const std::string& out) {
  manual_seed(2030);
  auto int8 = [](const DimVec& shape) { return clamp(randn(shape) * 40.0, -127.0, 127.0).to(DType::i8); };
  const Tensor w = int8({4, 3, 3, 3}), ws = rand({4}) * 0.01 + 0.001, b = randn({4});
  const Tensor l1 = int8({6, 36}), s1 = rand({6}) * 0.01 + 0.001, b1 = randn({6});
  const Tensor l2 = int8({3, 6}), s2 = rand({3}) * 0.01 + 0.001;
  auto model = [&](const Tensor& x) {
    const Tensor y =
        quantized_conv2d_u8(x, w, ws, b, {1}, {1}, {1}, 1, 0.02, 128, "clamp", 0.0, double(INFINITY), 0.01, 0);
    const Tensor p = max_pool2d(y, {3}, {2}).flatten(1);
    const Tensor h = quantized_linear_u8(p, l1, s1, b1, 0.01, 0, "hardswish", 0.0, 6.0, 0.004, 40);
    return quantized_linear(h, l2, s2, {}, 0.004, 40);
  };
  return save_golden(out, "1_4", model, {3, 7, 7}, 1.5);
}

// The golden archive of format 1.5 (committed under tests/golden/, never regenerated): over x [N, 3, 7, 7], a ResNet
// block in uint8: an int8 convolution writing uint8 (ReLU absorbed), a second one writing uint8 without activation,
// their sum with the block's input quantized by a first convolution (quantized_add with ReLU),
// a max pool and flattening in uint8, an int8 linear layer back to f32; weights, scales and
// zero points seeded; inputs and outputs at N = 1 and 3, their values spanning past the ranges.
int write_golden_1_5(const std::string& out) {
  manual_seed(2031);
  auto int8 = [](const DimVec& shape) { return clamp(randn(shape) * 40.0, -127.0, 127.0).to(DType::i8); };
  const Tensor w0 = int8({4, 3, 3, 3}), s0 = rand({4}) * 0.01 + 0.001, b0 = randn({4});
  const Tensor w1 = int8({4, 4, 3, 3}), s1 = rand({4}) * 0.01 + 0.001, b1 = randn({4});
  const Tensor w2 = int8({4, 4, 1, 1}), s2 = rand({4}) * 0.01 + 0.001;
  const Tensor l = int8({3, 36}), sl = rand({3}) * 0.01 + 0.001, bl = randn({3});
  auto model = [&](const Tensor& x) {
    const Tensor a = quantized_conv2d_u8(x, w0, s0, b0, {1}, {1}, {1}, 1, 0.02, 128, "none", 0.0, 6.0, 0.03, 120);
    const Tensor h =
        quantized_conv2d_u8(a, w1, s1, b1, {1}, {1}, {1}, 1, 0.03, 120, "clamp", 0.0, double(INFINITY), 0.02, 0);
    const Tensor r = quantized_conv2d_u8(h, w2, s2, {}, {1}, {0}, {1}, 1, 0.02, 0, "none", 0.0, 6.0, 0.025, 110);
    const Tensor y = quantized_add(a, r, 0.03, 120, 0.025, 110, "clamp", 0.0, double(INFINITY), 0.02, 0);
    return quantized_linear(max_pool2d(y, {3}, {2}).flatten(1), l, sl, bl, 0.02, 0);
  };
  return save_golden(out, "1_5", model, {3, 7, 7}, 1.5);
}

// The golden archive of format 1.6 (committed under tests/golden/, never regenerated): over x [N, 3, 8], two post-norm
// residual blocks as a transformer's: x + linear(x) normalised with a weight and bias, then that plus relu(linear(.))
// normalised without; each residual connection and its norm is one add_layer_norm (the residual-norm fusion). Weights
// seeded; inputs and outputs at N = 1 and 3.
int write_golden_1_6(const std::string& out) {
  manual_seed(2032);
  const Tensor w1 = randn({8, 8}) * 0.3, b1 = randn({8}), w2 = randn({8, 8}) * 0.3;
  const Tensor gamma = rand({8}) + 0.5, beta = randn({8});
  auto model = [&](const Tensor& x) {
    const Tensor y = layer_norm(x + linear(x, w1, b1), {8}, gamma, beta, 1e-5);
    return layer_norm(y + relu(linear(y, w2)), {8}, {}, {}, 1e-3);
  };
  return save_golden(out, "1_6", model, {3, 8}, 2.0);
}

// The golden archive of format 1.7 (committed under tests/golden/, never regenerated): over x [N, 5, 12], multi-head
// self-attention as a transformer writes it: one QKV product, its thirds split into 3 heads of 4, attention with a
// causal mask, the heads moved back beside each other and merged (one attention_merge_heads, the head-merge pass), then
// the output projection. Weights seeded; inputs and outputs at N = 1 and 3.
int write_golden_1_7(const std::string& out) {
  manual_seed(2033);
  const Tensor w_qkv = randn({36, 12}) * 0.3, b_qkv = randn({36}) * 0.1, w_o = randn({12, 12}) * 0.3;
  auto model = [&](const Tensor& x) {
    const int64_t n = x.size(0);
    const std::vector<Tensor> qkv = chunk(linear(x, w_qkv, b_qkv), 3, -1);
    auto heads = [&](const Tensor& t) { return t.reshape({n, 5, 3, 4}).transpose(1, 2); };
    const Tensor a = scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), {}, 0.0, true);
    return linear(a.transpose(1, 2).reshape({n, 5, 12}), w_o);
  };
  return save_golden(out, "1_7", model, {5, 12}, 1.0);
}

// The golden archive of format 1.8, the current one (committed under tests/golden/, never
// regenerated once released): over x [N, 7], an MLP whose layers end in a ReLU, a clamp to
// [-1, 0.5] and a hardswish, each linear layer and its activation one fused_linear (the
// product-activation fusion), then a plain output layer. Weights seeded; inputs and outputs at
// N = 1 and 3.
int write_golden_1_8(const std::string& out) {
  manual_seed(2034);
  const Tensor w1 = randn({9, 7}) * 0.4, b1 = randn({9}) * 0.1, w2 = randn({6, 9}) * 0.4, w3 = randn({5, 6}) * 0.4,
               b3 = randn({5}) * 0.1, w4 = randn({3, 5}) * 0.4;
  auto model = [&](const Tensor& x) {
    const Tensor h = clamp(linear(relu(linear(x, w1, b1)), w2), -1.0, 0.5);
    return linear(hardswish(linear(h, w3, b3)), w4);
  };
  return save_golden(out, "1_8", model, {7}, 2.0);
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--golden") return write_golden_1_8(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.7") return write_golden_1_7(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.6") return write_golden_1_6(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.5") return write_golden_1_5(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.4") return write_golden_1_4(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.3") return write_golden_1_3(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.2") return write_golden(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.1") return write_golden_1_1(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--golden-1.0") return write_golden_1_0(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--fuzz-seeds") return write_fuzz_seeds(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: archive_fixture OUT_DIR | --golden OUT_DIR | --golden-1.7 OUT_DIR | --golden-1.6 OUT_DIR | "
                 "--golden-1.5 OUT_DIR | "
                 "--golden-1.4 OUT_DIR | "
                 "--golden-1.3 OUT_DIR | "
                 "--golden-1.2 OUT_DIR | "
                 "--golden-1.1 OUT_DIR | "
                 "--golden-1.0 OUT_DIR | "
                 "--fuzz-seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  manual_seed(7);
  Tensor w = randn({4, 1, 3, 3}), b = randn({4}), fc = randn({3, 16});
  std::vector<Tensor> odd;  // constants of every dtype, returned as outputs (so none is folded away)
  for (int i = 0; i < kNumDTypes; ++i) odd.push_back((arange(0, 5, 1, {DType::f32}) - 2).to(DType(i)));
  auto model = [&](const Tensor& x) {
    Tensor y = relu(conv2d(x, w, b, {1}, {1}) * 0.5 + 1.0);
    y = max_pool2d(y, {2}).flatten(1);
    std::vector<Tensor> outs{linear(y, fc).sum({1}, true)};
    outs.insert(outs.end(), odd.begin(), odd.end());
    return outs;
  };
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  TracedModule t = trace(model, {randn({2, 1, 4, 4})}, o);
  t.save(out + "/model.amber");
  SaveOptions z64;
  z64.force_zip64 = true;
  t.save(out + "/model_zip64.amber", z64);
  std::vector<std::pair<std::string, Tensor>> expected;
  for (const graph::Value* c : t.graph().constants()) expected.emplace_back(c->name, c->data);
  save_safetensors(out + "/expected.safetensors", expected);
  std::printf("wrote %s/model.amber (%zu constants, %zu nodes)\n", out.c_str(), t.graph().constants().size(),
              t.graph().num_nodes());
  return 0;
}
