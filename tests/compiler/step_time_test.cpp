// The step-time model: compute in order, transfers on one link overlapping compute, only the part
// a copy's window does not hide costs time.
#include "compiler/step_time.h"

#include <gtest/gtest.h>

#include "ir/parser.h"

namespace ferry::compiler {
namespace {

// Rates that make the arithmetic easy: 1 FLOP per second, memory traffic free, 1 byte per second.
constexpr StepRates kRates{.flops_per_s = 1, .memory_bytes_per_s = 1e30, .link_bytes_per_s = 1};

TEST(StepTime, ComputeAddsUpAndScansCountEveryStep) {
  auto p = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = sin %0 : f32[16]\n"
      "  %2, %3 = scan[length=3, reverse=false, num_carry=1, num_xs=0] %1 : f32[16], f32[3,16] {\n"
      "    program @body(%0: f32[16]) {\n"
      "      %1 = cos %0 : f32[16]\n"
      "      return %1, %1\n"
      "    }\n"
      "  }\n"
      "  return %2\n"
      "}\n");
  StepTime t = estimate_step_time(*p, kRates);
  EXPECT_DOUBLE_EQ(t.compute_seconds, 16 + 3 * 16);  // one FLOP per output element
  EXPECT_DOUBLE_EQ(t.exposed_copy_seconds, 0);
}

TEST(StepTime, ACopyIsHiddenByTheComputeInItsWindowAndNoMore) {
  // A 256-byte transfer (f32[64]) while 16 + 16 FLOPs of compute run: 224 s are exposed.
  auto p = ir::parse(
      "program @main(%0: f32[64], %1: f32[16]) {\n"
      "  %2 = copy_start[dst=pinned_host] %0 : f32[64]{pinned_host}\n"
      "  %3 = sin %1 : f32[16]\n"
      "  %4 = cos %3 : f32[16]\n"
      "  %5 = copy_done %2, %0 : f32[64]{pinned_host}\n"
      "  return %5, %4\n"
      "}\n");
  StepTime t = estimate_step_time(*p, kRates);
  EXPECT_DOUBLE_EQ(t.compute_seconds, 32);
  EXPECT_DOUBLE_EQ(t.exposed_copy_seconds, 256 - 32);
  EXPECT_DOUBLE_EQ(t.seconds(), 256);
}

TEST(StepTime, CopiesShareTheLink) {
  // Two 64-byte transfers started together end at 64 and 128; 16 FLOPs hide 16 s of the first.
  auto p = ir::parse(
      "program @main(%0: f32[16], %1: f32[16]) {\n"
      "  %2 = copy_start[dst=pinned_host] %0 : f32[16]{pinned_host}\n"
      "  %3 = copy_start[dst=pinned_host] %1 : f32[16]{pinned_host}\n"
      "  %4 = sin %1 : f32[16]\n"
      "  %5 = copy_done %2, %0 : f32[16]{pinned_host}\n"
      "  %6 = copy_done %3, %1 : f32[16]{pinned_host}\n"
      "  return %5, %6, %4\n"
      "}\n");
  StepTime t = estimate_step_time(*p, kRates);
  EXPECT_DOUBLE_EQ(t.compute_seconds, 16);
  EXPECT_DOUBLE_EQ(t.seconds(), 128);
}

TEST(StepTime, ASynchronousTransferIsWaitedForWhole) {
  auto p = ir::parse(
      "program @main(%0: f32[16]) {\n"
      "  %1 = device_put[dst=pinned_host] %0 : f32[16]{pinned_host}\n"
      "  return %1\n"
      "}\n");
  EXPECT_DOUBLE_EQ(estimate_step_time(*p, kRates).exposed_copy_seconds, 64);
}

}  // namespace
}  // namespace ferry::compiler
