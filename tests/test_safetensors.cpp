// safetensors reader and writer: round trips of every dtype, zero-copy mapping, and hostile
// files (each of shared/RELIABILITY.md's cases that applies), each with its error message.

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "amber/schema/eager.h"
#include "amber/serialize/safetensors.h"
#include "test_util.h"

using namespace amber;

namespace {

std::vector<uint8_t> with_header(const std::string& json, size_t data_bytes, uint64_t declared = UINT64_MAX) {
  std::vector<uint8_t> out(8 + json.size() + data_bytes, 0);
  const uint64_t n = declared == UINT64_MAX ? json.size() : declared;
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  std::memcpy(out.data() + 8, json.data(), json.size());
  return out;
}

SafetensorsFile parse(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::from_buffer({bytes.data(), bytes.size()});
}

// A file in this run's scratch directory, removed when the tests exit.
std::string temp_path(const char* name) {
  static const test::ScratchDir dir("amber_test_safetensors");
  return dir.file(name);
}

}  // namespace

TEST_CASE("safetensors round-trips every dtype, with metadata", "[safetensors]") {
  std::vector<std::pair<std::string, Tensor>> ts;
  Tensor base = arange(-3, 9, 1, {DType::f32}).reshape({3, 4});
  for (int i = 0; i < kNumDTypes; ++i) ts.push_back({str("t", i), base.to(DType(i))});
  ts.push_back({"noncontig", base.t()});
  ts.push_back({"empty", zeros({0, 3})});
  ts.push_back({"scalar", full({}, 2.5)});
  const std::string path = temp_path("roundtrip.safetensors");
  save_safetensors(path, ts, {{"producer", "amber"}});
  SafetensorsFile f = SafetensorsFile::open(path);
  REQUIRE(f.names().size() == ts.size());
  CHECK(f.metadata().at("producer") == "amber");
  for (auto& [name, t] : ts) {
    INFO(name);
    Tensor back = f.tensor(name);
    CHECK(test::compare(back, t.contiguous(), 0, 0).ok);
  }
  CHECK(f.names()[0] == "t0");
  // Aligned data is mapped, not copied, and is read-only.
  Tensor mapped = f.tensor("t0");
  CHECK(mapped.is_read_only());
  std::remove(path.c_str());
}

TEST_CASE("safetensors rejects hostile files with clear errors", "[safetensors][reliability]") {
  AMBER_CASE("safetensors.hostile");
  const std::string ok_entry = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(parse(with_header(ok_entry, 8)).names().size() == 1);

  AMBER_REQUIRE_ERROR(parse({}), "not a safetensors file (0 bytes");
  AMBER_REQUIRE_ERROR(parse({1, 2, 3}), "not a safetensors file (3 bytes");
  AMBER_REQUIRE_ERROR(parse(with_header(ok_entry, 8, 1ull << 40)), "exceeds the limit");
  AMBER_REQUIRE_ERROR(parse(with_header(ok_entry, 8, ok_entry.size() + 100)), "runs past the end of the file");
  AMBER_REQUIRE_ERROR(parse(with_header("{\"a\":", 0)), "not valid JSON");
  AMBER_REQUIRE_ERROR(parse(with_header("[1,2,3,4]", 0)), "not a JSON object");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[[[[[1]]]]],"data_offsets":[0,4]}})", 4)),
                      "nests deeper");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                        8)),
                      "names tensor 'a' twice");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8)),
                      "unsupported dtype 'C64'");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)),
                      "non-negative integers");
  AMBER_REQUIRE_ERROR(
      parse(with_header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4)),
      "overflows");
  AMBER_REQUIRE_ERROR(
      parse(with_header(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4)),
      "rank 9 exceeds");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
                      "holds 8 bytes but dtype f32 and shape [3] need 12");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
                      "run past the data section");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)), "reversed");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                        12)),
                      "overlapping");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)),
                      "leaving a gap");
  AMBER_REQUIRE_ERROR(parse(with_header(ok_entry, 12)), "4 bytes at the end of the data section belong to no tensor");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[2]}})", 8)), "data_offsets must be");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"__metadata__":{"k":1}})", 0)), "is not a string");
  AMBER_REQUIRE_ERROR(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8)),
                      "unknown field 'x'");
  AMBER_REQUIRE_ERROR(SafetensorsFile::open("/nonexistent/file.safetensors"), "cannot open '/nonexistent/file");
  AMBER_REQUIRE_ERROR(SafetensorsFile::open("/tmp"), "is not a regular file");
  AMBER_REQUIRE_ERROR(parse(with_header(ok_entry, 8)).tensor("b"), "no tensor named 'b'");

  // Truncation at every point of a valid file gives an error, never a crash.
  std::vector<uint8_t> good = safetensors_bytes({{"x", ones({3, 5})}, {"y", zeros({7}, DType::i64)}});
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<uint8_t> part(good.begin(), good.begin() + long(cut));
    CHECK_THROWS_AS(parse(part), Error);
  }
}

TEST_CASE("saving refuses directories and symlinks and leaves no temporary files", "[safetensors][saving]") {
  AMBER_CASE("save.targets");
  namespace fs = std::filesystem;
  const test::ScratchDir scratch("amber_save_test");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "sub");
  AMBER_REQUIRE_ERROR(save_safetensors((dir / "sub").string(), {{"a", ones({2})}}), "it is a directory");
  save_safetensors((dir / "real.safetensors").string(), {{"a", ones({2})}});
  fs::create_symlink(dir / "real.safetensors", dir / "link.safetensors");
  AMBER_REQUIRE_ERROR(save_safetensors((dir / "link.safetensors").string(), {{"a", ones({2})}}), "symbolic link");
  AMBER_REQUIRE_ERROR(save_safetensors((dir / "missing" / "x.safetensors").string(), {{"a", ones({2})}}),
                      "cannot create a temporary file");
  int entries = 0, temporaries = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    ++entries;
    temporaries += e.path().filename().string().find(".tmp-") != std::string::npos;
  }
  CHECK(temporaries == 0);
  CHECK(entries == 3);  // sub, real, link
}
