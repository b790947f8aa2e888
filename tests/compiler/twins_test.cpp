// Twins (compiler/twins.h): finding the forward twin of an automatic recomputation and rewriting
// the choice made for it; and prune_scans (compiler/prune_scans.h), which the rewrite relies on.
#include "compiler/twins.h"

#include <gtest/gtest.h>

#include "compiler/prune_scans.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

// sin(x) computed forward, recomputed (automatic) for the backward reader mul(., y).
const char* kTopLevel =
    "program @main(%0: f32[4], %1: f32[4]) {\n"
    "  %2 = sin %0 : f32[4]\n"
    "  %3 = mul %2, %1 : f32[4]\n"
    "  %4 = sin %0 : f32[4] !remat !auto\n"
    "  %5 = mul %4, %3 : f32[4]\n"
    "  return %5\n"
    "}\n";

std::string apply(const char* text, TwinChoice choice) {
  auto p = ir::parse(text);
  Twins twins = find_twins(*p);
  std::vector<TwinChoice> choices(twins.twins.size(), choice);
  auto out = apply_twin_choices(*p, twins, choices);
  prims::verify(*out);
  return ir::print(*out);
}

TEST(Twins, FindsTheForwardTwinOfAnAutomaticRecomputation) {
  auto p = ir::parse(kTopLevel);
  Twins twins = find_twins(*p);
  ASSERT_EQ(twins.twins.size(), 1u);
  EXPECT_EQ(twins.twins[0].pair, -1);
  EXPECT_EQ(twins.twins[0].clone, 4);
  EXPECT_EQ(twins.twins[0].original, 2);
  EXPECT_TRUE(twins.twins[0].candidate);
}

TEST(Twins, AnEquationWithoutTheAutomaticMarkIsNotATwin) {
  std::string text = kTopLevel;
  text.replace(text.find(" !auto"), 6, "");
  EXPECT_TRUE(find_twins(*ir::parse(text)).empty());
}

TEST(Twins, SavedReadsTheForwardValue) {
  EXPECT_EQ(apply(kTopLevel, TwinChoice::save),
            "program @main(%0: f32[4], %1: f32[4]) {\n"
            "  %2 = sin %0 : f32[4]\n"
            "  %3 = mul %2, %1 : f32[4]\n"
            "  %4 = mul %2, %3 : f32[4]\n"
            "  return %4\n"
            "}\n");
}

TEST(Twins, OffloadedCopiesOutAfterTheProducerAndFetchesBeforeTheReader) {
  EXPECT_EQ(apply(kTopLevel, TwinChoice::offload),
            "program @main(%0: f32[4], %1: f32[4]) {\n"
            "  %2 = sin %0 : f32[4]\n"
            "  %3 = device_put[dst=pinned_host] %2 : f32[4]{pinned_host}\n"
            "  %4 = mul %2, %1 : f32[4]\n"
            "  %5 = device_put[dst=device] %3 : f32[4] !remat\n"
            "  %6 = mul %5, %4 : f32[4]\n"
            "  return %6\n"
            "}\n");
}

TEST(Twins, RecomputedLeavesTheProgramAsItIs) { EXPECT_EQ(apply(kTopLevel, TwinChoice::recompute), kTopLevel); }

// The forward scan stacks its carry (the checkpoint's input); the backward scan recomputes sin of
// it. Saved, sin's result becomes a new stacked result read as a new xs operand, and the stacked
// carry nobody reads any more is pruned.
const char* kScanPair =
    "program @main(%0: f32[4], %1: f32[2,4]) {\n"
    "  %2, %3 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[2,4] {\n"
    "    program @fwd(%0: f32[4], %1: f32[4]) {\n"
    "      %2 = sin %0 : f32[4]\n"
    "      %3 = mul %2, %1 : f32[4]\n"
    "      return %3, %0\n"
    "    }\n"
    "  }\n"
    "  %4, %5 = scan[length=2, reverse=true, num_carry=1, num_xs=2] %2, %3, %1 : f32[4], f32[2,4] {\n"
    "    program @bwd(%0: f32[4], %1: f32[4], %2: f32[4]) {\n"
    "      %3 = sin %1 : f32[4] !remat !auto\n"
    "      %4 = mul %0, %2 : f32[4]\n"
    "      %5 = mul %3, %0 : f32[4]\n"
    "      return %4, %5\n"
    "    }\n"
    "  }\n"
    "  return %4, %5\n"
    "}\n";

TEST(Twins, AcrossAScanPairSavedBecomesAStackedResidual) {
  auto p = ir::parse(kScanPair);
  Twins twins = find_twins(*p);
  ASSERT_EQ(twins.pairs.size(), 1u);
  size_t clones = 0, stacks = 0;
  for (const Twin& t : twins.twins) (t.stacked >= 0 ? stacks : clones) += 1;
  EXPECT_EQ(clones, 1u);
  EXPECT_EQ(stacks, 1u);  // the stacked carry
  std::vector<TwinChoice> choices(twins.twins.size(), TwinChoice::save);
  auto out = apply_twin_choices(*p, twins, choices);
  prims::verify(*out);
  EXPECT_EQ(ir::print(*out),
            "program @main(%0: f32[4], %1: f32[2,4]) {\n"
            "  %2, %3 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[2,4] {\n"
            "    program @fwd(%0: f32[4], %1: f32[4]) {\n"
            "      %2 = sin %0 : f32[4]\n"
            "      %3 = mul %2, %1 : f32[4]\n"
            "      return %3, %2\n"
            "    }\n"
            "  }\n"
            "  %4, %5 = scan[length=2, reverse=true, num_carry=1, num_xs=2] %2, %1, %3 : f32[4], f32[2,4] {\n"
            "    program @bwd(%0: f32[4], %1: f32[4], %2: f32[4]) {\n"
            "      %3 = mul %0, %1 : f32[4]\n"
            "      %4 = mul %2, %0 : f32[4]\n"
            "      return %3, %4\n"
            "    }\n"
            "  }\n"
            "  return %4, %5\n"
            "}\n");
}

TEST(PruneScans, DropsUnreadStackedResultsAndUnreadOperands) {
  auto p = ir::parse(
      "program @main(%0: f32[4], %1: f32[2,4], %2: f32[2,4]) {\n"
      "  %3, %4, %5 = scan[length=2, reverse=false, num_carry=1, num_xs=2] %0, %1, %2 : f32[4], f32[2,4], f32[2,4] {\n"
      "    program @body(%0: f32[4], %1: f32[4], %2: f32[4]) {\n"
      "      %3 = add %0, %1 : f32[4]\n"
      "      %4 = sin %3 : f32[4]\n"
      "      return %3, %4, %1\n"
      "    }\n"
      "  }\n"
      "  return %3, %4\n"
      "}\n");
  EXPECT_TRUE(prune_scans(*p));
  prims::verify(*p);
  EXPECT_EQ(ir::print(*p),
            "program @main(%0: f32[4], %1: f32[2,4], %2: f32[2,4]) {\n"
            "  %3, %4 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[2,4] {\n"
            "    program @body(%0: f32[4], %1: f32[4]) {\n"
            "      %2 = add %0, %1 : f32[4]\n"
            "      %3 = sin %2 : f32[4]\n"
            "      return %2, %3\n"
            "    }\n"
            "  }\n"
            "  return %3, %4\n"
            "}\n");
  EXPECT_FALSE(prune_scans(*p));
}

}  // namespace
}  // namespace ferry::compiler
