// amber::Error, the one exception type Amber throws, and the check macros that build its
// messages. AMBER_CHECK is for bad input (message names the op, shapes and expectation);
// AMBER_ASSERT is for broken internal invariants and says so. Neither ever aborts.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace amber {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg) : std::runtime_error(std::move(msg)) {}
};

// Concatenates anything with an operator<< into a string.
template <typename... Args>
std::string str(const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return {};
  } else {
    std::ostringstream os;
    (os << ... << args);
    return os.str();
  }
}

// s with every byte outside printable ASCII written as \xNN (and backslashes doubled): for
// putting untrusted names into messages.
std::string escaped(std::string_view s);

namespace detail {
[[noreturn]] void throw_internal(const char* file, int line, const char* cond, const std::string& msg);
}  // namespace detail

}  // namespace amber

#define AMBER_CHECK(cond, ...)                         \
  do {                                                 \
    if (!(cond)) [[unlikely]]                          \
      throw ::amber::Error(::amber::str(__VA_ARGS__)); \
  } while (0)

#define AMBER_ASSERT(cond, ...)                                                              \
  do {                                                                                       \
    if (!(cond)) [[unlikely]]                                                                \
      ::amber::detail::throw_internal(__FILE__, __LINE__, #cond, ::amber::str(__VA_ARGS__)); \
  } while (0)
