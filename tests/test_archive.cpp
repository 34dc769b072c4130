// Archive tests: bit-exact round trips, deterministic bytes, zip64, libzip reading what
// Amber writes, zero-copy weights, and every case of shared/RELIABILITY.md's zip, protobuf
// and tensor-record sections, each asserting its error message; checksums on both read
// paths; saving interrupted by a full disk (RLIMIT_FSIZE) and by SIGKILL; the golden
// archive of format 1.0.

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "amber/core/mapped_pages.h"
#include "amber/graph/interpreter.h"
#include "amber/graph/text.h"
#include "amber/schema/eager.h"
#include "amber/serialize/archive.h"
#include "amber/serialize/file_io.h"
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
  return read_archive(std::span(b.data(), b.size()), nullptr, {verify}, "test.amber");
}

std::string temp(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / "amber_archive_test";
  fs::create_directories(dir);
  return (dir / name).string();
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

}  // namespace

TEST_CASE("archives round-trip bit-exactly and deterministically", "[archive]") {
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
  AMBER_REQUIRE_ERROR(read({}), "test.amber: not a zip archive (0 bytes is too short)");
  AMBER_REQUIRE_ERROR(read({'P', 'K', 3, 4}), "not a zip archive");
  std::mt19937 rng(5);
  std::vector<uint8_t> noise(4096);
  for (auto& c : noise) c = uint8_t(rng());
  AMBER_REQUIRE_ERROR(read(noise), "not a zip archive");
  std::string text = "this is plainly a text file, not an archive at all";
  AMBER_REQUIRE_ERROR(read({text.begin(), text.end()}), "not a zip archive");
  // Truncated at many points: always an error, never a crash.
  for (size_t cut = 0; cut < ok.size(); cut += 37) CHECK_THROWS_AS(read({ok.begin(), ok.begin() + long(cut)}), Error);
  // Junk before, junk after, two archives concatenated.
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
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd + 38, 0120777u << 16); })), "is a symbolic link");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, cd + 8, 1); })), "entry 'model.pb' is encrypted");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, cd + 10, 8); })), "uses compression method 8");
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
  // A central directory entry pointing at another entry's local header.
  const size_t cd2 = central_entry(ok, "graph.txt");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put32(b, cd2 + 42, u32(b, cd + 42)); })),
                      "the central directory names 'graph.txt' but its local header names 'model.pb'");
  // Absurd counts and name lengths.
  const size_t end = ok.size() - 22;
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) {
                        put16(b, end + 8, 0xfffe);
                        put16(b, end + 10, 0xfffe);
                      })),
                      "central directory entry");
  AMBER_REQUIRE_ERROR(read(patched([&](auto& b) { put16(b, cd + 28, 60000); })), "has a name of 60000 bytes");
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
  AMBER_REQUIRE_ERROR(read_zip(std::span(bomb.data(), bomb.size()), "x"), "x: entries 'a' and 'b' overlap");
}

TEST_CASE("hostile model.pb: garbage, truncation, depth, versions, unknown fields", "[archive][reliability]") {
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
  std::vector<uint8_t> deep;
  for (int i = 0; i < 1000; ++i) {
    deep.push_back(0xa3);  // field 100, start group
    deep.push_back(0x06);
  }
  AMBER_REQUIRE_ERROR(read(with_entry("model.pb", deep)), "nested too deeply");
  // Unknown fields are ignored (a newer minor version may add some).
  std::vector<uint8_t> extra(full);
  extra.insert(extra.end(), {0xc2, 0x3e, 0x03, 'n', 'e', 'w'});  // field 1000, length-delimited
  CHECK_NOTHROW(read(with_entry("model.pb", extra)));
  // Newer major versions are refused, naming both versions.
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

TEST_CASE("hostile tensor records", "[archive][reliability]") {
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        m.mutable_tensors(0)->clear_shape();
                        m.mutable_tensors(0)->add_shape(int64_t(1) << 40);
                        m.mutable_tensors(0)->add_shape(int64_t(1) << 40);
                      })),
                      "its element count overflows 64 bits");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_shape(0, -3); })),
                      "has a negative dim -3");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        for (int i = 0; i < 9; ++i) m.mutable_tensors(0)->add_shape(1);
                      })),
                      "(the maximum is 8)");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_byte_length(4); })),
                      "bytes but records byte_length 4");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_record("data/999"); })),
                      "names record 'data/999', which is missing");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_tensors(0)->set_dtype(pb::DType(42)); })),
                      "has unknown dtype code 42");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { *m.add_tensors() = m.tensors(0); })),
                      "appears twice in the weight table");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_constants(0)->set_name("ghost"); })),
      "constant 'ghost' has no tensor in the weight table");
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
  AMBER_REQUIRE_ERROR(read_archive(path), "fails its XXH3 checksum");
  CHECK_NOTHROW(read_archive(path, {false}));  // the caller opted out
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
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        m.mutable_graph()->mutable_nodes(0)->set_op("frobnicate");
                        m.mutable_graph()->mutable_nodes(1)->set_op_version(7);
                      })),
                      "2 unknown ops: ");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->set_op("frobnicate"); })),
                      "frobnicate (version 1)");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->set_inputs(0, "later"); })),
      "input %later is used before it is produced");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->mutable_attrs()->RemoveLast(); })),
      "attributes, the op table lists");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->mutable_attrs(0)->set_name("x"); })),
      "is 'x', expected");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_nodes(0)->mutable_attrs(0)->set_s("s"); })),
      "has the wrong kind");
  AMBER_REQUIRE_ERROR(
      read(with_model([](pb::Model& m) { m.mutable_graph()->mutable_outputs(0)->set_value("nothing"); })),
      "names %nothing, which is never produced");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        m.mutable_graph()->mutable_nodes(0)->mutable_outputs(0)->mutable_shape(1)->set_value(99);
                      })),
                      "but inference gives");
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        auto* n = m.mutable_graph()->mutable_nodes(1);
                        n->mutable_outputs(0)->set_name(m.graph().nodes(0).outputs(0).name());
                      })),
                      "is defined twice");
}

TEST_CASE("graph semantics: cycles, arity, out-of-range axes", "[archive][reliability]") {
  // A cycle: node 0 consumes node 1's output, which consumes node 0's.
  AMBER_REQUIRE_ERROR(read(with_model([](pb::Model& m) {
                        auto* g = m.mutable_graph();
                        g->mutable_nodes(0)->set_inputs(0, g->nodes(1).outputs(0).name());
                      })),
                      "is used before it is produced");
  // One input too few, one too many.
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

TEST_CASE("saving is atomic: directories, symlinks, read-only folders, full disks, SIGKILL", "[archive][saving]") {
  TracedModule t = small_model();
  const std::string dir = temp("saving");
  fs::remove_all(dir);
  fs::create_directories(dir + "/sub");
  const std::string path = dir + "/model.amber";
  t.save(path);
  const std::vector<uint8_t> before = read_file(path);
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
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    leftovers += e.path().filename().string().find(".tmp-") != std::string::npos;
  CHECK(leftovers == 0);
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
