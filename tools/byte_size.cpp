#include "byte_size.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::tools {

int64_t parse_byte_size(const std::string& text, const std::string& what) {
  // The text as messages echo it: bounded, however long the argument.
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  auto bad = [&] {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{} must be a number of bytes, optionally with a unit (e.g. 67108864, 64MiB, 1.5GiB), "
                             "got \"{}\"",
                             what, shown));
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
  auto too_large = [&] {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{} is too large: \"{}\" is more than 2^63 - 1 bytes", what, shown));
  };
  // The whole part exactly (a double would round a count above 2^53), checked for ERANGE; the
  // fraction as a double, which only ever adds less than one unit.
  const std::string number = text.substr(0, end);
  const size_t dot = number.find('.');
  const std::string whole_digits = number.substr(0, dot);
  errno = 0;
  const unsigned long long whole = whole_digits.empty() ? 0 : std::strtoull(whole_digits.c_str(), nullptr, 10);
  if (errno == ERANGE) throw too_large();
  const double fraction = dot == std::string::npos ? 0.0 : std::strtod(("0" + number.substr(dot)).c_str(), nullptr);
  std::string unit;
  for (size_t i = end; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  if (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  const std::pair<const char*, uint64_t> units[] = {
      {"", 1},          {"b", 1},          {"kib", uint64_t{1} << 10}, {"mib", uint64_t{1} << 20}, {"gib", uint64_t{1} << 30},
      {"tib", uint64_t{1} << 40}, {"kb", 1000}, {"mb", 1000000}, {"gb", 1000000000}, {"tb", 1000000000000}};
  for (const auto& [name, scale] : units)
    if (unit == name) {
      unsigned __int128 bytes = static_cast<unsigned __int128>(whole) * scale;
      bytes += static_cast<uint64_t>(std::floor(fraction * static_cast<double>(scale)));
      if (bytes > static_cast<unsigned __int128>(INT64_MAX)) throw too_large();
      return static_cast<int64_t>(bytes);
    }
  throw bad();
}

int64_t byte_size_from_environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return 0;
  return parse_byte_size(value, name);
}

}  // namespace ferry::tools
