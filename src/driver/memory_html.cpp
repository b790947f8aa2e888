// Pages of several compiled programs (ferry/memory_html.h, explain_html).
#include "ferry/memory_html.h"

#include <fmt/format.h>

#include "driver/lowered.h"
#include "driver/memory_page.h"
#include "ferry/error.h"
#include "ferry/explain.h"
#include "io/atomic_file.h"

namespace ferry {

std::string memory_html(const std::vector<MemoryPagePlan>& plans, const MemoryPageOptions& options) {
  if (plans.empty()) throw Error(ErrorCode::invalid_argument, "memory_html: no plans to draw");
  std::vector<driver::PagePlan> pages;
  for (size_t i = 0; i < plans.size(); ++i) {
    const MemoryPagePlan& p = plans[i];
    driver::PagePlan page;
    page.title = p.title;
    page.refused = p.refused;
    if (p.compiled) {
      const detail::CompiledImpl& impl = p.compiled->impl();
      page.program = impl.program.get();
      page.plan = impl.plan.get();
      std::lock_guard<std::mutex> lock(impl.stats_mutex);
      page.trace_json = impl.last_trace;
    } else if (p.refused.empty()) {
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("memory_html: plan {} (\"{}\") has neither a compiled program nor a reason it was refused", i,
                              p.title));
    }
    pages.push_back(std::move(page));
  }
  if (options.device_memory_limit < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("memory_html: device_memory_limit must be >= 0 bytes, got {}", options.device_memory_limit));
  return driver::memory_page(pages, {.title = options.title, .device_memory_limit = options.device_memory_limit});
}

void save_memory_html(const std::vector<MemoryPagePlan>& plans, const std::string& path, const MemoryPageOptions& options) {
  driver::save_memory_page(memory_html(plans, options), path);
}

void check_memory_html_path(const std::string& path) {
  io::check_writable(path, "the memory page");
}

std::string explain_html(const std::vector<ExplainRow>& rows, int64_t device_memory_limit) {
  std::vector<MemoryPagePlan> plans;
  for (const ExplainRow& r : rows)
    plans.push_back({.title = r.policy, .compiled = r.compiled, .refused = r.compiled ? "" : "refused: " + r.error});
  return memory_html(plans, {.title = "ferry explain: one step under each policy", .device_memory_limit = device_memory_limit});
}

void save_explain_html(const std::vector<ExplainRow>& rows, int64_t device_memory_limit, const std::string& path) {
  driver::save_memory_page(explain_html(rows, device_memory_limit), path);
}

}  // namespace ferry
