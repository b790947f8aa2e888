#include "property/schedule_quality.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/memory_plan.h"
#include "compiler/pass_util.h"
#include "compiler/pipeline.h"
#include "ferry/autodiff.h"
#include "ir/printer.h"
#include "driver/lowered.h"

namespace ferry::property {
namespace {

constexpr size_t kDevice = 0;  // compiler::kind_index(MemoryKind::device)

using Planner = std::function<std::shared_ptr<const compiler::MemoryPlan>(const ir::Program&)>;

// Measures `region` (planned as `plan`) and its bodies. `replan` plans a replacement of the region
// in place of it (a body is planned by its enclosing program), so that the optimal order can be
// checked against the plan itself.
// With `explain`, each solved region's text in the pipeline's order and in the optimal one is
// appended to it.
void measure_region(const ir::Program& region, const compiler::MemoryPlan& plan, const Planner& replan,
                    const std::string& where, const compiler::OptimalScheduleOptions& options, ProgramQuality& out,
                    std::string* explain) {
  const size_t n = region.equations.size();
  std::vector<size_t> as_scheduled(n);
  for (size_t i = 0; i < n; ++i) as_scheduled[i] = i;
  int64_t ferry = plan.peak_live[kDevice];
  int64_t modelled = compiler::device_peak_of_order(region, plan, as_scheduled);
  if (modelled != ferry)
    out.model_errors.push_back(fmt::format("{}: the model gives {} bytes for the pipeline's order, the plan {}", where,
                                           modelled, ferry));
  std::optional<compiler::OptimalSchedule> best = compiler::optimal_schedule(region, plan, options);
  if (!best) {
    out.too_large.push_back(static_cast<int>(n));
  } else if (best->peak > 0) {
    ir::Program reordered = region;
    compiler::reorder(reordered, best->order);
    int64_t planned = replan(reordered)->peak_live[kDevice];
    if (planned != best->peak)
      out.model_errors.push_back(fmt::format("{}: the optimal order's plan peaks at {} bytes, the optimum is {}", where,
                                             planned, best->peak));
    if (best->peak > ferry)
      out.model_errors.push_back(fmt::format("{}: the optimum {} is above the pipeline's order's {}", where, best->peak,
                                             ferry));
    out.regions.push_back({where, static_cast<int>(n), ferry, best->peak, plan.arena_size[kDevice]});
    if (explain)
      *explain += fmt::format("== {}: {} equations, the pipeline's order peaks at {} bytes:\n{}"
                              "== an optimal order, {} bytes:\n{}",
                              where, n, ferry, ir::print(region), best->peak, ir::print(reordered));
  }
  for (size_t e = 0; e < n; ++e) {
    const auto& body_plan = plan.bodies[e];
    if (!body_plan) continue;
    const ir::Equation& eq = region.equations[e];
    Planner body_replan = [&region, &replan, e](const ir::Program& body) {
      ir::Program outer = region;
      outer.equations[e].subprograms.at(0) = std::make_shared<const ir::Program>(body);
      return replan(outer)->bodies[e]->plan;
    };
    measure_region(*eq.subprograms.at(0), *body_plan->plan, body_replan,
                   fmt::format("{}/{}:{}", where, e, primitive_name(eq.prim)), options, out, explain);
  }
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 1;
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

double ProgramQuality::ratio() const {
  const RegionQuality* w = worst();
  return w ? w->ratio() : 1.0;
}

const RegionQuality* ProgramQuality::worst() const {
  const RegionQuality* w = nullptr;
  for (const RegionQuality& r : regions)
    if (!w || r.ratio() > w->ratio()) w = &r;
  return w;
}

ProgramQuality measure_schedule(const RandomProgram& p, const QualityOptions& options, std::string* explain) {
  ProgramQuality out;
  out.seed = p.seed;
  out.size = p.size;
  try {
    // The gradient, as the property tests compile it: the backward pass is where order matters.
    auto grad_program = jit([&p](std::vector<Tensor> xs) {
      return grad([&p](const std::vector<Tensor>& ys) { return emit_loss(p, ys, true); })(xs);
    }, "random_grad");
    std::vector<ShapeDtype> specs;
    for (const Shape& s : p.arguments) specs.push_back({s, DType::f64});
    Lowered lowered = grad_program.lower(specs);
    std::shared_ptr<const ir::Program> compiled;
    if (options.last_pass.empty()) {
      compiled = compiler::run_pipeline(*lowered.impl().program, {});
    } else {
      auto partial = std::make_shared<ir::Program>(*lowered.impl().program);
      bool found = false;
      for (const compiler::Pass& pass : compiler::passes_for({})) {
        pass.run(*partial);
        if ((found = pass.name == options.last_pass)) break;
      }
      if (!found) throw std::invalid_argument("no pass named " + options.last_pass);
      compiled = partial;
    }
    Planner top = [](const ir::Program& q) { return compiler::plan_memory(q, /*outputs_external=*/false); };
    measure_region(*compiled, *top(*compiled), top, "main", options.limits, out, explain);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::vector<ProgramQuality> measure_programs(uint32_t first, int want, const QualityOptions& options) {
  std::vector<ProgramQuality> out;
  int compared = 0;
  for (uint32_t seed = first; compared < want && seed < first + 4 * static_cast<uint32_t>(want); ++seed) {
    out.push_back(measure_schedule(generate_program(seed, quality_size_for(seed)), options));
    compared += out.back().compared();
  }
  return out;
}

QualitySummary summarize(const std::vector<ProgramQuality>& results) {
  QualitySummary s;
  std::vector<double> ratios;
  std::vector<const ProgramQuality*> compared;
  for (const ProgramQuality& r : results) {
    ++s.programs;
    s.too_large += static_cast<int>(r.too_large.size());
    for (int n : r.too_large) s.smallest_refused = s.smallest_refused ? std::min(s.smallest_refused, n) : n;
    for (const RegionQuality& q : r.regions) s.largest_solved = std::max(s.largest_solved, q.equations);
    if (!r.compared()) continue;
    ++s.compared;
    s.regions += static_cast<int>(r.regions.size());
    ratios.push_back(r.ratio());
    compared.push_back(&r);
    s.optimal += r.ratio() == 1.0;
    s.above_worst += r.ratio() > kQualityWorst;
  }
  std::sort(ratios.begin(), ratios.end());
  s.p50 = percentile(ratios, 0.50);
  s.p90 = percentile(ratios, 0.90);
  s.p95 = percentile(ratios, 0.95);
  s.p99 = percentile(ratios, 0.99);
  s.max = ratios.empty() ? 1 : ratios.back();
  s.within_ratio = ratios.empty() ? 1
                                  : static_cast<double>(std::count_if(ratios.begin(), ratios.end(),
                                                                      [](double x) { return x <= kQualityRatio; })) /
                                        static_cast<double>(ratios.size());
  std::stable_sort(compared.begin(), compared.end(),
                   [](const ProgramQuality* a, const ProgramQuality* b) { return a->ratio() > b->ratio(); });
  for (size_t i = 0; i < compared.size() && i < 5 && compared[i]->ratio() > 1.0; ++i) s.worst.push_back(compared[i]);
  return s;
}

std::string describe(const QualitySummary& s) {
  std::string out = fmt::format(
      "ferry's device peak over the optimum (per program: its worst region), {} programs compared of {} "
      "({} regions of up to {} equations; {} regions over the reference's limits, the smallest of {})\n"
      "  p50 {:.3f}  p90 {:.3f}  p95 {:.3f}  p99 {:.3f}  max {:.3f}\n"
      "  optimal: {:.1f}%   within {:.2f}x: {:.1f}% (bar {:.0f}%)   above {:.1f}x: {} (bar 0)   {}\n",
      s.compared, s.programs, s.regions, s.largest_solved, s.too_large, s.smallest_refused, s.p50, s.p90, s.p95, s.p99,
      s.max,
      s.compared ? 100.0 * s.optimal / s.compared : 100.0, kQualityRatio, 100.0 * s.within_ratio, 100.0 * kQualityShare,
      kQualityWorst, s.above_worst, s.meets_the_bar() ? "MEETS THE BAR" : "misses the bar");
  for (const ProgramQuality* p : s.worst) {
    const RegionQuality& r = *p->worst();
    out += fmt::format("  worst: seed {} size {}: {:.3f}x in {} ({} equations): {} bytes, optimum {}\n", p->seed,
                       p->size, r.ratio(), r.where, r.equations, r.ferry, r.optimal);
  }
  return out;
}

}  // namespace ferry::property
