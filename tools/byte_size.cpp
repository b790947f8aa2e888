#include "byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::tools {

int64_t parse_byte_size(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{} must be a number of bytes, optionally with a unit (e.g. 67108864, 64MiB, 1.5GiB), "
                             "got \"{}\"",
                             what, text));
  };
  // strtod alone would accept "inf", "nan" and hexadecimal: only digits and one point are numbers here.
  size_t end = 0;
  bool digits = false, point = false;
  for (; end < text.size(); ++end) {
    char ch = text[end];
    if (std::isdigit(static_cast<unsigned char>(ch))) digits = true;
    else if (ch == '.' && !point) point = true;
    else break;
  }
  if (!digits) throw bad();
  double number = std::strtod(text.substr(0, end).c_str(), nullptr);
  std::string unit;
  for (size_t i = end; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  if (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  const std::pair<const char*, double> units[] = {
      {"", 1},     {"b", 1},          {"kib", 1024.0},  {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
      {"kb", 1e3}, {"mb", 1e6},       {"gb", 1e9},      {"tb", 1e12}};
  for (const auto& [name, scale] : units)
    if (unit == name) {
      double bytes = std::floor(number * scale);
      if (!std::isfinite(bytes) || bytes > 9.0e18) throw bad();
      return static_cast<int64_t>(bytes);
    }
  throw bad();
}

}  // namespace ferry::tools
