// prune_scans (compiler/prune_scans.h) on the shapes differentiation leaves behind: a carry nobody
// reads that only feeds itself (an accumulated cotangent nobody asked for) and the stack it alone
// read; carries a needed carry reads, kept; scans nested in a scan's body. The top-level case
// (unread stacked results and operands) is in twins_test.cpp.
#include "compiler/prune_scans.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

std::string pruned(const char* text) {
  auto p = ir::parse(text);
  EXPECT_TRUE(prune_scans(*p));
  prims::verify(*p);
  EXPECT_FALSE(prune_scans(*p)) << "not a fixed point";
  return ir::print(*p);
}

// A backward scan: carry 0 is the cotangent the program returns; carry 1 accumulates a cotangent
// for the loop constant %4 from the stacked residual %2, and nobody reads it. It goes, and so
// does the stack only it read (on the device, it grew with the scan's length).
TEST(PruneScans, DropsACarryThatOnlyFeedsItselfAndTheStackItRead) {
  EXPECT_EQ(pruned("program @main(%0: f32[4], %1: f32[3,4], %2: f32[3,4], %3: f32[4]) {\n"
                   "  %4, %5 = scan[length=3, reverse=true, num_carry=2, num_xs=2] %0, %3, %1, %2, %3 : f32[4], f32[4] {\n"
                   "    program @bwd(%0: f32[4], %1: f32[4], %2: f32[4], %3: f32[4], %4: f32[4]) {\n"
                   "      %5 = mul %0, %2 : f32[4]\n"
                   "      %6 = mul %0, %3 : f32[4]\n"
                   "      %7 = add %1, %6 : f32[4]\n"
                   "      %8 = mul %5, %4 : f32[4]\n"
                   "      return %8, %7\n"
                   "    }\n"
                   "  }\n"
                   "  return %4\n"
                   "}\n"),
            "program @main(%0: f32[4], %1: f32[3,4], %2: f32[3,4], %3: f32[4]) {\n"
            "  %4 = scan[length=3, reverse=true, num_carry=1, num_xs=1] %0, %1, %3 : f32[4] {\n"
            "    program @bwd(%0: f32[4], %1: f32[4], %2: f32[4]) {\n"
            "      %3 = mul %0, %1 : f32[4]\n"
            "      %4 = mul %3, %2 : f32[4]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  return %4\n"
            "}\n");
}

// Carry 1 is not read by the program but carry 0 is computed from it: both stay. Carry 2 feeds
// only carry 3 and carry 3 only itself: both go.
TEST(PruneScans, KeepsACarryANeededCarryReads) {
  EXPECT_EQ(pruned("program @main(%0: f32[2], %1: f32[2], %2: f32[2], %3: f32[2]) {\n"
                   "  %4, %5, %6, %7 = scan[length=2, reverse=false, num_carry=4, num_xs=0] %0, %1, %2, %3 : f32[2], f32[2], f32[2], f32[2] {\n"
                   "    program @body(%0: f32[2], %1: f32[2], %2: f32[2], %3: f32[2]) {\n"
                   "      %4 = add %0, %1 : f32[2]\n"
                   "      %5 = sin %1 : f32[2]\n"
                   "      %6 = cos %2 : f32[2]\n"
                   "      %7 = add %3, %2 : f32[2]\n"
                   "      return %4, %5, %6, %7\n"
                   "    }\n"
                   "  }\n"
                   "  return %4\n"
                   "}\n"),
            "program @main(%0: f32[2], %1: f32[2], %2: f32[2], %3: f32[2]) {\n"
            "  %4, %5 = scan[length=2, reverse=false, num_carry=2, num_xs=0] %0, %1 : f32[2], f32[2] {\n"
            "    program @body(%0: f32[2], %1: f32[2]) {\n"
            "      %2 = add %0, %1 : f32[2]\n"
            "      %3 = sin %1 : f32[2]\n"
            "      return %2, %3\n"
            "    }\n"
            "  }\n"
            "  return %4\n"
            "}\n");
}

// A scan nested in a scan's body stacks a result nobody reads, read from a stack the outer scan
// passes it: the inner result goes, then the inner operand, then the outer xs that fed it.
TEST(PruneScans, PrunesScansInsideBodies) {
  EXPECT_EQ(pruned("program @main(%0: f32[2], %1: f32[4,3,2], %2: f32[4,3,2]) {\n"
                   "  %3 = scan[length=4, reverse=false, num_carry=1, num_xs=2] %0, %1, %2 : f32[2] {\n"
                   "    program @outer(%0: f32[2], %1: f32[3,2], %2: f32[3,2]) {\n"
                   "      %3, %4 = scan[length=3, reverse=false, num_carry=1, num_xs=2] %0, %1, %2 : f32[2], f32[3,2] {\n"
                   "        program @inner(%0: f32[2], %1: f32[2], %2: f32[2]) {\n"
                   "          %3 = mul %0, %1 : f32[2]\n"
                   "          %4 = exp %2 : f32[2]\n"
                   "          return %3, %4\n"
                   "        }\n"
                   "      }\n"
                   "      return %3\n"
                   "    }\n"
                   "  }\n"
                   "  return %3\n"
                   "}\n"),
            "program @main(%0: f32[2], %1: f32[4,3,2], %2: f32[4,3,2]) {\n"
            "  %3 = scan[length=4, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[2] {\n"
            "    program @outer(%0: f32[2], %1: f32[3,2]) {\n"
            "      %2 = scan[length=3, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[2] {\n"
            "        program @inner(%0: f32[2], %1: f32[2]) {\n"
            "          %2 = mul %0, %1 : f32[2]\n"
            "          return %2\n"
            "        }\n"
            "      }\n"
            "      return %2\n"
            "    }\n"
            "  }\n"
            "  return %3\n"
            "}\n");
}

TEST(PruneScans, LeavesAScanWhoseResultsAreAllNeeded) {
  auto p = ir::parse(
      "program @main(%0: f32[2], %1: f32[3,2]) {\n"
      "  %2, %3 = scan[length=3, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[2], f32[3,2] {\n"
      "    program @body(%0: f32[2], %1: f32[2]) {\n"
      "      %2 = mul %0, %1 : f32[2]\n"
      "      return %2, %0\n"
      "    }\n"
      "  }\n"
      "  return %2, %3\n"
      "}\n");
  std::string before = ir::print(*p);
  EXPECT_FALSE(prune_scans(*p));
  EXPECT_EQ(ir::print(*p), before);
}

}  // namespace
}  // namespace ferry::compiler
