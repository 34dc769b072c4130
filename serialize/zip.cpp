// Stored-only zip writing and validating reading (zip.h). Record layouts follow PKWARE's
// APPNOTE.TXT (local header, central directory, end of central directory, zip64 extra
// field 0x0001, zip64 end record and locator). Every length and offset read from the file
// is checked against the file's size with overflow-safe arithmetic before it is used.

#include "amber/serialize/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "amber/core/error.h"

namespace amber {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001, kPaddingExtraId = 0x414d;  // "MA": Amber's alignment padding
constexpr uint16_t kDosDate1980 = 0x0021;                             // 1980-01-01, 00:00:00
constexpr uint32_t k32 = 0xffffffffu;

void le16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
void le32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
}
void le64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

uint32_t crc32_of(std::span<const uint8_t> data) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  size_t done = 0;
  while (done < data.size()) {  // zlib takes uInt lengths
    const uInt n = uInt(std::min<size_t>(data.size() - done, 1u << 30));
    crc = ::crc32(crc, data.data() + done, n);
    done += n;
  }
  return uint32_t(crc);
}

ZipWriter::ZipWriter(Sink sink, bool force_zip64) : sink_(std::move(sink)), force_zip64_(force_zip64) {}

void ZipWriter::put(const void* p, size_t n) {
  AMBER_CHECK(sink_(p, n), "zip: writing ", n, " bytes at offset ", offset_, " failed");
  offset_ += n;
}

void ZipWriter::add(const std::string& name, std::span<const uint8_t> data, size_t alignment) {
  AMBER_CHECK(!name.empty() && name.size() <= ZipLimits::kMaxNameLength, "zip: invalid entry name '", name, "'");
  AMBER_CHECK(alignment >= 1 && alignment <= 4096, "zip: alignment ", alignment, " out of range");
  const bool zip64 = force_zip64_ || data.size() >= k32 || offset_ >= k32;
  Entry e{name, crc32_of(data), data.size(), offset_, zip64};
  std::vector<uint8_t> extra;
  if (zip64) {
    le16(extra, kZip64ExtraId);
    le16(extra, 16);
    le64(extra, e.size);
    le64(extra, e.size);
  }
  // Padding so that the data starts at a multiple of alignment.
  const uint64_t base = offset_ + 30 + name.size() + extra.size();
  if (alignment > 1 && (base % alignment) != 0) {
    uint64_t pad = (alignment - (base + 4) % alignment) % alignment;
    le16(extra, kPaddingExtraId);
    le16(extra, uint16_t(pad));
    extra.insert(extra.end(), size_t(pad), 0);
  }
  std::vector<uint8_t> h;
  le32(h, kLocalSig);
  le16(h, zip64 ? 45 : 20);  // version needed
  le16(h, 0);                // flags
  le16(h, 0);                // stored
  le16(h, 0);                // time
  le16(h, kDosDate1980);     // date
  le32(h, e.crc);
  le32(h, zip64 ? k32 : uint32_t(e.size));
  le32(h, zip64 ? k32 : uint32_t(e.size));
  le16(h, uint16_t(name.size()));
  le16(h, uint16_t(extra.size()));
  h.insert(h.end(), name.begin(), name.end());
  h.insert(h.end(), extra.begin(), extra.end());
  put(h.data(), h.size());
  if (!data.empty()) put(data.data(), data.size());
  entries_.push_back(std::move(e));
}

void ZipWriter::finish() {
  const uint64_t cd_offset = offset_;
  std::vector<uint8_t> cd;
  for (const Entry& e : entries_) {
    std::vector<uint8_t> extra;
    if (e.zip64 || e.local_offset >= k32) {
      le16(extra, kZip64ExtraId);
      le16(extra, 24);
      le64(extra, e.size);
      le64(extra, e.size);
      le64(extra, e.local_offset);
    }
    const bool z = !extra.empty();
    le32(cd, kCentralSig);
    le16(cd, 0x0300 | 45);  // made by: Unix, spec 4.5
    le16(cd, z ? 45 : 20);
    le16(cd, 0);
    le16(cd, 0);
    le16(cd, 0);
    le16(cd, kDosDate1980);
    le32(cd, e.crc);
    le32(cd, z ? k32 : uint32_t(e.size));
    le32(cd, z ? k32 : uint32_t(e.size));
    le16(cd, uint16_t(e.name.size()));
    le16(cd, uint16_t(extra.size()));
    le16(cd, 0);               // comment
    le16(cd, 0);               // disk
    le16(cd, 0);               // internal attributes
    le32(cd, 0100644u << 16);  // external: a regular file, rw-r--r--
    le32(cd, z ? k32 : uint32_t(e.local_offset));
    cd.insert(cd.end(), e.name.begin(), e.name.end());
    cd.insert(cd.end(), extra.begin(), extra.end());
  }
  put(cd.data(), cd.size());
  const uint64_t cd_size = cd.size(), n = entries_.size();
  const bool zip64 = force_zip64_ || n >= 0xffff || cd_offset >= k32 || cd_size >= k32;
  std::vector<uint8_t> end;
  if (zip64) {
    const uint64_t z64_offset = offset_;
    le32(end, kZip64EndSig);
    le64(end, 44);
    le16(end, 0x0300 | 45);
    le16(end, 45);
    le32(end, 0);
    le32(end, 0);
    le64(end, n);
    le64(end, n);
    le64(end, cd_size);
    le64(end, cd_offset);
    le32(end, kZip64LocatorSig);
    le32(end, 0);
    le64(end, z64_offset);
    le32(end, 1);
  }
  le32(end, kEndSig);
  le16(end, 0);
  le16(end, 0);
  le16(end, zip64 ? 0xffff : uint16_t(n));
  le16(end, zip64 ? 0xffff : uint16_t(n));
  le32(end, zip64 ? k32 : uint32_t(cd_size));
  le32(end, zip64 ? k32 : uint32_t(cd_offset));
  le16(end, 0);
  put(end.data(), end.size());
}

// ---------------------------------------------------------------- reading

namespace {

// Bounds-checked little-endian reads of the file.
class Bytes {
 public:
  Bytes(std::span<const uint8_t> b, const std::string& src) : b_(b), src_(src) {}
  uint64_t size() const { return b_.size(); }
  void need(uint64_t off, uint64_t n, const char* what) const {
    AMBER_CHECK(off <= b_.size() && n <= b_.size() - off, src_, ": ", what, " at offset ", off, " (", n,
                " bytes) runs past the end of the file (", b_.size(), " bytes)");
  }
  uint16_t u16(uint64_t off) const { return uint16_t(b_[off] | (b_[off + 1] << 8)); }
  uint32_t u32(uint64_t off) const { return uint32_t(u16(off)) | (uint32_t(u16(off + 2)) << 16); }
  uint64_t u64(uint64_t off) const { return uint64_t(u32(off)) | (uint64_t(u32(off + 4)) << 32); }
  const uint8_t* at(uint64_t off) const { return b_.data() + off; }

 private:
  std::span<const uint8_t> b_;
  const std::string& src_;
};

// Values from a zip64 extra field, for each of the 32-bit fields that were 0xffffffff.
struct Zip64Values {
  uint64_t uncompressed, compressed, offset;
};
void apply_zip64(const Bytes& b, uint64_t extra, uint16_t extra_len, Zip64Values& v, bool want_usize, bool want_csize,
                 bool want_offset, const std::string& src, const std::string& entry) {
  uint64_t p = extra, end = extra + extra_len;
  while (p + 4 <= end) {
    const uint16_t id = b.u16(p), len = b.u16(p + 2);
    AMBER_CHECK(p + 4 + len <= end, src, ": entry '", entry, "': malformed extra field");
    if (id == kZip64ExtraId) {
      uint64_t q = p + 4;
      auto take = [&](uint64_t& dst) {
        AMBER_CHECK(q + 8 <= p + 4 + len, src, ": entry '", entry, "': zip64 extra field too short");
        dst = b.u64(q);
        q += 8;
      };
      if (want_usize) take(v.uncompressed);
      if (want_csize) take(v.compressed);
      if (want_offset) take(v.offset);
      return;
    }
    p += 4 + len;
  }
  AMBER_CHECK(!(want_usize || want_csize || want_offset), src, ": entry '", entry,
              "': sizes need a zip64 extra field, which is missing");
}

void check_name(const std::string& name, const std::string& src) {
  AMBER_CHECK(!name.empty(), src, ": an entry has an empty name");
  AMBER_CHECK(name.find('\0') == std::string::npos, src, ": entry name '", escaped(name), "' contains a NUL byte");
  for (size_t i = 0; i < name.size(); ++i)
    AMBER_CHECK(name[i] >= 0x20 && name[i] < 0x7f, src, ": entry name '", escaped(name),
                "' is not printable ASCII (byte ", i, ")");
  AMBER_CHECK(name.find('\\') == std::string::npos, src, ": entry name '", name, "' contains a backslash");
  AMBER_CHECK(name[0] != '/', src, ": entry name '", name, "' is an absolute path");
  AMBER_CHECK(!(name.size() >= 2 && name[1] == ':'), src, ": entry name '", name, "' names a drive");
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    AMBER_CHECK(name.substr(start, end - start) != "..", src, ": entry name '", name, "' contains '..'");
    start = end + 1;
  }
}

}  // namespace

std::vector<ZipEntry> read_zip(std::span<const uint8_t> bytes, const std::string& src) {
  const Bytes b(bytes, src);
  AMBER_CHECK(b.size() >= 22, src, ": not a zip archive (", b.size(), " bytes is too short)");
  // The end record must end the file: no comment, nothing after it.
  const uint64_t eocd = b.size() - 22;
  if (b.u32(eocd) != kEndSig) {
    const uint64_t from = b.size() > 65557 ? b.size() - 65557 : 0;
    for (uint64_t p = eocd; p-- > from;)
      if (b.u32(p) == kEndSig)
        throw Error(str(src, ": ", b.size() - p - 22, " bytes follow the end of the zip archive (junk after it, a ",
                        "comment, or a truncated file)"));
    throw Error(str(src, ": not a zip archive (no end-of-central-directory record)"));
  }
  AMBER_CHECK(b.u16(eocd + 20) == 0, src, ": the zip archive has a comment (not written by Amber)");
  AMBER_CHECK(b.u16(eocd + 4) == 0 && b.u16(eocd + 6) == 0, src, ": multi-disk zip archives are not supported");
  uint64_t n = b.u16(eocd + 10), cd_size = b.u32(eocd + 12), cd_offset = b.u32(eocd + 16);
  uint64_t cd_end = eocd;  // where the central directory must end
  if (n == 0xffff || cd_size == k32 || cd_offset == k32) {
    AMBER_CHECK(eocd >= 20, src, ": zip64 end-of-central-directory locator missing");
    const uint64_t loc = eocd - 20;
    AMBER_CHECK(b.u32(loc) == kZip64LocatorSig, src, ": zip64 end-of-central-directory locator missing");
    const uint64_t z = b.u64(loc + 8);
    AMBER_CHECK(z <= loc && loc - z >= 56 && b.u32(z) == kZip64EndSig, src,
                ": zip64 end-of-central-directory record missing or misplaced");
    AMBER_CHECK(b.u64(z + 4) == loc - z - 12, src, ": zip64 end-of-central-directory record has the wrong size");
    n = b.u64(z + 32);
    cd_size = b.u64(z + 40);
    cd_offset = b.u64(z + 48);
    cd_end = z;
  }
  AMBER_CHECK(n <= ZipLimits::kMaxEntries, src, ": ", n, " entries exceed the limit of ", ZipLimits::kMaxEntries);
  AMBER_CHECK(cd_offset <= cd_end && cd_size == cd_end - cd_offset, src, ": the central directory (offset ", cd_offset,
              ", ", cd_size, " bytes) does not end where the end ", "record starts (", cd_end,
              "): junk before the archive, two archives concatenated, or a corrupt file");
  std::vector<ZipEntry> entries;
  std::set<std::string> names;
  uint64_t p = cd_offset;
  for (uint64_t i = 0; i < n; ++i) {
    b.need(p, 46, "central directory entry");
    AMBER_CHECK(p + 46 <= cd_end && b.u32(p) == kCentralSig, src, ": central directory entry ", i, " is corrupt");
    const uint16_t flags = b.u16(p + 8), method = b.u16(p + 10);
    const uint32_t crc = b.u32(p + 16);
    const uint16_t name_len = b.u16(p + 28), extra_len = b.u16(p + 30), comment_len = b.u16(p + 32);
    const uint16_t made_by = b.u16(p + 4);
    const uint32_t external = b.u32(p + 38);
    AMBER_CHECK(name_len <= ZipLimits::kMaxNameLength, src, ": entry ", i, " has a name of ", name_len,
                " bytes (limit ", ZipLimits::kMaxNameLength, ")");
    AMBER_CHECK(p + 46 + name_len + extra_len + comment_len <= cd_end, src, ": central directory entry ", i,
                " runs past the central directory");
    std::string name(reinterpret_cast<const char*>(b.at(p + 46)), name_len);
    check_name(name, src);
    AMBER_CHECK(names.insert(name).second, src, ": entry '", name, "' appears twice");
    AMBER_CHECK(!(flags & 0x1), src, ": entry '", name, "' is encrypted");
    AMBER_CHECK(!(flags & 0x8), src, ": entry '", name, "' uses a data descriptor (not written by Amber)");
    AMBER_CHECK(method == 0, src, ": entry '", name, "' uses compression method ", method,
                " (archives store entries uncompressed)");
    if ((made_by >> 8) == 3) {  // Unix attributes
      const uint32_t mode = external >> 16;
      AMBER_CHECK((mode & 0170000) != 0120000, src, ": entry '", name, "' is a symbolic link");
    }
    Zip64Values v{b.u32(p + 24), b.u32(p + 20), b.u32(p + 42)};
    apply_zip64(b, p + 46 + name_len, extra_len, v, v.uncompressed == k32, v.compressed == k32, v.offset == k32, src,
                name);
    AMBER_CHECK(v.compressed == v.uncompressed, src, ": entry '", name, "' is stored but its sizes differ (",
                v.compressed, " and ", v.uncompressed, ")");
    // The local header must agree with the central directory.
    const uint64_t lh = v.offset;
    b.need(lh, 30, "local header");
    AMBER_CHECK(lh + 30 <= cd_offset && b.u32(lh) == kLocalSig, src, ": entry '", name, "': no local header at offset ",
                lh);
    const uint16_t l_name = b.u16(lh + 26), l_extra = b.u16(lh + 28);
    b.need(lh + 30, uint64_t(l_name) + l_extra, "local header name");
    const std::string local_name(reinterpret_cast<const char*>(b.at(lh + 30)), l_name);
    AMBER_CHECK(local_name == name, src, ": the central directory names '", name, "' but its local header names '",
                escaped(local_name), "'");
    AMBER_CHECK(b.u16(lh + 8) == method, src, ": entry '", name,
                "': compression method differs between the central directory and the local header");
    AMBER_CHECK(b.u32(lh + 14) == crc, src, ": entry '", name,
                "': CRC-32 differs between the central directory and the local header");
    Zip64Values lv{b.u32(lh + 22), b.u32(lh + 18), 0};
    apply_zip64(b, lh + 30 + l_name, l_extra, lv, lv.uncompressed == k32, lv.compressed == k32, false, src, name);
    AMBER_CHECK(lv.uncompressed == v.uncompressed && lv.compressed == v.compressed, src, ": entry '", name,
                "': sizes differ between the central directory (", v.uncompressed, ") and the local header (",
                lv.uncompressed, ")");
    const uint64_t data = lh + 30 + l_name + l_extra;
    AMBER_CHECK(data <= cd_offset && v.uncompressed <= cd_offset - data, src, ": entry '", name, "' declares ",
                v.uncompressed, " bytes at offset ", data,
                ", past the end of its data (the central directory starts at ", cd_offset, ")");
    entries.push_back({name, data, v.uncompressed, crc});
    // Remember the local header start for the overlap check, via data_offset ordering.
    p += 46 + name_len + extra_len + comment_len;
  }
  AMBER_CHECK(p == cd_end, src, ": the central directory holds ", cd_end - p, " bytes beyond its ", n, " entries");
  // Entries may not overlap (zip bombs reuse one region for many entries).
  std::vector<const ZipEntry*> sorted;
  for (const ZipEntry& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const ZipEntry* a, const ZipEntry* c) { return a->data_offset < c->data_offset; });
  for (size_t i = 1; i < sorted.size(); ++i)
    AMBER_CHECK(sorted[i - 1]->data_offset + sorted[i - 1]->size + 30 <= sorted[i]->data_offset, src, ": entries '",
                sorted[i - 1]->name, "' and '", sorted[i]->name, "' overlap");
  return entries;
}

void check_crc32(std::span<const uint8_t> bytes, const ZipEntry& e, const std::string& src) {
  const uint32_t crc = crc32_of(bytes.subspan(size_t(e.data_offset), size_t(e.size)));
  AMBER_CHECK(crc == e.crc32, src, ": entry '", e.name, "' fails its CRC-32 check (the file is corrupt)");
}

}  // namespace amber
