// The schedule reference: known optimal peaks of hand-written programs, the dynamic program against
// brute-force enumeration of every valid order, and the memory model against the plan itself.
#include "compiler/optimal_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include "compiler/lower_copies.h"
#include "compiler/memory_plan.h"
#include "compiler/pass_util.h"
#include "compiler/random_flat_ir.h"
#include "ferry/error.h"
#include "ir/parser.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

constexpr size_t kDevice = 0;  // kind_index(MemoryKind::device)

// The plan's own device peak for `p` put in `order`.
int64_t planned_peak(const ir::Program& p, const std::vector<size_t>& order) {
  ir::Program q = p;
  reorder(q, order);
  prims::verify(q);
  return plan_memory(q, false)->peak_live[kDevice];
}

std::vector<size_t> identity(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

// Calls `visit` with every valid order of `p`.
void each_valid_order(const ir::Program& p, const std::function<void(const std::vector<size_t>&)>& visit) {
  const size_t n = p.equations.size();
  std::vector<int> producer(p.values.size(), -1);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : p.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);
  std::vector<char> done(n, 0);
  std::vector<size_t> order;
  std::function<void()> extend = [&] {
    if (order.size() == n) return visit(order);
    for (size_t e = 0; e < n; ++e) {
      if (done[e]) continue;
      bool ready = true;
      for (ir::ValueId v : p.equations[e].inputs) {
        int pe = producer[static_cast<size_t>(v)];
        ready = ready && (pe < 0 || done[static_cast<size_t>(pe)]);
      }
      if (!ready) continue;
      done[e] = 1;
      order.push_back(e);
      extend();
      order.pop_back();
      done[e] = 0;
    }
  };
  extend();
}

// Two branches, each a large value reduced to a scalar: finishing one before starting the other
// keeps one large value live at a time.
const char* kDiamond =
    "program @main(%0: f32[1024]) {\n"
    "  %1 = exp %0 : f32[1024]\n"
    "  %2 = sin %0 : f32[1024]\n"
    "  %3 = reduce_sum[axes=[0]] %1 : f32[]\n"
    "  %4 = reduce_sum[axes=[0]] %2 : f32[]\n"
    "  %5 = add %3, %4 : f32[]\n"
    "  return %5\n"
    "}\n";

TEST(OptimalSchedule, DiamondFinishesOneBranchFirst) {
  auto p = ir::parse(kDiamond);
  auto plan = plan_memory(*p, false);
  // As written: both large values, then a scalar beside them.
  EXPECT_EQ(device_peak_of_order(*p, *plan, identity(5)), 4096 + 4096 + 64);
  EXPECT_EQ(plan->peak_live[kDevice], 4096 + 4096 + 64);
  std::optional<OptimalSchedule> best = optimal_schedule(*p, *plan);
  ASSERT_TRUE(best.has_value());
  // One large value and both scalars (the second reduction runs while the first scalar waits).
  EXPECT_EQ(best->peak, 4096 + 64 + 64);
  EXPECT_EQ(planned_peak(*p, best->order), best->peak);
  EXPECT_TRUE(best->order == (std::vector<size_t>{0, 2, 1, 3, 4}) || best->order == (std::vector<size_t>{1, 3, 0, 2, 4}))
      << ::testing::PrintToString(best->order);
}

// sin's result (4 KiB, an output) is read first in program order, and a 16 KiB broadcast branch
// reduced to a scalar is independent of it. (When outputs lived in the arena, an output made early
// was live through everything after it and the optimum ran the branch first.)
const char* kOutputMadeEarly =
    "program @main(%0: f32[1024]) {\n"
    "  %1 = sin %0 : f32[1024]\n"
    "  %2 = reduce_sum[axes=[0]] %1 : f32[]\n"
    "  %3 = reduce_sum[axes=[0]] %0 : f32[]\n"
    "  %4 = broadcast_in_dim[shape=[4096], broadcast_dimensions=[]] %3 : f32[4096]\n"
    "  %5 = exp %4 : f32[4096]\n"
    "  %6 = reduce_sum[axes=[0]] %5 : f32[]\n"
    "  %7 = add %2, %6 : f32[]\n"
    "  return %7, %1\n"
    "}\n";

// Outputs are allocations of their own (issue 12), held for the whole call whatever the order, so
// sin's output is in no order's arena: only the scalars beside the broadcast branch differ.
TEST(OptimalSchedule, OutputsCostTheSameInEveryOrder) {
  auto p = ir::parse(kOutputMadeEarly);
  auto plan = plan_memory(*p, false);
  // As written: both scalars beside the broadcast (exp writes in place).
  EXPECT_EQ(device_peak_of_order(*p, *plan, identity(7)), 64 + 64 + 16384);
  // Needed-soonest first: sin, then the broadcast branch, then sin's sum.
  EXPECT_EQ(device_peak_of_order(*p, *plan, {0, 2, 3, 4, 5, 1, 6}), 64 + 16384);
  std::optional<OptimalSchedule> best = optimal_schedule(*p, *plan);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->peak, 16384 + 64);
  EXPECT_EQ(planned_peak(*p, best->order), best->peak);
}

// scan_mlp's backward step under save_only_these_names (shapes shrunk 32x): the cotangent through
// the second layer (%4) and a recomputed first-layer activation (%5) are each 1 KiB. The body's
// outputs are the caller's buffers (planned with outputs_external), so only those two are its own.
// Making %4 first keeps it live while the recomputation runs (what the scheduler did, and the
// benchmark's scan_mlp paid 1 MiB for it at full size); finishing the recomputation's only reader
// first keeps one at a time.
const char* kBackwardScanBody =
    "program @scan_bwd_body(%0: f32[8,8], %1: f32[8,8], %2: f32[8,32], %3: f32[32,8]) {\n"
    "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[1], lhs_batch=[], rhs_batch=[]] %0, %3 : f32[8,32]\n"
    "  %5 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %1, %2 : f32[8,32] !remat\n"
    "  %6 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %0 : f32[32,8]\n"
    "  %7 = dot_general[lhs_contracting=[1], rhs_contracting=[1], lhs_batch=[], rhs_batch=[]] %4, %2 : f32[8,8]\n"
    "  %8 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %1, %4 : f32[8,32]\n"
    "  return %7, %8, %6\n"
    "}\n";

TEST(OptimalSchedule, BodyOutputsAreTheCallersAndRecomputationGoesFirst) {
  auto p = ir::parse(kBackwardScanBody);
  auto plan = plan_memory(*p, /*outputs_external=*/true);
  EXPECT_EQ(device_peak_of_order(*p, *plan, identity(5)), 1024 + 1024);
  EXPECT_EQ(plan->peak_live[kDevice], 1024 + 1024);
  std::optional<OptimalSchedule> best = optimal_schedule(*p, *plan);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->peak, 1024);
  // The recomputation and its reader first; the two readers of %4 may come in either order.
  EXPECT_EQ(std::vector<size_t>(best->order.begin(), best->order.begin() + 3), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(device_peak_of_order(*p, *plan, best->order), 1024);
}

TEST(OptimalSchedule, ScanHoldsItsBodyRegionCarryScratchAndOutputs) {
  auto p = ir::parse(
      "program @main(%0: f32[64], %1: f32[8,64]) {\n"
      "  %2, %3 = scan[length=8, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[64], f32[8,64] {\n"
      "    program @body(%0: f32[64], %1: f32[64]) {\n"
      "      %2 = mul %0, %1 : f32[64]\n"
      "      %3 = sin %2 : f32[64]\n"
      "      %4 = cos %2 : f32[64]\n"
      "      return %3, %4\n"
      "    }\n"
      "  }\n"
      "  %4 = reduce_sum[axes=[0,1]] %3 : f32[]\n"
      "  return %4\n"
      "}\n");
  auto plan = plan_memory(*p, false);
  std::optional<OptimalSchedule> top = optimal_schedule(*p, *plan);
  ASSERT_TRUE(top.has_value());
  // Final carry, its scratch twin, the body region and the stacked ys, all at the scan.
  EXPECT_EQ(top->peak, 256 + 256 + 256 + 8 * 256);
  EXPECT_EQ(top->peak, plan->peak_live[kDevice]);
  // The body's outputs are the caller's: only the product is the body's own.
  const ir::Program& body = *p->equations[0].subprograms[0];
  std::optional<OptimalSchedule> inner = optimal_schedule(body, *plan->bodies[0]->plan);
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->peak, 256);
}

TEST(OptimalSchedule, RefusesRegionsOverItsLimits) {
  auto p = ir::parse(kDiamond);
  auto plan = plan_memory(*p, false);
  EXPECT_FALSE(optimal_schedule(*p, *plan, {.max_equations = 4}).has_value());
  // The diamond's sets that can run first, by size: {}; {exp} {sin}; {exp sin} {exp, its sum}
  // {sin, its sum}; both and one sum (two); both and both sums; everything. 10 in all.
  EXPECT_FALSE(optimal_schedule(*p, *plan, {.max_states = 9}).has_value());
  std::optional<OptimalSchedule> exact = optimal_schedule(*p, *plan, {.max_states = 10});
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(exact->states, 10);
  auto empty = ir::parse("program @main(%0: f32[4]) {\n  return %0\n}\n");
  std::optional<OptimalSchedule> none = optimal_schedule(*empty, *plan_memory(*empty, false));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->peak, 0);
  EXPECT_TRUE(none->order.empty());
}

TEST(OptimalSchedule, RejectsOrdersThatAreNotValid) {
  auto p = ir::parse(kDiamond);
  auto plan = plan_memory(*p, false);
  EXPECT_THROW(device_peak_of_order(*p, *plan, {2, 0, 1, 3, 4}), Error);  // a reduction before its input
  EXPECT_THROW(device_peak_of_order(*p, *plan, {0, 0, 1, 3, 4}), Error);
  EXPECT_THROW(device_peak_of_order(*p, *plan, {0, 1, 2}), Error);
}

// Random flat programs (in-place writes, size changes, copies), small enough to enumerate: the
// dynamic program finds the minimum over every valid order, its order has that peak, and the
// model's peak of any order is the plan's.
TEST(OptimalSchedule, EqualsBruteForceOnSmallRandomPrograms) {
  int compared = 0, order_mattered = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    auto p = ir::parse(testing::random_flat_ir(seed, 3 + static_cast<int>(seed % 5)));
    lower_copies(*p);
    prims::verify(*p);
    if (p->equations.size() > 8) continue;
    auto plan = plan_memory(*p, false);
    int64_t best = std::numeric_limits<int64_t>::max(), worst = 0;
    int orders = 0;
    each_valid_order(*p, [&](const std::vector<size_t>& order) {
      int64_t peak = device_peak_of_order(*p, *plan, order);
      best = std::min(best, peak);
      worst = std::max(worst, peak);
      if (orders++ % 7 == 0) ASSERT_EQ(peak, planned_peak(*p, order)) << "seed " << seed;  // a sample: planning is slower
    });
    std::optional<OptimalSchedule> dp = optimal_schedule(*p, *plan);
    ASSERT_TRUE(dp.has_value());
    EXPECT_EQ(dp->peak, best) << "seed " << seed << "\n" << testing::random_flat_ir(seed, 3 + static_cast<int>(seed % 5));
    EXPECT_EQ(device_peak_of_order(*p, *plan, dp->order), dp->peak) << "seed " << seed;
    EXPECT_EQ(planned_peak(*p, dp->order), dp->peak) << "seed " << seed;
    ++compared;
    order_mattered += worst > best;
  }
  // The check means something only if programs are compared and the order changes their peak.
  EXPECT_GE(compared, 250);
  EXPECT_GE(order_mattered, compared / 4);
}

}  // namespace
}  // namespace ferry::compiler
