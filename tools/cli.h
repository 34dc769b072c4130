// Shared pieces of the amber command-line tool: argument parsing (a command, one archive
// path, --flag and --key value options), usage errors, and small formatting helpers.
// Each command lives in its own cli_<command>.cpp.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <amber/runtime.h>

namespace amber::cli {

// Exit codes (documented in docs/CLI.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // the archive, the inputs or a call failed (amber::Error)
inline constexpr int kExitUsage = 2;  // bad command line
inline constexpr int kExitIo = 3;     // a file could not be read or written outside Amber's formats

// A bad command line: printed with a hint to run `amber --help`, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A file outside Amber's formats could not be written: exit code 3.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // argv after the command: one positional FILE, then options. flags take no value;
  // valued options take the next argument (or --key=value).
  Args(const std::vector<std::string>& argv, const std::set<std::string>& flags, const std::set<std::string>& valued);
  const std::string& file() const { return file_; }
  bool flag(const std::string& name) const { return flags_.count(name) != 0; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // An integer option in [min, max]; a UsageError names the option otherwise.
  int64_t get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  // Every --op-library given, in order.
  const std::vector<std::string>& op_libraries() const { return op_libraries_; }

 private:
  std::string file_;
  std::vector<std::string> op_libraries_;
  std::set<std::string> flags_;
  std::map<std::string, std::string> values_;
};

// v as an integer of at least 1; a UsageError naming `what` otherwise.
int64_t parse_positive_int(const std::string& what, const std::string& v);
// LoadOptions from --device, --threads, --no-verify, --op-library and --precision.
LoadOptions load_options(const Args& a);
// "46.8 MiB"
std::string format_bytes(double bytes);
// An error message as one printable line (newlines become "; ", other control bytes \xNN).
std::string one_line(const std::string& s);
// Runs a helper program's body (amber-import, amber-export-onnx) and turns what it throws into
// one line on stderr, "amber <command>: ...", and the documented exit code.
int run_guarded(const char* command, const std::function<int()>& body);
// The inputs for a run: read from --inputs (keyed by input name) or generated (random
// normal floats from --seed, zeros for integers and bools) at --batch or the example shapes.
std::vector<Tensor> make_inputs(const Model& m, const Args& a);

int cmd_inspect(const std::vector<std::string>& argv);
int cmd_run(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
int cmd_dot(const std::vector<std::string>& argv);

}  // namespace amber::cli
