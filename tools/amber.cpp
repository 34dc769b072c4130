// The amber command-line tool: `amber inspect|run|bench|dot FILE [options]`. Dispatches to
// the commands (cli_<command>.cpp) and turns every failure into one line on stderr and a
// documented exit code (docs/CLI.md); no input makes it crash.

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "amber/version.h"
#include "cli.h"

namespace {

const char* kUsage = R"(usage: amber <command> FILE [options]

commands:
  inspect FILE [--graph]          inputs, outputs, op histogram, weights, metadata, trace warnings
                                  (--graph: print the graph text instead)
  run FILE [--inputs IN.safetensors] [--outputs OUT.safetensors] [--batch N] [--seed S]
           [--anomaly]            run once; inputs keyed by input name (random when absent)
  bench FILE [--batch N] [--iters N] [--seconds S] [--json] [--profile]
                                  first-call latency, p50/p90/p99, throughput, peak memory
  dot FILE                        the graph as Graphviz text

options of every command:
  --device cpu|cuda[:N]           where to run (default cpu)
  --threads N                     intra-op threads per call (default: all cores)
  --no-verify                     skip the XXH3 checksums of the weights when loading
  --op-library LIB.so             load an op library (custom ops) first; repeatable

exit codes: 0 success, 1 the archive, inputs or run failed, 2 bad command line,
            3 a file could not be written
)";

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

}  // namespace

int main(int argc, char** argv) {
  using namespace amber::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs("amber: missing command: inspect, run, bench or dot (see amber --help)\n", stderr);
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (args[0] == "--version") {
    std::printf("amber %s\n", AMBER_VERSION);
    return kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "inspect") return cmd_inspect(args);
    if (command == "run") return cmd_run(args);
    if (command == "bench") return cmd_bench(args);
    if (command == "dot") return cmd_dot(args);
    throw UsageError("unknown command '" + command + "' (commands: inspect, run, bench, dot)");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "amber: %s (see amber --help)\n", one_line(e.what()).c_str());
    return kExitUsage;
  } catch (const IoError& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command.c_str(), one_line(e.what()).c_str());
    return kExitIo;
  } catch (const amber::Error& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command.c_str(), one_line(e.what()).c_str());
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "amber %s: error: %s\n", command.c_str(), one_line(e.what()).c_str());
    return kExitError;
  } catch (...) {
    std::fprintf(stderr, "amber %s: error: unknown failure\n", command.c_str());
    return kExitError;
  }
}
