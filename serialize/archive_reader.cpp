// Archive reading (archive.h). Order of checks: zip structure, the version and byte-order
// records, model.pb's size and CRC, a pre-scan of its encoding (counts, lengths, the memory
// parsing takes: model_scan.h), the protobuf message, limits, the weight table
// (dtypes, shapes, sizes, records), every op against the op table (all unknown ops listed
// at once), the graph as it is built, the checksums, and finally the graph verifier.

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <map>
#include <set>
#include <vector>

#include "amber/core/parallel.h"
#include "amber/graph/verify.h"
#include "amber/schema/control_flow.h"
#include "amber/schema/op_library.h"
#include "amber/serialize/archive.h"
#include "amber/serialize/file_io.h"
#include "amber/serialize/model_scan.h"
#include "amber/serialize/zip.h"
#include "archive.pb.h"

namespace amber {
namespace {

namespace pb = amber::archive;

constexpr uint64_t kParallelHashBytes = uint64_t(16) << 20;

class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, std::shared_ptr<const void> keep_alive, const ArchiveReadOptions& o,
         std::string src)
      : bytes_(bytes), keep_alive_(std::move(keep_alive)), options_(o), src_(std::move(src)) {}

  LoadedArchive read() {
    check(bytes_.size() <= options_.max_archive_bytes, "the archive is ", bytes_.size(), " bytes, over the limit of ",
          options_.max_archive_bytes, " (ArchiveReadOptions::max_archive_bytes)");
    for (const ZipEntry& e : read_zip(bytes_, src_)) entries_.emplace(e.name, e);
    check_version();
    const ZipEntry& mpb = entry("model.pb");
    check(mpb.size <= ArchiveLimits::kMaxModelBytes, "model.pb is ", mpb.size, " bytes, over the limit of ",
          ArchiveLimits::kMaxModelBytes);
    check_crc32(bytes_, mpb, src_);
    // Counts, ranks, lengths and the memory the parse will take, before it allocates any.
    const std::span<const uint8_t> model_pb = bytes_.subspan(size_t(mpb.data_offset), size_t(mpb.size));
    scan_model_pb(model_pb,
                  std::min(options_.max_model_memory,
                           ArchiveLimits::kParseBytesFloor + ArchiveLimits::kParseBytesPerModelByte * mpb.size),
                  src_);
    pb::Model m;
    check(m.ParseFromArray(bytes_.data() + mpb.data_offset, int(mpb.size)),
          "model.pb is not a valid protobuf message (truncated, corrupt, or nested too deeply)");
    check(m.format_major() == version_major_, "model.pb says format version ", m.format_major(), ".", m.format_minor(),
          " but the version record says ", version_major_);
    LoadedArchive out;
    out.info.format_major = m.format_major();
    out.info.format_minor = m.format_minor();
    out.info.producer = limited(m.producer(), "producer");
    read_metadata(m.metadata(), out.info);
    read_tensors(m);
    if (options_.verify_checksums) hash_records();
    out.graph = build_graph(m.graph());
    out.info.weight_count = tensors_.size();
    for (const auto& [name, t] : tensors_) out.info.weight_bytes += t.record->byte_length();
    out.info.weights_mapped = mapped_;
    try {
      graph::verify_or_throw(out.graph, str(src_, ": the graph"));
    } catch (const Error& e) {
      throw Error(e.what());
    }
    return out;
  }

 private:
  template <typename... Args>
  void check(bool cond, const Args&... args) const {
    if (!cond) [[unlikely]]
      throw Error(str(src_, ": ", args...));
  }

  const ZipEntry& entry(const std::string& name) const {
    auto it = entries_.find(name);
    check(it != entries_.end(), "no entry '", name, "': not an Amber archive");
    return it->second;
  }

  std::string text_of(const ZipEntry& e) const {
    return std::string(reinterpret_cast<const char*>(bytes_.data() + e.data_offset), size_t(e.size));
  }

  const std::string& limited(const std::string& s, const char* what) const {
    check(s.size() <= ArchiveLimits::kMaxStringBytes, what, " is ", s.size(), " bytes long, over the limit of ",
          ArchiveLimits::kMaxStringBytes);
    return s;
  }

  void check_version() {
    const ZipEntry& v = entry("format_version");
    check(v.size <= 32, "the format_version record is malformed");
    check_crc32(bytes_, v, src_);
    const std::string text = text_of(v);
    uint32_t major = 0, minor = 0;
    const char* p = text.data();
    const char* end = text.data() + text.size();
    auto r1 = std::from_chars(p, end, major);
    bool ok = r1.ec == std::errc() && r1.ptr < end && *r1.ptr == '.';
    if (ok) {
      auto r2 = std::from_chars(r1.ptr + 1, end, minor);
      ok = r2.ec == std::errc() && r2.ptr + 1 == end && *r2.ptr == '\n';
    }
    check(ok, "the format_version record '", text, "' is malformed");
    check(major != 0, "format version 0 does not exist");
    check(major <= kArchiveFormatMajor, "the archive is format version ", major, ".", minor,
          ", this reader supports up to ", kArchiveFormatMajor, ".x; use a newer Amber");
    version_major_ = major;
    version_minor_ = minor;
    const ZipEntry& bo = entry("byte_order");
    check_crc32(bytes_, bo, src_);
    check(text_of(bo) == "little\n", "byte order '", text_of(bo), "' is not supported (archives are little-endian)");
  }

  void read_metadata(const pb::Metadata& md, ArchiveInfo& info) {
    check(uint64_t(md.example_input_shapes_size()) <= ArchiveLimits::kMaxGraphIO, "too many example shapes");
    for (const pb::Shape& s : md.example_input_shapes()) {
      check(s.dims_size() <= kMaxDims, "an example input shape has rank ", s.dims_size());
      DimVec d;
      for (int64_t x : s.dims()) {
        check(x >= 0, "an example input shape has a negative dim ", x);
        d.push_back(x);
      }
      info.example_input_shapes.push_back(d);
    }
    check(uint64_t(md.trace_warnings_size()) <= ArchiveLimits::kMaxGraphIO, "too many trace warnings");
    for (const pb::Warning& w : md.trace_warnings())
      info.warnings.push_back(
          {limited(w.kind(), "a warning"), limited(w.source(), "a warning"), limited(w.message(), "a warning")});
    info.creation_time = md.creation_time();
    check(uint64_t(md.extra_size()) <= ArchiveLimits::kMaxGraphIO, "too many metadata entries");
    for (const pb::KeyValue& kv : md.extra())
      info.extra.emplace_back(limited(kv.key(), "a key"), limited(kv.value(), "a value"));
  }

  DType dtype(int code, const std::string& what) const {
    check(is_valid_dtype_code(code), what, " has unknown dtype code ", code);
    return DType(code);
  }

  struct TensorInfo {
    const pb::TensorRecord* record;
    const ZipEntry* entry;
    DType dtype;
    DimVec shape;
    bool checksum_ok = false;  // set by hash_records
  };

  // Every record's XXH3 against the weight table, on the intra-op threads when there are
  // tens of MiB (largest records first, each thread taking the next): reading them the first
  // time is what such a load spends most here, and below that starting the threads costs
  // more than it saves. Failures are reported as the graph takes each constant (tensor_data).
  void hash_records() {
    std::vector<TensorInfo*> order;
    uint64_t total = 0;
    for (auto& [name, t] : tensors_) {
      order.push_back(&t);
      total += t.entry->size;
    }
    std::sort(order.begin(), order.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->entry->size > b->entry->size; });
    std::atomic<size_t> next{0};
    ThreadLimit limit(total < kParallelHashBytes ? 1
                      : options_.num_threads > 0 ? options_.num_threads
                                                 : get_num_threads());
    parallel_for(get_num_threads(), 1, [&](int64_t, int64_t) {  // each thread (or the caller alone) drains `order`
      for (size_t i = next++; i < order.size(); i = next++) {
        TensorInfo& t = *order[i];
        t.checksum_ok = XXH3_64bits(bytes_.data() + t.entry->data_offset, size_t(t.entry->size)) == t.record->xxh3();
      }
    });
  }

  void read_tensors(const pb::Model& m) {
    check(uint64_t(m.tensors_size()) <= ArchiveLimits::kMaxTensors, m.tensors_size(),
          " weight tensors exceed the limit of ", ArchiveLimits::kMaxTensors);
    for (const pb::TensorRecord& r : m.tensors()) {
      const std::string& name = limited(r.name(), "a tensor name");
      const std::string what = "tensor '" + name + "'";
      TensorInfo t{&r, nullptr, dtype(r.dtype(), what), {}};
      check(r.shape_size() <= kMaxDims, what, " has rank ", r.shape_size(), " (the maximum is ", kMaxDims, ")");
      int64_t numel = 1;
      for (int64_t d : r.shape()) {
        check(d >= 0, what, " has a negative dim ", d);
        check(!__builtin_mul_overflow(numel, d, &numel), what, ": its element count overflows 64 bits");
        t.shape.push_back(d);
      }
      uint64_t bytes;
      check(!__builtin_mul_overflow(uint64_t(numel), uint64_t(itemsize(t.dtype)), &bytes), what,
            ": its byte size overflows 64 bits");
      check(bytes == r.byte_length(), what, " of ", dtype_name(t.dtype), t.shape, " needs ", bytes,
            " bytes but records byte_length ", r.byte_length());
      auto e = entries_.find(limited(r.record(), "a record name"));
      check(e != entries_.end(), what, " names record '", r.record(), "', which is missing");
      check(e->second.size == r.byte_length(), "record '", r.record(), "' (", what, ") holds ", e->second.size,
            " bytes, expected ", r.byte_length());
      t.entry = &e->second;
      check(tensors_.emplace(name, t).second, "tensor '", name, "' appears twice in the weight table");
    }
  }

  Tensor tensor_data(const TensorInfo& t) {
    const uint8_t* p = bytes_.data() + t.entry->data_offset;
    const size_t n = size_t(t.entry->size);
    if (options_.verify_checksums)
      check(t.checksum_ok, "record '", t.record->record(), "' (tensor '", t.record->name(),
            "') fails its XXH3 checksum: the archive is corrupt");
    if (keep_alive_ && reinterpret_cast<uintptr_t>(p) % itemsize(t.dtype) == 0 && n > 0) {
      ++mapped_;
      Storage s = Storage::wrap(const_cast<uint8_t*>(p), n, Device::cpu(), keep_alive_, /*read_only=*/true);
      return Tensor::make(std::move(s), t.shape, contiguous_strides(t.shape), 0, t.dtype);
    }
    return tensor_from_raw(p, t.dtype, t.shape);
  }

  graph::ValueType value_type(const pb::ValueInfo& v, const std::string& what) const {
    graph::ValueType t{dtype(v.dtype(), what), {}};
    check(v.shape_size() <= kMaxDims, what, " has rank ", v.shape_size(), " (the maximum is ", kMaxDims, ")");
    for (const pb::Dim& d : v.shape()) {
      graph::SymInt dim(d.value());
      add_terms(dim, d.coef(), d.terms(), what);
      // A static dim is non-negative; a symbolic one is non-negative at the traced sizes and
      // computable there without overflow (the sizes themselves are checked per call).
      check(dim.is_static() ? dim.value >= 0 : at_traced(dim, what) >= 0, what, " has dim ", t.shape.size(), " = ", dim,
            ", negative", dim.is_static() ? "" : str(" at the traced sizes (", traced_, ")"));
      t.shape.push_back(dim);
    }
    return t;
  }

  // coef * N and the terms added to s, each checked (symbols: 1 to 3 letters; at most 7 terms).
  template <typename Terms>
  void add_terms(graph::SymInt& s, int64_t coef, const Terms& terms, const std::string& what) const {
    try {
      s.add(graph::symbol_bit('N'), coef);
      for (const pb::SymTerm& t : terms) {
        check(t.symbols() != 0 && t.symbols() < (1u << 26) && std::popcount(t.symbols()) <= graph::kMaxSymbols, what,
              ": a symbolic size's term names the symbols 0x", std::hex, t.symbols(), std::dec,
              " (1 to 3 of the letters A-Z)");
        s.add(t.symbols(), t.coef());
      }
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.rfind(src_, 0) == 0) throw;
      throw Error(str(src_, ": ", what, ": ", msg));
    }
  }

  // s at the traced sizes (1 for a symbol without one).
  int64_t at_traced(const graph::SymInt& s, const std::string& what) const {
    graph::SymValues v = traced_;
    graph::for_each_symbol(s.symbols() & ~v.bound, [&](char c) { v.set(c, 1); });
    try {
      return s.at(v);
    } catch (const Error& e) {
      throw Error(str(src_, ": ", what, ": ", e.what()));
    }
  }

  Attr attr_value(const pb::Attribute& a, const ArgSpec& spec, const std::string& what,
                  std::vector<graph::SymInt>& syms) const {
    using C = pb::Attribute::ValueCase;
    auto kind_error = [&] {
      throw Error(
          str(src_, ": ", what, ": attribute '", spec.name, "' has the wrong kind for ", arg_kind_name(spec.kind)));
    };
    Attr out;
    switch (a.value_case()) {
      case C::kNone:
        if (!spec.optional) kind_error();
        break;
      case C::kI:
        if (spec.kind != ArgKind::int_ && spec.kind != ArgKind::scalar) kind_error();
        out = Attr(a.i());
        break;
      case C::kF:
        if (spec.kind != ArgKind::float_ && spec.kind != ArgKind::scalar) kind_error();
        out = Attr(a.f());
        break;
      case C::kB:
        if (spec.kind != ArgKind::bool_ && spec.kind != ArgKind::scalar) kind_error();
        out = Attr(a.b());
        break;
      case C::kInts:
        if (spec.kind != ArgKind::ints) kind_error();
        check(uint64_t(a.ints().values_size()) <= ArchiveLimits::kMaxListLength, what,
              ": a list attribute is too long");
        out = Attr(std::vector<int64_t>(a.ints().values().begin(), a.ints().values().end()));
        break;
      case C::kFloats:
        if (spec.kind != ArgKind::floats) kind_error();
        check(uint64_t(a.floats().values_size()) <= ArchiveLimits::kMaxListLength, what,
              ": a list attribute is too long");
        out = Attr(std::vector<double>(a.floats().values().begin(), a.floats().values().end()));
        break;
      case C::kS:
        if (spec.kind != ArgKind::string) kind_error();
        out = Attr(limited(a.s(), "a string attribute"));
        break;
      case C::kDtype:
        if (spec.kind != ArgKind::dtype) kind_error();
        out = Attr(dtype(a.dtype(), what));
        break;
      default:
        throw Error(str(src_, ": ", what, ": attribute '", spec.name, "' has no value"));
    }
    check(a.coefs_size() == 0 || a.syms_size() == 0, what, ": attribute '", spec.name, "' has both coefs and syms");
    const int n = std::max(a.coefs_size(), a.syms_size());
    if (n > 0) {
      const bool is_int = out.kind() == AttrKind::i && n == 1;
      const bool is_ints = out.kind() == AttrKind::ints && size_t(n) == out.ints().size();
      check(is_int || is_ints, what, ": attribute '", spec.name, "' has symbolic coefficients it cannot have");
      static const google::protobuf::RepeatedPtrField<pb::SymTerm> no_terms;
      for (int k = 0; k < n; ++k) {
        graph::SymInt s;
        add_terms(s, k < a.coefs_size() ? a.coefs(k) : 0, k < a.syms_size() ? a.syms(k).terms() : no_terms,
                  str(what, ": attribute '", spec.name, "'"));
        syms.push_back(s);
      }
    }
    return out;
  }

  // depth: how many bodies pg is inside (0 for the model's graph).
  graph::Graph build_graph(const pb::Graph& pg, int depth = 0) {
    check(depth <= kMaxBodyDepth, "control-flow bodies nest more than ", kMaxBodyDepth, " deep");
    check(depth == 0 || pg.constants_size() == 0,
          "a control-flow body holds constants; bodies read tensors only "
          "through their inputs");
    check(uint64_t(pg.nodes_size()) <= ArchiveLimits::kMaxNodes, pg.nodes_size(), " nodes exceed the limit of ",
          ArchiveLimits::kMaxNodes);
    check(uint64_t(pg.inputs_size()) <= ArchiveLimits::kMaxGraphIO, pg.inputs_size(),
          " graph inputs exceed the limit of ", ArchiveLimits::kMaxGraphIO);
    check(uint64_t(pg.outputs_size()) <= ArchiveLimits::kMaxGraphIO, pg.outputs_size(),
          " graph outputs exceed the limit of ", ArchiveLimits::kMaxGraphIO);
    // Every op must be known; list all that are not, and the op libraries' namespaces among them.
    std::set<std::string> unknown, namespaces;
    bool builtin = false;  // an unknown op of Amber's own
    for (const pb::Node& n : pg.nodes()) {
      const OpSchema* op = find_op(limited(n.op(), "an op name"));
      if (!op || uint32_t(op->version) != n.op_version()) {
        unknown.insert(str(n.op(), " (version ", n.op_version(), ")"));
        if (op_namespace(n.op()).empty())
          builtin = true;
        else
          namespaces.insert(std::string(op_namespace(n.op())));
      }
    }
    if (!unknown.empty()) {
      std::string list, libs;
      for (const auto& u : unknown) list += (list.empty() ? "" : ", ") + u;
      for (const auto& ns : namespaces) {
        const std::string origin = op_library_origin(ns);
        libs += str(libs.empty() ? "" : "; ", "namespace ", ns, ": ",
                    origin.empty() ? std::string("no op library of it is loaded")
                                   : "its loaded op library (" + origin + ") lacks them or has another version");
      }
      check(false, unknown.size(), " unknown op", unknown.size() == 1 ? "" : "s", ": ", list,
            namespaces.empty() ? std::string()
                               : " (" + libs +
                                     "; a service names its op libraries: LoadOptions::op_libraries, "
                                     "amber::load_op_library, amber run --op-library)",
            builtin ? " (this Amber knows the ops in docs/OPS.md; the archive may need a newer version)" : "",
            version_minor_ > kArchiveFormatMinor
                ? str(" (the archive is format version ", version_major_, ".", version_minor_,
                      "; this reader knows up to ", kArchiveFormatMajor, ".", kArchiveFormatMinor, ")")
                : std::string());
    }
    check(pg.traced_batch() >= 0, "the graph's traced_batch is negative (", pg.traced_batch(), ")");
    graph::Graph g;
    if (pg.traced_batch() > 0) g.traced.set('N', pg.traced_batch());
    for (const pb::SymbolSize& t : pg.traced()) {
      check(t.symbol().size() == 1 && t.symbol()[0] >= 'A' && t.symbol()[0] <= 'Z' && t.symbol() != "N",
            "the graph's traced sizes name the symbol '", limited(t.symbol(), "a symbol"),
            "' (one upper-case letter other than N)");
      check(!g.traced.has(t.symbol()[0]), "the graph's traced sizes name ", t.symbol(), " twice");
      check(t.size() >= 0, "the graph's traced size of ", t.symbol(), " is negative (", t.size(), ")");
      g.traced.set(t.symbol()[0], t.size());
    }
    if (depth == 0) traced_ = g.traced;
    std::map<std::string, graph::Value*> values;
    auto define = [&](graph::Value* v) { values[v->name] = v; };
    try {
      for (const pb::ValueInfo& in : pg.inputs())
        define(g.add_input(limited(in.name(), "an input name"), value_type(in, "input '" + in.name() + "'")));
      for (const pb::Constant& c : pg.constants()) {
        auto t = tensors_.find(limited(c.name(), "a constant name"));
        check(t != tensors_.end(), "constant '", c.name(), "' has no tensor in the weight table");
        graph::Value* v = g.add_constant(c.name(), tensor_data(t->second), limited(c.source(), "a source"));
        define(v);
      }
      for (const pb::Node& n : pg.nodes()) {
        const OpSchema* op = find_op(n.op());
        const std::string what = str("node ", n.outputs_size() ? "%" + n.outputs(0).name() : std::string("?"), " = ",
                                     n.op(), n.source().empty() ? std::string() : " (" + n.source() + ")");
        std::vector<graph::Value*> ins;
        for (const std::string& name : n.inputs()) {
          if (name.empty()) {
            ins.push_back(nullptr);
            continue;
          }
          auto it = values.find(limited(name, "a value name"));
          check(it != values.end(), what, ": input %", name, " is used before it is produced (or never)");
          ins.push_back(it->second);
        }
        check(n.attrs_size() == op->num_attrs(), what, ": has ", n.attrs_size(), " attributes, the op table lists ",
              op->num_attrs(), " (", op->signature, ")");
        std::vector<Attr> attrs;
        std::vector<std::vector<graph::SymInt>> syms(size_t(op->num_attrs()));
        bool symbolic = false;
        for (int i = 0; i < op->num_attrs(); ++i) {
          const ArgSpec& spec = op->attr_spec(i);
          check(n.attrs(i).name() == spec.name, what, ": attribute ", i, " is '", n.attrs(i).name(), "', expected '",
                spec.name, "'");
          attrs.push_back(attr_value(n.attrs(i), spec, what, syms[size_t(i)]));
          symbolic |= !syms[size_t(i)].empty();
        }
        std::vector<std::pair<std::string, graph::ValueType>> outs;
        for (const pb::ValueInfo& o : n.outputs())
          outs.emplace_back(limited(o.name(), "a value name"), value_type(o, what + " output %" + o.name()));
        graph::Node* node = g.add_node(op, std::move(ins), std::move(attrs), outs);
        if (symbolic) node->attr_syms = std::move(syms);
        node->source = limited(n.source(), "a source");
        node->scope = limited(n.scope(), "a scope");
        for (graph::Value* o : node->outputs) define(o);
        for (const pb::Graph& body : n.bodies())
          node->bodies.push_back(std::make_shared<graph::Graph>(build_graph(body, depth + 1)));
      }
      for (const pb::Output& o : pg.outputs()) {
        auto it = values.find(limited(o.value(), "an output value"));
        check(it != values.end(), "output '", o.name(), "' names %", o.value(), ", which is never produced");
        g.add_output(limited(o.name(), "an output name"), it->second);
      }
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.rfind(src_, 0) == 0) throw;
      throw Error(str(src_, ": ", msg));
    }
    return g;
  }

  std::span<const uint8_t> bytes_;
  std::shared_ptr<const void> keep_alive_;
  ArchiveReadOptions options_;
  std::string src_;
  std::map<std::string, ZipEntry> entries_;
  std::map<std::string, TensorInfo> tensors_;
  uint32_t version_major_ = 0, version_minor_ = 0;
  uint64_t mapped_ = 0;
  graph::SymValues traced_;  // the model graph's traced sizes
};

}  // namespace

LoadedArchive read_archive(const std::string& path, const ArchiveReadOptions& o) {
  MappedFile m = map_file(path);
  return Reader(m.bytes, m.keep_alive, o, path).read();
}

LoadedArchive read_archive(std::span<const uint8_t> bytes, std::shared_ptr<const void> keep_alive,
                           const ArchiveReadOptions& o, const std::string& name) {
  if (!keep_alive) {  // own a copy so the weights can view it
    auto copy = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
    bytes = {copy->data(), copy->size()};
    keep_alive = std::shared_ptr<const void>(copy, copy->data());
  }
  return Reader(bytes, std::move(keep_alive), o, name).read();
}

}  // namespace amber
