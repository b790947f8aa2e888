#include "trace/process_axis.h"

#include <mutex>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::detail {
namespace {

struct Bound {
  std::mutex mu;
  bool bound = false;
  std::string name;
  ProcessAxis axis;
};

Bound& bound() {
  static Bound b;
  return b;
}

}  // namespace

void bind_process_axis(const std::string& name, int64_t size, int64_t index) {
  Bound& b = bound();
  std::lock_guard<std::mutex> lock(b.mu);
  b.bound = true;
  b.name = name;
  b.axis = {size, index};
}

ProcessAxis process_axis(std::string_view name, std::string_view op) {
  Bound& b = bound();
  std::lock_guard<std::mutex> lock(b.mu);
  if (!b.bound)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: unbound axis name '{}': call ferry::distributed::initialize() first (it binds the "
                            "axis over all processes, named \"data\" unless given another name)",
                            op, name));
  if (name != b.name)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: unbound axis name '{}': the axis over all processes is named '{}' "
                            "(distributed::initialize's argument)",
                            op, name, b.name));
  return b.axis;
}

}  // namespace ferry::detail
