// The memory page's data: what each buffer of a plan is, when it lives, what makes and reads it;
// the copies; the measured run. The drawing is the page's script (memory_page_template.cpp).
#include "driver/memory_page.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "compiler/memory_analysis.h"
#include "driver/measured_timeline.h"
#include "ferry/error.h"
#include "io/atomic_file.h"
#include "ir/echo.h"
#include "ir/ops.h"
#include "ir/params_text.h"
#include "ir/printer.h"
#include "ir/type.h"

namespace ferry::driver {
namespace {

using nlohmann::json;
using compiler::Buffer;
using compiler::MemoryPlan;

// What a buffer holds, as the page colours it. The order is the stacking order, bottom to top
// (the page's script has the same list, with names and colours).
enum Category : int {
  kArgument,    // a program input (parameters, data)
  kOutput,      // an output's own allocation
  kSaved,       // a residual the backward pass reads, kept on the device: computed from the inputs
                // before the backward pass begins and live when it does
  kOffloaded,   // a residual in host memory, or fetched back from it
  kRecomputed,  // made again by the backward pass (an equation marked !remat)
  kBody,        // a scan or checkpoint body's region, or a scan's carry buffer
  kTemporary,   // anything else the arena holds
  kWorkspace,   // a kernel's scratch memory while it runs
  kTransfer,    // a copy in flight: its destination, or a streamed slice's double buffer
};

// The page draws device memory and host memory (pinned and unpinned together, as
// host_peak_memory_in_bytes counts them).
int lane_of(MemoryKind k) { return k == MemoryKind::device ? 0 : 1; }

// Buffers smaller than this share of their memory's peak are drawn together, per category: they
// would be under a tenth of a pixel tall, and a 1,000-layer plan has tens of thousands of them.
constexpr int64_t kAggregateShare = 4000;
// At most this many buffers per plan are drawn one by one; smaller ones beyond it are aggregated.
constexpr size_t kMaxIndividual = 3000;

std::string truncated(const std::string& s, size_t max) {
  return s.size() <= max ? s : s.substr(0, max) + fmt::format("... ({} characters)", s.size());
}

bool contains_remat(const ir::Program& p) {
  for (const ir::Equation& eq : p.equations) {
    if (eq.rematerialized) return true;
    for (const auto& sub : eq.subprograms)
      if (sub && contains_remat(*sub)) return true;
  }
  return false;
}

// What one program says about its values: who makes and reads each, how as_text() numbers them.
class Facts {
 public:
  Facts(const ir::Program& p, const MemoryPlan& plan) : p_(p), prod_(compiler::producers(p)), readers_(p.values.size()) {
    number_.assign(p.values.size(), -1);
    int next = 0;
    for (ir::ValueId v : p.inputs) number_[static_cast<size_t>(v)] = next++;
    for (size_t e = 0; e < p.equations.size(); ++e) {
      for (ir::ValueId v : p.equations[e].inputs) {
        auto& r = readers_[static_cast<size_t>(v)];
        if (r.empty() || r.back() != static_cast<int>(e)) r.push_back(static_cast<int>(e));
      }
      for (ir::ValueId v : p.equations[e].outputs) number_[static_cast<size_t>(v)] = next++;
    }
    from_inputs_.assign(p.values.size(), 0);
    for (ir::ValueId v : p.inputs) from_inputs_[static_cast<size_t>(v)] = 1;
    for (const ir::Equation& eq : p.equations) {
      char any = 0;
      for (ir::ValueId v : eq.inputs) any = static_cast<char>(any | from_inputs_[static_cast<size_t>(v)]);
      for (ir::ValueId v : eq.outputs) from_inputs_[static_cast<size_t>(v)] = any;
    }
    // Where the backward pass begins: its first equation that recomputes or fetches back a forward
    // value (marked !remat, itself or inside its body). A program with no such mark (no checkpoint,
    // or everything saved) is taken to turn at its device peak, where the residuals are all live.
    turn_ = plan.peak_position[compiler::kind_index(MemoryKind::device)];
    for (size_t e = 0; e < p.equations.size(); ++e) {
      const ir::Equation& eq = p.equations[e];
      bool marked = eq.rematerialized;
      for (const auto& sub : eq.subprograms) marked = marked || (sub && contains_remat(*sub));
      if (marked) {
        turn_ = static_cast<int>(e);
        break;
      }
    }
  }

  int producer(ir::ValueId v) const { return prod_[static_cast<size_t>(v)]; }
  // Whether v is computed from the program's inputs: a residual is, the cotangent seed (ones) and
  // other constants are not.
  bool from_inputs(ir::ValueId v) const { return from_inputs_[static_cast<size_t>(v)] != 0; }
  const std::vector<int>& producers() const { return prod_; }
  const std::vector<int>& readers(ir::ValueId v) const { return readers_[static_cast<size_t>(v)]; }
  int turn() const { return turn_; }

  // "%17 = tanh %16 : f32[512,64] @"name" !remat", as as_text() prints the equation, shortened:
  // long parameter lists and operand lists are cut, a body is named by its primitives.
  std::string equation_text(int e) const {
    const ir::Equation& eq = p_.equations[static_cast<size_t>(e)];
    std::string out = ir::echo_list(eq.outputs.size(), [&](size_t i) { return name(eq.outputs[i]); });
    out += " = " + std::string(ir::name_of(eq.prim)) + truncated(ir::params_to_string(eq.params), 80);
    if (eq.prim == ir::op::fused && !eq.subprograms.empty() && eq.subprograms[0]) {
      const ir::Program& body = *eq.subprograms[0];
      out += "{" + ir::echo_list(body.equations.size(), [&](size_t i) { return std::string(ir::name_of(body.equations[i].prim)); }) + "}";
    }
    if (!eq.inputs.empty()) out += " " + ir::echo_list(eq.inputs.size(), [&](size_t i) { return name(eq.inputs[i]); });
    out += " : " + ir::echo_list(eq.outputs.size(), [&](size_t i) { return ir::to_string(p_.type(eq.outputs[i])); });
    if (!eq.name.empty()) out += " @\"" + ir::echo(eq.name) + "\"";
    if (eq.rematerialized) out += " !remat";
    return out;
  }

  std::string name(ir::ValueId v) const {
    const int n = v >= 0 && static_cast<size_t>(v) < number_.size() ? number_[static_cast<size_t>(v)] : -1;
    return n >= 0 ? fmt::format("%{}", n) : fmt::format("%?{}", v);
  }

 private:
  const ir::Program& p_;
  std::vector<int> prod_;
  std::vector<std::vector<int>> readers_;  // per value: the equations that read it, in order
  std::vector<int> number_;                // per value: its number in as_text()
  std::vector<char> from_inputs_;          // per value: computed from the program's inputs
  int turn_ = 0;
};

// A buffer as the page draws it: an argument, an output, or an arena buffer.
struct Drawn {
  int lane = 0;
  int64_t size = 0;
  int start = 0, end = 0;
  Category category = kTemporary;  // the one it is stacked with (its longest phase's)
  // What it holds over its range, one phase per value from the position that value is made:
  // [[from position, category, description, type, primitive, source name], ...].
  json phases = json::array();
  std::set<int> makers, readers;
  std::string type, primitive, source, memory_kind, role;
  int plan_index = -1;  // index in MemoryPlan::buffers; -1 for arguments and outputs
};

// The category of value v (-1: none) held by arena buffer b over [from, to].
Category category_of(const ir::Program& p, const Facts& f, const Buffer& b, ir::ValueId v, int from, int to) {
  if (b.workspace_of >= 0) return kWorkspace;
  if (b.body_of >= 0 || b.scratch_of >= 0) return kBody;
  if (b.stream_of >= 0) return kTransfer;
  const int e = v >= 0 ? f.producer(v) : -1;
  if (e < 0) return kTemporary;
  const ir::Equation& eq = p.equations[static_cast<size_t>(e)];
  if (eq.prim == ir::op::copy_start) return kTransfer;
  // A value in host memory is there because a policy offloaded it; its copy back to the device
  // (copy_done of a copy_start from the host) is the same residual, fetched back.
  if (p.type(v).kind != MemoryKind::device) return kOffloaded;
  if (eq.prim == ir::op::copy_done && !eq.inputs.empty() && p.type(eq.inputs.back()).kind != MemoryKind::device)
    return kOffloaded;
  bool remat = eq.rematerialized;
  if (eq.prim == ir::op::fused && !eq.subprograms.empty() && eq.subprograms[0]) {
    // A fused kernel's result is recomputed when the body equation that makes it is.
    const ir::Program& body = *eq.subprograms[0];
    auto it = std::find(eq.outputs.begin(), eq.outputs.end(), v);
    const size_t k = static_cast<size_t>(it - eq.outputs.begin());
    if (k < body.outputs.size()) {
      const auto body_prod = compiler::producers(body);
      const int be = body_prod[static_cast<size_t>(body.outputs[k])];
      remat = remat || (be >= 0 && body.equations[static_cast<size_t>(be)].rematerialized);
    }
  }
  if (remat) return kRecomputed;
  if (from < f.turn() && f.turn() <= to && f.from_inputs(v)) return kSaved;
  return kTemporary;
}

void add_users(const Facts& f, ir::ValueId v, Drawn& d) {
  if (int e = f.producer(v); e >= 0) d.makers.insert(e);
  for (int r : f.readers(v)) d.readers.insert(r);
}

// Describes what made value v (type, primitive, source name) into d.
void describe_value(const ir::Program& p, const Facts& f, ir::ValueId v, Drawn& d) {
  d.type = ir::to_string(p.type(v));
  const int e = f.producer(v);
  if (e < 0) return;
  const ir::Equation& eq = p.equations[static_cast<size_t>(e)];
  d.primitive = std::string(ir::name_of(eq.prim));
  d.source = ir::echo(eq.name);
}

Drawn arena_buffer(const ir::Program& p, const Facts& f, const Buffer& b, int index) {
  Drawn d;
  d.lane = lane_of(b.kind);
  d.size = b.size;
  d.start = b.start;
  d.end = b.end;
  d.plan_index = index;
  d.memory_kind = std::string(memory_kind_name(b.kind));
  auto special = [&](int e, const char* what) {
    d.primitive = std::string(ir::name_of(p.equations[static_cast<size_t>(e)].prim));
    d.role = what;
    d.makers.insert(e);
  };
  if (b.body_of >= 0) special(b.body_of, "body");
  else if (b.scratch_of >= 0) special(b.scratch_of, "carry");
  else if (b.workspace_of >= 0) special(b.workspace_of, "workspace");
  else if (b.stream_of >= 0) special(b.stream_of, "stream");
  // One phase per value the buffer holds (an in-place chain holds several, one after another).
  std::vector<std::pair<int, ir::ValueId>> held;
  for (ir::ValueId v : b.values) held.emplace_back(std::max(b.start, f.producer(v)), v);
  std::stable_sort(held.begin(), held.end());
  if (held.empty()) held.emplace_back(b.start, -1);
  std::map<Category, int> length;
  for (size_t i = 0; i < held.size(); ++i) {
    const int from = i == 0 ? b.start : held[i].first;
    const int to = i + 1 < held.size() ? std::max(from, held[i + 1].first - 1) : b.end;
    const ir::ValueId v = held[i].second;
    const Category c = category_of(p, f, b, v, from, to);
    Drawn what;  // the value's type, primitive and source name
    if (v >= 0) {
      add_users(f, v, d);
      describe_value(p, f, v, what);
    }
    if (!d.role.empty()) what.primitive = d.primitive;
    d.phases.push_back(json::array({from, static_cast<int>(c), compiler::describe(p, b, f.producers(), from), what.type,
                                    what.primitive, what.source}));
    if (i == 0) d.type = what.type, d.primitive = what.primitive, d.source = what.source;
    length[c] += to - from + 1;
  }
  d.category = std::max_element(length.begin(), length.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  if (d.role.empty()) d.role = "arena";  // a buffer of values (the others: body, carry, workspace, stream)
  return d;
}

json drawn_json(const Drawn& d) {
  auto list = [](const std::set<int>& s) {
    // A parameter read by every layer would list thousands: the first few say where it goes.
    json out = json::array();
    for (int e : s) {
      if (out.size() == 64) break;
      out.push_back(e);
    }
    return out;
  };
  return json{{"m", d.lane},         {"s", d.size},         {"a", d.start},       {"b", d.end},
              {"c", static_cast<int>(d.category)}, {"p", d.phases},   {"mk", list(d.makers)}, {"rd", list(d.readers)},
              {"nr", d.readers.size()}, {"t", d.type},       {"pr", d.primitive},  {"src", d.source},
              {"k", d.memory_kind}, {"i", d.plan_index},   {"role", d.role}};
}

// The plan's own view of a peak: its position and the arena buffers live there (by plan index).
json plan_peak(const MemoryPlan& plan, int n, int lane) {
  std::vector<int64_t> delta(static_cast<size_t>(n) + 2, 0);
  for (const Buffer& b : plan.buffers) {
    if (b.output_of >= 0 || lane_of(b.kind) != lane) continue;
    delta[static_cast<size_t>(b.start)] += b.size;
    delta[static_cast<size_t>(b.end) + 1] -= b.size;
  }
  int64_t live = 0, most = 0;
  int at = 0;
  for (int t = 0; t <= n; ++t) {
    live += delta[static_cast<size_t>(t)];
    if (live > most) {
      most = live;
      at = t;
    }
  }
  json ids = json::array();
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    if (b.output_of < 0 && lane_of(b.kind) == lane && b.start <= at && at <= b.end && b.size > 0) ids.push_back(i);
  }
  return json{{"position", at}, {"live", most}, {"buffers", ids}};
}

// Copies between memory kinds inside a body (per step of a scan, times its length), by direction.
void body_copies(const ir::Program& body, int64_t times, std::array<int64_t, 2>& bytes, std::array<int64_t, 2>& count) {
  for (const ir::Equation& eq : body.equations) {
    if ((eq.prim == ir::op::copy_start || eq.prim == Primitive::device_put) && !eq.inputs.empty() && !eq.outputs.empty()) {
      const MemoryKind from = body.type(eq.inputs[0]).kind, to = body.type(eq.outputs[0]).kind;
      if (lane_of(from) != lane_of(to)) {
        const int dir = to == MemoryKind::device ? 1 : 0;
        bytes[static_cast<size_t>(dir)] += times * body.type(eq.outputs[0]).size_bytes();
        count[static_cast<size_t>(dir)] += times;
      }
    }
    int64_t inner = times;
    if (const auto* s = std::get_if<ir::ScanParams>(&eq.params)) inner *= std::max<int64_t>(s->length, 1);
    for (const auto& sub : eq.subprograms)
      if (sub && eq.prim != ir::op::fused) body_copies(*sub, inner, bytes, count);
  }
}

// [start position, done position, bytes, direction (0: to host, 1: to the device), start equation,
// copies]: a top-level copy_start and its copy_done, or the copies inside a body at its position.
json copies_json(const ir::Program& p, const Facts& f) {
  json out = json::array();
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    if (eq.prim == ir::op::copy_start && eq.inputs.size() == 1 && eq.outputs.size() == 1) {
      const ir::ValueId v = eq.outputs[0];
      int done = static_cast<int>(e);
      for (int r : f.readers(v))
        if (p.equations[static_cast<size_t>(r)].prim == ir::op::copy_done) done = r;
      const int dir = p.type(v).kind == MemoryKind::device ? 1 : 0;
      out.push_back(json::array({e, done, p.type(v).size_bytes(), dir, e, 1}));
      continue;
    }
    if (eq.prim == Primitive::device_put && eq.inputs.size() == 1 && eq.outputs.size() == 1 &&
        lane_of(p.type(eq.inputs[0]).kind) != lane_of(p.type(eq.outputs[0]).kind)) {
      // A copy the compiler left synchronous: it starts and ends with its equation.
      const int dir = p.type(eq.outputs[0]).kind == MemoryKind::device ? 1 : 0;
      out.push_back(json::array({e, e, p.type(eq.outputs[0]).size_bytes(), dir, e, 1}));
      continue;
    }
    if (eq.prim == ir::op::fused) continue;
    std::array<int64_t, 2> bytes{}, count{};
    int64_t times = 1;
    if (const auto* s = std::get_if<ir::ScanParams>(&eq.params)) times = std::max<int64_t>(s->length, 1);
    for (const auto& sub : eq.subprograms)
      if (sub) body_copies(*sub, times, bytes, count);
    for (int dir = 0; dir < 2; ++dir)
      if (count[static_cast<size_t>(dir)] > 0)
        out.push_back(json::array({e, e, bytes[static_cast<size_t>(dir)], dir, e, count[static_cast<size_t>(dir)]}));
  }
  return out;
}

}  // namespace

json plan_data(const PagePlan& page) {
  json out{{"title", page.title}};
  if (!page.program || !page.plan) {
    out["refused"] = page.refused.empty() ? "no plan" : page.refused;
    return out;
  }
  const ir::Program& p = *page.program;
  const MemoryPlan& plan = *page.plan;
  const int n = static_cast<int>(p.equations.size());
  const Facts facts(p, plan);
  const MemoryStats stats = compiler::memory_stats(p, plan);

  std::vector<Drawn> drawn;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ir::ValueId v = p.inputs[i];
    Drawn d;
    d.lane = lane_of(p.type(v).kind);
    d.size = p.type(v).size_bytes();
    d.start = 0;
    d.end = n;
    d.category = kArgument;
    d.memory_kind = std::string(memory_kind_name(p.type(v).kind));
    d.role = fmt::format("argument {}", i);
    d.type = ir::to_string(p.type(v));
    d.phases.push_back(json::array({0, static_cast<int>(kArgument),
                                    fmt::format("argument {} ({}), {} {}", i, facts.name(v), d.type, compiler::human_bytes(d.size)),
                                    d.type, "", ""}));
    add_users(facts, v, d);
    drawn.push_back(std::move(d));
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    // An output written into a donated argument's buffer is that argument's bytes (drawn above).
    if (i < plan.output_alias.size() && plan.output_alias[i] >= 0) continue;
    const ir::ValueId v = p.outputs[i];
    Drawn d;
    d.lane = lane_of(p.type(v).kind);
    d.size = p.type(v).size_bytes();
    d.start = 0;
    d.end = n;
    d.category = kOutput;
    d.memory_kind = std::string(memory_kind_name(p.type(v).kind));
    d.role = fmt::format("output {}", i);
    describe_value(p, facts, v, d);
    const int e = facts.producer(v);
    d.phases.push_back(json::array({0, static_cast<int>(kOutput),
                                    fmt::format("output {} ({}), {} {}{}", i, facts.name(v), d.type, compiler::human_bytes(d.size),
                                                e >= 0 ? ", " + ir::equation_label(p, static_cast<size_t>(e)) : ""),
                                    d.type, d.primitive, d.source}));
    add_users(facts, v, d);
    drawn.push_back(std::move(d));
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    // A buffer inside an output's allocation is part of that output's bytes; an empty one is nothing.
    if (b.output_of >= 0 || b.size <= 0) continue;
    drawn.push_back(arena_buffer(p, facts, b, static_cast<int>(i)));
  }

  // Small buffers go into one aggregate per (lane, category): the smallest beyond kMaxIndividual,
  // and any under 1/kAggregateShare of their lane's peak.
  const std::array<int64_t, 2> peaks{stats.peak_memory_in_bytes, stats.host_peak_memory_in_bytes};
  std::vector<size_t> order(drawn.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return drawn[a].size > drawn[b].size; });
  std::vector<char> aggregated(drawn.size(), 0);
  for (size_t r = 0; r < order.size(); ++r) {
    const Drawn& d = drawn[order[r]];
    aggregated[order[r]] = r >= kMaxIndividual || d.size * kAggregateShare < peaks[static_cast<size_t>(d.lane)];
  }
  json buffers = json::array();
  std::map<std::pair<int, int>, std::map<int, std::array<int64_t, 2>>> group_deltas;  // (lane, cat) -> t -> bytes, count
  std::map<std::pair<int, int>, std::array<int64_t, 2>> group_totals;
  std::set<int> equations;
  for (size_t i = 0; i < drawn.size(); ++i) {
    const Drawn& d = drawn[i];
    if (aggregated[i]) {
      const auto key = std::make_pair(d.lane, static_cast<int>(d.category));
      auto& deltas = group_deltas[key];
      deltas[d.start][0] += d.size, deltas[d.start][1] += 1;
      deltas[d.end + 1][0] -= d.size, deltas[d.end + 1][1] -= 1;
      group_totals[key][0] += d.size, group_totals[key][1] += 1;
      continue;
    }
    buffers.push_back(drawn_json(d));
    for (int e : buffers.back()["mk"]) equations.insert(e);
    for (int e : buffers.back()["rd"]) equations.insert(e);
  }
  json groups = json::array();
  for (const auto& [key, deltas] : group_deltas) {
    json d = json::array();
    for (const auto& [t, change] : deltas)
      if (change[0] != 0 || change[1] != 0) d.push_back(t), d.push_back(change[0]), d.push_back(change[1]);
    groups.push_back(json{{"m", key.first}, {"c", key.second}, {"n", group_totals[key][1]}, {"s", group_totals[key][0]}, {"d", d}});
  }

  // The arena's slack per lane: its size less the most bytes live in it at once.
  const json device_peak = plan_peak(plan, n, 0), host_peak = plan_peak(plan, n, 1);
  const int64_t device_arena = plan.arena_size[compiler::kind_index(MemoryKind::device)];
  const int64_t host_arena = plan.arena_size[compiler::kind_index(MemoryKind::pinned_host)] +
                             plan.arena_size[compiler::kind_index(MemoryKind::unpinned_host)];
  const json copies = copies_json(p, facts);
  for (const json& c : copies) equations.insert(c[4].get<int>()), equations.insert(c[1].get<int>());
  for (int t : {device_peak["position"].get<int>(), host_peak["position"].get<int>(), facts.turn()})
    if (t < n) equations.insert(t);
  json eqs = json::object();
  for (int e : equations)
    if (e >= 0 && e < n) eqs[std::to_string(e)] = facts.equation_text(e);

  out["n"] = n;
  out["turn"] = facts.turn();
  out["stats"] = json{{"peak_memory_in_bytes", stats.peak_memory_in_bytes},
                      {"host_peak_memory_in_bytes", stats.host_peak_memory_in_bytes},
                      {"argument_size_in_bytes", stats.argument_size_in_bytes},
                      {"output_size_in_bytes", stats.output_size_in_bytes},
                      {"alias_size_in_bytes", stats.alias_size_in_bytes},
                      {"temp_size_in_bytes", stats.temp_size_in_bytes},
                      {"host_argument_size_in_bytes", stats.host_argument_size_in_bytes},
                      {"host_output_size_in_bytes", stats.host_output_size_in_bytes},
                      {"host_alias_size_in_bytes", stats.host_alias_size_in_bytes},
                      {"host_temp_size_in_bytes", stats.host_temp_size_in_bytes}};
  out["slack"] = json::array({device_arena - device_peak["live"].get<int64_t>(), host_arena - host_peak["live"].get<int64_t>()});
  out["plan_peak"] = json::array({device_peak, host_peak});
  out["buffers"] = std::move(buffers);
  out["groups"] = std::move(groups);
  out["copies"] = copies;
  out["eqs"] = std::move(eqs);
  out["measured"] = measured_timeline(page.trace_json);
  return out;
}

std::string memory_page(const std::vector<PagePlan>& plans, const PageOptions& options) {
  if (plans.empty()) throw Error(ErrorCode::invalid_argument, "memory page: no plan to draw");
  json data{{"title", options.title}, {"limit", options.device_memory_limit}, {"plans", json::array()}};
  for (const PagePlan& p : plans) data["plans"].push_back(plan_data(p));
  // Inside a <script> element the text must not close it: "</" becomes "<\/", the same string in
  // JSON. Names from user code may be any bytes: invalid UTF-8 is replaced, not an exception.
  std::string text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string safe;
  safe.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    safe += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') safe += '\\';
  }
  std::string page = kMemoryPageTemplate;
  const size_t at = page.find(kMemoryPageDataMarker);
  if (at == std::string::npos) throw Error(ErrorCode::internal, "memory page: the template has no place for the data");
  page.replace(at, std::strlen(kMemoryPageDataMarker), safe);
  return page;
}

void save_memory_page(const std::string& html, const std::string& path) {
  // Says what is wrong with the path ("the folder ... does not exist", "it is a folder").
  io::check_writable(path, "the memory page");
  io::AtomicFile file(path, "the memory page");
  file.write(html.data(), html.size());
  file.commit();
}

}  // namespace ferry::driver
