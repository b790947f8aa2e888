#include "ir/limits.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/program.h"

namespace ferry::ir {

std::string size_problem(DType dtype, const Shape& shape) {
  if (static_cast<int64_t>(shape.size()) > kMaxRank)
    return fmt::format("has {} dimensions, more than {} (ferry's limit)", shape.size(), kMaxRank);
  for (int64_t d : shape)
    if (d < 0) return "has a negative dimension size";
  const int64_t size = static_cast<int64_t>(dtype_size(dtype));
  int64_t bytes = size > 0 ? size : 1;
  for (int64_t d : shape) {
    if (d <= 1) continue;
    if (bytes > kMaxTypeBytes / d)
      return "is too large: more than 2^62 bytes, counting each zero-size dimension as 1 (ferry's limit)";
    bytes *= d;
  }
  return {};
}

void check_size(DType dtype, const Shape& shape, std::string_view what) {
  std::string problem = size_problem(dtype, shape);
  if (!problem.empty())
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: {} {}", what, type_string(dtype, shape), problem));
}

namespace {
// Memoized: a body shared by several equations (a cond's branches) is measured once, so programs
// whose bodies repeat at every level take linear time, not exponential.
int depth_below(const Program& p, std::unordered_map<const Program*, int>& known) {
  if (auto it = known.find(&p); it != known.end()) return it->second;
  known[&p] = 0;  // a program that contains itself (which the verifier refuses) ends here
  int depth = 0;
  for (const Equation& eq : p.equations)
    for (const auto& body : eq.subprograms)
      if (body) depth = std::max(depth, 1 + depth_below(*body, known));
  known[&p] = depth;
  return depth;
}
}  // namespace

int nesting_depth(const Program& p) {
  std::unordered_map<const Program*, int> known;
  return depth_below(p, known);
}

}  // namespace ferry::ir
