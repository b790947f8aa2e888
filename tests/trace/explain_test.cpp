// explain(): each row is what compiling the step under that policy gives, fits compares the peak
// with the limit, and automatic fits where a built-in policy does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ferry/explain.h"
#include "support/error_of.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;
using ::testing::HasSubstr;
using ferry::testing::error_of;

namespace {

const fm::ScanMlpConfig kSmall{.batch = 16, .width = 32, .hidden = 64, .layers = 3};

fy::LowerUnderPolicy small_mlp() {
  return [](const std::optional<fy::Policy>& p) { return fm::lower_scan_mlp_grad(kSmall, p); };
}

std::vector<fy::ExplainPolicy> names_offloaded() {
  return {{"names offloaded", fy::policies::save_and_offload_only_these_names({}, fm::scan_mlp_names(),
                                                                              fy::MemoryKind::device,
                                                                              fy::MemoryKind::pinned_host)}};
}

const fy::ExplainRow& row(const std::vector<fy::ExplainRow>& rows, const std::string& name) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const fy::ExplainRow& r) { return r.policy == name; });
  if (it == rows.end()) throw std::runtime_error("no row " + name);
  return *it;
}

// The policy each fixed row stands for, compiled directly.
std::optional<fy::Policy> policy_of(const std::string& name) {
  using namespace fy::policies;
  if (name == "no checkpoint") return std::nullopt;
  if (name == "everything_saveable") return everything_saveable;
  if (name == "nothing_saveable") return nothing_saveable;
  if (name == "dots_saveable") return dots_saveable;
  if (name == "dots_with_no_batch_dims_saveable") return dots_with_no_batch_dims_saveable;
  if (name == "offload_dot_with_no_batch_dims")
    return offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host);
  if (name == "names offloaded") return names_offloaded()[0].policy;
  throw std::runtime_error("unknown policy " + name);
}

TEST(Explain, RowsAreWhatCompilingEachPolicyGives) {
  std::vector<fy::ExplainRow> rows = fy::explain(small_mlp(), {}, names_offloaded());
  std::vector<std::string> names;
  for (const fy::ExplainRow& r : rows) names.push_back(r.policy);
  EXPECT_THAT(names, ::testing::ElementsAre("no checkpoint", "everything_saveable", "nothing_saveable", "dots_saveable",
                                            "dots_with_no_batch_dims_saveable", "offload_dot_with_no_batch_dims",
                                            "names offloaded", "automatic"));
  for (const fy::ExplainRow& r : rows) {
    if (r.policy == "automatic") continue;
    SCOPED_TRACE(r.policy);
    fy::Compiled direct = fm::lower_scan_mlp_grad(kSmall, policy_of(r.policy)).compile();
    fy::MemoryStats m = direct.memory_analysis();
    fy::CostStats cost = direct.cost_analysis();
    EXPECT_TRUE(r.error.empty());
    EXPECT_TRUE(r.fits);  // no limit
    ASSERT_TRUE(r.compiled.has_value());
    EXPECT_EQ(r.device_peak, m.peak_memory_in_bytes);
    EXPECT_EQ(r.host_peak, m.host_peak_memory_in_bytes);
    EXPECT_EQ(r.flops, cost.flops);
    EXPECT_EQ(r.recompute_flops, cost.recompute_flops);
    EXPECT_EQ(r.bytes_copied, cost.bytes_to_host + cost.bytes_to_device);
    EXPECT_EQ(r.estimated_seconds, cost.estimated_seconds);
  }
  // The policies differ where they should: recomputing everything costs FLOPs and lowers the
  // peak, offloading copies bytes to the host.
  EXPECT_GT(row(rows, "nothing_saveable").recompute_flops, 0);
  EXPECT_LT(row(rows, "nothing_saveable").device_peak, row(rows, "no checkpoint").device_peak);
  EXPECT_GT(row(rows, "names offloaded").host_peak, 0);
  EXPECT_GT(row(rows, "names offloaded").bytes_copied, 0);
  // The compiled programs run.
  std::vector<fy::Array> args{fm::scan_mlp_input(kSmall, 0)};
  for (const fy::Array& w : fm::scan_mlp_params(kSmall, 0)) args.push_back(w);
  EXPECT_EQ(rows.back().compiled->run(args).size(), 3u);
}

TEST(Explain, FitsComparesEachFixedPolicysOwnPeakWithTheLimit) {
  std::vector<fy::ExplainRow> free = fy::explain(small_mlp(), {}, names_offloaded());
  const int64_t low = row(free, "nothing_saveable").device_peak, high = row(free, "no checkpoint").device_peak;
  ASSERT_LT(low, high);
  const int64_t limit = (low + high) / 2;
  std::vector<fy::ExplainRow> rows = fy::explain(small_mlp(), {.device_memory_limit = limit}, names_offloaded());
  int fitting = 0, not_fitting = 0;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    SCOPED_TRACE(rows[i].policy);
    // Compiled without the limit: the same peak as without one, and fits says whether it is within.
    EXPECT_EQ(rows[i].device_peak, free[i].device_peak);
    EXPECT_EQ(rows[i].fits, rows[i].device_peak <= limit);
    (rows[i].fits ? fitting : not_fitting)++;
  }
  EXPECT_GT(fitting, 0);
  EXPECT_GT(not_fitting, 0);
  // One row on its own is the same row.
  fy::ExplainRow alone =
      fy::explain_policy(small_mlp(), "automatic", fy::policies::automatic, {.device_memory_limit = limit});
  EXPECT_EQ(alone.device_peak, rows.back().device_peak);
  EXPECT_EQ(alone.estimated_seconds, rows.back().estimated_seconds);
  EXPECT_EQ(alone.fits, rows.back().fits);
  std::string table = fy::format_explain(rows, limit);
  EXPECT_THAT(table, HasSubstr("(" + std::to_string(limit) + " bytes)"));
  for (const fy::ExplainRow& r : rows) EXPECT_THAT(table, HasSubstr(r.policy));
  EXPECT_THAT(table, HasSubstr("fastest estimated plan that fits: "));
}

TEST(Explain, AutomaticWithoutALimitKeepsEverything) {
  std::vector<fy::ExplainRow> free = fy::explain(small_mlp(), {});
  // Without a limit automatic keeps everything: the plan of everything_saveable.
  EXPECT_EQ(row(free, "automatic").recompute_flops, row(free, "everything_saveable").recompute_flops);
  EXPECT_EQ(row(free, "automatic").device_peak, row(free, "everything_saveable").device_peak);
}

TEST(Explain, AutomaticFitsWhereABuiltInPolicyFits) {
  std::vector<fy::ExplainRow> free = fy::explain(small_mlp(), {});
  const int64_t low = row(free, "nothing_saveable").device_peak, high = row(free, "no checkpoint").device_peak;
  for (double at : {0.0, 0.25, 0.5, 0.75}) {
    const int64_t limit = low + static_cast<int64_t>(at * static_cast<double>(high - low));
    SCOPED_TRACE(limit);
    std::vector<fy::ExplainRow> rows = fy::explain(small_mlp(), {.device_memory_limit = limit}, names_offloaded());
    const fy::ExplainRow& automatic = rows.back();
    ASSERT_EQ(automatic.policy, "automatic");
    double best_fitting = -1;
    for (size_t i = 0; i + 1 < rows.size(); ++i)
      if (rows[i].fits && (best_fitting < 0 || rows[i].estimated_seconds < best_fitting))
        best_fitting = rows[i].estimated_seconds;
    ASSERT_GE(best_fitting, 0) << "nothing_saveable fits its own peak";
    EXPECT_TRUE(automatic.fits) << automatic.error;
    EXPECT_LE(automatic.device_peak, limit);
    // The planner minimises the estimated time; the fixed policies are plans it may choose.
    EXPECT_LE(automatic.estimated_seconds, best_fitting * 1.05);
  }
}

TEST(Explain, APlanNothingFitsIsARefusedRowNotAnError) {
  // A limit below the arguments themselves: no plan can fit.
  std::vector<fy::ExplainRow> rows = fy::explain(small_mlp(), {.device_memory_limit = 1024});
  for (const fy::ExplainRow& r : rows) EXPECT_FALSE(r.fits) << r.policy;
  const fy::ExplainRow& automatic = rows.back();
  EXPECT_THAT(automatic.error, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_FALSE(automatic.compiled.has_value());
  std::string table = fy::format_explain(rows, 1024);
  EXPECT_THAT(table, HasSubstr("automatic                          refused: RESOURCE_EXHAUSTED"));
  EXPECT_THAT(table, HasSubstr("no plan fits the limit"));
}

TEST(Explain, BadArgumentsAreInvalidArgument) {
  EXPECT_EQ(error_of([] { fy::explain({}, {}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(error_of([] { fy::explain_policy({}, "x", std::nullopt, {}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(error_of([] { fy::explain(small_mlp(), {.device_memory_limit = -1}); }).code(),
            fy::ErrorCode::invalid_argument);
  EXPECT_EQ(error_of([] { fy::explain(small_mlp(), {}, {{"", fy::policies::dots_saveable}}); }).code(),
            fy::ErrorCode::invalid_argument);
  fy::Error dup = error_of([] { fy::explain(small_mlp(), {}, {{"nothing_saveable", fy::policies::dots_saveable}}); });
  EXPECT_EQ(dup.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(dup.message(), HasSubstr("'nothing_saveable'"));
  // Bad rates reach compile's own check.
  EXPECT_EQ(error_of([] { fy::explain(small_mlp(), {.rates = fy::Rates{.compute_flops_per_s = 0}}); }).code(),
            fy::ErrorCode::invalid_argument);
  // A policy that throws is the caller's error, not a row.
  fy::Policy throws([](const fy::Equation&) -> fy::Decision { throw std::runtime_error("boom"); }, "throws");
  EXPECT_EQ(error_of([&] { fy::explain(small_mlp(), {}, {{"throws", throws}}); }).code(),
            fy::ErrorCode::invalid_argument);
}

}  // namespace
