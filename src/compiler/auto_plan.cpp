#include "compiler/auto_plan.h"

#include "compiler/cse.h"
#include "ir/dce.h"

#include <fmt/format.h>

#include <algorithm>
#include <concepts>
#include <map>
#include <optional>
#include <span>
#include <unordered_set>

#include "compiler/memory_analysis.h"
#include "compiler/offload_state.h"
#include "compiler/step_time.h"
#include "compiler/twins.h"
#include "ferry/error.h"
#include "ir/printer.h"
#include "prims/fused_body.h"
#include "prims/registry.h"

namespace ferry::compiler {
namespace {

using ir::ValueId;
using Kind = AutoOption::Kind;

constexpr size_t idx(std::integral auto i) { return static_cast<size_t>(i); }

// A candidate as the planner decides it: the twins of one forward value (one choice for all).
struct Group {
  int pair = -1;
  ValueId original = -1;
  bool stacked = false;  // a stacked residual: saved or offloaded, never recomputed
  std::vector<size_t> twins;
  // A split (fit_to_limit): on the all-saved plan, last read early at `early_end`, first read late
  // at `late_begin` (-1: not a split).
  int early_end = -1, late_begin = -1;
};

// Under policies::automatic, differentiation puts in the backward pass all the work on forward
// values that the backward pass needs (cos(x) for sin's cotangent, say), marked automatic, as if it
// were all recomputed. Once every twin is saved (no limit), what remains automatic at the top level
// recomputes nothing: it is work on saved forward values, done once. It moves to the forward pass,
// right after what it reads, and is no longer marked: the program everything_saveable's
// differentiation makes, so that fusion groups it with the forward pass and cost_analysis counts it
// as work, not recomputation. (The bodies of scans are left as they are.)
std::shared_ptr<ir::Program> hoist_residual_work(const ir::Program& program) {
  auto out = std::make_shared<ir::Program>(program);
  ir::Program& p = *out;
  const size_t n = p.equations.size();
  std::vector<int> def(p.values.size(), -1);
  for (size_t e = 0; e < n; ++e)
    for (ValueId v : p.equations[e].outputs) def[idx(v)] = static_cast<int>(e);
  // An equation moves when it is automatic and reads only values defined before every automatic
  // equation's position by equations that stay (forward values) or by equations that move.
  std::vector<char> moves(n, 0);
  std::vector<int> after(n, -1);  // the equation it moves behind (-1: the program's start)
  for (size_t e = 0; e < n; ++e) {
    const ir::Equation& eq = p.equations[e];
    // A scan or loop moves too where it is forward work recomputed whole (no recomputation inside).
    if (!eq.automatic) continue;
    if (std::any_of(eq.subprograms.begin(), eq.subprograms.end(),
                    [](const auto& body) { return !body || has_remat(*body) || has_automatic(*body); }))
      continue;
    bool ok = true;
    int last = -1;
    for (ValueId v : eq.inputs) {
      const int d = def[idx(v)];
      if (d < 0) continue;  // a program input
      const ir::Equation& producer = p.equations[idx(d)];
      if (producer.automatic && !moves[idx(d)]) ok = false;
      if (!producer.automatic && producer.rematerialized) ok = false;
      last = std::max(last, moves[idx(d)] ? after[idx(d)] : d);
    }
    if (!ok) continue;
    moves[e] = 1;
    after[e] = last;
  }
  std::vector<std::vector<size_t>> behind(n + 1);  // by position + 1: the moved equations after it
  for (size_t e = 0; e < n; ++e)
    if (moves[e]) behind[idx(after[e] + 1)].push_back(e);
  std::vector<ir::Equation> order;
  order.reserve(n);
  auto place_moved = [&](size_t slot) {
    for (size_t m : behind[slot]) {
      ir::Equation eq = p.equations[m];
      eq.automatic = false;
      eq.rematerialized = false;
      order.push_back(std::move(eq));
    }
  };
  place_moved(0);
  for (size_t e = 0; e < n; ++e) {
    if (!moves[e]) order.push_back(p.equations[e]);
    place_moved(e + 1);
  }
  p.equations = std::move(order);
  // Unmarked, the moved work merges with its duplicates (two cotangent rules that each recomputed
  // the same comparison, say), as it does in everything_saveable's program; what automatic left to
  // recompute where a nested checkpoint recomputes it too is recomputed once; what the merges leave
  // unread goes.
  if (eliminate_common_subexpressions_merging_automatic(p)) ir::eliminate_dead_code(p);
  return out;
}

struct Planned {
  std::shared_ptr<ir::Program> before_tail;  // the program as the planner leaves it
  std::shared_ptr<ir::Program> program;      // after the remaining passes
  std::shared_ptr<const MemoryPlan> plan;
  int64_t peak = 0;
  std::vector<ValueId> stacked;
};

// Where each value of a scheduled program is defined and read, by schedule position (the program's
// outputs are read at position n, after the last equation).
struct Positions {
  std::vector<int> def;
  std::vector<std::vector<int>> readers;
  std::map<ValueId, int> of_first_output;  // an equation's first output -> its position

  explicit Positions(const ir::Program& p) : def(p.values.size(), -1), readers(p.values.size()) {
    const size_t n = p.equations.size();
    for (size_t e = 0; e < n; ++e) {
      const ir::Equation& eq = p.equations[e];
      for (ValueId v : eq.outputs) def[idx(v)] = static_cast<int>(e);
      if (!eq.outputs.empty()) of_first_output[eq.outputs[0]] = static_cast<int>(e);
      for (ValueId v : eq.inputs) readers[idx(v)].push_back(static_cast<int>(e));
    }
    for (ValueId v : p.outputs) readers[idx(v)].push_back(static_cast<int>(n));
  }
};

// Seconds one equation of a recomputation takes at the machine's rates. Where the fuse pass will
// run, an elementwise equation joins a fused group with its neighbours and its intermediates stay
// in the kernel's blocks: its arithmetic is its cost, not a pass over memory (the group's reads
// and writes at its edges are a small part of a chain's).
double seconds_of(const ir::Equation& eq, const ir::Program& p, const Target& rates, bool fused) {
  prims::Cost c = prims::cost(eq, p);
  if (fused && prims::fusible_primitive(eq.prim) && eq.prim != Primitive::reshape) c.bytes_read = c.bytes_written = 0;
  return equation_seconds(c, rates);
}

// The work a recomputation of `group` adds: its own equations and the recomputations they read
// that are not candidates (a candidate's value exists whatever is chosen for it), transitively.
double chain_seconds(const ir::Program& bp, const Group& g, const Twins& twins, const std::vector<char>& candidate_clone,
                     const Target& rates, bool fused) {
  std::vector<int> producer(bp.values.size(), -1);
  for (size_t e = 0; e < bp.equations.size(); ++e)
    for (ValueId v : bp.equations[e].outputs) producer[idx(v)] = static_cast<int>(e);
  std::unordered_set<size_t> seen;
  std::vector<size_t> stack;
  for (size_t t : g.twins) stack.push_back(twins.twins[t].clone_eq);
  double total = 0;
  while (!stack.empty()) {
    size_t e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    const ir::Equation& eq = bp.equations[e];
    total += seconds_of(eq, bp, rates, fused);
    for (ValueId v : eq.inputs) {
      int q = producer[idx(v)];
      if (q < 0 || !bp.equations[idx(q)].automatic || candidate_clone[idx(v)]) continue;
      stack.push_back(idx(q));
    }
  }
  return total;
}

class Planner {
 public:
  Planner(const ir::Program& program, const Target& target, const PlanTail& tail)
      : p0_(program), target_(target), tail_(tail),
        twins_(find_twins(program, target.fit_to_limit && target.device_memory_limit > 0)) {
    std::map<std::tuple<int, ValueId, bool>, size_t> group_of;
    for (size_t t = 0; t < twins_.twins.size(); ++t) {
      const Twin& tw = twins_.twins[t];
      if (!tw.candidate) continue;
      auto [it, fresh] = group_of.emplace(std::tuple{tw.pair, tw.original, tw.stacked >= 0}, groups_.size());
      if (fresh) groups_.push_back({tw.pair, tw.original, tw.stacked >= 0, {}});
      groups_[it->second].twins.push_back(t);
    }
  }

  bool empty() const { return twins_.empty(); }

  // fit_to_limit: every top-level value the all-saved plan keeps on the device across a gap
  // between its readers becomes a candidate too (offloaded over the gap, or kept).
  void add_splits(const Planned& saved) {
    const ir::Program& p = *saved.program;
    const Positions at(p);
    const std::vector<int>& def = at.def;
    const std::vector<std::vector<int>>& readers = at.readers;
    std::vector<char> returned(p.values.size(), 0);
    for (ValueId v : p.outputs) returned[idx(v)] = 1;
    std::vector<int> producer0(p0_.values.size(), -1);
    std::vector<char> first_output0(p0_.values.size(), 0);
    for (size_t e = 0; e < p0_.equations.size(); ++e) {
      for (ValueId v : p0_.equations[e].outputs) producer0[idx(v)] = static_cast<int>(e);
      if (!p0_.equations[e].outputs.empty()) first_output0[idx(p0_.equations[e].outputs[0])] = 1;
    }
    std::vector<char> covered(p0_.values.size(), 0);
    for (const Group& g : groups_)
      if (g.pair < 0) covered[idx(g.original)] = 1;
    struct Split {
      ValueId v;
      int a, b;
      std::vector<ValueId> late;
    };
    std::vector<Split> splits;
    for (size_t v = 0; v < p0_.values.size() && v < p.values.size(); ++v) {
      if (covered[v] || returned[v] || producer0[v] < 0 || def[v] < 0 || readers[v].empty()) continue;
      if (p.type(static_cast<ValueId>(v)).kind != MemoryKind::device) continue;
      if (p0_.equations[idx(producer0[v])].prim == Primitive::device_put) continue;
      std::vector<int> seq = readers[v];
      seq.push_back(def[v]);
      std::sort(seq.begin(), seq.end());
      seq.erase(std::unique(seq.begin(), seq.end()), seq.end());
      int a = -1, b = -1;
      for (size_t i = 1; i < seq.size(); ++i)
        if (seq[i] - seq[i - 1] > b - a) a = seq[i - 1], b = seq[i];
      if (b - a < 3) continue;
      Split s{static_cast<ValueId>(v), a, b, {}};
      bool known = true;
      for (int r : readers[v]) {
        if (r < b) continue;
        ValueId first = p.equations[idx(r)].outputs.empty() ? -1 : p.equations[idx(r)].outputs[0];
        known = known && first >= 0 && idx(first) < first_output0.size() && first_output0[idx(first)];
        s.late.push_back(first);
      }
      if (known) splits.push_back(std::move(s));
    }
    // The largest first, at most a few thousand (compile time).
    std::sort(splits.begin(), splits.end(), [&](const Split& x, const Split& y) {
      return p.type(x.v).size_bytes() > p.type(y.v).size_bytes();
    });
    if (splits.size() > 4000) splits.resize(4000);
    for (Split& s : splits) {
      twins_.twins.push_back(split_entry(s.v, idx(producer0[idx(s.v)]), std::move(s.late)));
      Group g{-1, s.v, false, {twins_.twins.size() - 1}};
      g.early_end = s.a;
      g.late_begin = s.b;
      groups_.push_back(std::move(g));
    }
  }
  size_t num_groups() const { return groups_.size(); }

  // A program the planner made, through the remaining passes.
  Planned plan_from(std::shared_ptr<ir::Program> before_tail) const {
    Planned out;
    out.before_tail = std::move(before_tail);
    auto [program, plan] = tail_(*out.before_tail);
    out.program = program;
    out.plan = plan;
    out.peak = memory_stats(*program, *plan).peak_memory_in_bytes;
    return out;
  }

  Planned plan(const std::vector<Kind>& per_group, const PlanTail* with = nullptr) const {
    std::vector<TwinChoice> choices(twins_.twins.size(), TwinChoice::recompute);
    for (size_t g = 0; g < groups_.size(); ++g)
      for (size_t t : groups_[g].twins)
        choices[t] = per_group[g] == Kind::save ? TwinChoice::save
                     : per_group[g] == Kind::offload ? TwinChoice::offload : TwinChoice::recompute;
    Planned out;
    out.before_tail = apply_twin_choices(p0_, twins_, choices, MemoryKind::pinned_host, &out.stacked);
    auto [program, plan] = (with ? *with : tail_)(*out.before_tail);
    out.program = program;
    out.plan = plan;
    out.peak = memory_stats(*program, *plan).peak_memory_in_bytes;
    return out;
  }

  // The choice posed on the all-saved plan: the bytes the rest of the program holds at each
  // position, and a candidate per group that has a choice to make, with its options.
  AutoProblem problem(const Planned& saved) const {
    const Posing pose = posing(saved);
    AutoProblem prob;
    prob.base = live_bytes(saved);
    prob.limit = target_.device_memory_limit;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const Group& gr = groups_[g];
      const double offload_seconds =
          2.0 * static_cast<double>(pose.bytes[g]) / target_.rates.link_bandwidth_bytes_per_s * pose.exposed_share;
      std::vector<AutoOption> options = gr.late_begin >= 0 ? split_options(gr, pose, offload_seconds)
                                        : gr.pair < 0     ? top_level_options(gr, pose, offload_seconds)
                                                          : scan_pair_options(g, pose, saved, offload_seconds);
      if (options.empty()) continue;  // no choice to make
      // Saved (the first option), the group's bytes are the candidate's, no longer the base's.
      const AutoInterval& kept = options[0].live.at(0);
      for (int q = kept.first; q <= kept.last; ++q) prob.base[idx(q)] -= kept.bytes;
      problem_group_.push_back(g);
      const std::string label =
          fmt::format("%{}{}", gr.original, gr.pair >= 0 ? fmt::format(" (scan pair {})", gr.pair) : "");
      prob.candidates.push_back({label, std::move(options)});
    }
    return prob;
  }

  // Per group, from a solution of problem() (groups it left out get `others`).
  std::vector<Kind> choices(const AutoProblem& prob, const std::vector<int>& choice, Kind others = Kind::save) const {
    std::vector<Kind> out(groups_.size(), others);
    for (size_t c = 0; c < prob.candidates.size(); ++c)
      out[problem_group_[c]] = prob.candidates[c].options[idx(choice[c])].kind;
    return out;
  }

 private:
  // What posing the problem reads: the all-saved plan's positions, the program as differentiation
  // left it, and what an offload costs.
  struct Posing {
    const ir::Program& p;  // the all-saved plan's program
    Positions at;          // where its values are defined and read
    // In the program as differentiation left it: the equations that read each value.
    std::vector<std::vector<size_t>> readers0;
    // Recomputed values that are candidates, at the top level and per scan pair's backward body.
    std::vector<char> clone_is_candidate0;
    std::vector<std::vector<char>> clone_is_candidate_body;
    std::vector<char> top_twin_eq;  // per equation: a top-level twin's recomputation
    std::vector<int64_t> bytes;     // per group: its device bytes (a scan pair's: the stack's)
    double exposed_share = 0;       // of an offload's transfer, the part the compute does not hide
  };

  Posing posing(const Planned& saved) const {
    const ir::Program& p = *saved.program;
    Posing pose{p, Positions(p), std::vector<std::vector<size_t>>(p0_.values.size()), {}, {}, {}, {}, 0.0};
    for (size_t e = 0; e < p0_.equations.size(); ++e)
      for (ValueId v : p0_.equations[e].inputs) pose.readers0[idx(v)].push_back(e);
    find_candidate_clones(pose);
    price_transfers(pose, saved);
    return pose;
  }

  // Which recomputed values are candidates (a candidate's value exists whatever is chosen for it),
  // and which top-level equations recompute a twin.
  void find_candidate_clones(Posing& pose) const {
    pose.clone_is_candidate0.assign(p0_.values.size(), 0);
    pose.clone_is_candidate_body.resize(twins_.pairs.size());
    for (size_t i = 0; i < twins_.pairs.size(); ++i)
      pose.clone_is_candidate_body[i].assign(p0_.equations[twins_.pairs[i].backward].subprograms[0]->values.size(), 0);
    for (const Twin& tw : twins_.twins)
      if (tw.candidate && tw.clone >= 0)
        (tw.pair < 0 ? pose.clone_is_candidate0 : pose.clone_is_candidate_body[idx(tw.pair)])[idx(tw.clone)] = 1;
    pose.top_twin_eq.assign(p0_.equations.size(), 0);
    for (const Twin& tw : twins_.twins)
      if (tw.pair < 0 && tw.clone >= 0) pose.top_twin_eq[tw.clone_eq] = 1;
  }

  // Candidate bytes, then what an offload costs: the share of the step's compute that all
  // candidates' transfers would take says how much of one transfer compute cannot hide.
  void price_transfers(Posing& pose, const Planned& saved) const {
    double transfer_total = 0;
    pose.bytes.assign(groups_.size(), 0);
    for (size_t g = 0; g < groups_.size(); ++g) {
      const Group& gr = groups_[g];
      ValueId v = gr.pair < 0 ? gr.original : saved.stacked[gr.twins[0]];
      if (v >= 0) pose.bytes[g] = pose.p.type(v).size_bytes();
      transfer_total += 2.0 * static_cast<double>(pose.bytes[g]) / target_.rates.link_bandwidth_bytes_per_s;
    }
    double compute = std::max(estimate_step_time(pose.p, target_).compute_seconds, 1e-12);
    // The part of a transfer the compute does not hide, plus the compute it slows where copies run
    // on the compute's own cores (Target::copy_compute_share).
    pose.exposed_share = std::min(1.0, std::clamp(transfer_total / compute, 0.05, 1.0) + target_.copy_compute_share);
  }

  // The all-saved plan's device bytes at each position (n: the outputs read at the end): the
  // arguments and outputs throughout, and each arena buffer over its life.
  std::vector<int64_t> live_bytes(const Planned& saved) const {
    const int last_pos = static_cast<int>(saved.program->equations.size());
    MemoryStats stats = memory_stats(*saved.program, *saved.plan);
    std::vector<int64_t> base(idx(last_pos) + 1,
                              stats.argument_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes);
    for (const Buffer& b : saved.plan->buffers) {
      if (b.kind != MemoryKind::device || b.output_of >= 0) continue;
      for (int q = std::max(b.start, 0); q <= std::min(b.end, last_pos); ++q) base[idx(q)] += b.size;
    }
    return base;
  }

  // A split (fit_to_limit): kept over its whole life, or offloaded over the gap between its early
  // and late readers.
  std::vector<AutoOption> split_options(const Group& gr, const Posing& pose, double offload_seconds) const {
    const ValueId v = gr.original;
    const std::vector<int>& readers = pose.at.readers[idx(v)];
    const int64_t b = pose.p.type(v).size_bytes();
    const int d = pose.at.def[idx(v)], last = *std::max_element(readers.begin(), readers.end());
    return {{Kind::save, 0.0, {{d, last, b}}},
            {Kind::offload, offload_seconds, {{d, std::max(gr.early_end, d + 1), b}, {gr.late_begin - 1, last, b}}}};
  }

  // A top-level value the backward pass reads: kept, offloaded (fetched back before its first
  // backward reader) or recomputed there. None where nothing reads it late.
  std::vector<AutoOption> top_level_options(const Group& gr, const Posing& pose, double offload_seconds) const {
    const ValueId v = gr.original;
    const int last_pos = static_cast<int>(pose.p.equations.size());  // program outputs are read at the end
    if (pose.at.def[idx(v)] < 0 || pose.at.readers[idx(v)].empty()) return {};
    // Backward readers: those that read the recomputation before it was replaced.
    std::unordered_set<int> bwd_pos;
    for (size_t t : gr.twins)
      for (size_t e : pose.readers0[idx(twins_.twins[t].clone)]) {
        const ir::Equation& eq = p0_.equations[e];
        if (pose.top_twin_eq[e] || eq.outputs.empty()) continue;
        auto it = pose.at.of_first_output.find(eq.outputs[0]);
        if (it != pose.at.of_first_output.end()) bwd_pos.insert(it->second);
      }
    for (ValueId o : p0_.outputs)
      for (size_t t : gr.twins)
        if (o == twins_.twins[t].clone) bwd_pos.insert(last_pos);
    int d = pose.at.def[idx(v)], last = d, first_bwd = last_pos + 1, last_fwd = -1;
    for (int r : pose.at.readers[idx(v)]) {
      last = std::max(last, r);
      if (bwd_pos.count(r)) first_bwd = std::min(first_bwd, r);
      else last_fwd = std::max(last_fwd, r);
    }
    if (first_bwd > last_pos) return {};  // nothing reads it late: no choice to make
    const int64_t b = pose.p.type(v).size_bytes();
    const double recompute_seconds = chain_seconds(p0_, gr, twins_, pose.clone_is_candidate0, target_, target_.fuse);
    std::vector<AutoInterval> early;
    if (last_fwd >= 0) early.push_back({d, last_fwd, b});
    AutoInterval late{std::max(first_bwd - 1, d), last, b};
    std::vector<AutoInterval> off = early;
    if (off.empty()) off.push_back({d, d + 1, b});
    off.push_back(late);
    std::vector<AutoInterval> rec = early;
    rec.push_back(late);
    return {{Kind::save, 0.0, {{d, last, b}}},
            {Kind::offload, offload_seconds, off},
            {Kind::recompute, recompute_seconds, rec}};
  }

  // A value of a scan pair, in the stack the forward scan makes for the backward one: kept,
  // offloaded (the stack in host memory, each scan streaming a slice through two buffers) or, where
  // it is not a stacked residual, recomputed (a slice in the backward body while it runs). None
  // where the plan has no such stack.
  std::vector<AutoOption> scan_pair_options(size_t g, const Posing& pose, const Planned& saved,
                                            double offload_seconds) const {
    const Group& gr = groups_[g];
    const ValueId s = saved.stacked[gr.twins[0]];
    if (s < 0 || pose.at.def[idx(s)] < 0 || pose.at.readers[idx(s)].empty()) return {};
    const ir::Program& body = *p0_.equations[twins_.pairs[idx(gr.pair)].backward].subprograms[0];
    const int64_t length = pose.p.type(s).shape.empty() ? 1 : pose.p.type(s).shape[0];
    const int64_t b = pose.bytes[g], slice = length > 0 ? b / length : b;
    const std::vector<int>& readers = pose.at.readers[idx(s)];
    const int d = pose.at.def[idx(s)], last = *std::max_element(readers.begin(), readers.end());
    std::vector<AutoOption> options{{Kind::save, 0.0, {{d, last, b}}},
                                    {Kind::offload, offload_seconds, {{d, d, 2 * slice}, {last, last, 2 * slice}}}};
    if (!gr.stacked) {
      const double recompute_seconds = static_cast<double>(length) *
          chain_seconds(body, gr, twins_, pose.clone_is_candidate_body[idx(gr.pair)], target_, target_.fuse);
      options.push_back({Kind::recompute, recompute_seconds, {{last, last, slice}}});
    }
    return options;
  }

  const ir::Program& p0_;
  const Target& target_;
  const PlanTail& tail_;
  Twins twins_;
  std::vector<Group> groups_;
  mutable std::vector<size_t> problem_group_;  // per problem candidate: its group
};

}  // namespace

namespace {

// The choices for a limit the all-saved plan exceeds, tried in this order until one fits; each is
// planned for real (the model's bytes are an estimate). The result and the report.
class LimitSearch {
 public:
  LimitSearch(Planner& planner, const AutoProblem& problem, int64_t limit, const Planned& smallest, AutoPlanReport& report)
      : planner_(planner), prob_(problem), limit_(limit), smallest_(smallest), r_(report) {}

  // The strategies, in order: the fastest fitting choice the model finds, then ones that trade
  // time for memory more and more bluntly.
  std::optional<std::pair<Planned, std::vector<Kind>>> run() {
    if (auto fit = greedy(prob_, 6, nullptr)) return fit;
    if (auto fit = greedy_without_recomputation()) return fit;
    if (auto fit = fixed(fewest_bytes(), Kind::save)) return fit;
    if (auto fit = fixed(everything_recomputed(), Kind::recompute)) return fit;
    return std::nullopt;
  }
  const Planned& smallest() const { return smallest_; }

 private:
  using Fit = std::optional<std::pair<Planned, std::vector<Kind>>>;

  // The greedy choice on `problem`, planned; while the real plan is over the limit, the model's
  // limit is lowered by the difference and the choice made again. `to_prob` maps an option of
  // `problem` back to the posed problem's (the same where no options were taken out).
  Fit greedy(const AutoProblem& problem, int attempts, const std::vector<std::vector<int>>* to_prob) {
    int64_t model_limit = limit_;
    AutoProblem trial = problem;  // its limit lowered attempt by attempt
    for (int attempt = 0; attempt < attempts; ++attempt) {
      trial.limit = model_limit;
      AutoSolution sol = solve_greedy(trial);
      std::vector<Kind> kinds = planner_.choices(trial, sol.choice);
      Planned planned = planner_.plan(kinds);
      r_.attempts += 1;
      if (planned.peak <= limit_) {
        r_.choice = sol.choice;
        if (to_prob)
          for (size_t c = 0; c < r_.choice.size(); ++c) r_.choice[c] = (*to_prob)[c][idx(r_.choice[c])];
        return std::pair{std::move(planned), std::move(kinds)};
      }
      if (planned.peak < smallest_.peak) smallest_ = planned;
      if (!sol.fits) break;  // the model has no smaller choice to offer
      model_limit -= planned.peak - limit_;
    }
    return std::nullopt;
  }

  // The model's bytes for a recomputation can be too few: recomputing a long chain from its start
  // keeps the chain's values live together (a checkpoint around a whole stack of layers). Then the
  // same search without recomputation, offloading instead.
  Fit greedy_without_recomputation() {
    AutoProblem no_recompute = prob_;
    std::vector<std::vector<int>> to_prob(prob_.candidates.size());
    bool any_removed = false;
    for (size_t c = 0; c < prob_.candidates.size(); ++c) {
      std::vector<AutoOption>& opts = no_recompute.candidates[c].options;
      opts.clear();
      for (size_t o = 0; o < prob_.candidates[c].options.size(); ++o)
        if (prob_.candidates[c].options[o].kind != Kind::recompute) {
          opts.push_back(prob_.candidates[c].options[o]);
          to_prob[c].push_back(static_cast<int>(o));
        }
      if (opts.empty()) {  // recomputation is its only option: it stays
        opts.push_back(prob_.candidates[c].options[0]);
        to_prob[c].push_back(0);
      }
      any_removed = any_removed || opts.size() < prob_.candidates[c].options.size();
    }
    return any_removed ? greedy(no_recompute, 3, &to_prob) : std::nullopt;
  }

  // Per candidate the option with the fewest bytes at its peak: the smallest choice the model knows.
  std::vector<int> fewest_bytes() const {
    std::vector<int> least(prob_.candidates.size(), 0);
    for (size_t c = 0; c < prob_.candidates.size(); ++c) {
      int64_t best = -1;
      for (size_t o = 0; o < prob_.candidates[c].options.size(); ++o) {
        int64_t most = 0;
        for (const AutoInterval& iv : prob_.candidates[c].options[o].live) most = std::max(most, iv.bytes);
        if (best < 0 || most < best) {
          best = most;
          least[c] = static_cast<int>(o);
        }
      }
    }
    return least;
  }

  // Every value recomputed where it can be (stacked residuals saved): the program as
  // differentiation left it, the plan nothing_saveable would make.
  std::vector<int> everything_recomputed() const {
    std::vector<int> recompute(prob_.candidates.size(), 0);
    for (size_t c = 0; c < prob_.candidates.size(); ++c)
      for (size_t o = 0; o < prob_.candidates[c].options.size(); ++o)
        if (prob_.candidates[c].options[o].kind == Kind::recompute) recompute[c] = static_cast<int>(o);
    return recompute;
  }

  Fit fixed(const std::vector<int>& choice, Kind others) {
    std::vector<Kind> kinds = planner_.choices(prob_, choice, others);
    Planned planned = planner_.plan(kinds);
    r_.attempts += 1;
    if (planned.peak <= limit_) {
      r_.choice = choice;
      return std::pair{std::move(planned), std::move(kinds)};
    }
    if (planned.peak < smallest_.peak) smallest_ = planned;
    return std::nullopt;
  }

  Planner& planner_;
  const AutoProblem& prob_;
  int64_t limit_;
  Planned smallest_;
  AutoPlanReport& r_;
};

}  // namespace

namespace {

// Where automatic checkpoints leave nothing to choose (no value is computed both by the forward
// pass and again for the backward pass: where the loss is inside the checkpoint, say, the forward
// pass runs once, inside the backward pass) and the program as it is does not fit the limit:
// RESOURCE_EXHAUSTED that says so, with the plan's own account, rather than the plan's alone, which
// reads as if the planner had tried choices and failed.
void throw_if_over_limit_without_choices(Planner& planner, const ir::Program& program, int64_t limit) {
  const Planned as_is = planner.plan_from(std::make_shared<ir::Program>(program));
  if (as_is.peak <= limit) return;
  try {
    check_device_limit(*as_is.program, *as_is.plan, limit);
  } catch (const Error& e) {
    throw Error(ErrorCode::resource_exhausted,
                fmt::format("the automatic planner had nothing to choose: no value of the checkpointed functions is "
                            "computed both by the forward pass and again for the backward pass (where the loss is inside "
                            "the checkpoint, the forward pass runs only once), so every policy makes this plan: {}",
                            e.message()));
  }
}

// The planner's choices for the values automatic checkpoints (and, under fit_to_limit, every value
// kept across a gap) leave open; RESOURCE_EXHAUSTED where none fits the limit.
bool plan_choices(ir::Program& program, const Target& options, const PlanTail& tail, AutoPlanReport* report,
                  const PlanTail* pose_tail) {
  if (!has_automatic(program) && !(options.fit_to_limit && options.device_memory_limit > 0)) return false;
  Planner planner(program, options, tail);
  if (planner.empty() && !options.fit_to_limit) {
    // No forward twin to choose for: what is automatic is work on forward values alone, done once.
    // It moves to the forward pass where that fits (see hoist_residual_work).
    if (!has_automatic(program)) return false;
    Planned early = planner.plan_from(hoist_residual_work(program));
    if (options.device_memory_limit > 0 && early.peak > options.device_memory_limit) {
      throw_if_over_limit_without_choices(planner, program, options.device_memory_limit);
      return false;
    }
    if (report) report->peak = early.peak;
    program = *early.before_tail;
    return true;
  }
  AutoPlanReport local;
  AutoPlanReport& r = report ? *report : local;
  r.candidates = static_cast<int>(planner.num_groups());  // (splits added below count too)
  const int64_t limit = options.device_memory_limit;
  auto finish = [&](const Planned& chosen, const std::vector<Kind>& kinds) {
    r.peak = chosen.peak;
    r.saved = r.offloaded = r.recomputed = 0;
    for (Kind k : kinds) (k == Kind::save ? r.saved : k == Kind::offload ? r.offloaded : r.recomputed) += 1;
    program = *chosen.before_tail;
    return true;
  };

  std::vector<Kind> all_saved(planner.num_groups(), Kind::save);
  Planned saved = planner.plan(all_saved);
  r.attempts = 1;
  r.all_saved_peak = saved.peak;
  // Everything saved, and the backward pass's work on forward values done in the forward pass: the
  // plan everything_saveable makes, the fastest, where it fits; else everything saved as it is.
  Planned early = planner.plan_from(hoist_residual_work(*saved.before_tail));
  r.attempts += 1;
  if (limit <= 0 || early.peak <= limit) return finish(early, all_saved);
  if (saved.peak <= limit) return finish(saved, all_saved);

  // A choice to make: posed on the all-saved plan (unfused where fusion would rename candidates).
  const Planned posed = pose_tail ? planner.plan(all_saved, pose_tail) : saved;
  if (options.fit_to_limit) {
    planner.add_splits(posed);
    r.candidates = static_cast<int>(planner.num_groups());
  }
  r.problem = planner.problem(posed);
  LimitSearch search(planner, r.problem, limit, saved, r);
  if (auto fit = search.run()) return finish(fit->first, fit->second);
  try {
    check_device_limit(*search.smallest().program, *search.smallest().plan, limit);
  } catch (const Error& e) {
    throw Error(ErrorCode::resource_exhausted,
                fmt::format("the automatic planner found no plan under the limit (it tried {} plans of {} candidate "
                            "values; the smallest): {}", r.attempts, r.candidates, e.message()));
  }
  throw Error(ErrorCode::internal, "automatic planner: the smallest plan fits but was not chosen");
}

// Under fit_to_limit, when no choice of the values fits: the state the step carries (offload_state.h)
// in host memory between calls, the fewest arrays that fit (in state_candidates' order; found by
// doubling, then bisection), each plan with the planner's choices for the values as well.
bool plan_with_state_offloaded(ir::Program& program, const Target& options, const PlanTail& tail,
                               AutoPlanReport* report, const PlanTail* pose_tail, std::span<const char> donated,
                               const Error& without) {
  const std::vector<StateCandidate> state = state_candidates(program, donated);
  if (state.empty()) throw without;
  std::optional<ir::Program> chosen;
  AutoPlanReport chosen_report;
  std::optional<Error> last;
  auto fits = [&](size_t k) {
    ir::Program p = program;
    offload_state(p, std::span(state).first(k));
    AutoPlanReport r;
    try {
      plan_choices(p, options, tail, &r, pose_tail);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::resource_exhausted) throw;
      last = e;
      return false;
    }
    r.state_offloaded = static_cast<int>(k);
    chosen = std::move(p);
    chosen_report = std::move(r);
    return true;
  };
  size_t lo = 0, hi = 1;  // lo does not fit; hi is the next to try
  while (!fits(hi)) {
    if (hi == state.size())
      throw Error(ErrorCode::resource_exhausted,
                  fmt::format("{} (with all {} arrays of state the step carries in host memory too: {})", without.message(),
                              state.size(), last->message()));
    lo = hi;
    hi = std::min(hi * 2, state.size());
  }
  while (hi - lo > 1) {  // the fewest that fit (fits(hi) holds; only a fit replaces the choice)
    const size_t mid = (lo + hi) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  program = std::move(*chosen);
  if (report) *report = std::move(chosen_report);
  return true;
}

}  // namespace

bool plan_automatic(ir::Program& program, const Target& options, const PlanTail& tail, AutoPlanReport* report,
                    const PlanTail* pose_tail, std::span<const char> donated) {
  try {
    return plan_choices(program, options, tail, report, pose_tail);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::resource_exhausted || !options.fit_to_limit || donated.empty()) throw;
    return plan_with_state_offloaded(program, options, tail, report, pose_tail, donated, e);
  }
}

}  // namespace ferry::compiler
