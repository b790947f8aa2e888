// The step-time model: compute in order, transfers on one link overlapping compute, only the part
// a copy's window does not hide costs time.
#include "compiler/step_time.h"

#include <gtest/gtest.h>

#include "ir/parser.h"

namespace ferry::compiler {
namespace {

// Rates that make the arithmetic easy: 1 FLOP per second, memory traffic and transcendentals free,
// 1 byte per second.
Target easy_target() {
  Target t;
  t.rates = {.compute_flops_per_s = 1, .memory_bytes_per_s = 1e30, .link_bandwidth_bytes_per_s = 1,
             .vector_flops_per_s = 1, .transcendentals_per_s = 1e30, .dot_product_seconds = 0};
  return t;
}
const Target kRates = easy_target();

// Each kind of work at its own rate; an equation takes its compute or its memory traffic,
// whichever is longer.
TEST(StepTime, EachKindOfWorkAtItsRate) {
  auto p = ir::parse(
      "program @main(%0: f32[4,8,16], %1: f32[4,16,2], %2: f32[1000]) {\n"
      "  %3 = dot_general[lhs_contracting=[2], rhs_contracting=[1], lhs_batch=[0], rhs_batch=[0]] %0, %1 : f32[4,8,2]\n"
      "  %4 = tanh %2 : f32[1000]\n"
      "  %5 = add %2, %2 : f32[1000]\n"
      "  return %3, %4, %5\n"
      "}\n");
  Target rates;
  rates.rates = {.compute_flops_per_s = 1024, .memory_bytes_per_s = 1e4, .link_bandwidth_bytes_per_s = 1,
                 .vector_flops_per_s = 1e3, .transcendentals_per_s = 100, .dot_product_seconds = 0.5};
  auto seconds = [&](size_t e) { return equation_seconds(prims::cost(p->equations[e], *p), rates); };
  // 2*4*8*2*16 = 2048 FLOPs at 1024/s, plus 4 products at 0.5 s (its 2816 bytes take 0.28 s).
  EXPECT_DOUBLE_EQ(seconds(0), 2.0 + 4 * 0.5);
  // 1000 tanh at 100/s and 1000 other FLOPs at 1000/s; 8000 bytes take 0.8 s.
  EXPECT_DOUBLE_EQ(seconds(1), 10.0 + 1.0);
  // 1000 FLOPs take 1 s, its 12000 bytes 1.2 s: memory-bound.
  EXPECT_DOUBLE_EQ(seconds(2), 1.2);
  EXPECT_DOUBLE_EQ(estimate_step_time(*p, rates).compute_seconds, 4.0 + 11.0 + 1.2);
}

TEST(StepTime, AReshapeInPlaceMovesNothing) {
  // %2's reshape is its last reader: it writes in place and costs nothing. %3 is read again after
  // its reshape, which copies 64 bytes (read and written: 128 at 1 byte per second).
  auto p = ir::parse(
      "program @main(%0: f32[4,4]) {\n"
      "  %1 = sin %0 : f32[4,4]\n"
      "  %2 = reshape[new_sizes=[16]] %1 : f32[16]\n"
      "  %3 = cos %0 : f32[4,4]\n"
      "  %4 = reshape[new_sizes=[16]] %3 : f32[16]\n"
      "  %5 = reduce_sum[axes=[0,1]] %3 : f32[]\n"
      "  return %2, %4, %5\n"
      "}\n");
  Target rates = kRates;
  rates.rates.memory_bytes_per_s = 1;
  const double sin_cos = 2 * std::max(16.0, 128.0), sum = std::max(16.0, 64.0 + 4.0);
  EXPECT_DOUBLE_EQ(estimate_step_time(*p, rates).compute_seconds, sin_cos + 128 + sum);
}

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

TEST(StepTime, ACopyOnTheComputeCoresSlowsTheComputeByItsShare) {
  // A 64-byte transfer beside 16 + 16 FLOPs: with copies that take half the cores while they run
  // (a CPU backend of two threads), the compute queue loses 32 s; the transfer then ends at 64,
  // before its copy_done at 16 + 32 + 16 = 64 is reached, so nothing more is exposed.
  auto p = ir::parse(
      "program @main(%0: f32[16], %1: f32[16]) {\n"
      "  %2 = copy_start[dst=pinned_host] %0 : f32[16]{pinned_host}\n"
      "  %3 = sin %1 : f32[16]\n"
      "  %4 = cos %3 : f32[16]\n"
      "  %5 = copy_done %2, %0 : f32[16]{pinned_host}\n"
      "  return %5, %4\n"
      "}\n");
  Target shared = kRates;
  shared.copy_compute_share = 0.5;
  StepTime t = estimate_step_time(*p, shared);
  EXPECT_DOUBLE_EQ(t.compute_seconds, 32 + 32);
  EXPECT_DOUBLE_EQ(t.exposed_copy_seconds, 0);
  // With copy engines of their own, the same copy is hidden but for 64 - 32.
  StepTime own = estimate_step_time(*p, kRates);
  EXPECT_DOUBLE_EQ(own.compute_seconds, 32);
  EXPECT_DOUBLE_EQ(own.exposed_copy_seconds, 32);
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
