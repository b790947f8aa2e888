#include "compiler/memory_analysis.h"

#include <algorithm>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/echo.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

bool is_host(MemoryKind k) { return k != MemoryKind::device; }

}  // namespace

std::vector<int> producers(const ir::Program& p) {
  std::vector<int> out(p.values.size(), -1);
  for (size_t e = 0; e < p.equations.size(); ++e)
    for (ir::ValueId v : p.equations[e].outputs) out[static_cast<size_t>(v)] = static_cast<int>(e);
  return out;
}

std::string describe(const ir::Program& p, const Buffer& b, const std::vector<int>& prod, int t) {
  auto label = [&](int e) { return ir::equation_label(p, static_cast<size_t>(e)); };
  if (b.body_of >= 0)
    return fmt::format("{} {}, the body of {}", human_bytes(b.size), memory_kind_name(b.kind), label(b.body_of));
  if (b.scratch_of >= 0)
    return fmt::format("{} {}, a carry buffer of {}", human_bytes(b.size), memory_kind_name(b.kind), label(b.scratch_of));
  if (b.workspace_of >= 0)
    return fmt::format("{} {}, the kernel workspace of {}", human_bytes(b.size), memory_kind_name(b.kind),
                       label(b.workspace_of));
  if (b.stream_of >= 0)
    return fmt::format("{} {}, a double buffer for the slices {} streams to or from host memory", human_bytes(b.size),
                       memory_kind_name(b.kind), label(b.stream_of));
  if (b.values.empty()) return fmt::format("{} {}", human_bytes(b.size), memory_kind_name(b.kind));
  ir::ValueId v = b.values.front();
  for (ir::ValueId u : b.values)
    if (prod[static_cast<size_t>(u)] <= t) v = u;
  std::string what = ir::to_string(p.type(v));
  int e = prod[static_cast<size_t>(v)];
  if (e < 0) return fmt::format("{} {}", what, human_bytes(b.size));
  const ir::Equation& eq = p.equations[static_cast<size_t>(e)];
  std::string source = eq.name.empty() ? "" : fmt::format(" \"{}\"", ir::echo(eq.name));  // text may name it at length
  return fmt::format("{} {}, {}{}", what, human_bytes(b.size), label(e), source);
}

namespace {

// Where the device peak is: before the equation at that position, or at the end.
std::string peak_place(const ir::Program& p, const MemoryPlan& plan) {
  size_t t = static_cast<size_t>(plan.peak_position[kind_index(MemoryKind::device)]);
  if (t >= p.equations.size()) return "at the end of the program";
  return "while " + ir::equation_label(p, t) + " runs";
}

}  // namespace

std::vector<const Buffer*> live_at_peak(const MemoryPlan& plan, MemoryKind kind) {
  int t = plan.peak_position[kind_index(kind)];
  std::vector<const Buffer*> live;
  for (const Buffer& b : plan.buffers)
    if (b.kind == kind && b.output_of < 0 && b.start <= t && t <= b.end && b.size > 0) live.push_back(&b);
  std::stable_sort(live.begin(), live.end(), [](const Buffer* a, const Buffer* b) { return a->size > b->size; });
  return live;
}

namespace {

std::string largest_at_peak(const ir::Program& p, const MemoryPlan& plan, size_t max_buffers, const std::string& sep) {
  std::vector<int> prod = producers(p);
  std::vector<const Buffer*> live = live_at_peak(plan, MemoryKind::device);
  std::string out;
  int t = plan.peak_position[kind_index(MemoryKind::device)];
  for (size_t i = 0; i < live.size() && i < max_buffers; ++i) out += sep + describe(p, *live[i], prod, t);
  if (live.size() > max_buffers) out += sep + fmt::format("... and {} smaller", live.size() - max_buffers);
  // An empty list would read as a report cut short: say what the peak is made of instead.
  if (live.empty())
    out += sep + "none: the peak is the arguments and outputs alone, with no temporary live; only smaller (or donated) "
                 "arguments or outputs lower it";
  return out;
}

}  // namespace

std::string human_bytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  if (bytes < int64_t{1} << 30) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024 * 1024));
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
}

MemoryStats memory_stats(const ir::Program& p, const MemoryPlan& plan) {
  MemoryStats s;
  for (ir::ValueId v : p.inputs) {
    const ir::Type& t = p.type(v);
    (is_host(t.kind) ? s.host_argument_size_in_bytes : s.argument_size_in_bytes) += t.size_bytes();
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const ir::Type& t = p.type(p.outputs[i]);
    (is_host(t.kind) ? s.host_output_size_in_bytes : s.output_size_in_bytes) += t.size_bytes();
    if (i < plan.output_alias.size() && plan.output_alias[i] >= 0)
      (is_host(t.kind) ? s.host_alias_size_in_bytes : s.alias_size_in_bytes) += t.size_bytes();
  }
  // Outputs are allocations of their own (or donated arguments' buffers): the arena of each kind
  // holds the temporaries, kernel workspaces and alignment padding.
  s.temp_size_in_bytes = plan.arena_size[kind_index(MemoryKind::device)];
  s.host_temp_size_in_bytes =
      plan.arena_size[kind_index(MemoryKind::pinned_host)] + plan.arena_size[kind_index(MemoryKind::unpinned_host)];
  s.peak_memory_in_bytes = s.argument_size_in_bytes + s.output_size_in_bytes + s.temp_size_in_bytes - s.alias_size_in_bytes;
  s.host_peak_memory_in_bytes = s.host_argument_size_in_bytes + s.host_output_size_in_bytes + s.host_temp_size_in_bytes -
                                s.host_alias_size_in_bytes;
  return s;
}

std::string memory_report(const ir::Program& p, const MemoryPlan& plan, size_t max_buffers) {
  MemoryStats s = memory_stats(p, plan);
  std::string out = fmt::format(
      "device: peak {} = arguments {} + outputs {} + temporaries {} - aliased {}\n"
      "host:   peak {} = arguments {} + outputs {} + temporaries {} - aliased {}\n",
      human_bytes(s.peak_memory_in_bytes), human_bytes(s.argument_size_in_bytes), human_bytes(s.output_size_in_bytes),
      human_bytes(s.temp_size_in_bytes), human_bytes(s.alias_size_in_bytes), human_bytes(s.host_peak_memory_in_bytes),
      human_bytes(s.host_argument_size_in_bytes), human_bytes(s.host_output_size_in_bytes),
      human_bytes(s.host_temp_size_in_bytes), human_bytes(s.host_alias_size_in_bytes));
  out += fmt::format("largest device buffers live at the peak ({}):", peak_place(p, plan));
  out += largest_at_peak(p, plan, max_buffers, "\n  ");
  return out + "\n";
}

void check_device_limit(const ir::Program& p, const MemoryPlan& plan, int64_t limit) {
  MemoryStats s = memory_stats(p, plan);
  if (limit <= 0 || s.peak_memory_in_bytes <= limit) return;
  throw Error(ErrorCode::resource_exhausted,
              fmt::format("device memory: the plan needs {} bytes ({}) at its peak but the limit is {} bytes ({}); "
                          "arguments {} + outputs {} + temporaries {} - aliased {}. Largest live buffers at the peak ({}):{}",
                          s.peak_memory_in_bytes, human_bytes(s.peak_memory_in_bytes), limit, human_bytes(limit),
                          human_bytes(s.argument_size_in_bytes), human_bytes(s.output_size_in_bytes),
                          human_bytes(s.temp_size_in_bytes), human_bytes(s.alias_size_in_bytes), peak_place(p, plan),
                          largest_at_peak(p, plan, 5, "\n  ")));
}

}  // namespace ferry::compiler
