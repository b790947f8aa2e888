// Bounded echoes of user input in error messages: a message names what it refuses, but a hostile
// input (a 1 MB primitive name, 200,000 operands) must not make a message of its own size.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ferry::ir {

inline constexpr size_t kMaxEchoChars = 40;  // of one token
inline constexpr size_t kMaxEchoItems = 8;   // of one list

// `token`, or its first kMaxEchoChars characters, "..." and its length when it is longer.
std::string echo(std::string_view token);

// The first kMaxEchoItems of `count` items (item(i) gives the i-th) joined by `sep`, then "... and N
// more" when there are more. item is called only for the items shown.
template <class F> std::string echo_list(size_t count, F item, std::string_view sep = ", ") {
  std::string out;
  for (size_t i = 0; i < count && i < kMaxEchoItems; ++i) {
    if (i) out += sep;
    out += item(i);
  }
  if (count > kMaxEchoItems) out += std::string(sep) + "... and " + std::to_string(count - kMaxEchoItems) + " more";
  return out;
}

}  // namespace ferry::ir
