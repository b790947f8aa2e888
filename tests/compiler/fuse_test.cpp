#include "compiler/fuse.h"

#include <gtest/gtest.h>

#include "ferry/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

std::string run(const std::string& text, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(fuse_elementwise(*p), expect_change);
  prims::verify(*p);
  return ir::print(*p);
}

TEST(Fuse, ElementwiseChainWithBiasAndScalarBecomesOneLoop) {
  // The scalar constant is copied into the body (and dies outside); the bias is read through
  // the body's broadcast, never materialized at [2,3].
  EXPECT_EQ(run("program @main(%0: f32[2,3], %1: f32[3]) {\n"
                "  %2 = exp %0 : f32[2,3]\n"
                "  %3 = constant[value=2, dtype=f32, shape=[]] : f32[]\n"
                "  %4 = mul %2, %3 : f32[2,3]\n"
                "  %5 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[1]] %1 : f32[2,3]\n"
                "  %6 = add %4, %5 : f32[2,3]\n"
                "  return %6\n"
                "}\n",
                true),
            "program @main(%0: f32[2,3], %1: f32[3]) {\n"
            "  %2 = fused %0, %1 : f32[2,3] {\n"
            "    program @fused(%0: f32[2,3], %1: f32[3]) {\n"
            "      %2 = constant[value=2, dtype=f32, shape=[]] : f32[]\n"
            "      %3 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[1]] %1 : f32[2,3]\n"
            "      %4 = exp %0 : f32[2,3]\n"
            "      %5 = mul %4, %2 : f32[2,3]\n"
            "      %6 = add %5, %3 : f32[2,3]\n"
            "      return %6\n"
            "    }\n"
            "  }\n"
            "  return %2\n"
            "}\n");
}

TEST(Fuse, SoftmaxRowsBecomeOneLoop) {
  EXPECT_EQ(run("program @main(%0: f32[4,8]) {\n"
                "  %1 = reduce_max[axes=[1]] %0 : f32[4]\n"
                "  %2 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %1 : f32[4,8]\n"
                "  %3 = sub %0, %2 : f32[4,8]\n"
                "  %4 = exp %3 : f32[4,8]\n"
                "  %5 = reduce_sum[axes=[1]] %4 : f32[4]\n"
                "  %6 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %5 : f32[4,8]\n"
                "  %7 = div %4, %6 : f32[4,8]\n"
                "  return %7, %5\n"
                "}\n",
                true),
            "program @main(%0: f32[4,8]) {\n"
            "  %1, %2 = fused %0 : f32[4], f32[4,8] {\n"
            "    program @fused(%0: f32[4,8]) {\n"
            "      %1 = reduce_max[axes=[1]] %0 : f32[4]\n"
            "      %2 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %1 : f32[4,8]\n"
            "      %3 = sub %0, %2 : f32[4,8]\n"
            "      %4 = exp %3 : f32[4,8]\n"
            "      %5 = reduce_sum[axes=[1]] %4 : f32[4]\n"
            "      %6 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %5 : f32[4,8]\n"
            "      %7 = div %4, %6 : f32[4,8]\n"
            "      return %5, %7\n"
            "    }\n"
            "  }\n"
            "  return %2, %1\n"
            "}\n");
}

TEST(Fuse, AnOutsideReaderClosesTheGroup) {
  // The dot reads %3, so the group {exp, tanh} ends there; mul and add form a second group after
  // the dot (it reads the dot's result).
  EXPECT_EQ(run("program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
                "  %2 = exp %0 : f32[2,2]\n"
                "  %3 = tanh %2 : f32[2,2]\n"
                "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %1 : f32[2,2]\n"
                "  %5 = mul %3, %3 : f32[2,2]\n"
                "  %6 = add %5, %4 : f32[2,2]\n"
                "  return %6\n"
                "}\n",
                true),
            "program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
            "  %2 = fused %0 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2]) {\n"
            "      %1 = exp %0 : f32[2,2]\n"
            "      %2 = tanh %1 : f32[2,2]\n"
            "      return %2\n"
            "    }\n"
            "  }\n"
            "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %1 : f32[2,2]\n"
            "  %4 = fused %2, %3 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2]) {\n"
            "      %2 = mul %0, %0 : f32[2,2]\n"
            "      %3 = add %2, %1 : f32[2,2]\n"
            "      return %3\n"
            "    }\n"
            "  }\n"
            "  return %4\n"
            "}\n");
}

TEST(Fuse, LeavesLeadingAxisReductionsOtherDtypesAndLoneOpsAlone) {
  // A reduction over the leading axis does not fit the row loop; f64 is not fused; a lone
  // equation gains nothing.
  std::string text =
      "program @main(%0: f32[4,8], %1: f64[3], %2: f32[5]) {\n"
      "  %3 = exp %0 : f32[4,8]\n"
      "  %4 = reduce_sum[axes=[0]] %3 : f32[8]\n"
      "  %5 = exp %1 : f64[3]\n"
      "  %6 = sin %5 : f64[3]\n"
      "  %7 = neg %2 : f32[5]\n"
      "  return %4, %6, %7\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

TEST(Fuse, ACheapProducerIsRecomputedInEachReaderGroup) {
  // %2 = add is computed by the first group (for %3, which the first dot reads) and read by the
  // ops after each dot: each of those becomes a group that recomputes it from the program's inputs
  // instead of reading it, so it is never materialized.
  EXPECT_EQ(run("program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
                "  %2 = add %0, %1 : f32[2,2]\n"
                "  %3 = mul %2, %2 : f32[2,2]\n"
                "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %1 : f32[2,2]\n"
                "  %5 = sub %4, %2 : f32[2,2]\n"
                "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %1 : f32[2,2]\n"
                "  %7 = mul %6, %2 : f32[2,2]\n"
                "  return %7\n"
                "}\n",
                true),
            "program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
            "  %2 = fused %0, %1 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2]) {\n"
            "      %2 = add %0, %1 : f32[2,2]\n"
            "      %3 = mul %2, %2 : f32[2,2]\n"
            "      return %3\n"
            "    }\n"
            "  }\n"
            "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %1 : f32[2,2]\n"
            "  %4 = fused %0, %1, %3 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]) {\n"
            "      %3 = add %0, %1 : f32[2,2]\n"
            "      %4 = sub %2, %3 : f32[2,2]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  %5 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %4, %1 : f32[2,2]\n"
            "  %6 = fused %0, %1, %5 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]) {\n"
            "      %3 = add %0, %1 : f32[2,2]\n"
            "      %4 = mul %2, %3 : f32[2,2]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  return %6\n"
            "}\n");
}

TEST(Fuse, AnExpensiveProducerIsNotRecomputed) {
  // The readers of %3 = tanh(%0) * %1 recompute the mul but read the tanh, which the first group
  // now returns in %3's place: an expensive operation is computed once.
  EXPECT_EQ(run("program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
                "  %2 = tanh %0 : f32[2,2]\n"
                "  %3 = mul %2, %1 : f32[2,2]\n"
                "  %4 = add %3, %3 : f32[2,2]\n"
                "  %5 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %4, %1 : f32[2,2]\n"
                "  %6 = sub %5, %3 : f32[2,2]\n"
                "  %7 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %6, %1 : f32[2,2]\n"
                "  %8 = mul %7, %3 : f32[2,2]\n"
                "  return %8\n"
                "}\n",
                true),
            "program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
            "  %2, %3 = fused %0, %1 : f32[2,2], f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2]) {\n"
            "      %2 = tanh %0 : f32[2,2]\n"
            "      %3 = mul %2, %1 : f32[2,2]\n"
            "      %4 = add %3, %3 : f32[2,2]\n"
            "      return %2, %4\n"
            "    }\n"
            "  }\n"
            "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %1 : f32[2,2]\n"
            "  %5 = fused %2, %1, %4 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]) {\n"
            "      %3 = mul %0, %1 : f32[2,2]\n"
            "      %4 = sub %2, %3 : f32[2,2]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %1 : f32[2,2]\n"
            "  %7 = fused %2, %1, %6 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]) {\n"
            "      %3 = mul %0, %1 : f32[2,2]\n"
            "      %4 = mul %2, %3 : f32[2,2]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  return %7\n"
            "}\n");
}

TEST(Fuse, AProducerADotReadsStaysMaterializedOnce) {
  // The dot reads %2, so it is materialized anyway: the lone readers after the dots read it (they
  // stay unfused), nothing is recomputed.
  EXPECT_EQ(run("program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
                "  %2 = add %0, %1 : f32[2,2]\n"
                "  %3 = mul %2, %2 : f32[2,2]\n"
                "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %2 : f32[2,2]\n"
                "  %5 = sub %4, %2 : f32[2,2]\n"
                "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %1 : f32[2,2]\n"
                "  %7 = mul %6, %2 : f32[2,2]\n"
                "  return %7\n"
                "}\n",
                true),
            "program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
            "  %2, %3 = fused %0, %1 : f32[2,2], f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2]) {\n"
            "      %2 = add %0, %1 : f32[2,2]\n"
            "      %3 = mul %2, %2 : f32[2,2]\n"
            "      return %2, %3\n"
            "    }\n"
            "  }\n"
            "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %2 : f32[2,2]\n"
            "  %5 = sub %4, %2 : f32[2,2]\n"
            "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %1 : f32[2,2]\n"
            "  %7 = mul %6, %2 : f32[2,2]\n"
            "  return %7\n"
            "}\n");
}

TEST(Fuse, ARowReadThroughABroadcastStaysARowForAReaderWithoutReductions) {
  // %6 = %0 - mean is recomputed in both later groups. The first reduces rows itself, so it also
  // recomputes the row's scaling; the last has no reductions (no rows of its own) and reads the
  // scaled row, which the first group returns, through a broadcast. The reduction is not recomputed.
  EXPECT_EQ(run("program @main(%0: f32[4,8], %1: f32[8,8]) {\n"
                "  %2 = reduce_sum[axes=[1]] %0 : f32[4]\n"
                "  %3 = constant[value=0.125, dtype=f32, shape=[]] : f32[]\n"
                "  %4 = mul %2, %3 : f32[4]\n"
                "  %5 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %4 : f32[4,8]\n"
                "  %6 = sub %0, %5 : f32[4,8]\n"
                "  %7 = exp %6 : f32[4,8]\n"
                "  %8 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %7, %1 : f32[4,8]\n"
                "  %9 = mul %8, %6 : f32[4,8]\n"
                "  %10 = reduce_sum[axes=[1]] %9 : f32[4]\n"
                "  %11 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %9, %1 : f32[4,8]\n"
                "  %12 = add %11, %6 : f32[4,8]\n"
                "  return %10, %12\n"
                "}\n",
                true),
            "program @main(%0: f32[4,8], %1: f32[8,8]) {\n"
            "  %2, %3, %4 = fused %0 : f32[4], f32[4], f32[4,8] {\n"
            "    program @fused(%0: f32[4,8]) {\n"
            "      %1 = constant[value=0.125, dtype=f32, shape=[]] : f32[]\n"
            "      %2 = reduce_sum[axes=[1]] %0 : f32[4]\n"
            "      %3 = mul %2, %1 : f32[4]\n"
            "      %4 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %3 : f32[4,8]\n"
            "      %5 = sub %0, %4 : f32[4,8]\n"
            "      %6 = exp %5 : f32[4,8]\n"
            "      return %2, %3, %6\n"
            "    }\n"
            "  }\n"
            "  %5 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %4, %1 : f32[4,8]\n"
            "  %6, %7 = fused %2, %0, %5 : f32[4,8], f32[4] {\n"
            "    program @fused(%0: f32[4], %1: f32[4,8], %2: f32[4,8]) {\n"
            "      %3 = constant[value=0.125, dtype=f32, shape=[]] : f32[]\n"
            "      %4 = mul %0, %3 : f32[4]\n"
            "      %5 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %4 : f32[4,8]\n"
            "      %6 = sub %1, %5 : f32[4,8]\n"
            "      %7 = mul %2, %6 : f32[4,8]\n"
            "      %8 = reduce_sum[axes=[1]] %7 : f32[4]\n"
            "      return %7, %8\n"
            "    }\n"
            "  }\n"
            "  %8 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %6, %1 : f32[4,8]\n"
            "  %9 = fused %3, %0, %8 : f32[4,8] {\n"
            "    program @fused(%0: f32[4], %1: f32[4,8], %2: f32[4,8]) {\n"
            "      %3 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %0 : f32[4,8]\n"
            "      %4 = sub %1, %3 : f32[4,8]\n"
            "      %5 = add %2, %4 : f32[4,8]\n"
            "      return %5\n"
            "    }\n"
            "  }\n"
            "  return %7, %9\n"
            "}\n");
}

TEST(Fuse, NoProducerIsRecomputedWhenThatKeepsMoreBytesAlive) {
  // Recomputing %4 = %2 + %3 after the last dot would keep both dot results alive until then
  // instead of %4 alone.
  EXPECT_EQ(run("program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
                "  %2 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1 : f32[2,2]\n"
                "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %1, %0 : f32[2,2]\n"
                "  %4 = add %2, %3 : f32[2,2]\n"
                "  %5 = mul %4, %4 : f32[2,2]\n"
                "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %1 : f32[2,2]\n"
                "  %7 = sub %6, %4 : f32[2,2]\n"
                "  return %7\n"
                "}\n",
                true),
            "program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
            "  %2 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1 : f32[2,2]\n"
            "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %1, %0 : f32[2,2]\n"
            "  %4, %5 = fused %2, %3 : f32[2,2], f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2]) {\n"
            "      %2 = add %0, %1 : f32[2,2]\n"
            "      %3 = mul %2, %2 : f32[2,2]\n"
            "      return %2, %3\n"
            "    }\n"
            "  }\n"
            "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %5, %1 : f32[2,2]\n"
            "  %7 = sub %6, %4 : f32[2,2]\n"
            "  return %7\n"
            "}\n");
}

TEST(Fuse, AGroupLeftWithConstantsOnlyKeepsWhatItComputed) {
  // The last group recomputes %5 = %4 + %0, so the first group needs only exp(-2), which reads no
  // operand; a fused equation reads at least one, so that group still computes %5 (unreturned).
  EXPECT_EQ(run("program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
                "  %2 = constant[value=2, dtype=f32, shape=[2,2]] : f32[2,2]\n"
                "  %3 = neg %2 : f32[2,2]\n"
                "  %4 = exp %3 : f32[2,2]\n"
                "  %5 = add %4, %0 : f32[2,2]\n"
                "  %6 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %4, %1 : f32[2,2]\n"
                "  %7 = sub %6, %5 : f32[2,2]\n"
                "  return %7\n"
                "}\n",
                true),
            "program @main(%0: f32[2,2], %1: f32[2,2]) {\n"
            "  %2 = fused %0 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2]) {\n"
            "      %1 = constant[value=2, dtype=f32, shape=[2,2]] : f32[2,2]\n"
            "      %2 = neg %1 : f32[2,2]\n"
            "      %3 = exp %2 : f32[2,2]\n"
            "      %4 = add %3, %0 : f32[2,2]\n"
            "      return %3\n"
            "    }\n"
            "  }\n"
            "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %1 : f32[2,2]\n"
            "  %4 = fused %2, %0, %3 : f32[2,2] {\n"
            "    program @fused(%0: f32[2,2], %1: f32[2,2], %2: f32[2,2]) {\n"
            "      %3 = add %0, %1 : f32[2,2]\n"
            "      %4 = sub %2, %3 : f32[2,2]\n"
            "      return %4\n"
            "    }\n"
            "  }\n"
            "  return %4\n"
            "}\n");
}

// A chain of n negations of %0, and its square, which a dot reads; an equation after the dot reads
// the chain's end.
std::string neg_chain(int n) {
  auto v = [](int i) { return "%" + std::to_string(i); };
  std::string text = "program @main(%0: f32[2,2], %1: f32[2,2]) {\n";
  for (int i = 0; i < n; ++i) text += "  " + v(i + 2) + " = neg " + v(i == 0 ? 0 : i + 1) + " : f32[2,2]\n";
  const std::string end = v(n + 1);
  text += "  " + v(n + 2) + " = mul " + end + ", " + end + " : f32[2,2]\n";
  text += "  " + v(n + 3) + " = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] " +
          v(n + 2) + ", %1 : f32[2,2]\n";
  text += "  " + v(n + 4) + " = sub " + v(n + 3) + ", " + end + " : f32[2,2]\n";
  return text + "  return " + v(n + 4) + "\n}\n";
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Fuse, AReaderRecomputesAtMostSixteenOperationsPerElement) {
  EXPECT_EQ(count(run(neg_chain(16), true), " = neg "), 32) << "the sub's group recomputes the chain";
  EXPECT_EQ(count(run(neg_chain(17), true), " = neg "), 17) << "too long to recompute: the chain's end is materialized";
}

TEST(Fuse, FusedTextRoundTripsAndVerifies) {
  auto p = ir::parse(
      "program @main(%0: f32[4,8], %1: f32[8]) {\n"
      "  %2 = reduce_sum[axes=[1]] %0 : f32[4]\n"
      "  %3 = constant[value=0.125, dtype=f32, shape=[]] : f32[]\n"
      "  %4 = mul %2, %3 : f32[4]\n"
      "  %5 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %4 : f32[4,8]\n"
      "  %6 = sub %0, %5 : f32[4,8]\n"
      "  %7 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[1]] %1 : f32[4,8]\n"
      "  %8 = mul %6, %7 : f32[4,8]\n"
      "  %9 = gt %8, %3 : bool[4,8]\n"
      "  return %8, %9\n"
      "}\n");
  ASSERT_TRUE(fuse_elementwise(*p));
  prims::verify(*p);
  const std::string text = ir::print(*p);
  EXPECT_NE(text.find("fused"), std::string::npos);
  auto back = ir::parse(text);
  prims::verify(*back);
  EXPECT_EQ(ir::print(*back), text);
  EXPECT_FALSE(fuse_elementwise(*back)) << "a fused program has nothing left to fuse";
}

TEST(Fuse, RandomBitsAndMasksJoinTheirConsumer) {
  // Dropout's bits as jax.random makes them (counters: a flat iota reshaped; threefry2x32's two
  // words; xor, shift, or and bitcast to [1, 2)) and a causal mask (two iotas and le) join the
  // masked softmax that reads them: one group, nothing materialized but its results. Full-shape
  // i32 constants are copied in (a scalar each in the kernel).
  EXPECT_EQ(run(
                "program @main(%0: f32[2,8], %1: i32[], %2: i32[]) {\n"
                "  %3 = iota[dtype=i32, shape=[16], dimension=0] : i32[16]\n"
                "  %4 = reshape[new_sizes=[2,8]] %3 : i32[2,8]\n"
                "  %5 = constant[value=0, dtype=i32, shape=[2,8]] : i32[2,8]\n"
                "  %6, %7 = threefry2x32 %1, %2, %5, %4 : i32[2,8], i32[2,8]\n"
                "  %8 = xor %6, %7 : i32[2,8]\n"
                "  %9 = constant[value=9, dtype=i32, shape=[2,8]] : i32[2,8]\n"
                "  %10 = shift_right_logical %8, %9 : i32[2,8]\n"
                "  %11 = constant[value=1065353216, dtype=i32, shape=[2,8]] : i32[2,8]\n"
                "  %12 = or %10, %11 : i32[2,8]\n"
                "  %13 = bitcast_convert_type[new_dtype=f32] %12 : f32[2,8]\n"
                "  %14 = constant[value=1, dtype=f32, shape=[]] : f32[]\n"
                "  %15 = sub %13, %14 : f32[2,8]\n"
                "  %16 = constant[value=0.5, dtype=f32, shape=[]] : f32[]\n"
                "  %17 = lt %15, %16 : bool[2,8]\n"
                "  %18 = iota[dtype=i32, shape=[2,8], dimension=0] : i32[2,8]\n"
                "  %19 = iota[dtype=i32, shape=[2,8], dimension=1] : i32[2,8]\n"
                "  %20 = le %19, %18 : bool[2,8]\n"
                "  %21 = constant[value=-1000000000, dtype=f32, shape=[]] : f32[]\n"
                "  %22 = select %20, %0, %21 : f32[2,8]\n"
                "  %23 = reduce_max[axes=[1]] %22 : f32[2]\n"
                "  %24 = broadcast_in_dim[shape=[2,8], broadcast_dimensions=[0]] %23 : f32[2,8]\n"
                "  %25 = sub %22, %24 : f32[2,8]\n"
                "  %26 = exp %25 : f32[2,8]\n"
                "  %27 = constant[value=0, dtype=f32, shape=[]] : f32[]\n"
                "  %28 = select %17, %26, %27 : f32[2,8]\n"
                "  return %28, %23\n"
                "}\n",
                true),
            "program @main(%0: f32[2,8], %1: i32[], %2: i32[]) {\n"
            "  %3, %4 = fused %1, %2, %0 : f32[2], f32[2,8] {\n"
            "    program @fused(%0: i32[], %1: i32[], %2: f32[2,8]) {\n"
            "      %3 = constant[value=0, dtype=i32, shape=[2,8]] : i32[2,8]\n"
            "      %4 = constant[value=9, dtype=i32, shape=[2,8]] : i32[2,8]\n"
            "      %5 = constant[value=1065353216, dtype=i32, shape=[2,8]] : i32[2,8]\n"
            "      %6 = constant[value=1, dtype=f32, shape=[]] : f32[]\n"
            "      %7 = constant[value=0.5, dtype=f32, shape=[]] : f32[]\n"
            "      %8 = constant[value=-1000000000, dtype=f32, shape=[]] : f32[]\n"
            "      %9 = constant[value=0, dtype=f32, shape=[]] : f32[]\n"
            "      %10 = iota[dtype=i32, shape=[16], dimension=0] : i32[16]\n"
            "      %11 = reshape[new_sizes=[2,8]] %10 : i32[2,8]\n"
            "      %12, %13 = threefry2x32 %0, %1, %3, %11 : i32[2,8], i32[2,8]\n"
            "      %14 = xor %12, %13 : i32[2,8]\n"
            "      %15 = shift_right_logical %14, %4 : i32[2,8]\n"
            "      %16 = or %15, %5 : i32[2,8]\n"
            "      %17 = bitcast_convert_type[new_dtype=f32] %16 : f32[2,8]\n"
            "      %18 = sub %17, %6 : f32[2,8]\n"
            "      %19 = lt %18, %7 : bool[2,8]\n"
            "      %20 = iota[dtype=i32, shape=[2,8], dimension=0] : i32[2,8]\n"
            "      %21 = iota[dtype=i32, shape=[2,8], dimension=1] : i32[2,8]\n"
            "      %22 = le %21, %20 : bool[2,8]\n"
            "      %23 = select %22, %2, %8 : f32[2,8]\n"
            "      %24 = reduce_max[axes=[1]] %23 : f32[2]\n"
            "      %25 = broadcast_in_dim[shape=[2,8], broadcast_dimensions=[0]] %24 : f32[2,8]\n"
            "      %26 = sub %23, %25 : f32[2,8]\n"
            "      %27 = exp %26 : f32[2,8]\n"
            "      %28 = select %19, %27, %9 : f32[2,8]\n"
            "      return %24, %28\n"
            "    }\n"
            "  }\n"
            "  return %4, %3\n"
            "}\n");
}

TEST(Fuse, IntegerWorkWithoutAFusedFormStaysOut) {
  // i32 reductions and divisions have no fused kernel; an f32 reshape stays a kernel of its own
  // (it runs in place where its operand dies). The i32 add and the not join no group either:
  // each would be a group of one.
  std::string text =
      "program @main(%0: i32[4,8], %1: f32[4,8]) {\n"
      "  %2 = reduce_sum[axes=[1]] %0 : i32[4]\n"
      "  %3 = div %0, %0 : i32[4,8]\n"
      "  %4 = add %3, %3 : i32[4,8]\n"
      "  %5 = reshape[new_sizes=[32]] %1 : f32[32]\n"
      "  %6 = exp %5 : f32[32]\n"
      "  return %2, %4, %6\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

TEST(Fuse, AGroupOfRecomputationIsARecomputation) {
  // exp and neg recompute (rematerialized): their group is too, so the scheduler runs it just
  // before its reader; the group with the forward mul is not.
  EXPECT_EQ(run("program @main(%0: f32[4]) {\n"
                "  %1 = exp %0 : f32[4] !remat\n"
                "  %2 = neg %1 : f32[4] !remat\n"
                "  %3 = tanh %0 : f32[4] !remat\n"
                "  %4 = mul %3, %3 : f32[4]\n"
                "  %5 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %4 : f32[]\n"
                "  return %5\n"
                "}\n",
                true),
            "program @main(%0: f32[4]) {\n"
            "  %1 = fused %0 : f32[4] !remat {\n"
            "    program @fused(%0: f32[4]) {\n"
            "      %1 = exp %0 : f32[4] !remat\n"
            "      %2 = neg %1 : f32[4] !remat\n"
            "      return %2\n"
            "    }\n"
            "  }\n"
            "  %2 = fused %0 : f32[4] {\n"
            "    program @fused(%0: f32[4]) {\n"
            "      %1 = tanh %0 : f32[4] !remat\n"
            "      %2 = mul %1, %1 : f32[4]\n"
            "      return %2\n"
            "    }\n"
            "  }\n"
            "  %3 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %1, %2 : f32[]\n"
            "  return %3\n"
            "}\n");
}

void expect_rejected(const std::string& text, const std::string& what) {
  try {
    prims::verify(*ir::parse(text));
    ADD_FAILURE() << "the verifier accepted:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
  }
}

TEST(Fuse, TheVerifierChecksFusedBodies) {
  expect_rejected("program @main(%0: f32[4,8]) {\n"
                  "  %1 = fused %0 : f32[8] {\n"
                  "    program @fused(%0: f32[4,8]) {\n"
                  "      %1 = reduce_sum[axes=[0]] %0 : f32[8]\n"
                  "      return %1\n"
                  "    }\n"
                  "  }\n"
                  "  return %1\n"
                  "}\n",
                  "trailing axes");
  expect_rejected("program @main(%0: f32[2,2]) {\n"
                  "  %1 = fused %0 : f32[2,2] {\n"
                  "    program @fused(%0: f32[2,2]) {\n"
                  "      %1 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %0 : f32[2,2]\n"
                  "      return %1\n"
                  "    }\n"
                  "  }\n"
                  "  return %1\n"
                  "}\n",
                  "cannot be part of a fused body");
  expect_rejected("program @main(%0: f32[2,2]) {\n"
                  "  %1 = fused %0 : f32[2,2] {\n"
                  "    program @fused(%0: f32[2,2]) {\n"
                  "      return %0\n"
                  "    }\n"
                  "  }\n"
                  "  return %1\n"
                  "}\n",
                  "returns values it computes");
  expect_rejected("program @main(%0: f32[2,3]) {\n"
                  "  %1 = fused %0 : f32[3,2] {\n"
                  "    program @fused(%0: f32[2,3]) {\n"
                  "      %1 = broadcast_in_dim[shape=[3,2], broadcast_dimensions=[1,0]] %0 : f32[3,2]\n"
                  "      %2 = exp %1 : f32[3,2]\n"
                  "      return %2\n"
                  "    }\n"
                  "  }\n"
                  "  return %1\n"
                  "}\n",
                  "");
  expect_rejected("program @main(%0: i32[4,8]) {\n"
                  "  %1 = fused %0 : i32[4] {\n"
                  "    program @fused(%0: i32[4,8]) {\n"
                  "      %1 = not %0 : i32[4,8]\n"
                  "      %2 = reduce_sum[axes=[1]] %1 : i32[4]\n"
                  "      return %2\n"
                  "    }\n"
                  "  }\n"
                  "  return %1\n"
                  "}\n",
                  "reduce_sum on i32 values cannot be part of a fused body");
  expect_rejected("program @main(%0: i32[4,8]) {\n"
                  "  %1 = fused %0 : i32[4,8] {\n"
                  "    program @fused(%0: i32[4,8]) {\n"
                  "      %1 = iota[dtype=i32, shape=[4], dimension=0] : i32[4]\n"
                  "      %2 = broadcast_in_dim[shape=[4,8], broadcast_dimensions=[0]] %1 : i32[4,8]\n"
                  "      %3 = add %0, %2 : i32[4,8]\n"
                  "      return %3\n"
                  "    }\n"
                  "  }\n"
                  "  return %1\n"
                  "}\n",
                  "iota");
}

}  // namespace
}  // namespace ferry::compiler
