// Archive tests: bit-exact round trips, deterministic bytes, zip64, libzip reading what
// Amber writes, zero-copy weights, and every case of shared/RELIABILITY.md's zip, protobuf
// and tensor-record sections, each asserting its error message; checksums on both read
// paths; saving interrupted by a full disk (RLIMIT_FSIZE), by SIGKILL and by injected
// failures of each system call a save makes (FileOps); the golden archive of format 1.0.

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>

#include "amber/core/mapped_pages.h"
#include "amber/core/parallel.h"
#include "amber/graph/interpreter.h"
#include "amber/graph/text.h"
#include "amber/loader/model.h"
#include "amber/schema/eager.h"
#include "amber/serialize/archive.h"
#include "amber/serialize/archive_writer.h"
#include "amber/serialize/file_io.h"
#include "amber/serialize/model_scan.h"
#include "amber/serialize/safetensors.h"
#include "amber/serialize/zip.h"
#include "amber/tracer/trace.h"
#include "archive.pb.h"
#include "test_util.h"

using namespace amber;
namespace fs = std::filesystem;
namespace pb = amber::archive;

namespace {

// A small model covering convolution, pooling, linear, fusion and dynamic batch.
TracedModule small_model() {
  manual_seed(11);
  static Tensor w = randn({3, 2, 3, 3}), b = randn({3}), fc = randn({4, 12});
  auto f = [](const Tensor& x) {
    Tensor y = relu(conv2d(x, w, b, {1}, {1}) * 0.5 - 0.25);
    y = max_pool2d(y, {2}).flatten(1);
    return linear(y, fc).softmax(-1);
  };
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  return trace(f, {randn({2, 2, 4, 4})}, o);
}

std::vector<uint8_t> valid_bytes() {
  static const std::vector<uint8_t> bytes = small_model().save_to_bytes();
  return bytes;
}

LoadedArchive read(const std::vector<uint8_t>& b, bool verify = true) {
  test::save_case_seed(b);
  return read_archive(std::span(b.data(), b.size()), nullptr, {verify}, "test.amber");
}

int temporaries_in(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    n += e.path().filename().string().find(".tmp-") != std::string::npos;
  return n;
}

// A file in this run's scratch directory, removed when the tests exit.
std::string temp(const std::string& name) {
  static const test::ScratchDir dir("amber_archive_test");
  return dir.file(name);
}

void write_file(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Rewrites an archive with edited entries: edit(name, bytes) may change an entry's bytes.
std::vector<uint8_t> rezip(const std::vector<uint8_t>& b,
                           const std::function<void(const std::string&, std::vector<uint8_t>&)>& edit) {
  std::vector<uint8_t> out;
  ZipWriter z([&](const void* d, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
    return true;
  });
  for (const ZipEntry& e : read_zip(std::span(b.data(), b.size()), "x")) {
    std::vector<uint8_t> data(b.begin() + long(e.data_offset), b.begin() + long(e.data_offset + e.size));
    edit(e.name, data);
    z.add(e.name, data, e.name.rfind("data/", 0) == 0 ? 64 : 1);
  }
  z.finish();
  return out;
}

// The archive with model.pb edited.
std::vector<uint8_t> with_model(const std::function<void(pb::Model&)>& edit) {
  return rezip(valid_bytes(), [&](const std::string& name, std::vector<uint8_t>& d) {
    if (name != "model.pb") return;
    pb::Model m;
    REQUIRE(m.ParseFromArray(d.data(), int(d.size())));
    edit(m);
    std::string s = m.SerializeAsString();
    d.assign(s.begin(), s.end());
  });
}

std::vector<uint8_t> with_entry(const std::string& entry, const std::vector<uint8_t>& value) {
  return rezip(valid_bytes(), [&](const std::string& name, std::vector<uint8_t>& d) {
    if (name == entry) d = value;
  });
}

// Offset of the central directory record of entry `name` (found by signature and name).
size_t central_entry(const std::vector<uint8_t>& b, const std::string& name) {
  for (size_t p = 0; p + 46 < b.size(); ++p)
    if (b[p] == 0x50 && b[p + 1] == 0x4b && b[p + 2] == 1 && b[p + 3] == 2) {
      const size_t len = b[p + 28] | (b[p + 29] << 8);
      if (std::string(reinterpret_cast<const char*>(&b[p + 46]), len) == name) return p;
    }
  FAIL("no central directory entry " << name);
  return 0;
}
uint32_t u32(const std::vector<uint8_t>& b, size_t p) {
  return b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (uint32_t(b[p + 3]) << 24);
}
void put16(std::vector<uint8_t>& b, size_t p, uint16_t v) {
  b[p] = uint8_t(v);
  b[p + 1] = uint8_t(v >> 8);
}
void put32(std::vector<uint8_t>& b, size_t p, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[p + size_t(i)] = uint8_t(v >> (8 * i));
}

// A golden archive's outputs from the interpreter (the read graph) and from the loader (the
// loaded model), each against `want`.
void check_golden_outputs(const LoadedArchive& a, const Model& m, const std::vector<Tensor>& inputs, const Tensor& want,
                          const std::string& label) {
  for (const Tensor& got : {graph::run_graph(a.graph, inputs)[0], m.forward(inputs)[0]}) {
    test::Diff d = test::compare(got, want, 1e-5, 1e-5);
    INFO(label << ": " << d.message);
    CHECK(d.ok);
  }
}

}  // namespace

TEST_CASE("archives round-trip bit-exactly and deterministically", "[archive]") {
  AMBER_CASE("save.roundtrip");
  TracedModule t = small_model();
  const std::string path = temp("round.amber");
  t.save(path);
  LoadedArchive a = read_archive(path);
  CHECK(graph::to_text(a.graph) == graph::to_text(t.graph()));
  CHECK(a.graph.is_dynamic());
  CHECK(a.info.format_major == 1);
  CHECK(a.info.producer == "amber 0.1.0");
  CHECK(a.info.example_input_shapes == std::vector<DimVec>{DimVec{2, 2, 4, 4}});
  CHECK(a.info.creation_time == 0);
  CHECK(a.info.weights_mapped == a.info.weight_count);  // zero-copy views of the mapping
  for (const graph::Value* c : a.graph.constants()) {
    CHECK(c->data.is_read_only());
    CHECK(test::compare(c->data, t.graph().find(c->name)->data, 0, 0).ok);
  }
  for (int64_t n : {1, 3}) {
    // Not bit for bit: read-only weights may run on other kernels (linear on a packed inner
    // product instead of sgemm); the weights themselves are compared exactly above.
    Tensor x = randn({n, 2, 4, 4});
    CHECK(test::compare(graph::run_graph(a.graph, {x})[0], t.forward({x})[0], 1e-6, 1e-5).ok);
  }
  // Same model, same bytes; a second save over the first gives the same file.
  CHECK(t.save_to_bytes() == read_file(path));
  t.save(path);
  CHECK(t.save_to_bytes() == read_file(path));
  setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  std::vector<uint8_t> dated = t.save_to_bytes();
  unsetenv("SOURCE_DATE_EPOCH");
  CHECK(read(dated).info.creation_time == 1700000000);
  SaveOptions now;
  now.record_creation_time = true;
  CHECK(read(t.save_to_bytes(now)).info.creation_time > 1700000000);
}

TEST_CASE("zip64 archives and libzip agree with Amber's reader", "[archive][zip]") {
  TracedModule t = small_model();
  SaveOptions z64;
  z64.force_zip64 = true;
  std::vector<uint8_t> b = t.save_to_bytes(z64);
  CHECK(graph::to_text(read(b).graph) == graph::to_text(t.graph()));
  for (const std::vector<uint8_t>& bytes : {valid_bytes(), b}) {
    const std::vector<ZipEntry> ours = read_zip(std::span(bytes.data(), bytes.size()), "x");
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
    REQUIRE(src);
    zip_t* z = zip_open_from_source(src, ZIP_CHECKCONS | ZIP_RDONLY, &err);
    REQUIRE(z);
    REQUIRE(zip_get_num_entries(z, 0) == int64_t(ours.size()));
    for (zip_int64_t i = 0; i < zip_get_num_entries(z, 0); ++i) {
      zip_stat_t st;
      REQUIRE(zip_stat_index(z, zip_uint64_t(i), 0, &st) == 0);
      CHECK(st.name == ours[size_t(i)].name);
      CHECK(st.size == ours[size_t(i)].size);
      CHECK(st.comp_method == ZIP_CM_STORE);
      CHECK(st.crc == ours[size_t(i)].crc32);
      std::vector<uint8_t> data(st.size);
      zip_file_t* f = zip_fopen_index(z, zip_uint64_t(i), 0);  // libzip checks the CRC on read
      REQUIRE(f);
      CHECK(zip_fread(f, data.data(), st.size) == zip_int64_t(st.size));
      zip_fclose(f);
      CHECK(std::memcmp(data.data(), bytes.data() + ours[size_t(i)].data_offset, st.size) == 0);
      if (ours[size_t(i)].name.rfind("data/", 0) == 0) CHECK(ours[size_t(i)].data_offset % 64 == 0);
    }
    zip_close(z);
  }
}

TEST_CASE("hostile zip containers give clear errors", "[archive][reliability]") {
  const std::vector<uint8_t> ok = valid_bytes();
  CHECK_NOTHROW(read(ok));
  AMBER_CASE("zip.empty");
  AMBER_REQUIRE_ERROR(read({}), "test.amber: not a zip archive (0 bytes is too short)");
  AMBER_REQUIRE_ERROR(read({'P', 'K', 3, 4}), "test.amber: not a zip archive (4 bytes is too short)");
  AMBER_CASE("zip.random");
  std::mt19937 rng(5);
  std::vector<uint8_t> noise(4096);
  for (auto& c : noise) c = uint8_t(rng());
  AMBER_REQUIRE_ERROR(read(noise), "not a zip archive");
  std::string text = "this is plainly a text file, not an archive at all";
  AMBER_REQUIRE_ERROR(read({text.begin(), text.end()}), "not a zip archive");
  // Truncated at many points: always an error, never a crash.
  AMBER_CASE("zip.truncated");
  for (size_t cut = 22; cut < ok.size(); cut += 37)
    AMBER_REQUIRE_ERROR(read({ok.begin(), ok.begin() + long(cut)}),
                        "test.amber: not a zip archive (no end-of-central-directory record)");
  // Junk before, junk after, two archives concatenated.
  AMBER_CASE("zip.junk");
  std::vector<uint8_t> before(ok);
  before.insert(before.begin(), 100, 'x');
  AMBER_REQUIRE_ERROR(read(before), "junk before the archive");
  std::vector<uint8_t> after(ok);
  after.insert(after.end(), 10, 'x');
  AMBER_REQUIRE_ERROR(read(after), "10 bytes follow the end of the zip archive");
  std::vector<uint8_t> twice(ok);
  twice.insert(twice.end(), ok.begin(), ok.end());
  AMBER_REQUIRE_ERROR(read(twice), "two archives concatenated");
  // Entry names.
  auto named = [&](const std::string& name) {
    std::vector<uint8_t> out;
    ZipWriter z([&](const void* d, size_t n) {
      out.insert(out.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
      return true;
    });
    z.add(name, std::vector<uint8_t>{1, 2, 3});
    z.finish();
    return out;
  };
  AMBER_CASE("zip.names");
  AMBER_REQUIRE_ERROR(read(named("../evil")), "contains '..'");
  AMBER_REQUIRE_ERROR(read(named("a/../../b")), "contains '..'");
  AMBER_REQUIRE_ERROR(read(named("/etc/passwd")), "is an absolute path");
  AMBER_REQUIRE_ERROR(read(named("a\\b")), "contains a backslash");
  AMBER_REQUIRE_ERROR(read(named(std::string("a\0b", 3))), "contains a NUL byte");
  AMBER_REQUIRE_ERROR(read(named("harmless")), "no entry 'format_version': not an Amber archive");
  {
    std::vector<uint8_t> out;
    ZipWriter z([&](const void* d, size_t n) {
      out.insert(out.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
      return true;
    });
    AMBER_CASE("zip.duplicates");
    z.add("twin", std::vector<uint8_t>{1});
    z.add("twin", std::vector<uint8_t>{2});
    z.finish();
    AMBER_REQUIRE_ERROR(read(out), "entry 'twin' appears twice");
  }
  // Central directory fields patched one at a time.
  const size_t cd = central_entry(ok, "model.pb");
  auto patched = [&](auto patch) {
    std::vector<uint8_t> b(ok);
    patch(b);
    return b;
  };
  AMBER_CASE("zip.symlink");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd + 38, 0120777u << 16); })), "is a symbolic link");
  AMBER_CASE("zip.method");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, cd + 8, 1); })), "entry 'model.pb' is encrypted");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, cd + 10, 8); })), "uses compression method 8");
  AMBER_CASE("zip.disagree");
  const size_t lh = u32(ok, cd + 42);  // model.pb's local header
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, lh + 8, 8); })),
                      "entry 'model.pb': compression method differs between the central directory and the local "
                      "header");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd + 16, 0x12345678); })),
                      "CRC-32 differs between the central directory and the local header");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd + 20, u32(b, cd + 20) + 1); })),
                      "is stored but its sizes differ");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) {
                        put32(b, cd + 20, 0x7fffffff);
                        put32(b, cd + 24, 0x7fffffff);
                      })),
                      "sizes differ between the central directory");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { b[cd + 46] = 'M'; })),
                      "the central directory names 'Model.pb' but its local header names 'model.pb'");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd + 42, 1); })), "no local header at offset 1");
  AMBER_CASE("zip.past-end");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd + 42, uint32_t(ok.size() + 100)); })),
                      str("local header at offset ", ok.size() + 100, " (30 bytes) runs past the end of the file"));
  // Local header and central directory agreeing on 2 GB in a file of a few KB.
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) {
                        for (size_t at : {cd + 20, cd + 24, lh + 18, lh + 22}) put32(b, at, 0x7fffffffu);
                      })),
                      "entry 'model.pb' declares 2147483647 bytes at offset");
  // A central directory entry pointing at another entry's local header.
  const size_t cd2 = central_entry(ok, "graph.txt");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd2 + 42, u32(b, cd + 42)); })),
                      "the central directory names 'graph.txt' but its local header names 'model.pb'");
  // Absurd counts and name lengths.
  AMBER_CASE("zip.counts");
  const size_t end = ok.size() - 22;
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) {
                        put16(b, end + 8, 0xfffe);
                        put16(b, end + 10, 0xfffe);
                      })),
                      "central directory entry");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, cd + 28, 60000); })), "has a name of 60000 bytes");
  {  // Only a zip64 end record can count past 65535 entries: 200,001 of them.
    SaveOptions z64;
    z64.force_zip64 = true;
    std::vector<uint8_t> b = small_model().save_to_bytes(z64);
    size_t z = b.size() - 22 - 20;
    while (z > 0 && u32(b, z) != 0x06064b50u) --z;
    REQUIRE(z > 0);
    put32(b, z + 24, 200001);  // entries on this disk
    put32(b, z + 32, 200001);  // entries in all
    AMBER_REQUIRE_ERROR(read(b), "test.amber: 200001 entries exceed the limit of 200000");
  }
  // A flipped byte in model.pb: its CRC-32 catches it.
  const ZipEntry mpb = [&] {
    for (const ZipEntry& e : read_zip(std::span(ok.data(), ok.size()), "x"))
      if (e.name == "model.pb") return e;
    return ZipEntry{};
  }();
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { b[mpb.data_offset + 5] ^= 0x40; })),
                      "entry 'model.pb' fails its CRC-32 check");
}

TEST_CASE("overlapping entries and sizes past the file are refused", "[archive][reliability]") {
  std::vector<uint8_t> out;
  ZipWriter z([&](const void* d, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
    return true;
  });
  z.add("a", std::vector<uint8_t>(100, 1));
  z.add("b", std::vector<uint8_t>(100, 2));
  z.finish();
  std::vector<uint8_t> over(out);
  const size_t ca = central_entry(over, "a");
  put32(over, ca + 20, 5000);  // declares 5000 bytes in a 400-byte file
  put32(over, ca + 24, 5000);
  AMBER_CASE("zip.past-end");
  AMBER_REQUIRE_ERROR(read_zip(std::span(over.data(), over.size()), "x"), "sizes differ between the central directory");
  // A consistent overlap: entry a's data embeds a complete local header and data for b,
  // and b's central directory entry points there (names, sizes and CRC all agree).
  auto zip_of = [](const std::vector<std::pair<std::string, std::vector<uint8_t>>>& es) {
    std::vector<uint8_t> o;
    ZipWriter w([&](const void* d, size_t n) {
      o.insert(o.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
      return true;
    });
    for (const auto& [n, d] : es) w.add(n, d);
    w.finish();
    return o;
  };
  const std::vector<uint8_t> hello{'h', 'e', 'l', 'l', 'o'};
  const std::vector<uint8_t> lone = zip_of({{"b", hello}});
  const std::vector<uint8_t> embedded(lone.begin(), lone.begin() + 30 + 1 + long(hello.size()));
  std::vector<uint8_t> bomb = zip_of({{"a", embedded}, {"b", hello}});
  const uint32_t a_data = u32(bomb, central_entry(bomb, "a") + 42) + 30 + 1;
  put32(bomb, central_entry(bomb, "b") + 42, a_data);
  AMBER_CASE("zip.overlap");
  AMBER_REQUIRE_ERROR(read_zip(std::span(bomb.data(), bomb.size()), "x"), "x: entries 'a' and 'b' overlap");
}

TEST_CASE("hostile model.pb: garbage, truncation, depth, versions, unknown fields", "[archive][reliability]") {
  AMBER_CASE("pb.garbage");
  AMBER_REQUIRE_ERROR(read(with_entry("model.pb", {0xff, 0xff, 0xff, 0xff, 0x0f})),
                      "model.pb is not a valid protobuf message");
  std::vector<uint8_t> full = [&] {
    std::vector<uint8_t> v;
    rezip(valid_bytes(), [&](const std::string& n, std::vector<uint8_t>& d) {
      if (n == "model.pb") v = d;
    });
    return v;
  }();
  AMBER_REQUIRE_ERROR(
      read(with_entry("model.pb", std::vector<uint8_t>(full.begin(), full.begin() + long(full.size() / 2)))),
      "not a valid protobuf message");
  // Nesting deeper than the parser allows: groups of an unknown field, 1000 deep.
  AMBER_CASE("pb.nesting");
  std::vector<uint8_t> deep;
  for (int i = 0; i < 1000; ++i) {
    deep.push_back(0xa3);  // field 100, start group
    deep.push_back(0x06);
  }
  AMBER_REQUIRE_ERROR(read(with_entry("model.pb", deep)),
                      "model.pb is not a valid protobuf message (byte 0: a group (wire type 3/4)");
  // The schema's own messages nest five deep at most (Model, Graph, Node, Attribute, Ints),
  // and the pre-scan skips unknown fields without descending: a message nested 100,000
  // deep inside an unknown length-delimited field is ignored like any unknown field.
  std::vector<uint8_t> nested;
  for (int i = 0; i < 100000; ++i) {
    std::vector<uint8_t> head = {0xa2, 0x06};  // field 100, length-delimited
    for (uint64_t n = nested.size();; n >>= 7) {
      head.push_back(uint8_t(n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
      if (n < 0x80) break;
    }
    nested.insert(nested.begin(), head.begin(), head.end());
  }
  std::vector<uint8_t> deep_unknown(full);
  deep_unknown.insert(deep_unknown.end(), nested.begin(), nested.end());
  CHECK_NOTHROW(read(with_entry("model.pb", deep_unknown)));
  // Control-flow bodies (Node.bodies, format 1.1) put a Graph inside a Node: nesting deeper
  // than kMaxBodyDepth is refused by the pre-scan, before protobuf parses (and recurses).
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::Graph* g = m.mutable_graph();
                        for (int d = 0; d < 2000; ++d) {
                          pb::Node* n = g->add_nodes();
                          n->set_op("loop");
                          n->set_op_version(1);
                          g = n->add_bodies();
                        }
                      })),
                      "control-flow bodies nest more than 8 deep");
  // A body holding constants (bodies read tensors only through their inputs).
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::Node* n = m.mutable_graph()->add_nodes();
                        n->set_op("loop");
                        n->set_op_version(1);
                        pb::Attribute* a = n->add_attrs();
                        a->set_name("num_state");
                        a->set_i(0);
                        n->add_bodies()->add_constants()->set_name("w");
                      })),
                      "a control-flow body holds constants");
  // Unknown fields are ignored (a newer minor version may add some).
  AMBER_CASE("pb.unknown-fields");
  std::vector<uint8_t> extra(full);
  extra.insert(extra.end(), {0xc2, 0x3e, 0x03, 'n', 'e', 'w'});  // field 1000, length-delimited
  CHECK_NOTHROW(read(with_entry("model.pb", extra)));
  // Newer major versions are refused, naming both versions.
  AMBER_CASE("pb.newer-version");
  AMBER_REQUIRE_ERROR(read(with_entry("format_version", {'2', '.', '3', '\n'})),
                      "the archive is format version 2.3, this reader supports up to 1.x");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.set_format_major(2); })),
                      "model.pb says format version 2.0 but the version record says 1");
  AMBER_REQUIRE_ERROR(read(with_entry("format_version", {'o', 'n', 'e'})),
                      "the format_version record 'one' is malformed");
  AMBER_REQUIRE_ERROR(read(with_entry("byte_order", {'b', 'i', 'g', '\n'})),
                      "is not supported (archives are little-endian)");
  // Oversized strings.
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.set_producer(std::string(100000, 'x')); })),
                      "producer is 100000 bytes long, over the limit of 65536");
}

TEST_CASE("a model.pb over 512 MiB is refused before it is read", "[archive][reliability]") {
  AMBER_CASE("pb.oversized");
  // Built in anonymous mappings: pages never written cost no memory, and the reader refuses
  // model.pb by its size before reading (or checksumming) a byte of it.
  const size_t big = ArchiveLimits::kMaxModelBytes + 1, cap = big + (1 << 20);
  auto mapping = [](size_t n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(p != MAP_FAILED);
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [n](uint8_t* q) { munmap(q, n); });
  };
  std::shared_ptr<uint8_t> zeros = mapping(big), file = mapping(cap);
  size_t size = 0;
  ZipWriter z([&](const void* d, size_t n) {
    if (n > cap - size) return false;
    const auto* p = static_cast<const uint8_t*>(d);
    if (!(p >= zeros.get() && p < zeros.get() + big)) std::memcpy(file.get() + size, d, n);  // zeros are there
    size += n;
    return true;
  });
  const std::string version = "1.0\n", order = "little\n";
  z.add("format_version", std::span(reinterpret_cast<const uint8_t*>(version.data()), version.size()));
  z.add("byte_order", std::span(reinterpret_cast<const uint8_t*>(order.data()), order.size()));
  z.add("model.pb", std::span<const uint8_t>(zeros.get(), big));
  z.finish();
  AMBER_REQUIRE_ERROR(read_archive(std::span<const uint8_t>(file.get(), size), file, {}, "big.amber"),
                      str("big.amber: model.pb is ", big, " bytes, over the limit of ", ArchiveLimits::kMaxModelBytes));
}

TEST_CASE("hostile tensor records", "[archive][reliability]") {
  AMBER_CASE("rec.overflow");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        m.mutable_tensors(0)->clear_shape();
                        m.mutable_tensors(0)->add_shape(int64_t(1) << 40);
                        m.mutable_tensors(0)->add_shape(int64_t(1) << 40);
                      })),
                      "its element count overflows 64 bits");
  AMBER_CASE("rec.dims");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_shape(0, -3); })),
                      "has a negative dim -3");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        for (int i = 0; i < 9; ++i) m.mutable_tensors(0)->add_shape(1);
                      })),
                      "(the maximum is 8)");
  AMBER_CASE("rec.length");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_byte_length(4); })),
                      "bytes but records byte_length 4");
  AMBER_CASE("rec.missing");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_record("data/999"); })),
                      "names record 'data/999', which is missing");
  AMBER_CASE("rec.dtype");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_dtype(pb::DType(42)); })),
                      "has unknown dtype code 42");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { *m.add_tensors() = m.tensors(0); })),
                      "appears twice in the weight table");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_constants(0)->set_name("ghost"); })),
      "constant 'ghost' has no tensor in the weight table");
  AMBER_CASE("rec.offsets");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_record("data/1"); })), "holds");
}

TEST_CASE("a flipped byte in a weight record fails its checksum on every read path", "[archive][reliability]") {
  std::vector<uint8_t> b = valid_bytes();
  const std::vector<ZipEntry> entries = read_zip(std::span(b.data(), b.size()), "x");
  const ZipEntry& rec = entries.back();  // the last weight record
  b[rec.data_offset + rec.size / 2] ^= 0x01;
  AMBER_REQUIRE_ERROR(read(b), str("record '", rec.name, "' (tensor '"));
  AMBER_REQUIRE_ERROR(read(b), "fails its XXH3 checksum: the archive is corrupt");
  const std::string path = temp("flipped.amber");
  write_file(path, b);
  AMBER_CASE("weights.checksum");
  AMBER_REQUIRE_ERROR(read_archive(path), str("record '", rec.name, "' (tensor '"));  // the mapped file
  AMBER_REQUIRE_ERROR(read_archive(path), "fails its XXH3 checksum");
  CHECK_NOTHROW(read_archive(path, {false}));  // the caller opted out
  // Over 16 MiB of weights the records are hashed on several threads: still named.
  manual_seed(4);
  const Tensor w = randn({5 << 20});  // 20 MiB
  TraceOptions q;
  q.print_warnings = false;
  std::vector<uint8_t> big = trace([&](const Tensor& x) { return x * w; }, {randn({5 << 20})}, q).save_to_bytes();
  const std::vector<ZipEntry> big_entries = read_zip(std::span(big.data(), big.size()), "x");
  const ZipEntry* wrec = nullptr;
  for (const ZipEntry& e : big_entries)
    if (e.name.rfind("data/", 0) == 0 && (!wrec || e.size > wrec->size)) wrec = &e;
  REQUIRE(wrec);
  big[wrec->data_offset + wrec->size - 3] ^= 0x10;
  write_file(path, big);
  ArchiveReadOptions threads;
  threads.num_threads = 4;
  AMBER_REQUIRE_ERROR(read_archive(path, threads), str("record '", wrec->name, "' (tensor '"));
  LoadOptions lo;
  lo.num_threads = 4;
  AMBER_REQUIRE_ERROR(load(path, lo), str("record '", wrec->name, "' (tensor '"));
  fs::remove(path);
}

TEST_CASE("pages of a mapped archive can be dropped and read back; other memory is left alone", "[archive]") {
  std::vector<uint8_t> bytes(size_t(5) << 16);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + 3);
  const std::string path = temp("pages.bin");
  write_file(path, bytes);
  {
    MappedFile m = map_file(path);
    REQUIRE(m.bytes.size() == bytes.size());
    CHECK(drop_file_pages(m.bytes.data() + 100, 3 * 65536));
    CHECK(std::memcmp(m.bytes.data(), bytes.data(), bytes.size()) == 0);  // faulted back in from the file
    CHECK_FALSE(drop_file_pages(m.bytes.data() + 100, bytes.size()));     // runs past the mapping
    CHECK_FALSE(drop_file_pages(m.bytes.data() + 1, 16));                 // no whole page inside
  }
  std::vector<uint8_t> heap(bytes);  // not a file mapping: never dropped (that would zero it)
  CHECK_FALSE(drop_file_pages(heap.data(), heap.size()));
  CHECK(heap == bytes);
  // Once unmapped, the range is no longer registered.
  const uint8_t* gone = nullptr;
  {
    MappedFile m = map_file(path);
    gone = m.bytes.data();
  }
  CHECK_FALSE(drop_file_pages(gone, 65536 * 2));
}

TEST_CASE("graph problems in archives: unknown ops listed at once, bad nodes", "[archive][reliability]") {
  AMBER_CASE("graph.unknown-ops");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        m.mutable_graph()->mutable_nodes(0)->set_op("frobnicate");
                        m.mutable_graph()->mutable_nodes(1)->set_op_version(7);
                      })),
                      "2 unknown ops: ");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->set_op("frobnicate"); })),
                      "frobnicate (version 1)");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        AMBER_CASE("graph.ssa");
                        m.mutable_graph()->mutable_nodes(0)->set_inputs(0, "later");
                      })),
                      "input %later is used before it is produced");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        AMBER_CASE("graph.attrs");
                        m.mutable_graph()->mutable_nodes(0)->mutable_attrs()->RemoveLast();
                      })),
                      "attributes, the op table lists");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->mutable_attrs(0)->set_name("x"); })),
      "is 'x', expected");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->mutable_attrs(0)->set_s("s"); })),
      "has the wrong kind");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        AMBER_CASE("graph.outputs");
                        m.mutable_graph()->mutable_outputs(0)->set_value("nothing");
                      })),
                      "names %nothing, which is never produced");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        AMBER_CASE("graph.inference");
                        m.mutable_graph()->mutable_nodes(0)->mutable_outputs(0)->mutable_shape(1)->set_value(99);
                      })),
                      "but inference gives");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        AMBER_CASE("graph.ssa");
                        auto* n = m.mutable_graph()->mutable_nodes(1);
                        n->mutable_outputs(0)->set_name(m.graph().nodes(0).outputs(0).name());
                      })),
                      "is defined twice");
}

TEST_CASE("graph semantics: cycles, arity, out-of-range axes", "[archive][reliability]") {
  // A cycle: node 0 consumes node 1's output, which consumes node 0's.
  AMBER_CASE("graph.cycles");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        auto* g = m.mutable_graph();
                        g->mutable_nodes(0)->set_inputs(0, g->nodes(1).outputs(0).name());
                      })),
                      "is used before it is produced");
  // One input too few, one too many.
  AMBER_CASE("graph.arity");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        for (auto& n : *m.mutable_graph()->mutable_nodes())
                          if (n.op() == "softmax") n.mutable_inputs()->Clear();
                      })),
                      "expected 1 tensor inputs, got 0");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        for (auto& n : *m.mutable_graph()->mutable_nodes())
                          if (n.op() == "softmax") n.add_inputs(n.inputs(0));
                      })),
                      "expected 1 tensor inputs, got 2");
  // softmax over dim 7 of a 2-d value, and over dim -3.
  AMBER_CASE("graph.axes");
  for (int64_t dim : {7, -3}) {
    AMBER_REQUIRE_ERROR(read(with_model([dim](pb::Model& m) {
                          for (auto& n : *m.mutable_graph()->mutable_nodes())
                            if (n.op() == "softmax")
                              for (auto& a : *n.mutable_attrs())
                                if (a.name() == "dim") a.set_i(dim);
                        })),
                        "out of range");
  }
}

TEST_CASE("resource caps: nodes, tensors, graph inputs, string lengths", "[archive][reliability]") {
  AMBER_CASE("res.caps");
  // One node over the cap (the nodes need not be valid: counts are checked first).
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        const pb::Node n = m.graph().nodes(0);
                        auto* nodes = m.mutable_graph()->mutable_nodes();
                        nodes->Reserve(int(ArchiveLimits::kMaxNodes) + 1);
                        while (uint64_t(nodes->size()) <= ArchiveLimits::kMaxNodes) *nodes->Add() = n;
                      })),
                      str("1000001 nodes exceed the limit of ", ArchiveLimits::kMaxNodes));
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        const pb::TensorRecord t = m.tensors(0);
                        while (uint64_t(m.tensors_size()) <= ArchiveLimits::kMaxTensors) *m.add_tensors() = t;
                      })),
                      str("100001 weight tensors exceed the limit of ", ArchiveLimits::kMaxTensors));
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        const pb::ValueInfo v = m.graph().inputs(0);
                        while (uint64_t(m.graph().inputs_size()) <= ArchiveLimits::kMaxGraphIO)
                          *m.mutable_graph()->add_inputs() = v;
                      })),
                      str("10001 graph inputs exceed the limit of ", ArchiveLimits::kMaxGraphIO));
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->set_source(std::string(100000, 'x')); })),
      "100000 bytes long, over the limit of 65536");
}

// The valid archive's model.pb followed by `extra` (fields appended to a message merge
// into it: an appended Model.graph adds nodes to the graph).
std::vector<uint8_t> with_model_suffix(const std::vector<uint8_t>& extra) {
  return rezip(valid_bytes(), [&](const std::string& name, std::vector<uint8_t>& d) {
    if (name == "model.pb") d.insert(d.end(), extra.begin(), extra.end());
  });
}

// A length-delimited field: tag byte(s), varint length, payload.
std::vector<uint8_t> field(std::initializer_list<uint8_t> tag, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(tag);
  for (uint64_t n = payload.size();; n >>= 7) {
    out.push_back(uint8_t(n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    if (n < 0x80) break;
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> repeated(std::initializer_list<uint8_t> item, size_t n) {
  std::vector<uint8_t> out;
  out.reserve(item.size() * n);
  for (size_t i = 0; i < n; ++i) out.insert(out.end(), item);
  return out;
}

std::string status_field(const char* name) {  // "VmHWM" of /proc/self/status, in KiB
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(name, 0) == 0) return line.substr(line.find(':') + 1);
  return "";
}

// Runs f in a child process whose peak resident memory is reset first; returns what f
// returned and how far the peak rose above the resident memory before f, in KiB. The child
// runs on one thread: OpenMP's pool (libgomp) does not survive fork, and a parallel region
// in the child would wait forever for threads it does not have. An alarm ends a child that
// hangs anyway, failing the test instead of stalling the suite.
std::pair<std::string, long> in_child(const std::function<std::string()>& f) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(120);
    ThreadLimit one(1);
    std::ofstream("/proc/self/clear_refs") << "5";  // reset VmHWM to the current RSS
    const long before = std::stol(status_field("VmRSS"));
    const std::string result = f();
    const std::string out = std::to_string(std::stol(status_field("VmHWM")) - before) + "\n" + result;
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  REQUIRE(text.find('\n') != std::string::npos);
  return {text.substr(text.find('\n') + 1), std::stol(text.substr(0, text.find('\n')))};
}

// The error reading the archive file gives, in a child (in_child).
std::pair<std::string, long> read_in_child(const std::string& path) {
  return in_child([&] {
    try {
      read_archive(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  });
}

TEST_CASE("model.pb's counts and memory are checked before it is parsed; peak memory stays bounded",
          "[archive][reliability][memory]") {
  const std::string dir = temp("prescan");
  fs::create_directories(dir);
  struct Crafted {
    const char* what;
    std::vector<uint8_t> suffix;
    const char* error;
  };
  const std::vector<Crafted> cases = {
      // 3,000,000 empty nodes: 6 MB of model.pb that protobuf would turn into ~430 MB.
      {"3M empty nodes", field({0x22}, repeated({0x1a, 0x00}, 3'000'000)),
       "model.pb: 1000001 nodes exceed the limit of 1000000 (found before parsing)"},
      // One node with 2,500,000 empty outputs: under the node cap, over the memory bound.
      {"a node of 2.5M outputs", field({0x22}, field({0x1a}, repeated({0x22, 0x00}, 2'500'000))),
       "bytes of memory to parse (the smaller of ArchiveReadOptions::max_model_memory"},
  };
  for (const Crafted& c : cases) {
    INFO(c.what);
    const std::string path = dir + "/crafted.amber";
    const std::vector<uint8_t> bytes = with_model_suffix(c.suffix);
    write_file(path, bytes);
    AMBER_CASE("res.prescan");
    const auto [error, peak_kib] = read_in_child(path);
    CHECK_THAT(error, Catch::Matchers::Contains(c.error));
    // The file is mapped (its pages count); nothing proportional to the messages is built.
    CHECK(peak_kib * 1024 < long(bytes.size()) + (32l << 20));
    INFO("peak rose " << peak_kib << " KiB for a " << bytes.size() << "-byte archive");
  }
  fs::remove_all(dir);
}

TEST_CASE("pre-scan limits: ranks, lists, value dims, archive size and parse memory options",
          "[archive][reliability][memory]") {
  // A value type of rank 9 (nine Dim messages) and a record shape of rank 13 (packed).
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        for (int i = 0; i < 9; ++i) m.mutable_graph()->mutable_inputs(0)->add_shape()->set_value(1);
                      })),
                      "model.pb: a ValueInfo's shape has rank 9 or more (the maximum is 8)");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        for (int i = 0; i < 12; ++i) m.mutable_tensors(0)->add_shape(1);
                      })),
                      "model.pb: a TensorRecord's shape has rank");
  // A list attribute one element over the cap, found in the encoding.
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::Attribute* a = m.mutable_graph()->mutable_nodes(0)->add_attrs();
                        a->set_name("x");
                        for (uint64_t i = 0; i <= ArchiveLimits::kMaxListLength; ++i) a->mutable_ints()->add_values(1);
                      })),
                      "model.pb: a Ints's values list has 1048577 elements or more, over the limit of 1048576");
  // Value types' dims are checked as they are read.
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        m.mutable_graph()->mutable_nodes(0)->mutable_outputs(0)->mutable_shape(1)->set_value(-5);
                      })),
                      "has dim 1 = -5, negative");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::Dim* d = m.mutable_graph()->mutable_inputs(0)->mutable_shape(0);
                        d->set_coef(int64_t(1) << 62);
                        d->set_value(0);
                        m.mutable_graph()->set_traced_batch(8);
                      })),
                      "overflow");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_graph()->set_traced_batch(-2); })),
                      "the graph's traced_batch is negative (-2)");
  // Format 1.2's symbolic terms and traced sizes.
  auto term = [](uint32_t symbols, int64_t coef) {
    return [=](pb::Model& m) {
      pb::SymTerm* t = m.mutable_graph()->mutable_inputs(0)->mutable_shape(0)->add_terms();
      t->set_symbols(symbols);
      t->set_coef(coef);
    };
  };
  AMBER_REQUIRE_ERROR(read(with_model(term(0, 1))), "a symbolic size's term names the symbols 0x0 (1 to 3 of");
  AMBER_REQUIRE_ERROR(read(with_model(term(1u << 26, 1))), "a symbolic size's term names the symbols 0x4000000");
  AMBER_REQUIRE_ERROR(read(with_model(term(0xf, 1))), "names the symbols 0xf (1 to 3 of the letters A-Z)");
  AMBER_REQUIRE_ERROR(read(with_model([&](pb::Model& m) {
                        for (uint32_t k = 1; k <= 8; ++k) term(k, 1)(m);
                      })),
                      "model.pb: a Dim has 8 terms or more (the maximum is 7)");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::SymbolSize* t = m.mutable_graph()->add_traced();
                        t->set_symbol("t");
                        t->set_size(3);
                      })),
                      "the graph's traced sizes name the symbol 't' (one upper-case letter other than N)");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::SymbolSize* t = m.mutable_graph()->add_traced();
                        t->set_symbol("T");
                        t->set_size(-1);
                      })),
                      "the graph's traced size of T is negative (-1)");
  // A symbol no input dim gives: a call could not know its size.
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        pb::SymTerm* t =
                            m.mutable_graph()->mutable_nodes(0)->mutable_outputs(0)->mutable_shape(0)->add_terms();
                        t->set_symbols(1u << ('Q' - 'A'));
                        t->set_coef(1);
                      })),
                      "the graph's sizes depend on Q, which no input dim gives");
  // The two byte limits of the read options.
  AMBER_CASE("res.caps");
  const std::vector<uint8_t> b = valid_bytes();
  ArchiveReadOptions small;
  small.max_archive_bytes = b.size() - 1;
  AMBER_REQUIRE_ERROR(read_archive(std::span(b.data(), b.size()), nullptr, small, "t.amber"),
                      str("t.amber: the archive is ", b.size(), " bytes, over the limit of ", b.size() - 1,
                          " (ArchiveReadOptions::max_archive_bytes)"));
  small = {};
  small.max_model_memory = 1000;
  AMBER_REQUIRE_ERROR(read_archive(std::span(b.data(), b.size()), nullptr, small, "t.amber"),
                      "would take more than 1000 bytes of memory to parse");
  LoadOptions lo;
  lo.max_archive_bytes = 10;
  AMBER_REQUIRE_ERROR(load(std::span(b.data(), b.size()), lo), "over the limit of 10 (LoadOptions::max_archive_bytes)");
}

TEST_CASE("load's warm-up stays inside max_workspace_bytes whatever sizes the archive declares",
          "[archive][reliability][memory]") {
  AMBER_CASE("res.caps");
  // A model with no intermediates, its traced batch edited to 1,000,000: the warm-up's zero
  // input would be [1000000, 1000] f32, 4 GB. With a 64 MiB cap, load skips the warm-up.
  TraceOptions o;
  o.dynamic_batch = true;
  o.print_warnings = false;
  const std::vector<uint8_t> bytes =
      trace([](const Tensor& x) { return x.sum({1}); }, {randn({2, 1000})}, o).save_to_bytes();
  const std::vector<uint8_t> edited = rezip(bytes, [](const std::string& name, std::vector<uint8_t>& d) {
    if (name != "model.pb") return;
    pb::Model m;
    REQUIRE(m.ParseFromArray(d.data(), int(d.size())));
    m.mutable_graph()->set_traced_batch(1'000'000);
    const std::string s = m.SerializeAsString();
    d.assign(s.begin(), s.end());
  });
  const std::string path = temp("warmup.amber");
  write_file(path, edited);
  const auto [result, peak_kib] = in_child([&] {
    try {
      LoadOptions lo;
      lo.max_workspace_bytes = 64 << 20;
      lo.num_threads = 1;
      Model m = load(path, lo);
      const Tensor y = m.forward({ones({3, 1000})})[0];
      return std::string(y.sizes() == DimVec{3} && y.const_data_ptr<float>()[0] == 1000.0f ? "loaded" : "wrong");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  CHECK(result == "loaded");
  INFO("peak rose " << peak_kib << " KiB");
  CHECK(peak_kib < 256 * 1024);  // far below the 4 GB a warm-up on the declared shape takes
  fs::remove(path);
}

TEST_CASE("the pre-scan's schema table matches schema/archive.proto", "[archive]") {
  std::ifstream f(AMBER_SOURCE_DIR "/schema/archive.proto");
  std::set<std::string> names;
  const std::regex start(R"(^message (\w+) \{)"), fld(R"(^\s*(repeated\s+)?(\w+)\s+\w+\s*=\s*(\d+);)");
  std::string current;
  std::vector<std::tuple<std::string, bool, std::string, std::string>> fields;
  for (std::string line; std::getline(f, line);) {
    std::smatch m;
    if (std::regex_search(line, m, start)) {
      current = m[1];
      names.insert(current);
    } else if (line.rfind("}", 0) == 0) {
      current.clear();
    } else if (!current.empty() && std::regex_search(line, m, fld)) {
      fields.emplace_back(current, m[1].matched, m[2], m[3]);
    }
  }
  std::set<std::string> expected;  // the order of messages does not matter
  for (const auto& [msg, rep, type, number] : fields) {
    std::string kind = names.count(type)   ? "message " + type
                       : type == "string"  ? "string"
                       : type == "double"  ? (rep ? "doubles" : "fixed64")
                       : type == "fixed64" ? "fixed64"
                       : rep               ? "numbers"
                                           : "scalar";
    expected.insert(msg + " " + number + " " + kind);
  }
  std::set<std::string> scanned;
  std::istringstream table(model_scan_schema());
  for (std::string line; std::getline(table, line);) scanned.insert(line);
  CHECK(fields.size() > 40);
  CHECK(scanned == expected);
}

TEST_CASE("saving is atomic: directories, symlinks, read-only folders, full disks, SIGKILL", "[archive][saving]") {
  TracedModule t = small_model();
  const std::string dir = temp("saving");
  fs::remove_all(dir);
  fs::create_directories(dir + "/sub");
  const std::string path = dir + "/model.amber";
  t.save(path);
  const std::vector<uint8_t> before = read_file(path);
  AMBER_CASE("save.targets");
  AMBER_REQUIRE_ERROR(t.save(dir + "/sub"), "it is a directory");
  fs::create_symlink(path, dir + "/link.amber");
  AMBER_REQUIRE_ERROR(t.save(dir + "/link.amber"), "it is a symbolic link");
  AMBER_REQUIRE_ERROR(t.save("/proc/amber_cannot_write_here.amber"), "cannot create a temporary file");
  // A bigger model saved over the file by a process whose file size limit is too small
  // (the disk "fills up" mid-write): the save fails, the old file is untouched.
  manual_seed(1);
  Tensor big = randn({300000});
  TraceOptions q;
  q.print_warnings = false;
  TracedModule larger = trace([&](const Tensor& x) { return x + big; }, {randn({300000})}, q);
  AMBER_CASE("save.faults");
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{200000, 200000};
    setrlimit(RLIMIT_FSIZE, &lim);
    try {
      larger.save(path);
      _exit(1);  // should have failed
    } catch (const Error& e) {
      _exit(std::strstr(e.what(), "write failed") ? 0 : 2);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_file(path) == before);
  CHECK(temporaries_in(dir) == 0);  // before any later save could tidy up
  // Killed while saving, over and over: the old file is intact and nothing is left behind.
  for (int round = 0; round < 5; ++round) {
    pid = fork();
    if (pid == 0) {
      for (;;) larger.save(path);
    }
    usleep(useconds_t(2000 + 3000 * round));
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    const std::vector<uint8_t> now = read_file(path);
    CHECK((now == before || now == larger.save_to_bytes()));  // the old or the new file, whole
    CHECK_NOTHROW(read_archive(path));
  }
  // A kill between naming the temporary file and renaming it (a window of microseconds)
  // can leave it behind; the next save removes temporaries of dead processes.
  write_file(dir + "/.model.amber.tmp-999999999-0", {1, 2, 3});  // no such process
  const std::string live = dir + "/.model.amber.tmp-" + std::to_string(getppid()) + "-0";
  write_file(live, {1, 2, 3});  // a save in progress elsewhere: left alone
  t.save(path);
  CHECK(fs::exists(live));
  fs::remove(live);
  CHECK(temporaries_in(dir) == 0);
}

// One system call of a save made to fail: which one, on which call, with which errno, and
// the reason the error must give.
struct Fault {
  const char* what;
  const char* reason;
  bool unnamed_only;  // the call is made only when the temporary file is unnamed (O_TMPFILE)
  std::function<void(FileOps&)> arm;
};

// Fails the n-th call (1-based) of the call `f` stands for with `err`; earlier and later
// calls go to `real`.
template <typename R, typename... A>
std::function<R(A...)> fail_nth(std::function<R(A...)> real, int n, int err) {
  auto count = std::make_shared<int>(0);
  return [real, n, err, count](A... a) -> R {
    if (++*count == n) {
      errno = err;
      return R(-1);
    }
    return real(a...);
  };
}

std::vector<Fault> save_faults() {
  return {
      {"the first write fails (EIO)", "write failed: Input/output error", false,
       [](FileOps& o) { o.write = fail_nth(FileOps::system().write, 1, EIO); }},
      {"the disk fills mid-file (ENOSPC after short writes)", "write failed: No space left on device", false,
       [](FileOps& o) {
         auto written = std::make_shared<size_t>(0);
         o.write = [written](int fd, const void* d, size_t n) -> long {
           if (*written > 300) {
             errno = ENOSPC;
             return -1;
           }
           const long w = long(::write(fd, d, std::min<size_t>(n, 7)));  // short writes
           if (w > 0) *written += size_t(w);
           return w;
         };
       }},
      {"write makes no progress", "write failed: no bytes written", false,
       [](FileOps& o) { o.write = [](int, const void*, size_t) -> long { return 0; }; }},
      {"the file's fsync fails (EIO)", "fsync failed: Input/output error", false,
       [](FileOps& o) { o.fsync = fail_nth(FileOps::system().fsync, 1, EIO); }},
      {"naming the unnamed file fails (EIO)", "linking the temporary file failed: Input/output error", true,
       [](FileOps& o) { o.link_fd = fail_nth(FileOps::system().link_fd, 1, EIO); }},
      {"close fails (EIO, as NFS reports late write errors)", "close failed: Input/output error", false,
       [](FileOps& o) {
         o.close = [](int fd) {
           ::close(fd);
           errno = EIO;
           return -1;
         };
       }},
      {"rename fails (EXDEV)", "rename failed: Invalid cross-device link", false,
       [](FileOps& o) { o.rename = fail_nth(FileOps::system().rename, 1, EXDEV); }},
  };
}

TEST_CASE("saving with injected system-call faults keeps the previous file and leaves no temporary",
          "[archive][saving][faults]") {
  const std::string dir = temp("faults");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string archive = dir + "/model.amber", weights = dir + "/w.safetensors";
  small_model().save(archive);
  save_safetensors(weights, {{"old", ones({5})}});
  const std::vector<uint8_t> old_archive = read_file(archive), old_weights = read_file(weights);
  manual_seed(3);
  const Tensor big = randn({4000});
  TraceOptions q;
  q.print_warnings = false;
  TracedModule other = trace([&](const Tensor& x) { return x * big; }, {randn({4000})}, q);
  AMBER_CASE("save.faults");
  for (bool unnamed : {true, false}) {
    for (const Fault& f : save_faults()) {
      if (f.unnamed_only && !unnamed) continue;
      INFO(f.what << (unnamed ? " (O_TMPFILE)" : " (named temporary file)"));
      FileOps ops = FileOps::system();
      if (!unnamed)
        ops.open_unnamed = [](const char*) {
          errno = EOPNOTSUPP;
          return -1;
        };
      f.arm(ops);
      SaveOptions so;
      so.file_ops = &ops;
      AMBER_REQUIRE_ERROR(other.save(archive, so), f.reason);
      f.arm(ops);  // fresh counters
      AMBER_REQUIRE_ERROR(other.save(archive, so), "the previous file, if any, is unchanged");
      CHECK(read_file(archive) == old_archive);
      f.arm(ops);  // fresh counters
      AMBER_REQUIRE_ERROR(save_safetensors(weights, {{"new", big}}, {}, &ops), f.reason);
      CHECK(read_file(weights) == old_weights);
      CHECK(temporaries_in(dir) == 0);
      CHECK(fs::exists(archive));
    }
  }
  // The folder's fsync comes after the rename: the error says the new file is in place, and
  // it is, whole.
  FileOps ops = FileOps::system();
  ops.fsync = fail_nth(FileOps::system().fsync, 2, EIO);
  SaveOptions so;
  so.file_ops = &ops;
  AMBER_REQUIRE_ERROR(other.save(archive, so), "could not fsync its folder (the new file is in place");
  CHECK(read_file(archive) == other.save_to_bytes());
  CHECK(temporaries_in(dir) == 0);
  // Without faults the same ops save normally.
  ops = FileOps::system();
  small_model().save(archive, so);
  CHECK(read_file(archive) == old_archive);
  fs::remove_all(dir);
}

// A golden archive of format 1.<minor> (tests/golden/format_1_<minor>.amber): its ops and
// their output dtypes in graph order as listed, its outputs at batch 1 and 3 the committed ones.
void check_golden_ops(int minor, const std::vector<std::string>& want_ops,
                      const std::vector<std::string>& want_dtypes) {
  const std::string path = str(AMBER_SOURCE_DIR "/tests/golden/format_1_", minor);
  LoadedArchive a = read_archive(path + ".amber");
  SafetensorsFile io = SafetensorsFile::open(path + "_io.safetensors");
  CHECK(a.info.format_major == 1);
  CHECK(a.info.format_minor == uint32_t(minor));
  std::vector<std::string> ops, dtypes;
  for (const graph::Node* n : a.graph.nodes()) {
    ops.push_back(n->op->name);
    dtypes.emplace_back(dtype_name(n->outputs[0]->type.dtype));
  }
  CHECK(ops == want_ops);
  CHECK(dtypes == want_dtypes);
  const Model m = load(path + ".amber");
  for (const char* b : {"b1", "b3"})
    check_golden_outputs(a, m, {io.tensor(str("input.", b))}, io.tensor(str("output.", b)), b);
}

TEST_CASE("the golden archive of format 1.8 (linear layers with their activations) loads and computes",
          "[archive][golden]") {
  check_golden_ops(8, {"fused_linear", "fused_linear", "fused_linear", "linear"}, std::vector<std::string>(4, "f32"));
}

TEST_CASE("the golden archive of format 1.7 (attention writing its heads merged) loads and computes",
          "[archive][golden]") {
  check_golden_ops(7,
                   {"linear", "chunk", "reshape", "transpose", "reshape", "transpose", "reshape", "transpose",
                    "attention_merge_heads", "linear"},
                   std::vector<std::string>(10, "f32"));
}

TEST_CASE("the golden archive of format 1.6 (residual connections and their norms) loads and computes",
          "[archive][golden]") {
  check_golden_ops(6, {"linear", "add_layer_norm", "linear", "relu", "add_layer_norm"},
                   {"f32", "f32", "f32", "f32", "f32"});
}

TEST_CASE("the golden archive of format 1.5 (a residual block in uint8) loads and computes", "[archive][golden]") {
  check_golden_ops(5,
                   {"quantized_conv2d.u8", "quantized_conv2d.u8", "quantized_conv2d.u8", "quantized_add", "max_pool2d",
                    "flatten", "quantized_linear"},
                   {"u8", "u8", "u8", "u8", "u8", "u8", "f32"});
}

TEST_CASE("the golden archive of format 1.4 (int8 layers passing uint8 on) loads and computes", "[archive][golden]") {
  check_golden_ops(4, {"quantized_conv2d.u8", "max_pool2d", "flatten", "quantized_linear.u8", "quantized_linear"},
                   {"u8", "u8", "u8", "u8", "f32"});
}

TEST_CASE("the golden archive of format 1.3 (int8 convolution and linear layer) loads and computes",
          "[archive][golden]") {
  check_golden_ops(3, {"quantized_conv2d", "flatten", "quantized_linear"}, {"f32", "f32", "f32"});
}

TEST_CASE("the golden archive of format 1.2 (sizes in N and T) loads and computes", "[archive][golden]") {
  const std::string dir = AMBER_SOURCE_DIR "/tests/golden";
  LoadedArchive a = read_archive(dir + "/format_1_2.amber");
  SafetensorsFile io = SafetensorsFile::open(dir + "/format_1_2_io.safetensors");
  CHECK(a.info.format_major == 1);
  CHECK(a.info.format_minor == 2);
  CHECK(a.graph.inputs()[0]->type.shape ==
        graph::SymShape{graph::SymInt::symbol('N'), graph::SymInt::symbol('T'), graph::SymInt(4)});
  const Model m = load(dir + "/format_1_2.amber");
  for (const char* nt : {"n1.t1", "n2.t5", "n3.t9"})
    check_golden_outputs(a, m, {io.tensor(str("input.", nt))}, io.tensor(str("output.", nt)), nt);
}

TEST_CASE("the golden archive of format 1.1 (a loop) loads and computes", "[archive][golden]") {
  const std::string dir = AMBER_SOURCE_DIR "/tests/golden";
  LoadedArchive a = read_archive(dir + "/format_1_1.amber");
  SafetensorsFile io = SafetensorsFile::open(dir + "/format_1_1_io.safetensors");
  CHECK(a.info.format_major == 1);
  CHECK(a.info.format_minor == 1);
  const Model m = load(dir + "/format_1_1.amber");
  for (int64_t n : {0, 2, 5})
    check_golden_outputs(a, m, {io.tensor("x"), full({}, n, {DType::i64})}, io.tensor(str("output.n", n)),
                         str("n=", n));
}

TEST_CASE("the golden archive of format 1.0 loads and computes", "[archive][golden]") {
  const std::string dir = AMBER_SOURCE_DIR "/tests/golden";
  LoadedArchive a = read_archive(dir + "/format_1_0.amber");
  SafetensorsFile io = SafetensorsFile::open(dir + "/format_1_0_io.safetensors");
  CHECK(a.info.format_major == 1);
  CHECK(a.graph.is_dynamic());
  for (const char* b : {"1", "3"}) {
    auto out = graph::run_graph(a.graph, {io.tensor(std::string("input.b") + b)});
    test::Diff d = test::compare(out[0], io.tensor(std::string("output.b") + b), 1e-5, 1e-5);
    INFO(d.message);
    CHECK(d.ok);
  }
}

TEST_CASE("a post-norm residual block saves as add_layer_norm (format 1.6); its operands' shapes are checked",
          "[archive][reliability]") {
  manual_seed(8);
  const Tensor w = randn({8, 8}) * 0.3, gamma = rand({8}) + 0.5, beta = randn({8});
  auto post = [&](const Tensor& x) { return layer_norm(x + linear(x, w), {8}, gamma, beta, 1e-5); };
  const Tensor x = randn({2, 3, 8});
  const std::vector<uint8_t> bytes = trace(post, {x}).save_to_bytes();
  LoadedArchive a = read_archive(bytes, nullptr);
  CHECK(a.info.format_minor == 6);
  std::vector<std::string> ops;
  for (const graph::Node* n : a.graph.nodes()) ops.push_back(n->op->name);
  CHECK(ops == std::vector<std::string>{"linear", "add_layer_norm"});
  CHECK(test::compare(load(bytes).forward({x})[0], post(x), 1e-5, 1e-5).ok);  // (loaded linear layers pack weights)
  // A pre-norm block reads the sum twice: left as it is, and the archive stays 1.0.
  auto pre = [&](const Tensor& in) {
    const Tensor s = in + linear(layer_norm(in, {8}, gamma, beta, 1e-5), w);
    return s + layer_norm(s, {8}, {}, {}, 1e-5);
  };
  CHECK(read_archive(trace(pre, {x}).save_to_bytes(), nullptr).info.format_minor == 0);
  // other swapped for a value of another shape (the weight): the reader's inference refuses it.
  LoadedArchive c = read_archive(bytes, nullptr);
  for (graph::Node* n : c.graph.nodes())
    if (n->op->name == "add_layer_norm") n->inputs[1] = n->inputs[1]->producer->inputs[1];
  AMBER_REQUIRE_ERROR(read_archive(archive_bytes(c.graph, c.info), nullptr),
                      "other must have the input's shape [2, 3, 8], got [8, 8]");
}

TEST_CASE("int8 archives with uint8 activations: format 1.4; the output's quantization checked",
          "[archive][reliability]") {
  manual_seed(6);
  const Tensor w = (randn({4, 3, 3, 3}) * 40.0).to(DType::i8), ws = rand({4}) * 0.01 + 0.001, b = randn({4});
  const Tensor lw = (randn({5, 16}) * 40.0).to(DType::i8), ls = rand({5}) * 0.01 + 0.001;
  auto f = [&](const Tensor& x) {
    const Tensor y =
        quantized_conv2d_u8(x, w, ws, b, {1}, {1}, {1}, 1, 0.02, 128, "clamp", 0.0, double(INFINITY), 0.01, 0);
    return quantized_linear(y.flatten(1), lw, ls, {}, 0.01, 0);
  };
  const Tensor x = randn({2, 3, 2, 2});
  TraceOptions to;
  to.dynamic_batch = true;
  const std::vector<uint8_t> bytes = trace(f, {x}, to).save_to_bytes();
  LoadedArchive a = read_archive(bytes, nullptr);
  CHECK(a.info.format_minor == 4);  // the .u8 overloads' minor (older readers refuse it by version)
  // A uint8 addition needs 1.5 (a 1.4 reader refuses quantized_add by version).
  auto g = [&](const Tensor& in) {
    const Tensor y =
        quantized_conv2d_u8(in, w, ws, b, {1}, {1}, {1}, 1, 0.02, 128, "clamp", 0.0, double(INFINITY), 0.01, 0);
    return quantized_linear(quantized_add(y, y, 0.01, 0, 0.01, 0, "none", 0.0, 6.0, 0.02, 0).flatten(1), lw, ls, {},
                            0.02, 0);
  };
  CHECK(read_archive(trace(g, {x}, to).save_to_bytes(), nullptr).info.format_minor == 5);
  CHECK(a.graph.nodes()[0]->outputs[0]->type.dtype == DType::u8);
  CHECK(test::compare(load(bytes).forward({x})[0], f(x), 0, 0).ok);  // the same kernels: bit for bit

  auto changed = [&](const std::function<void(graph::Node&)>& change) {
    LoadedArchive c = read_archive(bytes, nullptr);
    for (graph::Node* n : c.graph.nodes())
      if (n->op->name == "quantized_conv2d.u8") change(*n);
    return archive_bytes(c.graph, c.info);
  };
  const OpSchema& op = op_schema("quantized_conv2d.u8");
  const int os = op.attr_index("output_scale"), oz = op.attr_index("output_zero_point");
  AMBER_REQUIRE_ERROR(read_archive(changed([&](graph::Node& n) { n.attrs[size_t(os)] = Attr(double(NAN)); }), nullptr),
                      "output_scale must be finite and positive");
  AMBER_REQUIRE_ERROR(read_archive(changed([&](graph::Node& n) { n.attrs[size_t(os)] = Attr(1e-50); }), nullptr),
                      "output_scale must be finite and positive (as a float), got 1e-50");
  AMBER_REQUIRE_ERROR(read_archive(changed([&](graph::Node& n) { n.attrs[size_t(oz)] = Attr(int64_t(-1)); }), nullptr),
                      "output_zero_point must be in [0, 255] (uint8), got -1");
  // The u8 output typed f32 in the archive: the reader's inference disagrees.
  AMBER_REQUIRE_ERROR(read_archive(changed([&](graph::Node& n) { n.outputs[0]->type.dtype = DType::f32; }), nullptr),
                      "but inference gives u8[");
}

TEST_CASE("int8 archives: format 1.3; weight scales, bias and the input's quantization checked",
          "[archive][reliability]") {
  manual_seed(5);
  const Tensor w = (randn({4, 3, 3, 3}) * 40.0).to(DType::i8), ws = rand({4}) * 0.01 + 0.001, b = randn({4});
  const Tensor lw = (randn({5, 16}) * 40.0).to(DType::i8), ls = rand({5}) * 0.01 + 0.001;
  auto f = [&](const Tensor& x) {
    const Tensor y = quantized_conv2d(x, w, ws, b, {1}, {1}, {1}, 1, 0.02, 128, "clamp", 0.0, 6.0);
    return quantized_linear(y.flatten(1), lw, ls, {}, 0.03, 0);
  };
  const Tensor x = randn({2, 3, 2, 2});
  TraceOptions to;
  to.dynamic_batch = true;
  const std::vector<uint8_t> bytes = trace(f, {x}, to).save_to_bytes();
  LoadedArchive a = read_archive(bytes, nullptr);
  CHECK(a.info.format_minor == 3);  // the quantized ops' minor (older readers refuse it by version)
  CHECK(test::compare(load(bytes).forward({x})[0], f(x), 1e-6, 1e-6).ok);

  // Each change to one node of the archive, and what loading it says.
  auto changed = [&](const std::string& op, const std::function<void(graph::Node&)>& change) {
    LoadedArchive c = read_archive(bytes, nullptr);
    for (graph::Node* n : c.graph.nodes())
      if (n->op->name == op) change(*n);
    return archive_bytes(c.graph, c.info);
  };
  auto scale_of = [](graph::Node& n, float v) {
    std::vector<float> s = n.inputs[2]->data.to_vector<float>(SrcLoc::none());
    s[1] = v;
    n.inputs[2]->data = tensor(s, {int64_t(s.size())});
  };
  AMBER_REQUIRE_ERROR(load(changed("quantized_conv2d", [&](graph::Node& n) { scale_of(n, -0.5f); })),
                      "weight_scale[1] is -0.5");
  AMBER_REQUIRE_ERROR(load(changed("quantized_linear", [&](graph::Node& n) { scale_of(n, NAN); })),
                      "the scales must be finite and non-negative");
  AMBER_REQUIRE_ERROR(load(changed("quantized_conv2d",
                                   [&](graph::Node& n) {
                                     std::vector<float> v = n.inputs[3]->data.to_vector<float>(SrcLoc::none());
                                     v[2] = INFINITY;
                                     n.inputs[3]->data = tensor(v, {int64_t(v.size())});
                                   })),
                      "a quantized op's bias must be finite");
  const int zp = op_schema("quantized_conv2d").attr_index("input_zero_point"),
            sc = op_schema("quantized_linear").attr_index("input_scale");
  AMBER_REQUIRE_ERROR(
      read_archive(changed("quantized_conv2d", [&](graph::Node& n) { n.attrs[size_t(zp)] = Attr(int64_t(256)); }),
                   nullptr),
      "input_zero_point must be in [0, 255] (uint8), got 256");
  AMBER_REQUIRE_ERROR(
      read_archive(changed("quantized_linear", [&](graph::Node& n) { n.attrs[size_t(sc)] = Attr(0.0); }), nullptr),
      "input_scale must be finite and positive");
}
