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

TEST(MemoryPlan, TemporariesLiveInAnOutputsAllocationBeforeItIsWritten) {
  // sin's result (256 B) dies at reduce_sum (position 1); the output mul writes comes only at
  // position 2, so its allocation (256 B, the call's from the start) holds sin's result until then.
  auto p = ir::parse(
      "program @main(%0: f32[64]) {\n"
      "  %1 = sin %0 : f32[64]\n"
      "  %2 = reduce_sum[axes=[0]] %1 : f32[]\n"
      "  %3 = mul %0, %0 : f32[64]\n"
      "  return %3, %2\n"
      "}\n");
  EXPECT_EQ(plan_memory(*p, false)->arena_size[kind_index(MemoryKind::device)], 256);
  PlanOptions options;
  options.temporaries_in_outputs = true;
  auto plan = plan_memory(*p, false, options);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 0);
  const Buffer& sin = plan->buffers[static_cast<size_t>(plan->slots[1].buffer)];
  EXPECT_EQ(plan->slots[1].where, Slot::Where::arena);
  EXPECT_EQ(sin.output_of, 0);
  EXPECT_EQ(sin.offset, 0);
  EXPECT_TRUE(plan->acquire_before[0].empty());  // not the arena's to hand out
  // A temporary still live when the output is written stays in the arena: cos's result is read by
  // the equation that writes the output.
  auto late = ir::parse(
      "program @main(%0: f32[64]) {\n"
      "  %1 = cos %0 : f32[64]\n"
      "  %2 = mul %0, %1 : f32[64]\n"
      "  %3 = reduce_sum[axes=[0]] %1 : f32[]\n"
      "  return %2, %3\n"
      "}\n");
  auto kept = plan_memory(*late, false, options);
  EXPECT_EQ(kept->buffers[static_cast<size_t>(kept->slots[1].buffer)].output_of, -1);
  EXPECT_EQ(kept->arena_size[kind_index(MemoryKind::device)], 256);
}

TEST(MemoryPlan, AnOutputIsWrittenInPlaceOverATemporaryInItsAllocation) {
  // sin's result is read twice, so it is no in-place chain the output takes over (it may die at
  // either reader in another order); but in this order it dies at cos, which writes the output
  // in place: it lives at the start of the output's allocation, where cos reads each element
  // before writing it.
  auto p = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2 = reduce_sum[axes=[0]] %1 : f32[]\n"
      "  %3 = cos %1 : f32[16]\n"
      "  return %3, %2\n"
      "}\n");
  EXPECT_EQ(plan_memory(*p, false)->arena_size[kind_index(MemoryKind::device)], 64);
  PlanOptions options;
  options.temporaries_in_outputs = true;
  auto plan = plan_memory(*p, false, options);
  const Buffer& sin = plan->buffers[static_cast<size_t>(plan->slots[1].buffer)];
  EXPECT_EQ(sin.output_of, 0);
  EXPECT_EQ(sin.offset, 0);
  EXPECT_EQ(sin.end, 2);  // until cos writes over it
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 0);
}

TEST(MemoryPlan, ADonatedArgumentsBufferHoldsTemporariesBetweenItsLastReadAndTheOutput) {
  // %0 is donated to the output %6 (written at position 4) and last read at position 0. The
  // broadcast %3 (256 B, live over positions 1-2) fits in that window; %4 and %5 (1024 B, one
  // buffer written in place) do not fit in 256 B and stay in the arena.
  auto p = ir::parse(
      "program @main(%0: f32[64], %1: f32[4,64]) {\n"
      "  %2 = reduce_sum[axes=[0]] %0 : f32[]\n"
      "  %3 = broadcast_in_dim[shape=[64], broadcast_dimensions=[]] %2 : f32[64]\n"
      "  %4 = broadcast_in_dim[shape=[4,64], broadcast_dimensions=[1]] %3 : f32[4,64]\n"
      "  %5 = mul %4, %1 : f32[4,64]\n"
      "  %6 = reduce_sum[axes=[0]] %5 : f32[64]\n"
      "  return %6\n"
      "}\n");
  PlanOptions options;
  options.donated = {1, 0};
  EXPECT_EQ(plan_memory(*p, false, options)->arena_size[kind_index(MemoryKind::device)], 256 + 1024);
  options.temporaries_in_outputs = true;
  auto plan = plan_memory(*p, false, options);
  EXPECT_EQ(plan->output_alias[0], 0);
  EXPECT_EQ(plan->buffers[static_cast<size_t>(plan->slots[3].buffer)].output_of, 0);
  EXPECT_EQ(plan->buffers[static_cast<size_t>(plan->slots[4].buffer)].output_of, -1);
  EXPECT_EQ(plan->arena_size[kind_index(MemoryKind::device)], 1024);
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
