// The memory page: a compiled program's memory plan drawn as one self-contained HTML file (no
// server, no network, no library: inline CSS, a canvas and a little JavaScript). It shows device
// and host memory over the schedule as stacked live ranges coloured by what each buffer is, the
// peak and the buffers live at it, the copies each way as a lane, and, where a run was recorded
// (Compiled::run_traced), the measured timeline beside the plan. Several plans on one page are
// small multiples on one scale (the same step under several policies).
//
// What the page draws adds up to the plan exactly: at every schedule position the stack is the
// arguments, the outputs that do not alias an argument, the arena buffers live there, and the
// arena's slack (its size less its most live bytes: alignment and fragmentation), so its maximum
// is memory_stats' peak_memory_in_bytes (and likewise on the host, pinned and unpinned together).
// The page's script computes that maximum from what it draws and writes it to the body as
// data-peak-bytes (data-host-peak-bytes), beside the plan's own figures in the embedded JSON;
// it writes data-status="ok" once it has drawn everything, and any script error to data-errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/memory_plan.h"
#include "ir/program.h"

namespace ferry::driver {

// One plan to draw.
struct PagePlan {
  std::string title;                   // e.g. the policy's name
  const ir::Program* program = nullptr;  // compiled (after the passes); null: a refused plan
  const compiler::MemoryPlan* plan = nullptr;
  std::string refused;                 // why there is no plan (e.g. a RESOURCE_EXHAUSTED message)
  std::string trace_json;              // the last recorded run's Chrome trace (runtime::Timeline); "" if none
};

struct PageOptions {
  std::string title = "ferry memory plan";
  int64_t device_memory_limit = 0;  // drawn as a line when > 0
};

// The data the page's script draws for one plan: its buffers with live ranges, categories, and
// the equations that make and read them; small buffers aggregated so that a page stays small.
nlohmann::json plan_data(const PagePlan& plan);

// The page. INVALID_ARGUMENT when `plans` is empty.
std::string memory_page(const std::vector<PagePlan>& plans, const PageOptions& options = {});

// Writes the page to `path` (atomically). INVALID_ARGUMENT naming the path when it cannot be written.
void save_memory_page(const std::string& html, const std::string& path);

// The page's HTML, CSS and script around a placeholder for the data (memory_page_template.cpp).
extern const char* const kMemoryPageTemplate;
inline constexpr const char* kMemoryPageDataMarker = "/*FERRY_PAGE_DATA*/";

}  // namespace ferry::driver
