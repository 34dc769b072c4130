// Tensor printing in PyTorch's style (torch/_tensor_str.py with default print options:
// precision 4, threshold 1000, edge items 3, line width 80), so printed values read the
// same in both. Amber's dtype names replace torch.float64 etc. in the dtype suffix.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "amber/core/tensor.h"

namespace amber {
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

// printf with torch's precision for "%.*f" / "%.*e" specs, or an explicit "%.0f".
std::string fmt(const char* spec, double v) {
  char buf[64];
  if (std::strchr(spec, '*'))
    std::snprintf(buf, sizeof buf, spec, kPrecision, v);
  else
    std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

// Chooses one format for every printed element (torch's _Formatter).
class Formatter {
 public:
  Formatter(DType dtype, const std::vector<double>& fvals, const std::vector<int64_t>& ivals)
      : floating_(is_floating(dtype)), boolean_(dtype == DType::b8) {
    if (!floating_) {
      for (int64_t v : ivals) width_ = std::max(width_, int(format_int(v).size()));
      return;
    }
    double mn = INFINITY, mx = 0;
    bool any = false;
    for (double v : fvals) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      mn = std::min(mn, std::fabs(v));
      mx = std::max(mx, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;
    if (int_mode_) {
      sci_ = mx / mn > 1000.0 || mx > 1.0e8;
    } else {
      sci_ = mx / mn > 1000.0 || mx > 1.0e8 || mn < 1.0e-4;
    }
    for (double v : fvals) {
      if (!std::isfinite(v) || v == 0) continue;
      std::string s = sci_ ? fmt("%.*e", v) : int_mode_ ? fmt("%.0f", v) + "." : fmt("%.*f", v);
      width_ = std::max(width_, int(s.size()));
    }
  }
  int width() const { return width_; }

  std::string format_float(double v) const {
    std::string s;
    if (sci_) {
      s = std::isfinite(v) ? fmt("%.*e", v) : nonfinite(v);
    } else if (int_mode_) {
      s = std::isfinite(v) ? fmt("%.0f", v) + "." : nonfinite(v);
    } else {
      s = std::isfinite(v) ? fmt("%.*f", v) : nonfinite(v);
    }
    return pad(s);
  }
  std::string format_int(int64_t v) const {
    if (boolean_) return v ? "True" : "False";
    return std::to_string(v);
  }
  std::string format(const std::vector<double>& f, const std::vector<int64_t>& i, int64_t k) const {
    return floating_ ? format_float(f[size_t(k)]) : pad(format_int(i[size_t(k)]));
  }

 private:
  static std::string nonfinite(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }
  std::string pad(const std::string& s) const {
    if (int(s.size()) >= width_) return s;
    std::string out(size_t(width_) - s.size(), ' ');
    out.append(s);
    return out;
  }
  bool floating_, boolean_;
  bool int_mode_ = true, sci_ = false;
  int width_ = 1;
};

struct Printer {
  const DimVec& sizes;
  DimVec strides;  // contiguous strides of the host copy
  const std::vector<double>& f;
  const std::vector<int64_t>& i;
  bool summarize;
  const Formatter* formatter = nullptr;

  // Flat indices of the elements shown along one dimension.
  std::vector<int64_t> shown(int d) const {
    std::vector<int64_t> idx;
    const int64_t n = sizes[d];
    if (summarize && n > 2 * kEdgeItems) {
      for (int64_t k = 0; k < kEdgeItems; ++k) idx.push_back(k);
      idx.push_back(-1);  // the "..." marker
      for (int64_t k = n - kEdgeItems; k < n; ++k) idx.push_back(k);
    } else {
      for (int64_t k = 0; k < n; ++k) idx.push_back(k);
    }
    return idx;
  }

  void collect(int d, int64_t base, std::vector<int64_t>& out) const {
    if (d == sizes.size()) {
      out.push_back(base);
      return;
    }
    for (int64_t k : shown(d))
      if (k >= 0) collect(d + 1, base + k * strides[d], out);
  }

  std::string vector_str(int d, int64_t base, int indent) const {
    const int element_length = formatter->width() + 2;
    const int per_line = std::max(1, (kLineWidth - indent) / element_length);
    std::vector<std::string> data;
    for (int64_t k : shown(d)) data.push_back(k < 0 ? " ..." : formatter->format(f, i, base + k * strides[d]));
    std::string out = "[";
    for (size_t k = 0; k < data.size(); ++k) {
      if (k > 0 && k % size_t(per_line) == 0) {
        out.append(",\n");
        out.append(size_t(indent) + 1, ' ');
      } else if (k > 0) {
        out.append(", ");
      }
      out += data[k];
    }
    return out + "]";
  }

  std::string tensor_str(int d, int64_t base, int indent) const {
    const int rest = sizes.size() - d;
    if (rest == 0) return formatter->format(f, i, base);
    if (rest == 1) return vector_str(d, base, indent);
    std::string sep = ",";
    sep.append(size_t(rest - 1), '\n');
    sep.append(size_t(indent) + 1, ' ');
    std::string out = "[";
    bool first = true;
    for (int64_t k : shown(d)) {
      if (!first) out += sep;
      first = false;
      out += k < 0 ? "..." : tensor_str(d + 1, base + k * strides[d], indent + 1);
    }
    return out + "]";
  }
};

std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, int indent) {
  size_t nl = s.rfind('\n');
  int last_line_len = int(nl == std::string::npos ? s.size() + 1 : s.size() - nl + 1);
  for (const std::string& suffix : suffixes) {
    if (last_line_len + int(suffix.size()) + 2 > kLineWidth) {
      s.append(",\n");
      s.append(size_t(indent), ' ');
      s.append(suffix);
      last_line_len = indent + int(suffix.size());
    } else {
      s += ", " + suffix;
      last_line_len += int(suffix.size()) + 2;
    }
  }
  return s + ")";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const int indent = int(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  const bool default_dtype = dtype() == DType::f32 || dtype() == DType::i64 || dtype() == DType::b8;
  if (numel() == 0) {
    if (dim() != 1) {
      std::string size = "size=(";
      for (int d = 0; d < dim(); ++d) size += (d ? ", " : "") + std::to_string(sizes()[d]);
      suffixes.push_back(size + ")");
    }
    if (dtype() != DType::f32) suffixes.push_back("dtype=" + std::string(dtype_name(dtype())));
    return add_suffixes(prefix + "[]", suffixes, indent);
  }
  if (!default_dtype) suffixes.push_back("dtype=" + std::string(dtype_name(dtype())));

  std::vector<double> fvals;
  std::vector<int64_t> ivals;
  {
    // Printing feeds no value back into the computation: not a host read a trace warns of.
    HostAccessHook* hook = std::exchange(tls_host_access_hook(), nullptr);
    struct Restore {
      HostAccessHook* h;
      ~Restore() { tls_host_access_hook() = h; }
    } restore{hook};
    if (is_floating(dtype()))
      fvals = to_vector<double>(SrcLoc::none());
    else
      ivals = to_vector<int64_t>(SrcLoc::none());
  }

  Printer p{sizes(), contiguous_strides(sizes()), fvals, ivals, numel() > kThreshold};
  // The formatter sees only the elements that will be printed, as torch's does.
  std::vector<int64_t> shown_idx;
  p.collect(0, 0, shown_idx);
  std::vector<double> fs;
  std::vector<int64_t> is;
  for (int64_t k : shown_idx) {
    if (!fvals.empty())
      fs.push_back(fvals[size_t(k)]);
    else
      is.push_back(ivals[size_t(k)]);
  }
  Formatter formatter(dtype(), fs, is);
  p.formatter = &formatter;
  return add_suffixes(prefix + p.tensor_str(0, 0, indent), suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace amber
