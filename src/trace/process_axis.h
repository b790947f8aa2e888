// The axis over all processes that collectives name (ferry/distributed.h): bound by
// distributed::initialize(), read when a collective is traced. Its size goes into the program.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::detail {

void bind_process_axis(const std::string& name, int64_t size, int64_t index);

struct ProcessAxis {
  int64_t size = 1, index = 0;
};

// The bound axis named `name`; INVALID_ARGUMENT naming `op` when no axis of that name is bound
// (initialize() not called, or called with another name).
ProcessAxis process_axis(std::string_view name, std::string_view op);

}  // namespace ferry::detail
