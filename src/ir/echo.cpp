#include "ir/echo.h"

#include <fmt/format.h>

namespace ferry::ir {

std::string echo(std::string_view token) {
  if (token.size() <= kMaxEchoChars) return std::string(token);
  return fmt::format("{}... ({} characters)", token.substr(0, kMaxEchoChars), token.size());
}

}  // namespace ferry::ir
