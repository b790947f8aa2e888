#include "compiler/cse.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

std::string run(const std::string& text, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(eliminate_common_subexpressions(*p), expect_change);
  prims::verify(*p);
  return ir::print(*p);
}

TEST(Cse, MergesIdenticalEquationsTransitively) {
  // The two subs are equal, so the two muls become equal too.
  EXPECT_EQ(run("program @main(%0: f32[3], %1: f32[3]) {\n"
                "  %2 = sub %0, %1 : f32[3]\n"
                "  %3 = sub %0, %1 : f32[3]\n"
                "  %4 = mul %2, %0 : f32[3]\n"
                "  %5 = mul %3, %0 : f32[3]\n"
                "  %6 = add %4, %5 : f32[3]\n"
                "  return %6\n"
                "}\n",
                true),
            "program @main(%0: f32[3], %1: f32[3]) {\n"
            "  %2 = sub %0, %1 : f32[3]\n"
            "  %3 = mul %2, %0 : f32[3]\n"
            "  %4 = add %3, %3 : f32[3]\n"
            "  return %4\n"
            "}\n");
}

TEST(Cse, KeepsDifferentParametersOperandOrderAndMemoryKinds) {
  std::string text =
      "program @main(%0: f32[2,3]) {\n"
      "  %1 = reduce_sum[axes=[0]] %0 : f32[3]\n"
      "  %2 = reduce_sum[axes=[1]] %0 : f32[2]\n"
      "  %3 = device_put[dst=pinned_host] %0 : f32[2,3]{pinned_host}\n"
      "  %4 = device_put[dst=unpinned_host] %0 : f32[2,3]{unpinned_host}\n"
      "  %5 = constant[value=1, dtype=f32, shape=[2,3]] : f32[2,3]\n"
      "  %6 = sub %0, %5 : f32[2,3]\n"
      "  %7 = sub %5, %0 : f32[2,3]\n"
      "  return %1, %2, %3, %4, %6, %7\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

TEST(Cse, MergesEqualConstantsAndReturnsTheSurvivor) {
  EXPECT_EQ(run("program @main() {\n"
                "  %0 = constant[value=2, dtype=f32, shape=[2]] : f32[2]\n"
                "  %1 = constant[value=2, dtype=f32, shape=[2]] : f32[2]\n"
                "  return %0, %1\n"
                "}\n",
                true),
            "program @main() {\n"
            "  %0 = constant[value=2, dtype=f32, shape=[2]] : f32[2]\n"
            "  return %0, %0\n"
            "}\n");
}

}  // namespace
}  // namespace ferry::compiler

namespace ferry::compiler {
namespace {

TEST(Cse, NeverMergesRecomputationsOrDifferentlyNamedValues) {
  std::string text =
      "program @main(%0: f32[3]) {\n"
      "  %1 = sin %0 : f32[3]\n"
      "  %2 = sin %0 : f32[3] !remat\n"
      "  %3 = checkpoint_name %0 : f32[3] @\"a\"\n"
      "  %4 = checkpoint_name %0 : f32[3] @\"b\"\n"
      "  return %1, %2, %3, %4\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

}  // namespace
}  // namespace ferry::compiler
