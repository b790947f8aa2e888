#include "compiler/pipeline.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

TEST(Pipeline, RunsEachPassAndDumpsTheIrAfterIt) {
  auto p = ir::parse(
      "program @main(%0: f32[3]) {\n"
      "  %1 = sin %0 : f32[3]\n"
      "  %2 = sin %0 : f32[3]\n"
      "  %3 = cos %0 : f32[3]\n"
      "  %4 = add %1, %2 : f32[3]\n"
      "  return %4\n"
      "}\n");
  std::vector<std::string> dumps;
  auto out = run_pipeline(*p, Target{}, [&](const std::string& s) { dumps.push_back(s); });
  ASSERT_EQ(dumps.size(), passes_for(Target{}).size() + 1);
  EXPECT_EQ(dumps[0].rfind("// input\n", 0), 0u);
  EXPECT_EQ(dumps[1].rfind("// after cse\n", 0), 0u);
  EXPECT_EQ(dumps[2].rfind("// after dce\n", 0), 0u);
  // CSE merged the sins, DCE removed the cos, fusion made the rest one loop.
  EXPECT_EQ(ir::print(*out),
            "program @main(%0: f32[3]) {\n"
            "  %1 = fused %0 : f32[3] {\n"
            "    program @fused(%0: f32[3]) {\n"
            "      %1 = sin %0 : f32[3]\n"
            "      %2 = add %1, %1 : f32[3]\n"
            "      return %2\n"
            "    }\n"
            "  }\n"
            "  return %1\n"
            "}\n");
}

}  // namespace
}  // namespace ferry::compiler
