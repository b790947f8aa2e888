#include "compiler/schedule.h"

#include <gtest/gtest.h>

#include "compiler/memory_analysis.h"
#include "compiler/memory_plan.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

const char* kBranching =
    "program @main(%0: f32[1024]) {\n"
    "  %1 = exp %0 : f32[1024]\n"
    "  %2 = sin %0 : f32[1024]\n"
    "  %3 = reduce_sum[axes=[0]] %1 : f32[]\n"
    "  %4 = reduce_sum[axes=[0]] %2 : f32[]\n"
    "  %5 = add %3, %4 : f32[]\n"
    "  return %5\n"
    "}\n";

TEST(Schedule, FinishesOneBranchBeforeStartingTheNext) {
  auto p = ir::parse(kBranching);
  int64_t program_order = memory_stats(*p, *plan_memory(*p, false)).peak_memory_in_bytes;
  EXPECT_TRUE(schedule_for_memory(*p));
  prims::verify(*p);
  EXPECT_EQ(ir::print(*p),
            "program @main(%0: f32[1024]) {\n"
            "  %1 = exp %0 : f32[1024]\n"
            "  %2 = reduce_sum[axes=[0]] %1 : f32[]\n"
            "  %3 = sin %0 : f32[1024]\n"
            "  %4 = reduce_sum[axes=[0]] %3 : f32[]\n"
            "  %5 = add %2, %4 : f32[]\n"
            "  return %5\n"
            "}\n");
  int64_t scheduled = memory_stats(*p, *plan_memory(*p, false)).peak_memory_in_bytes;
  // argument, both branches, a sum (the other reuses space), and the f32[] output (its own 4 bytes)
  EXPECT_EQ(program_order, 4096 + 4096 + 4096 + 64 + 4);
  EXPECT_EQ(scheduled, 4096 + 4096 + 64 + 64 + 4);
}

TEST(Schedule, OffloadsEarlyAndFetchesLate) {
  auto p = ir::parse(
      "program @main(%0: f32[256]) {\n"
      "  %1 = exp %0 : f32[256]\n"
      "  %2 = sin %0 : f32[256]\n"
      "  %3 = device_put[dst=pinned_host] %1 : f32[256]{pinned_host}\n"
      "  %4 = device_put[dst=device] %3 : f32[256]\n"
      "  %5 = cos %2 : f32[256]\n"
      "  %6 = tanh %5 : f32[256]\n"
      "  %7 = mul %6, %4 : f32[256]\n"
      "  return %7\n"
      "}\n");
  schedule_for_memory(*p);
  EXPECT_EQ(ir::print(*p),
            "program @main(%0: f32[256]) {\n"
            "  %1 = exp %0 : f32[256]\n"
            "  %2 = device_put[dst=pinned_host] %1 : f32[256]{pinned_host}\n"
            "  %3 = sin %0 : f32[256]\n"
            "  %4 = cos %3 : f32[256]\n"
            "  %5 = tanh %4 : f32[256]\n"
            "  %6 = device_put[dst=device] %2 : f32[256]\n"
            "  %7 = mul %5, %6 : f32[256]\n"
            "  return %7\n"
            "}\n");
}

}  // namespace
}  // namespace ferry::compiler
