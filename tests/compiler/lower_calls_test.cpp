// lower_calls (compiler/lower_calls.h): cond and custom_vjp become plain equations, which keep
// their own annotations and take the call's (!remat, !auto), the selects included; decisions are
// spent at the top level. Golden IR text.
#include "compiler/lower_calls.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

std::string lowered(const std::string& text) { return ir::print(*lower_calls(ir::parse(text))); }

TEST(LowerCalls, ABoolCondBecomesBothBranchesAndASelectMarkedAsTheCall) {
  EXPECT_EQ(lowered(
      "program @main(%0: f32[2], %1: f32[]) {\n"
      "  %2 = constant[value=0, dtype=f32, shape=[]] : f32[]\n"
      "  %3 = gt %1, %2 : bool[]\n"
      "  %4 = cond %3, %0 : f32[2] {\n"
      "    program @cond_branch0(%0: f32[2]) {\n"
      "      %1 = constant[value=3, dtype=f32, shape=[2]] : f32[2] !automatic\n"
      "      %2 = mul %0, %1 : f32[2] !automatic\n"
      "      return %2\n"
      "    }\n"
      "    program @cond_branch1(%0: f32[2]) {\n"
      "      %1 = sin %0 : f32[2] !automatic\n"
      "      return %1\n"
      "    }\n"
      "  }\n"
      "  %5 = cond %3, %4 : f32[2] !remat !auto {\n"
      "    program @cond_branch0(%0: f32[2]) {\n"
      "      %1 = neg %0 : f32[2] !automatic\n"
      "      return %1\n"
      "    }\n"
      "    program @cond_branch1(%0: f32[2]) {\n"
      "      %1 = cos %0 : f32[2] !automatic\n"
      "      return %1\n"
      "    }\n"
      "  }\n"
      "  return %5\n"
      "}\n"),
      "program @main(%0: f32[2], %1: f32[]) {\n"
      "  %2 = constant[value=0, dtype=f32, shape=[]] : f32[]\n"
      "  %3 = gt %1, %2 : bool[]\n"
      "  %4 = constant[value=3, dtype=f32, shape=[2]] : f32[2]\n"
      "  %5 = mul %0, %4 : f32[2]\n"
      "  %6 = sin %0 : f32[2]\n"
      "  %7 = select %3, %6, %5 : f32[2]\n"
      "  %8 = neg %7 : f32[2] !remat !auto\n"
      "  %9 = cos %7 : f32[2] !remat !auto\n"
      "  %10 = select %3, %9, %8 : f32[2] !remat !auto\n"
      "  return %10\n"
      "}\n");
}

TEST(LowerCalls, ACustomVjpBecomesItsPrimalAndAnIndexCondAChainOfSelects) {
  EXPECT_EQ(lowered(
      "program @main(%0: f32[2], %1: i32[]) {\n"
      "  %2 = custom_vjp %0 : f32[2] !remat !auto {\n"
      "    program @f(%0: f32[2]) {\n"
      "      %1 = sin %0 : f32[2] !save\n"
      "      return %1\n"
      "    }\n"
      "    program @fwd(%0: f32[2]) {\n"
      "      %1 = sin %0 : f32[2]\n"
      "      %2 = cos %0 : f32[2]\n"
      "      return %1, %2\n"
      "    }\n"
      "    program @bwd(%0: f32[2], %1: f32[2]) {\n"
      "      %2 = mul %0, %1 : f32[2]\n"
      "      return %2\n"
      "    }\n"
      "  }\n"
      "  %3 = cond %1, %2 : f32[2] {\n"
      "    program @cond_branch0(%0: f32[2]) {\n"
      "      %1 = neg %0 : f32[2]\n"
      "      return %1\n"
      "    }\n"
      "    program @cond_branch1(%0: f32[2]) {\n"
      "      %1 = exp %0 : f32[2]\n"
      "      return %1\n"
      "    }\n"
      "    program @cond_branch2(%0: f32[2]) {\n"
      "      %1 = tanh %0 : f32[2]\n"
      "      return %1\n"
      "    }\n"
      "  }\n"
      "  return %3\n"
      "}\n"),
      "program @main(%0: f32[2], %1: i32[]) {\n"
      "  %2 = sin %0 : f32[2] !remat !auto\n"
      "  %3 = neg %2 : f32[2]\n"
      "  %4 = exp %2 : f32[2]\n"
      "  %5 = tanh %2 : f32[2]\n"
      "  %6 = constant[value=1, dtype=i32, shape=[]] : i32[]\n"
      "  %7 = eq %1, %6 : bool[]\n"
      "  %8 = select %7, %4, %5 : f32[2]\n"
      "  %9 = constant[value=0, dtype=i32, shape=[]] : i32[]\n"
      "  %10 = le %1, %9 : bool[]\n"
      "  %11 = select %10, %3, %8 : f32[2]\n"
      "  return %11\n"
      "}\n");
}

TEST(LowerCalls, AProgramWithoutCallsComesBackTheSameObject) {
  auto p = ir::parse("program @main(%0: f32[2]) {\n  %1 = sin %0 : f32[2] !remat !auto\n  return %1\n}\n");
  EXPECT_EQ(lower_calls(p).get(), p.get());
}

}  // namespace
}  // namespace ferry::compiler
