#include "ir/dce.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

std::string run(const std::string& text, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(eliminate_dead_code(*p), expect_change);
  return ir::print(*p);
}

TEST(Dce, RemovesEquationsThatReachNoOutput) {
  EXPECT_EQ(run("program @main(%0: f32[3]) {\n"
                "  %1 = sin %0 : f32[3]\n"
                "  %2 = cos %0 : f32[3]\n"
                "  %3 = exp %2 : f32[3]\n"
                "  %4 = neg %1 : f32[3]\n"
                "  return %4\n"
                "}\n",
                true),
            "program @main(%0: f32[3]) {\n"
            "  %1 = sin %0 : f32[3]\n"
            "  %2 = neg %1 : f32[3]\n"
            "  return %2\n"
            "}\n");
}

TEST(Dce, KeepsEverythingLiveAndReportsNoChange) {
  std::string text =
      "program @main(%0: f32[3]) {\n"
      "  %1 = sin %0 : f32[3]\n"
      "  %2 = add %1, %0 : f32[3]\n"
      "  return %2, %1\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

TEST(Dce, CleansScanBodies) {
  EXPECT_EQ(run("program @main(%0: f32[3]) {\n"
                "  %1 = scan[length=2, reverse=false, num_carry=1, num_xs=0] %0 : f32[3] {\n"
                "    program @body(%0: f32[3]) {\n"
                "      %1 = exp %0 : f32[3]\n"
                "      %2 = sin %0 : f32[3]\n"
                "      return %2\n"
                "    }\n"
                "  }\n"
                "  return %1\n"
                "}\n",
                true),
            "program @main(%0: f32[3]) {\n"
            "  %1 = scan[length=2, reverse=false, num_carry=1, num_xs=0] %0 : f32[3] {\n"
            "    program @body(%0: f32[3]) {\n"
            "      %1 = sin %0 : f32[3]\n"
            "      return %1\n"
            "    }\n"
            "  }\n"
            "  return %1\n"
            "}\n");
}

}  // namespace
}  // namespace ferry::compiler
