#include "compiler/drop_names.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

std::string run(const std::string& text, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(drop_names(*p), expect_change);
  return ir::print(*p);
}

TEST(DropNames, ReadersAndOutputsReadTheNamedValue) {
  // A name of a name, a name read by two equations, and a name returned.
  EXPECT_EQ(run("program @main(%0: f32[3]) {\n"
                "  %1 = sin %0 : f32[3]\n"
                "  %2 = checkpoint_name %1 : f32[3] @\"a\"\n"
                "  %3 = checkpoint_name %2 : f32[3] @\"b\"\n"
                "  %4 = mul %3, %2 : f32[3]\n"
                "  %5 = checkpoint_name %0 : f32[3] @\"in\"\n"
                "  return %4, %3, %5\n"
                "}\n",
                true),
            "program @main(%0: f32[3]) {\n"
            "  %1 = sin %0 : f32[3] @\"a\"\n"
            "  %2 = mul %1, %1 : f32[3]\n"
            "  return %2, %1, %0\n"
            "}\n");
}

TEST(DropNames, TheNameStaysOnlyOnAMakerOfOneValueWithoutANameOfItsOwn) {
  // sin has a name of its own; threefry2x32 makes two values (a name for one would name both);
  // an input has no maker.
  EXPECT_EQ(run("program @main(%0: f32[3], %1: i32[2], %2: i32[3]) {\n"
                "  %3 = sin %0 : f32[3] @\"own\"\n"
                "  %4 = checkpoint_name %3 : f32[3] @\"a\"\n"
                "  %5 = slice[start_indices=[0], limit_indices=[1], strides=[1]] %1 : i32[1]\n"
                "  %6 = slice[start_indices=[1], limit_indices=[2], strides=[1]] %1 : i32[1]\n"
                "  %7 = reshape[new_sizes=[]] %5 : i32[]\n"
                "  %8 = reshape[new_sizes=[]] %6 : i32[]\n"
                "  %9, %10 = threefry2x32 %7, %8, %2, %2 : i32[3], i32[3]\n"
                "  %11 = checkpoint_name %9 : i32[3] @\"bits\"\n"
                "  %12 = checkpoint_name %0 : f32[3] @\"in\"\n"
                "  return %4, %11, %10, %12\n"
                "}\n",
                true),
            "program @main(%0: f32[3], %1: i32[2], %2: i32[3]) {\n"
            "  %3 = sin %0 : f32[3] @\"own\"\n"
            "  %4 = slice[start_indices=[0], limit_indices=[1], strides=[1]] %1 : i32[1]\n"
            "  %5 = slice[start_indices=[1], limit_indices=[2], strides=[1]] %1 : i32[1]\n"
            "  %6 = reshape[new_sizes=[]] %4 : i32[]\n"
            "  %7 = reshape[new_sizes=[]] %5 : i32[]\n"
            "  %8, %9 = threefry2x32 %6, %7, %2, %2 : i32[3], i32[3]\n"
            "  return %3, %8, %9, %0\n"
            "}\n");
}

TEST(DropNames, AScanBodysCarryIsCopiedToTheHostFromWhereItLies) {
  // The forward body of a named, offloaded scan carry (offload_bench's layer): the copy to the
  // host reads the carry itself, with no device copy of it before.
  EXPECT_EQ(run("program @main(%0: f32[4], %1: f32[2,4]) {\n"
                "  %2, %3 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[2,4]{pinned_host} {\n"
                "    program @body(%0: f32[4], %1: f32[4]) {\n"
                "      %2 = checkpoint_name %0 : f32[4] @\"x\"\n"
                "      %3 = device_put[dst=pinned_host] %2 : f32[4]{pinned_host}\n"
                "      %4 = mul %2, %1 : f32[4]\n"
                "      return %4, %3\n"
                "    }\n"
                "  }\n"
                "  return %2, %3\n"
                "}\n",
                true),
            "program @main(%0: f32[4], %1: f32[2,4]) {\n"
            "  %2, %3 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[2,4]{pinned_host} {\n"
            "    program @body(%0: f32[4], %1: f32[4]) {\n"
            "      %2 = device_put[dst=pinned_host] %0 : f32[4]{pinned_host}\n"
            "      %3 = mul %0, %1 : f32[4]\n"
            "      return %3, %2\n"
            "    }\n"
            "  }\n"
            "  return %2, %3\n"
            "}\n");
}

TEST(DropNames, AProgramWithoutNamesIsUnchanged) {
  const std::string text =
      "program @main(%0: f32[3]) {\n"
      "  %1 = sin %0 : f32[3]\n"
      "  return %1, %0\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

}  // namespace
}  // namespace ferry::compiler
