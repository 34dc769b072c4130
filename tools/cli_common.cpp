// Argument parsing and helpers shared by the amber commands (cli.h).

#include <charconv>
#include <cstdio>
#include <sstream>

#include "cli.h"

namespace amber::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
           const std::set<std::string>& valued) {
  std::set<std::string> all_flags = flags, all_valued = valued;
  all_flags.insert("no-verify");
  all_valued.insert({"device", "threads", "op-library", "precision"});
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string key = a.substr(2), value;
      const auto eq = key.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      }
      if (all_flags.count(key)) {
        if (inline_value) throw UsageError("option --" + key + " takes no value");
        flags_.insert(key);
      } else if (all_valued.count(key)) {
        if (!inline_value) {
          if (i + 1 >= argv.size()) throw UsageError("option --" + key + " needs a value");
          value = argv[++i];
        }
        if (key == "op-library")  // repeatable
          op_libraries_.push_back(value);
        else
          values_[key] = value;
      } else {
        throw UsageError("unknown option '" + a + "'");
      }
    } else if (file_.empty()) {
      file_ = a;
    } else {
      throw UsageError("unexpected argument '" + a + "' (one FILE only)");
    }
  }
  if (file_.empty()) throw UsageError("missing FILE (an .amber archive)");
}

int64_t parse_positive_int(const std::string& what, const std::string& v) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < 1) throw UsageError(what + " needs a positive integer, got '" + v + "'");
  return n;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max)
    throw UsageError("--" + name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got '" + s + "'");
  return v;
}

LoadOptions load_options(const Args& a) {
  LoadOptions o;
  if (a.has("device")) {
    try {
      o.device = Device::parse(a.get("device"));
    } catch (const Error& e) {
      throw UsageError(std::string("--device: ") + e.what());
    }
  }
  o.num_threads = int(a.get_int("threads", 0, 1, 1024));
  o.verify_checksums = !a.flag("no-verify");
  o.op_libraries = a.op_libraries();
  const std::string precision = a.get("precision", "f32");
  const std::optional<Precision> p = precision_from_name(precision);
  if (!p) {
    std::string names;
    for (int i = 0; i <= int(Precision::f16_model); ++i)
      names += std::string(i ? (i == int(Precision::f16_model) ? " or " : ", ") : "") + precision_name(Precision(i));
    throw UsageError("--precision must be " + names + ", got '" + precision + "'");
  }
  o.precision = *p;
  return o;
}

// An error message as one printable line: newlines become "; ", other control bytes and
// bytes that are not UTF-8 become \xNN (messages may quote names from a hostile file).
std::string one_line(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    for (size_t k = 1; len && k < len; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) >> 6) != 2) len = 0;
    if (c == '\n') {
      while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
      out += "; ";
      i += 1;
    } else if (len == 1 && c >= 0x20 && c != 0x7f) {
      out += char(c);
      i += 1;
    } else if (len > 1) {
      out.append(s, i, len);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      i += 1;
    }
  }
  return out;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::vector<Tensor> make_inputs(const Model& m, const Args& a) {
  const std::vector<IOInfo>& ins = m.inputs();
  std::vector<Tensor> out;
  if (a.has("inputs")) {
    SafetensorsFile f = SafetensorsFile::open(a.get("inputs"));
    std::string missing;
    for (const IOInfo& io : ins) {
      if (!f.contains(io.name)) {
        missing += (missing.empty() ? "" : ", ") + io.name;
        continue;
      }
      out.push_back(f.tensor(io.name));
    }
    if (!missing.empty()) {
      std::string have;
      for (const std::string& n : f.names()) have += (have.empty() ? "" : ", ") + n;
      throw Error(str(a.get("inputs"), ": no tensor for model input(s) ", missing,
                      " (the file holds: ", have.empty() ? "nothing" : have, ")"));
    }
    for (const std::string& n : f.names()) {
      bool used = false;
      for (const IOInfo& io : ins) used |= io.name == n;
      if (!used)
        std::fprintf(stderr, "amber: note: %s: tensor '%s' is not a model input (ignored)\n", a.get("inputs").c_str(),
                     n.c_str());
    }
    return out;
  }
  manual_seed(uint64_t(a.get_int("seed", 0, 0, INT64_MAX)));
  const ArchiveInfo& info = m.metadata();
  const bool batch_given = a.has("batch"), sizes_given = a.has("sizes");
  graph::SymValues at = m.traced_sizes();
  if (batch_given) {
    if (!at.has('N'))
      throw UsageError(
          "--batch: this model's input shapes do not depend on a batch size N (it was traced "
          "without a dynamic batch)");
    at.set('N', a.get_int("batch", 1, 0, 1 << 30));
  }
  if (sizes_given) {  // "T=64,N=2"
    std::stringstream list(a.get("sizes"));
    for (std::string item; std::getline(list, item, ',');) {
      int64_t v = -1;
      const bool ok = item.size() >= 3 && item[1] == '=' &&
                      std::from_chars(item.data() + 2, item.data() + item.size(), v).ptr == item.data() + item.size();
      if (!ok || v < 0 || v > (1 << 30))
        throw UsageError(str("--sizes: '", item, "' is not SYMBOL=SIZE (a letter, a size from 0 to 2^30)"));
      if (!at.has(item[0]))
        throw UsageError(str("--sizes: the model's sizes do not depend on ", item[0],
                             at.bound ? str(" (they depend on ", graph::symbol_names(at.bound), ")")
                                      : std::string(" (its shapes are fixed)")));
      at.set(item[0], v);
    }
  }
  const bool chosen = batch_given || sizes_given;
  for (size_t i = 0; i < ins.size(); ++i) {
    const IOInfo& io = ins[i];
    const DimVec sizes =
        !chosen && i < info.example_input_shapes.size() ? info.example_input_shapes[i] : io.sizes_at(at);
    if (io.dtype == DType::f32 || io.dtype == DType::f64)
      out.push_back(randn(sizes, io.dtype));
    else if (is_floating(io.dtype))
      out.push_back(randn(sizes).to(io.dtype));
    else
      out.push_back(zeros(sizes, io.dtype));
  }
  return out;
}

int run_guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "amber %s: %s (see amber %s --help)\n", command, one_line(e.what()).c_str(), command);
    return kExitUsage;
  } catch (const IoError& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command, one_line(e.what()).c_str());
    return kExitIo;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command, one_line(e.what()).c_str());
    return kExitError;
  }
}

}  // namespace amber::cli
