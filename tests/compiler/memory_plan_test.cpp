// Buffer assignment: known-answer arenas and peaks for small hand-written programs.
#include "compiler/memory_plan.h"

#include <gtest/gtest.h>

#include "compiler/memory_analysis.h"
#include "ir/parser.h"

namespace ferry::compiler {
namespace {

TEST(MemoryPlan, ReusesDeadBuffersAndWritesInPlace) {
  // sin and cos are live together (128 B); add writes into sin's buffer, which it kills.
  auto p = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2 = cos %0 : f32[16]\n"
      "  %3 = add %1, %2 : f32[16]\n"
      "  return %3\n"
      "}\n");
  auto plan = plan_memory(*p, false);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 128);
  EXPECT_EQ(plan->slots[3].buffer, plan->slots[1].buffer);  // in place
  MemoryStats s = memory_stats(*p, *plan);
  EXPECT_EQ(s.argument_size_in_bytes, 64);
  EXPECT_EQ(s.output_size_in_bytes, 64);
  EXPECT_EQ(s.temp_size_in_bytes, 64);
  EXPECT_EQ(s.peak_memory_in_bytes, 64 + 128);
  EXPECT_EQ(s.host_temp_size_in_bytes, 0);
}

TEST(MemoryPlan, OffloadedValuesLiveInTheHostArena) {
  // exp's result goes to host and its device buffer is reused by sin; it comes back for the mul.
  auto p = ir::parse(
      "program @main(%0: f32[256]) {\n"
      "  %1 = exp %0 : f32[256]\n"
      "  %2 = device_put[dst=pinned_host] %1 : f32[256]{pinned_host}\n"
      "  %3 = sin %0 : f32[256]\n"
      "  %4 = device_put[dst=device] %2 : f32[256]\n"
      "  %5 = mul %3, %4 : f32[256]\n"
      "  return %5\n"
      "}\n");
  auto plan = plan_memory(*p, false);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 2048);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::pinned_host)], 1024);
  EXPECT_EQ(plan->peak_live[kind_index(MemoryKind::device)], 2048);
  MemoryStats s = memory_stats(*p, *plan);
  EXPECT_EQ(s.peak_memory_in_bytes, 1024 + 2048);
  EXPECT_EQ(s.host_temp_size_in_bytes, 1024);
  EXPECT_EQ(s.host_peak_memory_in_bytes, 1024);
}

TEST(MemoryPlan, ScanBodiesArePlannedOnceWithStackedOutputsAsWholeBuffers) {
  auto text = [](int length) {
    return "program @main(%0: f32[64], %1: f32[" + std::to_string(length) + ",64]) {\n"
           "  %2, %3 = scan[length=" + std::to_string(length) + ", reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[64], f32[" +
           std::to_string(length) + ",64] {\n"
           "    program @body(%0: f32[64], %1: f32[64]) {\n"
           "      %2 = mul %0, %1 : f32[64]\n"
           "      %3 = sin %2 : f32[64]\n"
           "      %4 = cos %2 : f32[64]\n"
           "      return %3, %4\n"
           "    }\n"
           "  }\n"
           "  return %2, %3\n"
           "}\n";
  };
  auto short_plan = plan_memory(*ir::parse(text(8)), false);
  auto long_plan = plan_memory(*ir::parse(text(64)), false);
  // The body needs one 256 B temporary (the product); sin and cos write to the caller's buffers.
  ASSERT_TRUE(short_plan->bodies[0].has_value());
  EXPECT_EQ(short_plan->bodies[0]->plan->arena_size[0], 256);
  // Top level: final carry, its scratch twin, the body region, and the stacked ys.
  EXPECT_EQ(short_plan->arena_size[0], 256 + 256 + 256 + 8 * 256);
  EXPECT_EQ(long_plan->arena_size[0] - short_plan->arena_size[0], (64 - 8) * 256);
}

}  // namespace
}  // namespace ferry::compiler
