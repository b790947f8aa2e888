#include "compiler/simplify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/materialize_outputs.h"
#include "ferry/jit.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

// Runs the pass on IR text; checks the result verifies and its text round-trips.
std::string run(const std::string& text, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(simplify(*p), expect_change);
  prims::verify(*p);
  std::string out = ir::print(*p);
  EXPECT_EQ(ir::print(*ir::parse(out)), out);
  return out;
}

TEST(Simplify, TanhVjpReadsTheOneAsAScalar) {
  // 1 - t*t and the cotangent of a sum: neither the constant nor the broadcast ones stay, and
  // mul by the broadcast ones is gone.
  EXPECT_EQ(run("program @main(%0: f32[4,3]) {\n"
                "  %1 = tanh %0 : f32[4,3]\n"
                "  %2 = constant[value=1, dtype=f32, shape=[]] : f32[]\n"
                "  %3 = broadcast_in_dim[shape=[4,3], broadcast_dimensions=[]] %2 : f32[4,3]\n"
                "  %4 = mul %1, %1 : f32[4,3]\n"
                "  %5 = constant[value=1, dtype=f32, shape=[4,3]] : f32[4,3]\n"
                "  %6 = sub %5, %4 : f32[4,3]\n"
                "  %7 = mul %3, %6 : f32[4,3]\n"
                "  return %7\n"
                "}\n",
                true),
            "program @main(%0: f32[4,3]) {\n"
            "  %1 = tanh %0 : f32[4,3]\n"
            "  %2 = constant[value=1, dtype=f32, shape=[]] : f32[]\n"
            "  %3 = mul %1, %1 : f32[4,3]\n"
            "  %4 = sub %2, %3 : f32[4,3]\n"
            "  return %4\n"
            "}\n");
}

TEST(Simplify, FoldsOnlyExactIdentities) {
  // x*1, 1*x, x/1, x+(-0), (-0)+x, x-(+0), max(x,-inf), min(x,+inf) are x to the last bit.
  // x+(+0) (-0 + +0 = +0), x-(-0), 1/x, x*0 and x^1 are not folded.
  EXPECT_EQ(run("program @main(%0: f32[2]) {\n"
                "  %1 = constant[value=1, dtype=f32, shape=[2]] : f32[2]\n"
                "  %2 = constant[value=-0, dtype=f32, shape=[2]] : f32[2]\n"
                "  %3 = constant[value=0, dtype=f32, shape=[2]] : f32[2]\n"
                "  %4 = constant[value=-inf, dtype=f32, shape=[2]] : f32[2]\n"
                "  %5 = constant[value=inf, dtype=f32, shape=[2]] : f32[2]\n"
                "  %6 = mul %0, %1 : f32[2]\n"
                "  %7 = mul %1, %6 : f32[2]\n"
                "  %8 = div %7, %1 : f32[2]\n"
                "  %9 = add %8, %2 : f32[2]\n"
                "  %10 = add %2, %9 : f32[2]\n"
                "  %11 = sub %10, %3 : f32[2]\n"
                "  %12 = max %11, %4 : f32[2]\n"
                "  %13 = min %5, %12 : f32[2]\n"
                "  %14 = add %13, %3 : f32[2]\n"
                "  %15 = sub %13, %2 : f32[2]\n"
                "  %16 = div %1, %13 : f32[2]\n"
                "  %17 = mul %13, %3 : f32[2]\n"
                "  %18 = pow %13, %1 : f32[2]\n"
                "  %19 = max %13, %5 : f32[2]\n"
                "  return %14, %15, %16, %17, %18, %19\n"
                "}\n",
                true),
            "program @main(%0: f32[2]) {\n"
            "  %1 = constant[value=1, dtype=f32, shape=[]] : f32[]\n"
            "  %2 = constant[value=-0, dtype=f32, shape=[]] : f32[]\n"
            "  %3 = constant[value=0, dtype=f32, shape=[]] : f32[]\n"
            "  %4 = constant[value=inf, dtype=f32, shape=[]] : f32[]\n"
            "  %5 = add %0, %3 : f32[2]\n"
            "  %6 = sub %0, %2 : f32[2]\n"
            "  %7 = div %1, %0 : f32[2]\n"
            "  %8 = mul %0, %3 : f32[2]\n"
            "  %9 = pow %0, %1 : f32[2]\n"
            "  %10 = max %0, %4 : f32[2]\n"
            "  return %5, %6, %7, %8, %9, %10\n"
            "}\n");
}

TEST(Simplify, IntegerZerosFoldWithEitherSign) {
  // i32 has one zero, so x+0 and 0+x are x; INT_MIN and INT_MAX are max's and min's identities.
  EXPECT_EQ(run("program @main(%0: i32[3]) {\n"
                "  %1 = constant[value=0, dtype=i32, shape=[3]] : i32[3]\n"
                "  %2 = constant[value=-2147483648, dtype=i32, shape=[3]] : i32[3]\n"
                "  %3 = add %1, %0 : i32[3]\n"
                "  %4 = sub %3, %1 : i32[3]\n"
                "  %5 = max %4, %2 : i32[3]\n"
                "  %6 = sub %1, %5 : i32[3]\n"
                "  return %6\n"
                "}\n",
                true),
            "program @main(%0: i32[3]) {\n"
            "  %1 = constant[value=0, dtype=i32, shape=[]] : i32[]\n"
            "  %2 = sub %1, %0 : i32[3]\n"
            "  return %2\n"
            "}\n");
}

TEST(Simplify, ElementwiseOpsOfSplatsComputeOneScalar) {
  // neg(broadcast(g)) is one neg of g; convert and compare of splats likewise; the select reads
  // the scalar predicate and branch.
  EXPECT_EQ(run("program @main(%0: f32[], %1: f32[2,3]) {\n"
                "  %2 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[]] %0 : f32[2,3]\n"
                "  %3 = neg %2 : f32[2,3]\n"
                "  %4 = convert_element_type[new_dtype=f64] %3 : f64[2,3]\n"
                "  %5 = constant[value=0, dtype=f64, shape=[2,3]] : f64[2,3]\n"
                "  %6 = gt %4, %5 : bool[2,3]\n"
                "  %7 = convert_element_type[new_dtype=f64] %1 : f64[2,3]\n"
                "  %8 = select %6, %4, %7 : f64[2,3]\n"
                "  return %8\n"
                "}\n",
                true),
            "program @main(%0: f32[], %1: f32[2,3]) {\n"
            "  %2 = neg %0 : f32[]\n"
            "  %3 = convert_element_type[new_dtype=f64] %2 : f64[]\n"
            "  %4 = constant[value=0, dtype=f64, shape=[]] : f64[]\n"
            "  %5 = gt %3, %4 : bool[]\n"
            "  %6 = convert_element_type[new_dtype=f64] %1 : f64[2,3]\n"
            "  %7 = select %5, %3, %6 : f64[2,3]\n"
            "  return %7\n"
            "}\n");
}

TEST(Simplify, SplatsReadInFullAreMaterializedJustBeforeTheirReader) {
  // The dot needs the ones in full (a constant again, of the reshaped shape); the sum needs the
  // broadcast; the output is a splat, materialized last. The mul by them was the only change.
  EXPECT_EQ(run("program @main(%0: f32[2,3], %1: f32[]) {\n"
                "  %2 = constant[value=1, dtype=f32, shape=[3,2]] : f32[3,2]\n"
                "  %3 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[]] %1 : f32[2,3]\n"
                "  %4 = mul %0, %3 : f32[2,3]\n"
                "  %5 = reshape[new_sizes=[2,3]] %2 : f32[2,3]\n"
                "  %6 = sin %4 : f32[2,3]\n"
                "  %7 = transpose[permutation=[1,0]] %5 : f32[3,2]\n"
                "  %8 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %6, %7 : f32[2,2]\n"
                "  %9 = reduce_sum[axes=[0,1]] %3 : f32[]\n"
                "  return %8, %9, %5\n"
                "}\n",
                true),
            "program @main(%0: f32[2,3], %1: f32[]) {\n"
            "  %2 = mul %0, %1 : f32[2,3]\n"
            "  %3 = sin %2 : f32[2,3]\n"
            "  %4 = constant[value=1, dtype=f32, shape=[3,2]] : f32[3,2]\n"
            "  %5 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %4 : f32[2,2]\n"
            "  %6 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[]] %1 : f32[2,3]\n"
            "  %7 = reduce_sum[axes=[0,1]] %6 : f32[]\n"
            "  %8 = constant[value=1, dtype=f32, shape=[2,3]] : f32[2,3]\n"
            "  return %5, %7, %8\n"
            "}\n");
}

TEST(Simplify, LeavesAProgramWithNothingToFoldAsItWas) {
  // Constants read only in full, and +0 added (not an identity).
  std::string text =
      "program @main(%0: f32[2,3], %1: bool[2]) {\n"
      "  %2 = constant[value=2, dtype=f32, shape=[3,2]] : f32[3,2]\n"
      "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %2 : f32[2,2]\n"
      "  %4 = constant[value=0, dtype=f32, shape=[]] : f32[]\n"
      "  %5 = reduce_sum[axes=[0,1]] %3 : f32[]\n"
      "  %6 = add %5, %4 : f32[]\n"
      "  %7 = reduce_sum[axes=[0]] %2 : f32[2]\n"
      "  return %6, %7, %1\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

TEST(Simplify, SelectsFoldOnAKnownPredicateOrEqualBranches) {
  EXPECT_EQ(run("program @main(%0: f32[4], %1: f32[4], %2: bool[4]) {\n"
                "  %3 = constant[value=1, dtype=bool, shape=[4]] : bool[4]\n"
                "  %4 = select %3, %0, %1 : f32[4]\n"
                "  %5 = constant[value=0, dtype=bool, shape=[]] : bool[]\n"
                "  %6 = broadcast_in_dim[shape=[4], broadcast_dimensions=[]] %5 : bool[4]\n"
                "  %7 = select %6, %0, %1 : f32[4]\n"
                "  %8 = select %2, %4, %4 : f32[4]\n"
                "  return %8, %7\n"
                "}\n",
                true),
            "program @main(%0: f32[4], %1: f32[4], %2: bool[4]) {\n"
            "  return %0, %1\n"
            "}\n");
}

TEST(Simplify, IdentityShapeOpsAndConvertsFold) {
  EXPECT_EQ(run("program @main(%0: f32[2,3]) {\n"
                "  %1 = reshape[new_sizes=[2,3]] %0 : f32[2,3]\n"
                "  %2 = transpose[permutation=[0,1]] %1 : f32[2,3]\n"
                "  %3 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[0,1]] %2 : f32[2,3]\n"
                "  %4 = convert_element_type[new_dtype=f32] %3 : f32[2,3]\n"
                "  %5 = transpose[permutation=[1,0]] %4 : f32[3,2]\n"
                "  return %5, %4\n"
                "}\n",
                true),
            "program @main(%0: f32[2,3]) {\n"
            "  %1 = transpose[permutation=[1,0]] %0 : f32[3,2]\n"
            "  return %1, %0\n"
            "}\n");
}

TEST(Simplify, OutputsThatBecomeInputsAreMaterializedLater) {
  // x*1 returned twice and beside x itself: simplify returns x three times; materialize_outputs
  // then gives each its own buffer.
  auto p = ir::parse(
      "program @main(%0: f32[2]) {\n"
      "  %1 = constant[value=1, dtype=f32, shape=[2]] : f32[2]\n"
      "  %2 = mul %0, %1 : f32[2]\n"
      "  return %2, %2, %0\n"
      "}\n");
  EXPECT_TRUE(simplify(*p));
  EXPECT_TRUE(materialize_outputs(*p));
  prims::verify(*p);
  EXPECT_EQ(ir::print(*p),
            "program @main(%0: f32[2]) {\n"
            "  %1 = device_put[dst=device] %0 : f32[2]\n"
            "  %2 = device_put[dst=device] %0 : f32[2]\n"
            "  %3 = device_put[dst=device] %0 : f32[2]\n"
            "  return %1, %2, %3\n"
            "}\n");
}

TEST(Simplify, SimplifiesScanBodies) {
  EXPECT_EQ(run("program @main(%0: f32[3], %1: f32[2,3]) {\n"
                "  %2 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[3] {\n"
                "    program @body(%0: f32[3], %1: f32[3]) {\n"
                "      %2 = constant[value=1, dtype=f32, shape=[3]] : f32[3]\n"
                "      %3 = mul %2, %1 : f32[3]\n"
                "      %4 = sub %2, %0 : f32[3]\n"
                "      %5 = add %4, %3 : f32[3]\n"
                "      return %5\n"
                "    }\n"
                "  }\n"
                "  return %2\n"
                "}\n",
                true),
            "program @main(%0: f32[3], %1: f32[2,3]) {\n"
            "  %2 = scan[length=2, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[3] {\n"
            "    program @body(%0: f32[3], %1: f32[3]) {\n"
            "      %2 = constant[value=1, dtype=f32, shape=[]] : f32[]\n"
            "      %3 = sub %2, %0 : f32[3]\n"
            "      %4 = add %3, %1 : f32[3]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  return %2\n"
            "}\n");
}

// Compiled and run: the folds keep every bit of special values, and x + (+0) (not folded) still
// turns -0 into +0 as IEEE 754 says.
TEST(Simplify, FoldedProgramsKeepTheBitsOfSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x{-0.0f, 0.0f, inf, -inf, nan, -1.5f, 3e-45f /* subnormal */};
  const Shape shape{static_cast<int64_t>(x.size())};
  Lowered lowered = parse_program(
      "program @main(%0: f32[7]) {\n"
      "  %1 = constant[value=1, dtype=f32, shape=[7]] : f32[7]\n"
      "  %2 = constant[value=-0, dtype=f32, shape=[7]] : f32[7]\n"
      "  %3 = constant[value=0, dtype=f32, shape=[7]] : f32[7]\n"
      "  %4 = constant[value=-inf, dtype=f32, shape=[7]] : f32[7]\n"
      "  %5 = mul %1, %0 : f32[7]\n"
      "  %6 = div %5, %1 : f32[7]\n"
      "  %7 = add %6, %2 : f32[7]\n"
      "  %8 = sub %7, %3 : f32[7]\n"
      "  %9 = max %8, %4 : f32[7]\n"
      "  %10 = add %9, %3 : f32[7]\n"
      "  return %9, %10\n"
      "}\n");
  Compiled c = lowered.compile();
  EXPECT_EQ(c.as_text().find("shape=[7]"), std::string::npos) << c.as_text();  // no constant in full
  std::vector<Array> out = c(Array::from(x, shape));
  std::vector<float> same = out[0].to_vector<float>(), plus_zero = out[1].to_vector<float>();
  ASSERT_EQ(same.size(), x.size());
  EXPECT_EQ(std::memcmp(same.data(), x.data(), x.size() * sizeof(float)), 0);
  EXPECT_FALSE(std::signbit(plus_zero[0]));  // -0 + +0 = +0
  for (size_t i = 1; i < x.size(); ++i)
    if (!std::isnan(x[i])) EXPECT_EQ(plus_zero[i], x[i]);
}

}  // namespace
}  // namespace ferry::compiler
