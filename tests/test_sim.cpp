// The device seam on the simulated device (tests/sim): loaded models equal the CPU bit for bit
// with inputs and outputs on either side, 8 threads, sim:0 and sim:1, every allocation, copy and
// kernel of a load and a call failed in turn (a clear error, nothing leaked, the model usable
// after), steady calls that allocate nothing, host inputs staged, read in place or sent up in
// chunks, device graphs, a model's setup scope, replicas, device_memory and synchronize.

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "amber/core/backend_registry.h"
#include "amber/core/devices.h"
#include "amber/loader/replicas.h"
#include "models/small.h"
#include "sim_control.h"
#include "test_util.h"

using namespace amber;
namespace sim = amber::test::sim;

namespace {

TraceOptions quiet(bool dynamic = false) {
  TraceOptions o;
  o.print_warnings = false;
  o.dynamic_batch = dynamic;
  return o;
}

void check_equal(const Tensor& got, const Tensor& want, const std::string& what, double atol = 0, double rtol = 0) {
  REQUIRE(got.device().is_cpu());
  const test::Diff d = test::compare(got, want, atol, rtol);
  INFO(what << ": " << d.message);
  CHECK(d.ok);
}

// Where the same model runs another batch, or on another number of threads, oneDNN's f32
// convolutions and products may sum in another order (on an AVX2 processor, LeNet's batch of 8
// split 4 + 4 differed by 2.4e-8): equal within a few roundings, not bit for bit.
constexpr double kResplitAtol = 1e-6, kResplitRtol = 1e-5;

// LeNet with seeded weights, traced at batch 1 with a dynamic batch: convolutions (set up
// with packed weights), linear layers, pooling and fused pointwise steps.
const std::vector<uint8_t>& lenet_archive() {
  static const std::vector<uint8_t> bytes = [] {
    manual_seed(7);
    models::LeNet net;
    net.eval();
    return trace(net, {randn({1, 1, 32, 32})}, quiet(true)).save_to_bytes();
  }();
  return bytes;
}

Tensor lenet_input(int64_t batch, uint64_t seed = 11) {
  manual_seed(seed);
  return randn({batch, 1, 32, 32});
}

uint64_t live_allocations() { return sim::counters().live_allocations; }

}  // namespace

TEST_CASE("sim: tensors move to a device whose memory the host cannot touch, and back", "[sim]") {
  const Tensor x = randn({3, 5});
  const Tensor d = x.to(Device::sim(0));
  CHECK(d.device() == Device::sim(0));
  check_equal(d.to(Device::cpu()), x, "round trip");
  check_equal((d * 2 + 1).to(Device::cpu()), x * 2 + 1, "eager ops on sim");
  check_equal(d.sum({1}).to(Device::cpu()), x.sum({1}), "a reduction on sim");
  CHECK(d.at<float>({1, 2}) == x.at<float>({1, 2}));  // host reads copy through the backend

  // The host touching device memory crashes (in a child process).
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);  // not Catch's handler: the child just dies
    volatile float v = *static_cast<const float*>(d.data());
    (void)v;
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSEGV);

  AMBER_REQUIRE_ERROR(add(x, d), "expected all tensors on the same device, got cpu and sim:0");
  AMBER_REQUIRE_ERROR(ones({2}, Device::sim(7)), "sim:7 requested but only 2 sim devices are present");
  AMBER_REQUIRE_ERROR(Device::parse("sim:x"), "expected cpu, cuda, cuda:N, sim or sim:N");
  CHECK(Device::parse("sim:1") == Device::sim(1));
}

TEST_CASE("sim: a loaded model equals the CPU, with inputs and outputs on either side", "[sim]") {
  const Model cpu = load(lenet_archive());
  const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
  CHECK(dev.device() == Device::sim(0));
  for (int64_t batch : {1, 8, 3}) {
    const Tensor x = lenet_input(batch);
    const Tensor want = cpu.forward({x})[0];
    const Tensor out = dev.forward({x})[0];
    CHECK(out.device() == Device::sim(0));
    check_equal(out.to(Device::cpu()), want, str("batch ", batch, ", host input"));
    check_equal(dev.forward({x.to(Device::sim(0))})[0].to(Device::cpu()), want, "device input");
    const Tensor host = dev.forward({x}, CallOptions{.outputs_on_host = true})[0];
    CHECK(host.device().is_cpu());
    check_equal(host, want, "outputs on the host");
    // A non-contiguous input on either side.
    const Tensor wide = lenet_input(1).expand({batch, 1, 32, 32}).transpose(2, 3);
    check_equal(dev.forward({wide})[0].to(Device::cpu()), cpu.forward({wide})[0], "strided host input");
    const Tensor strided_dev = lenet_input(1).to(Device::sim(0)).expand({batch, 1, 32, 32}).transpose(2, 3);
    check_equal(dev.forward({strided_dev})[0].to(Device::cpu()), cpu.forward({wide})[0], "strided device input");
  }
  const Model host_out = load(lenet_archive(), LoadOptions{.device = Device::sim(1), .outputs_on_host = true});
  check_equal(host_out.forward({lenet_input(2)})[0], cpu.forward({lenet_input(2)})[0], "LoadOptions::outputs_on_host");
  AMBER_REQUIRE_ERROR(dev.forward({lenet_input(1).to(Device::sim(1))}),
                      "input input0 is on sim:1 but the model runs on sim:0");
  // A backend without AMBER_BACKEND_BF16 is never handed AMBER_PRECISION_BF16.
  AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.device = Device::sim(0), .precision = Precision::bf16}),
                      "precision bf16 is not offered by the sim backend on this machine (its kernels have no bf16 "
                      "path yet): load with Precision::f32");
  AMBER_REQUIRE_ERROR(
      load(lenet_archive(), LoadOptions{.device = Device::sim(0), .precision = Precision::dynamic_int8}),
      "precision dynamic-int8 is not offered by the sim backend on this machine (its kernels have no "
      "int8 path yet): load with Precision::f32");
  // TF32 only where a backend says its kernels honour it (the CUDA backend's flag), never on
  // the simulated device or the CPU.
  AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.device = Device::sim(0), .precision = Precision::tf32}),
                      "precision tf32 is not offered by the sim backend on this machine (TF32 is a format of NVIDIA "
                      "GPUs' tensor cores: load on Device::cuda): load with Precision::f32");
  AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.precision = Precision::tf32}),
                      "precision tf32 is not offered by the cpu backend");
  // f16 likewise (the CUDA backend's flag on GPUs with f16 tensor cores).
  AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.device = Device::sim(0), .precision = Precision::f16}),
                      "precision f16 is not offered by the sim backend on this machine (f16 products run on NVIDIA "
                      "GPUs' tensor cores: load on Device::cuda): load with Precision::f32");
  AMBER_REQUIRE_ERROR(load(lenet_archive(), LoadOptions{.precision = Precision::f16}),
                      "precision f16 is not offered by the cpu backend");
}

TEST_CASE("sim: device_memory counts what Amber holds on a device and its peak; synchronize waits", "[sim]") {
  const Device d = Device::sim(1);
  synchronize(d);
  reset_peak_device_memory(d);
  const DeviceMemory m0 = device_memory(d);
  CHECK(m0.peak_held_bytes == m0.held_bytes);
  CHECK(m0.limit_bytes == 0);
  CHECK(m0.device_total_bytes == 0);  // the simulated device has no driver to ask
  const uint64_t other_held = device_memory(Device::sim(0)).held_bytes;
  {
    const Tensor a = ones({1000}, d);  // 4000 bytes
    const DeviceMemory m1 = device_memory(d);
    CHECK(m1.held_bytes == m0.held_bytes + 4000);
    CHECK(m1.peak_held_bytes == m1.held_bytes);
    CHECK(device_memory(Device::sim(0)).held_bytes == other_held);  // devices are counted apart
    const Model dev = load(lenet_archive(), LoadOptions{.device = d});
    (void)dev.forward({lenet_input(4)});
    const DeviceMemory m2 = device_memory(d);
    CHECK(m2.held_bytes > m1.held_bytes);  // the weights, the arena and the output
    CHECK(m2.peak_held_bytes >= m2.held_bytes);
    // Eager work is queued until synchronize (the simulated stream defers it), and a failure
    // in it is reported there.
    const uint64_t syncs = sim::counters().syncs;
    const Tensor b = a * 2;
    synchronize(d);
    CHECK(sim::counters().syncs == syncs + 1);
    sim::fail(AMBER_SIM_FAIL_KERNEL, 1);
    const Tensor c = a * 3;
    AMBER_REQUIRE_ERROR(synchronize(d), "synchronize: work queued on sim:1 failed: ");
    CHECK(b.at<float>({999}) == 2.0f);
  }
  const DeviceMemory m3 = device_memory(d);
  CHECK(m3.held_bytes == m0.held_bytes);  // everything above went back
  CHECK(m3.peak_held_bytes > m3.held_bytes);
  reset_peak_device_memory(d);
  CHECK(device_memory(d).peak_held_bytes == m3.held_bytes);
  AMBER_REQUIRE_ERROR(device_memory(Device::cpu()), "device_memory: cpu's memory is not tracked");
  AMBER_REQUIRE_ERROR(device_memory(Device::sim(7)), "sim:7 requested but only 2 sim devices are present");
  synchronize(Device::cpu());  // nothing to wait for
}

TEST_CASE("sim: a steady-state call allocates nothing and uploads only its inputs", "[sim]") {
  const Tensor x = lenet_input(1);
  // With device graphs (the default), a call from the host copies its input into the
  // workspace's page-locked block and launches the graph, which uploads it: nothing else is
  // queued. Without them, the one upload is queued by the call.
  for (bool graphs : {true, false}) {
    const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0), .device_graphs = graphs});
    (void)dev.forward({x});
    const amber_sim_counters before = sim::counters();
    for (int i = 0; i < 5; ++i) (void)dev.forward({x});
    const amber_sim_counters after = sim::counters();
    std::printf(
        "sim: 5 steady-state calls, graphs %s: %llu allocations, %llu uploads (%llu bytes; inputs %zu bytes each), "
        "%llu graph launches, %llu kernels, %llu syncs\n",
        graphs ? "on" : "off", (unsigned long long)(after.allocations - before.allocations),
        (unsigned long long)(after.uploads - before.uploads),
        (unsigned long long)(after.upload_bytes - before.upload_bytes), x.nbytes(),
        (unsigned long long)(after.graph_launches - before.graph_launches),
        (unsigned long long)(after.kernels - before.kernels), (unsigned long long)(after.syncs - before.syncs));
    CHECK(after.allocations == before.allocations);
    CHECK(after.uploads - before.uploads == (graphs ? 0 : 5));
    CHECK(after.upload_bytes - before.upload_bytes == (graphs ? 0 : 5 * x.nbytes()));
    CHECK(after.graph_launches - before.graph_launches == (graphs ? 5 : 0));
    CHECK(after.syncs - before.syncs == 5);  // one per call, before it returns
    CHECK(after.streams_created == before.streams_created);
    CHECK(after.host_allocs_live == before.host_allocs_live);
  }
}

TEST_CASE("sim: load queues nothing on the default stream after its warm-up's last call, nor does a call",
          "[sim][graphs]") {
  // On CUDA, allocations, frees and default-stream work are ordered on the legacy stream, which a
  // call's stream then waits for: whatever load leaves there after the warm-up's last call (its
  // device zeros freed), the caller's first call would wait for, and no later call.
  for (bool graphs : {true, false}) {
    const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0), .device_graphs = graphs});
    CHECK(sim::counters().legacy_tail == 0);
    for (int i = 0; i < 3; ++i) {
      const std::vector<Tensor> y = dev.forward({lenet_input(1, 300 + uint64_t(i))});
      CHECK(sim::counters().legacy_tail == 0);
    }
  }
}

TEST_CASE("sim: calls from the host stage their inputs in page-locked memory, copied in by the graph",
          "[sim][graphs]") {
  const Model cpu = load(lenet_archive());
  const amber_sim_counters c0 = sim::counters();
  {
    const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
    const amber_sim_counters c1 = sim::counters();
    CHECK(c1.host_allocs_live - c0.host_allocs_live == 1);  // the warm-up's workspace
    // Each call's own data arrives, through the one block, in the replayed copies.
    for (uint64_t i = 0; i < 3; ++i) {
      const Tensor x = lenet_input(1, 200 + i);
      check_equal(dev.forward({x})[0].to(Device::cpu()), cpu.forward({x})[0], str("call ", i));
    }
    // A non-contiguous host input is made dense first.
    const Tensor strided = lenet_input(1, 9).transpose(2, 3);  // a view with swapped strides
    REQUIRE(!strided.is_contiguous());
    check_equal(dev.forward({strided})[0].to(Device::cpu()), cpu.forward({strided})[0], "a strided host input");
    const amber_sim_counters c2 = sim::counters();
    CHECK(c2.uploads == c1.uploads);  // every upload was a replayed copy
    CHECK(c2.graphs_captured == c1.graphs_captured);
    CHECK(c2.graph_launches - c1.graph_launches == 4);
    // A call's failure leaves the block to the next call.
    sim::fail(AMBER_SIM_FAIL_KERNEL, 1);
    CHECK_THROWS(dev.forward({lenet_input(1, 5)}));
    check_equal(dev.forward({lenet_input(1, 6)})[0].to(Device::cpu()), cpu.forward({lenet_input(1, 6)})[0],
                "the call after a failure");
  }
  CHECK(sim::counters().host_allocs_live == c0.host_allocs_live);  // freed with the workspaces
  // Inputs over 128 KiB are copied from the caller's memory, by the call (loader/plan.cpp).
  TraceOptions quiet;
  quiet.print_warnings = false;
  const Tensor big = randn({40000});  // 160,000 bytes
  const std::vector<uint8_t> big_archive =
      trace([](const Tensor& t) { return relu(t * 2 + 1); }, {big}, quiet).save_to_bytes();
  const amber_sim_counters before_load = sim::counters();
  const Model dev = load(big_archive, LoadOptions{.device = Device::sim(0)});
  const amber_sim_counters c3 = sim::counters();
  CHECK(c3.host_allocs_live == c0.host_allocs_live);
  // Its warm-up calls twice from the host, once on each set of output buffers (nothing of such
  // calls' own to record): two uploads of the zeros, besides the weights'.
  CHECK(c3.upload_bytes - before_load.upload_bytes >= 2 * big.nbytes());
  CHECK(c3.upload_bytes - before_load.upload_bytes < 3 * big.nbytes());
  check_equal(dev.forward({big})[0].to(Device::cpu()), relu(big * 2 + 1), "a large input");
  CHECK(sim::counters().uploads - c3.uploads == 1);
}

TEST_CASE("sim: a call's staged host inputs go to the device in one copy", "[sim][graphs]") {
  // Three inputs of 5, 3 and 7 floats: their staging slots have alignment gaps between them.
  const std::vector<uint8_t> archive =
      trace([](const Tensor& a, const Tensor& b, const Tensor& c) { return a.sum() * b.sum() + c; },
            {randn({5}), randn({3}), randn({7})}, quiet())
          .save_to_bytes();
  const Model cpu = load(archive);
  const Model dev = load(archive, LoadOptions{.device = Device::sim(0), .warm_up = false});
  const amber_sim_counters c0 = sim::counters();
  for (uint64_t i = 0; i < 3; ++i) {  // run directly, recorded, replayed
    manual_seed(40 + i);
    const std::vector<Tensor> in = {randn({5}), randn({3}), randn({7})};
    check_equal(dev.forward(in)[0].to(Device::cpu()), cpu.forward(in)[0], str("call ", i));
  }
  // One upload by the first call and one recorded by the second; the replay's is within it.
  const amber_sim_counters c1 = sim::counters();
  CHECK(c1.uploads - c0.uploads == 2);
  CHECK(c1.graphs_captured - c0.graphs_captured == 1);
}

TEST_CASE("sim: host inputs read only by fused programs of their size are read in place, not copied", "[sim][graphs]") {
  // ten_mul (x = x * x ten times: one fused node) and relu(a * b + 1): their kernels read the
  // page-locked block itself (the backend's AMBER_BACKEND_KERNELS_READ_PAGE_LOCKED), so no call
  // uploads anything, run directly, recorded or replayed. With b broadcast ([1]), b would be read
  // for every element: both inputs are copied in, as before.
  const auto ten_mul = [](const Tensor& t) {
    Tensor x = t;
    for (int i = 0; i < 10; ++i) x = x * x;
    return x;
  };
  const std::vector<uint8_t> one = trace(ten_mul, {randn({5})}, quiet()).save_to_bytes();
  const auto relu_ab = [](const Tensor& a, const Tensor& b) { return relu(a * b + 1); };
  const std::vector<uint8_t> two = trace(relu_ab, {randn({37}), randn({37})}, quiet()).save_to_bytes();
  const std::vector<uint8_t> broadcast = trace(relu_ab, {randn({37}), randn({1})}, quiet()).save_to_bytes();
  struct Case {
    const std::vector<uint8_t>& archive;
    std::vector<std::vector<int64_t>> shapes;
    int uploads;  // by the three calls: run directly, recorded, replayed (the replay's within it)
  };
  for (const Case& c : {Case{one, {{5}}, 0}, Case{two, {{37}, {37}}, 0}, Case{broadcast, {{37}, {1}}, 2}}) {
    const Model cpu = load(c.archive);
    const Model dev = load(c.archive, LoadOptions{.device = Device::sim(0), .warm_up = false});
    const amber_sim_counters c0 = sim::counters();
    for (uint64_t i = 0; i < 3; ++i) {
      manual_seed(60 + i);
      std::vector<Tensor> in;
      for (const auto& shape : c.shapes) in.push_back(randn(shape) * 0.5f);
      check_equal(dev.forward(in)[0].to(Device::cpu()), cpu.forward(in)[0], str(c.shapes.size(), " inputs, call ", i));
    }
    const amber_sim_counters c1 = sim::counters();
    CHECK(c1.uploads - c0.uploads == uint64_t(c.uploads));
    CHECK(c1.graphs_captured - c0.graphs_captured == 1);
    CHECK(c1.graph_launches - c0.graph_launches == 2);
  }
}

TEST_CASE("sim: every setup of a model's plans gets the model's one setup scope, destroyed after its states",
          "[sim][scope]") {
  // LeNet at batch 1 and two more batch sizes (a plan each), and an Elman step in a loop (the
  // body's plan): one scope a model (amber_backend::scope_create), handed to every setup and
  // call; the simulated device counts any scope handed over that is not live, or destroyed
  // before a state made with it, and any state destroyed after the stream it last ran on (the
  // batch sizes' plans and the loop body run node by node on their workspaces' streams) or before
  // a graph recording a call with it.
  const amber_sim_counters c0 = sim::counters();
  {
    const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
    const amber_sim_counters c1 = sim::counters();
    CHECK(c1.scopes_created - c0.scopes_created == 1);
    CHECK(c1.scopes_live - c0.scopes_live == 1);
    const uint64_t setups = c1.scoped_setups - c0.scoped_setups;  // the batch-1 plan's
    CHECK(setups >= 4);  // LeNet's two convolutions and three linear layers set up
    const Model cpu = load(lenet_archive());
    for (int64_t batch : {3, 5}) {
      const Tensor x = lenet_input(batch);
      check_equal(dev.forward({x})[0].to(Device::cpu()), cpu.forward({x})[0], str("batch ", batch));
    }
    const amber_sim_counters c2 = sim::counters();
    CHECK(c2.scopes_created - c0.scopes_created == 1);
    CHECK(c2.scoped_setups - c0.scoped_setups == 3 * setups);
  }
  {
    manual_seed(5);
    const Tensor u = randn({6, 6}) * 0.5f;
    const auto elman = [&](const Tensor& h0, const Tensor& n) {
      return loop(n, h0, [&](const Tensor&, const Tensor& h) { return tanh(linear(h, u)); });
    };
    const Tensor h0 = randn({2, 6}), n = full({}, 4, {DType::i64});
    const std::vector<uint8_t> bytes = trace(elman, {h0, n}, quiet()).save_to_bytes();
    const amber_sim_counters c1 = sim::counters();
    const Model dev = load(bytes, LoadOptions{.device = Device::sim(1)});
    const amber_sim_counters c2 = sim::counters();
    CHECK(c2.scopes_created - c1.scopes_created == 1);
    CHECK(c2.scoped_setups - c1.scoped_setups >= 1);  // the body's linear layer
    check_equal(dev.forward({h0, n})[0].to(Device::cpu()), load(bytes).forward({h0, n})[0], "the loop");
  }
  const amber_sim_counters c3 = sim::counters();
  CHECK(c3.scopes_live == c0.scopes_live);
  CHECK(c3.scope_misuses == 0);
  CHECK(c3.states_after_their_stream == 0);
  CHECK(c3.states_before_their_graphs == 0);  // LeNet's batch-1 plan recorded graphs in its warm-up
}

TEST_CASE("sim: large host inputs go up in chunks through page-locked memory, large outputs come back through it",
          "[sim][upload]") {
  // Plan::upload: a host input of 1 MiB or more is copied into the workspace's page-locked block
  // by the call's threads and sent to the device in 4 MiB chunks (5.06 MiB: two), each chunk's
  // transfer queued while the next is copied in; smaller ones are copied from the caller's memory.
  // A failed copy fails its call alone.
  const auto f = [](const Tensor& big, const Tensor& small) { return relu(big * 2 + 1) + small.sum(); };
  const std::vector<int64_t> big_shape{3, 7, 250, 253};  // 5.06 MiB of f32
  manual_seed(3);
  const std::vector<uint8_t> bytes = trace(f, {randn(big_shape), randn({5})}, quiet()).save_to_bytes();
  const Model cpu = load(bytes);
  const Model dev = load(bytes, LoadOptions{.device = Device::sim(0), .num_threads = 2});
  for (uint64_t call = 0; call < 3; ++call) {  // run directly, recorded, replayed
    manual_seed(40 + call);
    const Tensor big = randn(big_shape), small = randn({5});
    const amber_sim_counters c0 = sim::counters();
    check_equal(dev.forward({big, small})[0].to(Device::cpu()), cpu.forward({big, small})[0], str("call ", call));
    const amber_sim_counters c1 = sim::counters();
    CHECK(c1.uploads - c0.uploads == 3);  // the two chunks and the small input
    CHECK(c1.upload_bytes - c0.upload_bytes == uint64_t(big.nbytes() + small.nbytes()));
    CHECK(c1.host_allocs_live >= 1);
  }
  // The output asked on the host (5.06 MiB) comes back through a page-locked block of its own,
  // copied out once the call has synchronised (the simulated device runs the copy then: read any
  // earlier, it would still hold the last call's values or nothing).
  for (uint64_t call = 0; call < 2; ++call) {
    manual_seed(50 + call);
    const Tensor big = randn(big_shape), small = randn({5});
    const amber_sim_counters c0 = sim::counters();
    const Tensor out = dev.forward({big, small}, CallOptions{.outputs_on_host = true})[0];
    const amber_sim_counters c1 = sim::counters();
    REQUIRE(out.device().is_cpu());
    check_equal(out, cpu.forward({big, small})[0], str("on the host, call ", call));
    CHECK(c1.downloads - c0.downloads == 1);
    CHECK(c1.host_allocs_live - c0.host_allocs_live == (call == 0 ? 1u : 0u));  // the block, once
  }
  // The second chunk's copy fails: the call fails naming the input, the next call succeeds.
  const Tensor big = randn(big_shape), small = randn({5});
  sim::fail(AMBER_SIM_FAIL_COPY, 2);
  AMBER_REQUIRE_ERROR(dev.forward({big, small}), "copying input 0 (5313000 bytes) to the arena");
  check_equal(dev.forward({big, small})[0].to(Device::cpu()), cpu.forward({big, small})[0], "after the failure");
  // The output's copy to the block fails likewise.
  const uint64_t copies = sim::count(AMBER_SIM_FAIL_COPY);
  (void)dev.forward({big, small}, CallOptions{.outputs_on_host = true});
  const uint64_t per_call = sim::count(AMBER_SIM_FAIL_COPY) - copies;  // the uploads, then the output's
  sim::fail(AMBER_SIM_FAIL_COPY, per_call);
  AMBER_REQUIRE_ERROR(dev.forward({big, small}, CallOptions{.outputs_on_host = true}), "copying an output to the host");
  check_equal(dev.forward({big, small}, CallOptions{.outputs_on_host = true})[0], cpu.forward({big, small})[0],
              "on the host after the failure");
}

TEST_CASE("sim: device graphs are recorded once per call slot and replayed on each call's own data", "[sim][graphs]") {
  const Model cpu = load(lenet_archive());
  const amber_sim_counters c0 = sim::counters();
  {
    const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
    const amber_sim_counters c1 = sim::counters();
    // By the warm-up's second call on device zeros, and its second from the host (calls whose
    // inputs are all on the host have a graph of their own, which copies them in); then the
    // same two for the call slot's second set of output buffers, the first set's held.
    CHECK(c1.graphs_captured - c0.graphs_captured == 4);
    // Each call reads its own inputs (copied into the arena) from either side, and what it
    // returns stays valid after later calls: a call writes output buffers no caller holds (one
    // of the two sets a call slot hands out, or, when the caller holds both, a third set whose
    // buffers are copied out).
    std::vector<Tensor> got, want;
    for (uint64_t i = 0; i < 4; ++i) {
      const Tensor x = lenet_input(1, 100 + i);
      want.push_back(cpu.forward({x})[0]);
      got.push_back(i % 2 ? dev.forward({x.to(Device::sim(0))})[0] : dev.forward({x})[0]);
      CHECK(got.back().device() == Device::sim(0));
    }
    check_equal(dev.forward({lenet_input(1, 7)}, CallOptions{.outputs_on_host = true})[0],
                cpu.forward({lenet_input(1, 7)})[0], "outputs on the host");
    for (size_t i = 0; i < got.size(); ++i) check_equal(got[i].to(Device::cpu()), want[i], str("call ", i));
    // Collecting results: once both sets are held, calls use the third set and copy their
    // outputs out (its recording from the host was made by the outputs-on-host call above,
    // its second call from the host).
    const amber_sim_counters c1a = sim::counters();
    for (uint64_t i = 4; i < 8; ++i) {
      const Tensor x = lenet_input(1, 100 + i);
      want.push_back(cpu.forward({x})[0]);
      got.push_back(dev.forward({x})[0]);
    }
    for (size_t i = 0; i < got.size(); ++i) check_equal(got[i].to(Device::cpu()), want[i], str("collected ", i));
    CHECK(sim::counters().graph_launches - c1a.graph_launches == 4);
    CHECK(sim::counters().device_copies - c1a.device_copies == 4);  // one output each
    got.clear();
    // A loop that keeps its last result alternates between the two sets, each replaying its
    // own recording (both recorded at load), and hands the buffers themselves out: no copy of
    // an output, no call run node by node or recording.
    const amber_sim_counters c1b = sim::counters();
    Tensor last, last_want;
    for (uint64_t i = 0; i < 6; ++i) {
      const Tensor x = lenet_input(1, 300 + i);
      const Tensor y = dev.forward({x})[0];
      if (last.defined()) check_equal(last.to(Device::cpu()), last_want, str("the result before call ", i));
      last = y, last_want = cpu.forward({x})[0];
      check_equal(last.to(Device::cpu()), last_want, str("loop call ", i));
    }
    const amber_sim_counters c2 = sim::counters();
    CHECK(c2.graphs_captured == c1b.graphs_captured);
    CHECK(c2.graph_launches - c1b.graph_launches == 6);
    CHECK(c2.device_copies == c1b.device_copies);
    CHECK(c2.uploads == c1b.uploads);  // replays copy the staged inputs within
    last = Tensor();
    // A new batch size: a new plan, run directly on its first call, recorded on its second.
    const Tensor x5 = lenet_input(5);
    for (int i = 0; i < 3; ++i) check_equal(dev.forward({x5})[0].to(Device::cpu()), cpu.forward({x5})[0], "batch 5");
    const amber_sim_counters c3 = sim::counters();
    CHECK(c3.graphs_captured - c2.graphs_captured == 1);
    CHECK(c3.graph_launches - c2.graph_launches == 2);  // the recording call launches too
  }
  CHECK(sim::counters().graphs_live == c0.graphs_live);  // destroyed with their plans
  // Off on request, and for calls that check or time every node.
  const amber_sim_counters c4 = sim::counters();
  const Model off = load(lenet_archive(), LoadOptions{.device = Device::sim(0), .device_graphs = false});
  const Model profiled = load(lenet_archive(), LoadOptions{.device = Device::sim(0), .profile = true});
  for (int i = 0; i < 3; ++i) {
    check_equal(off.forward({lenet_input(2)})[0].to(Device::cpu()), cpu.forward({lenet_input(2)})[0], "graphs off");
    check_equal(profiled.forward({lenet_input(2)})[0].to(Device::cpu()), cpu.forward({lenet_input(2)})[0], "profile");
  }
  CHECK(sim::counters().graphs_captured == c4.graphs_captured);
  CHECK(sim::counters().graph_launches == c4.graph_launches);
}

TEST_CASE("sim: 8 threads x calls on one model, each output equal to a lone call's", "[sim][threads]") {
  const Model dev = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
  std::vector<Tensor> inputs, want;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(lenet_input(1 + i % 2 * 3, 100 + i));
    want.push_back(dev.forward({inputs.back()})[0].to(Device::cpu()));
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const size_t k = size_t(t + i) % inputs.size();
        const Tensor out = dev.forward({inputs[k]})[0].to(Device::cpu());
        if (test::compare(out, want[k], 0, 0).ok == false) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
}

TEST_CASE("sim: models on sim:0 and sim:1 at once", "[sim]") {
  const Model a = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
  const Model b = load(lenet_archive(), LoadOptions{.device = Device::sim(1)});
  const Tensor x = lenet_input(2);
  const Tensor ya = a.forward({x})[0], yb = b.forward({x.to(Device::sim(1))})[0];
  CHECK(ya.device() == Device::sim(0));
  CHECK(yb.device() == Device::sim(1));
  check_equal(yb.to(Device::cpu()), ya.to(Device::cpu()), "sim:1 vs sim:0");
  check_equal(ya.to(Device::sim(1)).to(Device::cpu()), ya.to(Device::cpu()), "device to device copy");
}

TEST_CASE("sim: every allocation, copy and kernel of a load and a call failed in turn", "[sim][faults]") {
  const Tensor x = lenet_input(1);
  const Tensor want = load(lenet_archive()).forward({x})[0];
  const uint64_t live0 = live_allocations();
  struct Kind {
    amber_sim_fault kind;
    const char* name;
  };
  for (const Kind& k : {Kind{AMBER_SIM_FAIL_ALLOCATION, "allocation"}, Kind{AMBER_SIM_FAIL_COPY, "copy"},
                        Kind{AMBER_SIM_FAIL_KERNEL, "kernel"}}) {
    // How many operations of this kind a load (with its warm-up) does.
    uint64_t n_load = 0;
    {
      const uint64_t c0 = sim::count(k.kind);
      const Model m = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
      n_load = sim::count(k.kind) - c0;
    }
    REQUIRE(live_allocations() == live0);
    int failed_loads = 0;
    for (uint64_t i = 1; i <= n_load; ++i) {
      INFO(k.name << " " << i << " of " << n_load << " during load");
      sim::fail(k.kind, i);
      try {
        const Model m = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
        // The failure hit the warm-up call, which load tolerates: the model works.
        sim::fail(k.kind, 0);
        check_equal(m.forward({x})[0].to(Device::cpu()), want, "after a failure in the warm-up");
      } catch (const Error& e) {
        ++failed_loads;
        const std::string what = e.what();
        CHECK(what.find("sim") != std::string::npos);
        if (k.kind == AMBER_SIM_FAIL_ALLOCATION && i == 1) {
          // The first allocation of a load is its first weight's: a weight that does not fit.
          AMBER_CASE("gpu.weights-oom");
          CHECK_THAT(what, Catch::Matchers::Contains("out of memory: failed to allocate") &&
                               Catch::Matchers::Contains("bytes on sim:0: sim: out of memory"));
        }
      }
      sim::fail(k.kind, 0);
      CHECK(live_allocations() == live0);  // nothing leaked on the device
    }
    // A call: its own operations failed in turn; the model keeps working.
    const Model m = load(lenet_archive(), LoadOptions{.device = Device::sim(0)});
    for (int64_t batch : {1, 5}) {  // batch 5: a new plan, made by this call
      const Tensor in = lenet_input(batch);
      const Tensor ref = load(lenet_archive()).forward({in})[0];
      const uint64_t c0 = sim::count(k.kind);
      (void)load(lenet_archive(), LoadOptions{.device = Device::sim(1), .warm_up = false}).forward({in});
      const uint64_t n_call = sim::count(k.kind) - c0;  // an upper bound for a call on a warm model
      int failed_calls = 0;
      for (uint64_t i = 1; i <= n_call; ++i) {
        INFO(k.name << " " << i << " of " << n_call << " during a call at batch " << batch);
        sim::fail(k.kind, i);
        try {
          (void)m.forward({in}, CallOptions{.outputs_on_host = true});
        } catch (const Error& e) {
          if (k.kind == AMBER_SIM_FAIL_ALLOCATION) {
            AMBER_CASE("gpu.call-oom");  // out of device memory during a call
          }
          ++failed_calls;
          CHECK(std::string(e.what()).find("sim") != std::string::npos);
        }
        sim::fail(k.kind, 0);
        check_equal(m.forward({in}, CallOptions{.outputs_on_host = true})[0], ref, "the call after");
      }
      std::printf("sim faults: %s, batch %lld: %d of %llu failures made the call fail\n", k.name, (long long)batch,
                  failed_calls, (unsigned long long)n_call);
      if (k.kind != AMBER_SIM_FAIL_ALLOCATION || batch == 5) CHECK(failed_calls > 0);
    }
    std::printf("sim faults: %s: %d of %llu failures during load made it fail\n", k.name, failed_loads,
                (unsigned long long)n_load);
    // Load runs kernels only in its warm-up call, which tolerates failures (the model works).
    if (k.kind != AMBER_SIM_FAIL_KERNEL) CHECK(failed_loads > 0);
  }
  CHECK(live_allocations() == live0);
}

TEST_CASE("sim: anomaly mode and the profile work through the backend", "[sim]") {
  auto fn = [](const Tensor& a) { return log(a) * 2; };
  const auto bytes = trace(fn, {ones({4})}, quiet()).save_to_bytes();
  const Model m = load(bytes, LoadOptions{.device = Device::sim(0), .anomaly_mode = true, .profile = true});
  check_equal(m.forward({tensor({1.f, 2.f, 3.f, 4.f})})[0].to(Device::cpu()), fn(tensor({1.f, 2.f, 3.f, 4.f})),
              "finite");
  AMBER_REQUIRE_ERROR(m.forward({tensor({1.f, -2.f, 3.f, 4.f})}), "anomaly:");
  const auto profile = m.profile();
  REQUIRE(!profile.empty());
  CHECK(profile[0].calls >= 1);
}

TEST_CASE("sim: a profile on a device with timing marks has each node's device time", "[sim][profile]") {
  const Model m = load(lenet_archive(), LoadOptions{.device = Device::sim(0), .profile = true});
  for (int i = 0; i < 3; ++i) (void)m.forward({lenet_input(2)});
  const auto profile = m.profile();
  REQUIRE(!profile.empty());
  for (const NodeProfile& n : profile) {
    INFO(n.node);
    CHECK(n.calls == 3);
    CHECK(n.device_ms > 0);
    CHECK(n.device_ms <= n.total_ms);  // the marks run inside the host's window (at its synchronisation)
  }
  // The marks as the backend table gives them: elapsed only once both have run.
  const amber_backend& b = backend(Device::sim(0));
  REQUIRE(b.event_create);
  void* start = b.event_create(0);
  void* end = b.event_create(0);
  REQUIRE((start && end));
  void* stream = nullptr;
  REQUIRE(b.stream_create(0, &stream) == 0);
  CHECK(b.event_record(0, start, stream) == 0);
  CHECK(b.event_record(0, end, stream) == 0);
  float ms = -1;
  CHECK(b.event_elapsed(0, start, end, &ms) != 0);
  CHECK_THAT(b.last_error(), Catch::Matchers::Contains("before both marks have run"));
  REQUIRE(b.synchronize(0, stream) == 0);
  CHECK(b.event_elapsed(0, start, end, &ms) == 0);
  CHECK(ms >= 0);
  b.event_destroy(0, start);
  b.event_destroy(0, end);
  b.stream_destroy(0, stream);
  // The CPU has none: its profile's host times are the kernels' own.
  CHECK(backend(Device::cpu()).event_create == nullptr);
  const Model cpu = load(lenet_archive(), LoadOptions{.profile = true});
  (void)cpu.forward({lenet_input(2)});
  for (const NodeProfile& n : cpu.profile()) CHECK(n.device_ms == 0);
}

TEST_CASE("sim: replicas over sim:0 and sim:1 equal one device", "[sim][replicas]") {
  const Model one = load(lenet_archive());
  ReplicaOptions ro;
  ro.devices = {Device::sim(0), Device::sim(1)};
  const Replicas split = Replicas::load(lenet_archive(), ro);
  REQUIRE(split.size() == 2);
  CHECK(split.replica(1).device() == Device::sim(1));
  for (int64_t batch : {1, 2, 7, 8}) {
    const Tensor x = lenet_input(batch);
    const Tensor want = one.forward({x})[0];
    const Tensor got = split.forward({x})[0];
    CHECK(got.device().is_cpu());
    check_equal(got, want, str("split batch ", batch), kResplitAtol, kResplitRtol);
  }
  ro.policy = ReplicaPolicy::round_robin;
  const Replicas rr = Replicas::load(lenet_archive(), ro);
  const Tensor x = lenet_input(3);
  const Tensor want = one.forward({x})[0];
  for (int i = 0; i < 4; ++i)
    check_equal(rr.forward({x})[0].to(Device::cpu()), want, "round robin", kResplitAtol, kResplitRtol);
  // Many threads through one set of replicas.
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 6; ++i)
        if (!test::compare(split.forward({x})[0], want, kResplitAtol, kResplitRtol).ok) ++bad;
    });
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
}
