// The automatic planner on random programs: every checkpoint of a random program (tests/property)
// under policies::automatic, compiled with a device limit drawn between the peak with everything
// recomputed (every checkpoint nothing_saveable) and the peak with everything saved (automatic
// without a limit). The plan must fit, its measured high-water marks must equal the planned peaks,
// and its gradients must equal those of the same program without checkpoints.
// FERRY_AUTO_PROGRAMS=N checks N programs (default 500), FERRY_AUTO_FIRST_SEED=S starts at seed S.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "ferry/ferry.h"
#include "property/properties.h"
#include "property/random_program.h"
#include "support/gradient_check.h"
#include "support/memory_check.h"

namespace fy = ferry;
namespace pr = ferry::property;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

auto grad_program(const pr::RandomProgram& p, bool checkpoints) {
  return fy::jit([&p, checkpoints](std::vector<fy::Tensor> xs) {
    return fy::grad([&p, checkpoints](const std::vector<fy::Tensor>& ys) { return pr::emit_loss(p, ys, checkpoints); })(xs);
  }, "random_grad");
}

// "" when each gradient is within tolerance of the one wanted (relative to the largest entry of
// its argument, at least 1: recomputation may reorder sums of cotangents).
std::string gradient_difference(const std::vector<fy::Array>& got, const std::vector<fy::Array>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double> g = got.at(i).to_vector<double>(), w = want[i].to_vector<double>();
    double scale = 1;
    for (double x : w) scale = std::isfinite(x) ? std::max(scale, std::abs(x)) : scale;
    for (size_t j = 0; j < w.size(); ++j) {
      if (std::isnan(g[j]) && std::isnan(w[j])) continue;
      if (g[j] == w[j] || std::abs(g[j] - w[j]) <= pr::kGradientTolerance * scale) continue;
      return "argument " + std::to_string(i) + " element " + std::to_string(j) + ": " + std::to_string(g[j]) +
             " automatic, " + std::to_string(w[j]) + " without checkpoints";
    }
  }
  return "";
}

}  // namespace

TEST(AutomaticPlanner, RandomProgramsFitBetweenAllRecomputedAndAllSavedWithTheSameGradients) {
  const int programs = env_int("FERRY_AUTO_PROGRAMS", 500);
  uint32_t seed = static_cast<uint32_t>(env_int("FERRY_AUTO_FIRST_SEED", 1));
  int checked = 0, decided = 0, offloading = 0, recomputing = 0, failures = 0;
  std::mt19937 rng(12345);
  for (; checked < programs && failures < 3; ++seed) {
    pr::RandomProgram base = pr::generate_program(seed, 4 + static_cast<int>(seed % 14));
    if (!pr::has_checkpoint(base.main)) continue;
    pr::RandomProgram automatic = pr::with_policy(base, pr::PolicySpec::automatic);
    pr::RandomProgram nothing = pr::with_policy(base, pr::PolicySpec::nothing);
    std::vector<fy::Array> args = fy::testing::random_f64(base.arguments, seed);
    ++checked;
    SCOPED_TRACE("seed " + std::to_string(seed) + " (FERRY_AUTO_FIRST_SEED=" + std::to_string(seed) +
                 " FERRY_AUTO_PROGRAMS=1)");
    try {
      fy::Lowered lowered = grad_program(automatic, true).lower(args);
      int64_t saved = lowered.compile().memory_analysis().peak_memory_in_bytes;
      int64_t recomputed = grad_program(nothing, true).lower(args).compile().memory_analysis().peak_memory_in_bytes;
      std::vector<fy::Array> want = grad_program(base, false).lower(args).compile().run(args);
      // Where saving everything peaks lower than recomputing everything, that is the fastest plan
      // and fits every limit in the range: only the other programs leave a choice to make.
      int64_t lo = std::min(saved, recomputed);
      int64_t limit = lo + static_cast<int64_t>(std::uniform_real_distribution<double>(0, 1)(rng) * static_cast<double>(saved - lo));
      decided += limit < saved;
      fy::Compiled c = lowered.compile({.device_memory_limit = limit, .checked = true});
      EXPECT_LE(c.memory_analysis().peak_memory_in_bytes, limit) << c.memory_report();
      std::vector<fy::Array> got = c.run(args);
      std::string mismatch = fy::testing::high_water_mismatch(c);
      EXPECT_EQ(mismatch, "");
      std::string diff = gradient_difference(got, want);
      EXPECT_EQ(diff, "") << c.as_text();
      offloading += c.memory_analysis().host_temp_size_in_bytes > 0;
      recomputing += c.cost_analysis().recompute_flops > 0;
      failures += !mismatch.empty() || !diff.empty();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      ++failures;
    }
  }
  std::printf("automatic: %d programs with checkpoints, %d with a limit below the all-saved peak; %d plans offload, "
              "%d recompute\n", checked, decided, offloading, recomputing);
  if (programs >= 100) {
    EXPECT_GT(decided, checked / 10) << "too few limits force a choice";
    EXPECT_GT(offloading, 0);
  }
}

// fit_to_limit on the same random programs without checkpoints: under a limit drawn between half
// the plan's peak and the peak, a plan that compiles fits, measures what it planned and gives the
// same gradients; some must fit below the peak (values kept across a gap are offloaded).
TEST(AutomaticPlanner, FitToLimitOffloadsWithoutCheckpoints) {
  const int programs = env_int("FERRY_AUTO_PROGRAMS", 500) / 2;
  std::mt19937 rng(777);
  int fitted_below = 0, refused = 0, failures = 0;
  for (uint32_t seed = 1; seed <= static_cast<uint32_t>(programs) && failures < 3; ++seed) {
    pr::RandomProgram p = pr::generate_program(seed, 4 + static_cast<int>(seed % 14));
    std::vector<fy::Array> args = fy::testing::random_f64(p.arguments, seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    try {
      fy::Lowered lowered = grad_program(p, false).lower(args);
      fy::Compiled plain = lowered.compile();
      std::vector<fy::Array> want = plain.run(args);
      int64_t peak = plain.memory_analysis().peak_memory_in_bytes;
      int64_t limit = peak / 2 + static_cast<int64_t>(std::uniform_real_distribution<double>(0, 0.5)(rng) * static_cast<double>(peak));
      fy::Compiled c = [&] {
        try {
          return lowered.compile({.device_memory_limit = limit, .fit_to_limit = true, .checked = true});
        } catch (const fy::Error& e) {
          if (e.code() != fy::ErrorCode::resource_exhausted) throw;
          ++refused;
          return plain;
        }
      }();
      if (c.memory_analysis().peak_memory_in_bytes == peak) continue;
      EXPECT_LE(c.memory_analysis().peak_memory_in_bytes, limit);
      ++fitted_below;
      std::vector<fy::Array> got = c.run(args);
      std::string mismatch = fy::testing::high_water_mismatch(c);
      std::string diff = gradient_difference(got, want);
      EXPECT_EQ(mismatch, "");
      EXPECT_EQ(diff, "") << c.as_text();
      failures += !mismatch.empty() || !diff.empty();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      ++failures;
    }
  }
  std::printf("fit_to_limit: %d programs, %d fitted below their peak, %d refused\n", programs, fitted_below, refused);
  if (programs >= 50) EXPECT_GT(fitted_below, programs / 20);
}


// Without a limit, automatic does no more work than everything_saveable on any random program: no
// more FLOPs in the step. (Which of them are counted as recomputation may differ: work a scan's
// backward body does on forward values runs there once under automatic, in the forward body under
// everything_saveable.)
//
// Known exceptions, each still more work (the test fails when one is fixed, so that the list
// shrinks): random programs whose checkpoint recomputes scans inside scans or whose backward
// scans do work on forward values that everything_saveable does in the forward body; what
// automatic does there is recompute part of it. 3 of the first 500 programs with checkpoints.
const std::set<uint32_t> kMoreWorkThanEverythingSaveable = {40, 643, 956};

TEST(AutomaticPlanner, WithoutALimitNoMoreWorkThanEverythingSaveable) {
  const int programs = env_int("FERRY_AUTO_PROGRAMS", 500);
  uint32_t seed = static_cast<uint32_t>(env_int("FERRY_AUTO_FIRST_SEED", 1));
  int checked = 0, failures = 0, known = 0;
  for (; checked < programs && failures < 5; ++seed) {
    pr::RandomProgram base = pr::generate_program(seed, 4 + static_cast<int>(seed % 14));
    if (!pr::has_checkpoint(base.main)) continue;
    ++checked;
    SCOPED_TRACE("seed " + std::to_string(seed) + " (FERRY_AUTO_FIRST_SEED=" + std::to_string(seed) +
                 " FERRY_AUTO_PROGRAMS=1)");
    std::vector<fy::Array> args = fy::testing::random_f64(base.arguments, seed);
    fy::Compiled automatic = grad_program(pr::with_policy(base, pr::PolicySpec::automatic), true).lower(args).compile();
    fy::Compiled everything = grad_program(pr::with_policy(base, pr::PolicySpec::everything), true).lower(args).compile();
    const double a = automatic.cost_analysis().flops, e = everything.cost_analysis().flops;
    if (std::getenv("FERRY_AUTO_SHOW") && a > e)
      std::printf("automatic:\n%s\neverything_saveable:\n%s\n", automatic.as_text().c_str(), everything.as_text().c_str());
    if (kMoreWorkThanEverythingSaveable.count(seed)) {
      ++known;
      EXPECT_GT(a, e) << "automatic now does no more work here: take the seed off the list";
      continue;
    }
    EXPECT_LE(a, e) << "automatic:\n" << automatic.as_text() << "\neverything_saveable:\n" << everything.as_text();
    failures += a > e;
  }
  std::printf("automatic without a limit: %d programs with checkpoints, %d known to do more work\n", checked, known);
}
