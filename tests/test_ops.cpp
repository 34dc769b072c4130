// Table-driven op tests: every case of tests/gen_reference.py through the generic dispatcher
// (attributes converted by the op table's argument kinds) against torch's output or error, one
// line per op with its worst errors; then each case traced, saved and loaded (its tensors as
// inputs, then as constants) against eager, and run on every other device (the simulated one
// always, CUDA where present) against the CPU, ggml-style.

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "amber/core/backend_registry.h"
#include "amber/loader/model.h"
#include "amber/schema/dispatcher.h"
#include "amber/serialize/safetensors.h"
#include "amber/tracer/trace.h"
#include "ref_cases.h"
#include "test_util.h"

using namespace amber;
using Json = nlohmann::json;
using test::Case;
using test::make_case;
using test::OpStats;

TEST_CASE("ops match PyTorch", "[ops]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest (the refdata fixture generates it)");
  SafetensorsFile file = SafetensorsFile::open(dir + "/ops.safetensors");
  const Json cases = Json::parse(file.metadata().at("cases"));
  std::map<std::string, OpStats> stats;
  int total = 0;
  for (const Json& c : cases) {
    const std::string name = c["name"], opname = c["op"];
    INFO("case " << name << " (op " << opname << ")");
    const OpSchema* op = find_op(opname);
    REQUIRE(op != nullptr);
    const Case one = make_case(*op, c, file, Device::cpu());
    const std::vector<const Tensor*>& ptrs = one.ptrs;
    const std::vector<Attr>& attrs = one.attrs;
    OpStats& st = stats[opname];
    ++st.cases;
    ++total;
    if (!c["error"].is_null()) {
      ++st.errors;
      const std::string fragment = c["error"];
      AMBER_REQUIRE_ERROR(dispatch(*op, ptrs, attrs, SrcLoc::none()), fragment);
      try {
        dispatch(*op, ptrs, attrs, SrcLoc::none());
      } catch (const Error& e) {
        // Every error names the op it comes from.
        CHECK_THAT(std::string(e.what()), Catch::Matchers::StartsWith(opname.substr(0, opname.find('.'))));
      }
      continue;
    }
    std::vector<Tensor> outs = dispatch(*op, ptrs, attrs, SrcLoc::none());
    REQUIRE(int(outs.size()) == c["outputs"].get<int>());
    for (size_t k = 0; k < outs.size(); ++k) {
      Tensor expected = file.tensor(name + ".expected" + std::to_string(k));
      test::Diff d = test::compare(outs[k], expected, c["atol"].get<double>(), c["rtol"].get<double>());
      INFO("output " << k << ": " << d.message);
      CHECK(d.ok);
      st.max_abs = std::max(st.max_abs, d.max_abs);
      st.max_rel = std::max(st.max_rel, d.max_rel);
    }
  }
  std::printf("%-14s %6s %7s %12s %12s\n", "op", "cases", "errors", "max |diff|", "max rel");
  for (auto& [name, s] : stats)
    std::printf("%-14s %6d %7d %12.3g %12.3g\n", name.c_str(), s.cases, s.errors, s.max_abs, s.max_rel);
  std::printf("%d cases against torch %s\n", total, file.metadata().at("torch").c_str());
}

// The devices besides the CPU: the simulated one (always built with the tests) and CUDA where
// this machine has it (else said once).
static std::vector<Device> other_devices() {
  std::vector<Device> devices = {Device::sim(0)};
  try {
    (void)backend(Device::cuda(0));
    devices.push_back(Device::cuda(0));
  } catch (const Error& e) {
    static const bool said = (std::printf("devices: cuda skipped: %s\n", e.what()), true);
    (void)said;
  }
  return devices;
}

// A kernel's setup sees the contents of constants only (backend.h): a loaded step whose tensors
// are all graph inputs is set up with no data, one whose tensors after the first are constants
// with theirs. Every case traced both ways, saved, and loaded on each device must equal its eager
// result on the CPU within the case's tolerance.
TEST_CASE("every op case loaded, its tensors as inputs or as constants, equals eager", "[ops][loaded]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest (the refdata fixture generates it)");
  SafetensorsFile file = SafetensorsFile::open(dir + "/ops.safetensors");
  const Json cases = Json::parse(file.metadata().at("cases"));
  std::vector<Device> devices = other_devices();
  devices.insert(devices.begin(), Device::cpu());
  int checked = 0;
  for (const Json& c : cases) {
    const std::string name = c["name"], opname = c["op"];
    const OpSchema& op = op_schema(opname);
    if (!c["error"].is_null() || (op.flags & op_flags::nondeterministic)) continue;
    const Case one = make_case(op, c, file, Device::cpu(), /*mutable_inputs=*/true);
    std::vector<Tensor> given;  // the defined inputs, in order
    for (const Tensor& t : one.inputs)
      if (t.defined()) given.push_back(t);
    if (given.empty()) continue;
    const std::vector<Tensor> want = dispatch(op, one.ptrs, one.attrs, SrcLoc::none());
    for (const bool constants : {false, true}) {
      INFO("case " << name << " (op " << opname << "), " << (constants ? "constants after the first" : "all inputs"));
      // The model's inputs: every defined tensor, or the first alone (the others captured).
      auto model = [&](const std::vector<Tensor>& xs) {
        std::vector<const Tensor*> ptrs = one.ptrs;
        size_t next = 0;
        for (auto& p : ptrs)
          if (p && (!constants || next == 0)) p = &xs[next++];
        return dispatch(op, ptrs, one.attrs, SrcLoc::none());
      };
      TraceOptions to;
      to.optimize = false;
      to.print_warnings = false;
      const std::vector<Tensor> inputs = constants ? std::vector<Tensor>{given[0]} : given;
      const std::vector<uint8_t> bytes = trace(model, inputs, to).save_to_bytes();
      for (const Device& device : devices) {
        INFO("loaded on " << device);
        const std::vector<Tensor> got = load(bytes, LoadOptions{.device = device}).forward(inputs);
        REQUIRE(got.size() == want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          const test::Diff d =
              test::compare(got[k].to(Device::cpu()), want[k], c["atol"].get<double>(), c["rtol"].get<double>());
          INFO("output " << k << ": " << d.message);
          CHECK(d.ok);
        }
      }
    }
    ++checked;
  }
  std::printf("%d op cases loaded both ways on %zu devices equal eager\n", checked, devices.size());
}

TEST_CASE("every op on every device equals the CPU", "[ops][devices]") {
  const std::string dir = test::refdata_dir();
  if (dir.empty()) FAIL("AMBER_REFDATA is not set: run through ctest (the refdata fixture generates it)");
  SafetensorsFile file = SafetensorsFile::open(dir + "/ops.safetensors");
  const Json cases = Json::parse(file.metadata().at("cases"));
  const std::vector<Device> devices = other_devices();
  // AMBER_TEST_OPS (an extended regular expression): only the ops whose names match it
  // (scripts/gpu_check.sh runs the convolutions alone with each forced route).
  const char* only = std::getenv("AMBER_TEST_OPS");
  const std::optional<std::regex> filter =
      only && *only ? std::optional<std::regex>(std::regex(only, std::regex::extended)) : std::nullopt;
  if (filter) std::printf("devices: only the ops matching AMBER_TEST_OPS='%s'\n", only);
  for (const Device& device : devices) {
    // The simulated device runs the CPU's kernels: bit for bit. CUDA has its own kernels
    // (libm's device functions, cuBLAS's and cuDNN's summation orders): within the case's
    // tolerance against PyTorch.
    const bool bitwise = device.type == DeviceType::sim;
    std::map<std::string, OpStats> ran;
    for (const Json& c : cases) {
      if (!c["error"].is_null()) continue;
      const std::string name = c["name"], opname = c["op"];
      const OpSchema& op = op_schema(opname);
      if ((op.flags & op_flags::nondeterministic) || (filter && !std::regex_search(opname, *filter))) continue;
      INFO("case " << name << " (op " << opname << ") on " << device);
      OpStats& st = ran[opname];
      ++st.cases;
      try {
        const double atol = bitwise ? 0 : c["atol"].get<double>(), rtol = bitwise ? 0 : c["rtol"].get<double>();
        test::check_against_cpu(op, c, file, device, atol, rtol, st);
      } catch (const Error& e) {  // one op's failure must not hide the others'
        ++st.errors;
        FAIL_CHECK(e.what());
      }
    }
    int n = 0;
    for (auto& [op, st] : ran) n += st.cases;
    std::printf("%s: %zu ops (%d cases) against the CPU, %s:\n", device.str().c_str(), ran.size(), n,
                bitwise ? "bit for bit" : "within each case's tolerance");
    std::printf("  %-30s %6s %7s %12s %12s\n", "op", "cases", "errors", "max |diff|", "max rel");
    for (auto& [op, st] : ran)
      std::printf("  %-30s %6d %7d %12.3g %12.3g\n", op.c_str(), st.cases, st.errors, st.max_abs, st.max_rel);
  }
}
