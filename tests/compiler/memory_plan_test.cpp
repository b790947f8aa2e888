// Buffer assignment: known-answer arenas and peaks for small hand-written programs.
#include "compiler/memory_plan.h"

#include <gtest/gtest.h>

#include "compiler/memory_analysis.h"
#include "ir/parser.h"

namespace ferry::compiler {
namespace {

TEST(MemoryPlan, ReusesDeadBuffersAndWritesInPlace) {
  // sin and cos are live together (128 B); add writes into sin's buffer, which it kills. The
  // output is not in the arena: it is an allocation of its own (4 B).
  auto p = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2 = cos %0 : f32[16]\n"
      "  %3 = add %1, %2 : f32[16]\n"
      "  %4 = reduce_sum[axes=[0]] %3 : f32[]\n"
      "  return %4\n"
      "}\n");
  auto plan = plan_memory(*p, false);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 128);
  EXPECT_EQ(plan->slots[3].buffer, plan->slots[1].buffer);  // in place
  EXPECT_EQ(plan->slots[4].where, Slot::Where::external_output);
  MemoryStats s = memory_stats(*p, *plan);
  EXPECT_EQ(s.argument_size_in_bytes, 64);
  EXPECT_EQ(s.output_size_in_bytes, 4);
  EXPECT_EQ(s.temp_size_in_bytes, 128);
  EXPECT_EQ(s.peak_memory_in_bytes, 64 + 4 + 128);
  EXPECT_EQ(s.host_temp_size_in_bytes, 0);
}

TEST(MemoryPlan, AReshapeOfADyingValueTakesItsBuffer) {
  // sin's result dies in the reshape, which then shares its buffer (the kernel moves nothing);
  // cos's result is still read after its reshape, so that reshape gets a buffer of its own.
  auto p = ir::parse(
      "program @main(%0: f32[4,4]) {\n"
      "  %1 = sin %0 : f32[4,4]\n"
      "  %2 = reshape[new_sizes=[16]] %1 : f32[16]\n"
      "  %3 = cos %0 : f32[4,4]\n"
      "  %4 = reshape[new_sizes=[16]] %3 : f32[16]\n"
      "  %5 = reduce_sum[axes=[0,1]] %3 : f32[]\n"
      "  %6 = add %2, %4 : f32[16]\n"
      "  %7 = reduce_sum[axes=[0]] %6 : f32[]\n"
      "  %8 = add %7, %5 : f32[]\n"
      "  return %8\n"
      "}\n");
  auto plan = plan_memory(*p, false);
  EXPECT_EQ(plan->slots[2].buffer, plan->slots[1].buffer);
  EXPECT_NE(plan->slots[4].buffer, plan->slots[3].buffer);
}

TEST(MemoryPlan, AnOutputTakesTheInPlaceChainThatEndsInIt) {
  // sin's result dies in cos, which writes the output in place: both live in the output's own
  // allocation, and the arena is empty.
  auto chain = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2 = cos %1 : f32[16]\n"
      "  return %2\n"
      "}\n");
  auto plan = plan_memory(*chain, false);
  EXPECT_EQ(plan->slots[1].where, Slot::Where::external_output);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 0);
  // Read by two equations, sin's result may die at either, depending on the order: it stays a
  // temporary, so every order has the same buffers (optimal_schedule.h).
  auto shared = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2 = exp %1 : f32[16]\n"
      "  %3 = reduce_sum[axes=[0]] %2 : f32[]\n"
      "  %4 = cos %1 : f32[16]\n"
      "  return %4, %3\n"
      "}\n");
  auto kept = plan_memory(*shared, false);
  EXPECT_EQ(kept->slots[1].where, Slot::Where::arena);
}

TEST(MemoryPlan, AlignmentPaddingIsTemporary) {
  // f32[3] temporaries take 64 B each in the arena: the padding is in temp, so the fields add up.
  auto p = ir::parse(
      "program @main(%0: f32[3]) {\n"
      "  %1 = sin %0 : f32[3]\n"
      "  %2 = cos %0 : f32[3]\n"
      "  %3 = mul %1, %2 : f32[3]\n"
      "  %4 = exp %3 : f32[3]\n"
      "  return %4\n"
      "}\n");
  MemoryStats s = memory_stats(*p, *plan_memory(*p, false));
  EXPECT_EQ(s.argument_size_in_bytes, 12);
  EXPECT_EQ(s.output_size_in_bytes, 12);
  EXPECT_EQ(s.temp_size_in_bytes, 128);
  EXPECT_EQ(s.peak_memory_in_bytes, s.argument_size_in_bytes + s.output_size_in_bytes + s.temp_size_in_bytes);
}

TEST(MemoryPlan, KernelWorkspacesAreBuffersLiveWhileTheirEquationRuns) {
  auto p = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2 = cos %0 : f32[16]\n"
      "  %3 = mul %1, %2 : f32[16]\n"
      "  %4 = reduce_sum[axes=[0]] %3 : f32[]\n"
      "  return %4\n"
      "}\n");
  PlanOptions options;
  options.workspace = [](const ir::Program&, const ir::Equation& eq) -> int64_t {
    return eq.prim == Primitive::cos ? 100 : 0;  // cos asks for 100 B of scratch
  };
  auto plan = plan_memory(*p, false, options);
  ASSERT_GE(plan->workspace[1], 0);
  const Buffer& w = plan->buffers[static_cast<size_t>(plan->workspace[1])];
  EXPECT_EQ(w.size, 128);  // aligned like every buffer
  EXPECT_EQ(w.start, 1);
  EXPECT_EQ(w.end, 1);
  EXPECT_EQ(plan->workspace[0], -1);
  // sin's and cos's results (64 B each, live together at cos) and the workspace: 256 B.
  EXPECT_EQ(memory_stats(*p, *plan).temp_size_in_bytes, 64 + 64 + 128);
  EXPECT_NE(memory_report(*p, *plan).find("the kernel workspace of %2 = cos"), std::string::npos) << memory_report(*p, *plan);
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
  EXPECT_EQ(s.peak_memory_in_bytes, 1024 + 1024 + 2048);  // argument, output, temporaries
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
           "  %4 = reduce_sum[axes=[0,1]] %3 : f32[]\n"
           "  return %4\n"
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
