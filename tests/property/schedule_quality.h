// ferry's schedule held to the exact optimum (compiler/optimal_schedule.h) on random programs: the
// gradient of a random program's loss is lowered and run through the compiler's pipeline, and each
// region (the program and every body) small enough for the reference gets the device peak of the
// pipeline's order beside the minimum over every valid order. Shared by the property test and
// bench/plan_quality.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/optimal_schedule.h"
#include "property/random_program.h"

namespace ferry::property {

// The bar (#11): at most 1.10x the optimum on 95% of programs, never above 1.5x.
inline constexpr double kQualityRatio = 1.10;
inline constexpr double kQualityShare = 0.95;
inline constexpr double kQualityWorst = 1.5;

struct QualityOptions {
  // The reference's limits: any region whose sets of runnable-first equations under the pipeline's
  // peak number at most max_states (narrow regions of up to 64 equations qualify, not only tiny
  // ones); about 5 s for 1,000 programs on one core.
  compiler::OptimalScheduleOptions limits{.max_equations = 64, .max_states = 50000};
  // Empty: the whole pipeline (the order that runs: the scheduler's, then place_copies moving the
  // halves of each copy to hide transfers). A pass name: the order after that pass ("schedule").
  std::string last_pass;
};

struct RegionQuality {
  std::string where;         // "main", or the path of equations to a body: "main/12:scan"
  int equations = 0;
  int64_t ferry = 0;         // device peak of the pipeline's order (MemoryPlan::peak_live)
  int64_t optimal = 0;       // minimum over every valid order (same model)
  int64_t arena = 0;         // the pipeline's device arena for the region (packing included)
  double ratio() const { return optimal > 0 ? static_cast<double>(ferry) / static_cast<double>(optimal) : 1.0; }
};

struct ProgramQuality {
  uint32_t seed = 0;
  int size = 0;
  std::vector<RegionQuality> regions;  // regions the reference solved, with device buffers
  std::vector<int> too_large;          // the sizes (equations) of regions the reference refused
  // Disagreements between the reference's model and the plan, which must never happen: the model's
  // peak of the pipeline's order against peak_live, and the plan of the optimal order against the
  // optimum. Each says where.
  std::vector<std::string> model_errors;
  std::string error;                   // lowering or compiling threw (the program is not compared)
  bool compared() const { return error.empty() && !regions.empty(); }
  // The worst region's ratio: a program is as good as its worst-scheduled region.
  double ratio() const;
  const RegionQuality* worst() const;
};

// With `explain`, the text of each solved region in the pipeline's order and in an optimal order is
// appended to it (bench/plan_quality --show SEED).
ProgramQuality measure_schedule(const RandomProgram& p, const QualityOptions& options = {},
                                std::string* explain = nullptr);

// Programs sizes cycle through 2..17 top-level ops, as the property tests do.
inline int quality_size_for(uint32_t seed) { return 2 + static_cast<int>(seed % 16); }

// Programs from seed `first` on until `want` are compared (a program may have no region in reach of
// the reference, or no device buffer at all), at most 4 * want seeds. The test and the benchmark
// measure the same programs this way.
std::vector<ProgramQuality> measure_programs(uint32_t first, int want, const QualityOptions& options = {});

struct QualitySummary {
  int programs = 0, compared = 0, regions = 0, too_large = 0, optimal = 0;  // optimal: ratio exactly 1
  int largest_solved = 0, smallest_refused = 0;  // equations in a region
  double p50 = 1, p90 = 1, p95 = 1, p99 = 1, max = 1;
  double within_ratio = 1;                    // share of compared programs at most kQualityRatio
  int above_worst = 0;                        // programs above kQualityWorst
  std::vector<const ProgramQuality*> worst;   // up to 5, worst first
  bool meets_the_bar() const { return within_ratio >= kQualityShare && above_worst == 0; }
};
QualitySummary summarize(const std::vector<ProgramQuality>& results);

// The distribution in lines: counts, percentiles, the share within the bar and the worst programs
// (seed, size, region, peaks) with the command that rebuilds each.
std::string describe(const QualitySummary& s);

}  // namespace ferry::property
