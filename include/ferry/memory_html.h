// Several compiled programs on one memory page (Compiled::memory_html draws one): the same step
// under several policies as small multiples on one scale, so that what a policy changes (a lower
// device peak, the host copies that bought it) is seen at a glance.
//
//   ferry::save_memory_html({{"saved", saving.lower(x, ws).compile()},
//                            {"offloaded", offloading.lower(x, ws).compile()}},
//                           "memory.html", {.device_memory_limit = 2 << 20});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/jit.h"

namespace ferry {

// One plan of a page: a compiled program, or why there is none (a plan refused for memory: its
// message is shown in its place).
struct MemoryPagePlan {
  std::string title;
  std::optional<Compiled> compiled;
  std::string refused;
};

struct MemoryPageOptions {
  std::string title = "ferry memory plans";
  int64_t device_memory_limit = 0;  // drawn as a line across the device charts when > 0
};

// The page. Each plan's section carries its own drawn peak (data-peak-bytes); the body carries the
// first drawn plan's. INVALID_ARGUMENT for no plans, or a plan with neither a program nor a reason.
std::string memory_html(const std::vector<MemoryPagePlan>& plans, const MemoryPageOptions& options = {});
// memory_html() written to path (atomically); INVALID_ARGUMENT when it cannot be written there.
void save_memory_html(const std::vector<MemoryPagePlan>& plans, const std::string& path,
                      const MemoryPageOptions& options = {});

// INVALID_ARGUMENT unless a page could be written at `path` now: its folder exists and takes a new
// file, and the path is not a folder. A long job (training, many compiles) checks before it starts.
void check_memory_html_path(const std::string& path);

}  // namespace ferry
