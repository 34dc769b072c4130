// Archive writing (archive_writer.h): the graph and metadata become model.pb, each constant one
// weight record aligned to 64 bytes in the file; entries are written in a fixed order with
// fixed timestamps, so the same model always gives the same bytes.

#include <xxhash.h>

#include <cstdlib>
#include <ctime>

#include "amber/graph/text.h"
#include "amber/serialize/archive_writer.h"
#include "amber/serialize/file_io.h"
#include "amber/serialize/zip.h"
#include "amber/version.h"
#include "archive.pb.h"

namespace amber {
namespace {

namespace pb = amber::archive;

// model.pb's strings are proto3 strings, which readers refuse unless they are UTF-8: a name
// that is not (from an imported model, say) fails the save, not the load.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += len;
  }
  return true;
}
void require_utf8(const std::string& s, const char* what) {
  if (valid_utf8(s)) return;
  std::string shown;
  for (unsigned char c : s) shown += c >= 0x20 && c < 0x7f ? std::string(1, char(c)) : str("\\x", std::hex, int(c));
  throw Error(str("save: ", what, " '", shown, "' is not valid UTF-8 (archive names and texts must be)"));
}

// Whether s is coef * N + value (format 1.0's Dim and Attribute.coefs hold it).
bool n_affine(const graph::SymInt& s) {
  return s.is_static() || (s.n_terms == 1 && s.terms[0].symbols == graph::symbol_bit('N'));
}

// s's terms into `terms`: what format 1.2 holds beyond coef * N.
template <typename Terms>
void fill_terms(Terms* terms, const graph::SymInt& s) {
  for (int k = 0; k < s.n_terms; ++k) {
    pb::SymTerm* t = terms->Add();
    t->set_symbols(s.terms[size_t(k)].symbols);
    t->set_coef(s.terms[size_t(k)].coef);
  }
}

// minor rises to 2 for a size in symbols other than N, or a product.
void fill_value_info(pb::ValueInfo* v, const std::string& name, const graph::ValueType& t, uint32_t& minor) {
  require_utf8(name, "value name");
  v->set_name(name);
  v->set_dtype(pb::DType(int(t.dtype)));
  for (const graph::SymInt& d : t.shape) {
    pb::Dim* dim = v->add_shape();
    dim->set_value(d.value);
    if (n_affine(d)) {
      dim->set_coef(d.coef(graph::symbol_bit('N')));
    } else {
      minor = std::max<uint32_t>(minor, 2);
      fill_terms(dim->mutable_terms(), d);
    }
  }
}

void fill_attr(pb::Attribute* out, const std::string& name, const Attr& a, const std::vector<graph::SymInt>& syms,
               uint32_t& minor) {
  out->set_name(name);
  switch (a.kind()) {
    case AttrKind::none:
      out->set_none(true);
      break;
    case AttrKind::i:
      out->set_i(a.i());
      break;
    case AttrKind::f:
      out->set_f(a.f());
      break;
    case AttrKind::b:
      out->set_b(a.b());
      break;
    case AttrKind::ints: {
      pb::Ints* ints = out->mutable_ints();  // set even when empty: the oneof records the kind
      for (int64_t v : a.ints()) ints->add_values(v);
      break;
    }
    case AttrKind::floats: {
      pb::Floats* floats = out->mutable_floats();
      for (double v : a.floats()) floats->add_values(v);
      break;
    }
    case AttrKind::s:
      out->set_s(a.s());
      break;
    case AttrKind::dtype:
      out->set_dtype(pb::DType(int(a.dtype())));
      break;
  }
  if (std::all_of(syms.begin(), syms.end(), n_affine)) {
    for (const graph::SymInt& s : syms) out->add_coefs(s.coef(graph::symbol_bit('N')));
  } else {
    minor = std::max<uint32_t>(minor, 2);
    for (const graph::SymInt& s : syms) fill_terms(out->add_syms()->mutable_terms(), s);
  }
}

int64_t creation_time(const SaveOptions& o) {
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    char* end = nullptr;
    const long long v = std::strtoll(epoch, &end, 10);
    AMBER_CHECK(end && *end == '\0' && v >= 0, "SOURCE_DATE_EPOCH='", epoch, "' is not a non-negative integer");
    return v;
  }
  return o.record_creation_time ? int64_t(std::time(nullptr)) : 0;
}

// The symbols' traced sizes: N's in traced_batch (format 1.0), the others' in traced.
void fill_traced(pb::Graph* pg, const graph::Graph& g) {
  pg->set_traced_batch(g.traced_batch());
  graph::for_each_symbol(g.traced.bound & ~graph::symbol_bit('N'), [&](char s) {
    pb::SymbolSize* t = pg->add_traced();
    t->set_symbol(std::string(1, s));
    t->set_size(g.traced.get(s));
  });
}

// g's nodes (with their bodies, recursively) and outputs; raises minor to 1 when a node has
// bodies (format 1.1), to 2 when a size depends on symbols other than N (1.2), and to the
// minor that first carries a node's op (OpSchema::format_minor: 3 for the quantized ops, 4 for
// their .u8 overloads, 5 for quantized_add, 6 for add_layer_norm, 7 for
// attention_merge_heads, 8 for fused_linear).
void fill_nodes_and_outputs(pb::Graph* pg, const graph::Graph& g, uint32_t& minor) {
  for (const graph::Node* n : g.nodes()) {
    minor = std::max(minor, n->op->format_minor);
    pb::Node* pn = pg->add_nodes();
    pn->set_op(n->op->name);
    pn->set_op_version(uint32_t(n->op->version));
    for (const graph::Value* in : n->inputs) pn->add_inputs(in ? in->name : "");
    for (const graph::Value* out : n->outputs) fill_value_info(pn->add_outputs(), out->name, out->type, minor);
    static const std::vector<graph::SymInt> none;
    for (int i = 0; i < n->op->num_attrs(); ++i)
      fill_attr(pn->add_attrs(), n->op->attr_spec(i).name, n->attrs[size_t(i)],
                size_t(i) < n->attr_syms.size() ? n->attr_syms[size_t(i)] : none, minor);
    require_utf8(n->source, "node source");
    require_utf8(n->scope, "node scope");
    pn->set_source(n->source);
    pn->set_scope(n->scope);
    for (const auto& body : n->bodies) {
      minor = std::max<uint32_t>(minor, 1);
      AMBER_CHECK(body->constants().empty(), "save: a body of node %", n->outputs.empty() ? "?" : n->outputs[0]->name,
                  " holds constant %", body->constants()[0]->name,
                  "; a body reads tensors only through its inputs (graph::optimize hoists them)");
      pb::Graph* pb_body = pn->add_bodies();
      fill_traced(pb_body, *body);
      for (const graph::Value* v : body->inputs()) fill_value_info(pb_body->add_inputs(), v->name, v->type, minor);
      fill_nodes_and_outputs(pb_body, *body, minor);
    }
  }
  for (const auto& [name, v] : g.outputs()) {
    pb::Output* po = pg->add_outputs();
    require_utf8(name, "output name");
    po->set_name(name);
    po->set_value(v->name);
  }
}

struct Prepared {
  std::string model_pb, graph_text;
  uint32_t format_minor = 0;
  std::vector<Tensor> weights;  // contiguous, in record order
};

Prepared prepare(const graph::Graph& g, const ArchiveInfo& info, const SaveOptions& o) {
  Prepared p;
  pb::Model m;
  m.set_format_major(kArchiveFormatMajor);
  uint32_t minor = 0;
  m.set_producer(info.producer.empty() ? "amber " AMBER_VERSION : info.producer);
  pb::Graph* pg = m.mutable_graph();
  fill_traced(pg, g);
  for (const graph::Value* v : g.inputs()) fill_value_info(pg->add_inputs(), v->name, v->type, minor);
  for (const graph::Value* c : g.constants()) {
    AMBER_CHECK(c->data.defined(), "save: constant %", c->name, " has no data");
    pb::Constant* pc = pg->add_constants();
    require_utf8(c->name, "constant name");
    require_utf8(c->source, "constant source");
    pc->set_name(c->name);
    pc->set_source(c->source);
    Tensor t = c->data.to(Device::cpu(), SrcLoc::none()).contiguous(SrcLoc::none());
    pb::TensorRecord* r = m.add_tensors();
    r->set_name(c->name);
    r->set_dtype(pb::DType(int(t.dtype())));
    for (int64_t d : t.sizes()) r->add_shape(d);
    r->set_record("data/" + std::to_string(p.weights.size()));
    r->set_byte_length(t.nbytes());
    r->set_xxh3(XXH3_64bits(t.data(), t.nbytes()));
    p.weights.push_back(std::move(t));
  }
  fill_nodes_and_outputs(pg, g, minor);
  pb::Metadata* md = m.mutable_metadata();
  for (const DimVec& s : info.example_input_shapes) {
    pb::Shape* ps = md->add_example_input_shapes();
    for (int64_t d : s) ps->add_dims(d);
  }
  for (const ArchiveWarning& w : info.warnings) {
    pb::Warning* pw = md->add_trace_warnings();
    pw->set_kind(w.kind);
    pw->set_source(w.source);
    pw->set_message(w.message);
  }
  md->set_creation_time(creation_time(o));
  for (const auto& [k, v] : info.extra) {
    pb::KeyValue* kv = md->add_extra();
    kv->set_key(k);
    kv->set_value(v);
  }
  m.set_format_minor(minor);
  p.format_minor = minor;
  AMBER_CHECK(m.SerializeToString(&p.model_pb), "save: serialising model.pb failed");
  p.graph_text = graph::to_text(g);
  return p;
}

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

void write_archive(const Prepared& p, const ZipWriter::Sink& sink, const SaveOptions& o) {
  ZipWriter zip(sink, o.force_zip64);
  const std::string version = str(kArchiveFormatMajor, ".", p.format_minor, "\n");
  zip.add("format_version", bytes_of(version));
  zip.add("byte_order", bytes_of(std::string("little\n")));
  zip.add("model.pb", bytes_of(p.model_pb), 8);
  zip.add("graph.txt", bytes_of(p.graph_text));
  for (size_t i = 0; i < p.weights.size(); ++i)
    zip.add("data/" + std::to_string(i), {static_cast<const uint8_t*>(p.weights[i].data()), p.weights[i].nbytes()},
            kArchiveRecordAlignment);
  zip.finish();
}

}  // namespace

void save_archive(const std::string& path, const graph::Graph& g, const ArchiveInfo& info, const SaveOptions& o) {
  const Prepared p = prepare(g, info, o);
  write_file_atomically(
      path,
      [&](const WriteChunk& write) {
        write_archive(
            p, [&](const void* d, size_t n) { return write(d, n); }, o);
      },
      o.file_ops);
}

std::vector<uint8_t> archive_bytes(const graph::Graph& g, const ArchiveInfo& info, const SaveOptions& o) {
  const Prepared p = prepare(g, info, o);
  std::vector<uint8_t> out;
  write_archive(
      p,
      [&](const void* d, size_t n) {
        out.insert(out.end(), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(d) + n);
        return true;
      },
      o);
  return out;
}

}  // namespace amber
