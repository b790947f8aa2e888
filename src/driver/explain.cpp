// explain(): the compiler's own figures for one step under each policy; nothing runs.
#include "ferry/explain.h"

#include <set>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry {
namespace {

ExplainRow row_of(std::string name, const Compiled& c, int64_t limit) {
  MemoryStats m = c.memory_analysis();
  CostStats cost = c.cost_analysis();
  ExplainRow r;
  r.policy = std::move(name);
  r.device_peak = m.peak_memory_in_bytes;
  r.host_peak = m.host_peak_memory_in_bytes;
  r.fits = limit == 0 || m.peak_memory_in_bytes <= limit;
  r.flops = cost.flops;
  r.recompute_flops = cost.recompute_flops;
  r.bytes_copied = cost.bytes_to_host + cost.bytes_to_device;
  r.estimated_seconds = cost.estimated_seconds;
  r.exposed_copy_seconds = cost.exposed_copy_seconds;
  r.compiled = c;
  return r;
}

// Compiles one row; a plan the compiler refuses for memory is a row that does not fit.
ExplainRow compile_row(std::string name, const LowerUnderPolicy& lower, const std::optional<Policy>& policy,
                       const CompileOptions& options, int64_t limit) {
  try {
    return row_of(std::move(name), lower(policy).compile(options), limit);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::resource_exhausted) throw;
    ExplainRow r;
    r.policy = std::move(name);
    r.error = e.what();
    return r;
  }
}

// Small steps in KiB, model-sized ones in MiB, so that every row shows its differences.
std::string size(int64_t bytes) {
  if (bytes < (1 << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

std::vector<ExplainRow> explain(const LowerUnderPolicy& lower, const CompileOptions& options,
                                const std::vector<ExplainPolicy>& extra) {
  if (!lower) throw Error(ErrorCode::invalid_argument, "explain: the lowering function is empty");
  if (options.device_memory_limit < 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("explain: device_memory_limit must be >= 0 bytes (0 means no limit), got {}",
                            options.device_memory_limit));
  std::set<std::string> names{"no checkpoint", "automatic"};
  std::vector<std::pair<std::string, std::optional<Policy>>> fixed{
      {"no checkpoint", std::nullopt},
      {"everything_saveable", policies::everything_saveable},
      {"nothing_saveable", policies::nothing_saveable},
      {"dots_saveable", policies::dots_saveable},
      {"dots_with_no_batch_dims_saveable", policies::dots_with_no_batch_dims_saveable},
      {"offload_dot_with_no_batch_dims",
       policies::offload_dot_with_no_batch_dims(MemoryKind::device, MemoryKind::pinned_host)}};
  for (const auto& f : fixed) names.insert(f.first);
  for (const ExplainPolicy& p : extra) {
    if (p.name.empty()) throw Error(ErrorCode::invalid_argument, "explain: an extra policy has an empty name");
    if (!names.insert(p.name).second)
      throw Error(ErrorCode::invalid_argument, fmt::format("explain: two rows would be named '{}'", p.name));
    fixed.emplace_back(p.name, p.policy);
  }
  // Fixed policies without the limit: their peak is what they need, and fits compares it.
  CompileOptions unlimited = options;
  unlimited.device_memory_limit = 0;
  unlimited.fit_to_limit = false;
  const int64_t limit = options.device_memory_limit;
  std::vector<ExplainRow> rows;
  for (const auto& [name, policy] : fixed) rows.push_back(compile_row(name, lower, policy, unlimited, limit));
  rows.push_back(compile_row("automatic", lower, policies::automatic, options, limit));
  return rows;
}

ExplainRow explain_policy(const LowerUnderPolicy& lower, const std::string& name, const std::optional<Policy>& policy,
                          const CompileOptions& options) {
  if (!lower) throw Error(ErrorCode::invalid_argument, "explain_policy: the lowering function is empty");
  return compile_row(name, lower, policy, options, options.device_memory_limit);
}

std::string format_explain(const std::vector<ExplainRow>& rows, int64_t limit) {
  std::string out = limit > 0 ? fmt::format("device memory limit: {} ({} bytes)\n", size(limit), limit)
                              : std::string("no device memory limit\n");
  out += fmt::format("{:<34} {:>12} {:>12} {:>16} {:>12} {:>13} {:>5}\n", "policy", "device peak", "host peak",
                     "recompute MFLOP", "copied", "est. step ms", "fits");
  const ExplainRow* best = nullptr;
  for (const ExplainRow& r : rows) {
    if (!r.error.empty()) {
      std::string first_line = r.error.substr(0, r.error.find('\n'));
      out += fmt::format("{:<34} refused: {}\n", r.policy, first_line);
      continue;
    }
    out += fmt::format("{:<34} {:>12} {:>12} {:>16.1f} {:>12} {:>13.2f} {:>5}\n", r.policy, size(r.device_peak),
                       size(r.host_peak), r.recompute_flops / 1e6, size(r.bytes_copied), r.estimated_seconds * 1e3,
                       r.fits ? "yes" : "no");
    if (r.fits && (best == nullptr || r.estimated_seconds < best->estimated_seconds)) best = &r;
  }
  out += best ? fmt::format("fastest estimated plan that fits: {} ({:.2f} ms)\n", best->policy,
                            best->estimated_seconds * 1e3)
              : std::string("no plan fits the limit\n");
  return out;
}

}  // namespace ferry
