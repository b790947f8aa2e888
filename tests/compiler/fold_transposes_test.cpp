#include "compiler/fold_transposes.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

// Runs the pass on IR text; checks the result verifies and its text round-trips.
std::string run(const std::string& text, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(fold_transposes(*p), expect_change);
  prims::verify(*p);
  std::string out = ir::print(*p);
  EXPECT_EQ(ir::print(*ir::parse(out)), out);
  return out;
}

TEST(FoldTransposes, TransposedLhsBecomesTheBlasFlag) {
  // x^T w: the kernel reads x [K, M] with the transpose flag; the contracting dimension moves.
  EXPECT_EQ(run("program @main(%0: f32[8,4], %1: f32[8,16]) {\n"
                "  %2 = transpose[permutation=[1,0]] %0 : f32[4,8]\n"
                "  %3 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %1 : f32[4,16]\n"
                "  return %3\n"
                "}\n",
                true),
            "program @main(%0: f32[8,4], %1: f32[8,16]) {\n"
            "  %2 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1 : f32[4,16]\n"
            "  return %2\n"
            "}\n");
}

TEST(FoldTransposes, BatchedRhsTransposeOfAttentionScores) {
  // q k^T per batch: k [B, T, D] transposed to [B, D, T] folds into contracting D of k itself.
  EXPECT_EQ(run("program @main(%0: f32[2,5,3], %1: f32[2,5,3]) {\n"
                "  %2 = transpose[permutation=[0,2,1]] %1 : f32[2,3,5]\n"
                "  %3 = dot_general[lhs_contracting=[2], rhs_contracting=[1], lhs_batch=[0], rhs_batch=[0]] %0, %2 : f32[2,5,5]\n"
                "  return %3\n"
                "}\n",
                true),
            "program @main(%0: f32[2,5,3], %1: f32[2,5,3]) {\n"
            "  %2 = dot_general[lhs_contracting=[2], rhs_contracting=[2], lhs_batch=[0], rhs_batch=[0]] %0, %1 : f32[2,5,5]\n"
            "  return %2\n"
            "}\n");
}

TEST(FoldTransposes, HeadSplitGoesIntoTheBatchStrides) {
  // q [B, T, H, D] split into heads [B, H, T, D]: the batch group (B, H) keeps two strides, the
  // rows T and columns D each have one, so the kernel reads q in place.
  EXPECT_EQ(run("program @main(%0: f32[2,5,4,3], %1: f32[2,4,5,3]) {\n"
                "  %2 = transpose[permutation=[0,2,1,3]] %0 : f32[2,4,5,3]\n"
                "  %3 = dot_general[lhs_contracting=[3], rhs_contracting=[3], lhs_batch=[0,1], rhs_batch=[0,1]] %2, %1 : f32[2,4,5,5]\n"
                "  return %3\n"
                "}\n",
                true),
            "program @main(%0: f32[2,5,4,3], %1: f32[2,4,5,3]) {\n"
            "  %2 = dot_general[lhs_contracting=[3], rhs_contracting=[3], lhs_batch=[0,2], rhs_batch=[0,1]] %0, %1 : f32[2,4,5,5]\n"
            "  return %2\n"
            "}\n");
}

TEST(FoldTransposes, TwoDotsShareOneTranspose) {
  EXPECT_EQ(run("program @main(%0: f32[6,4], %1: f32[6,2], %2: f32[3,4]) {\n"
                "  %3 = transpose[permutation=[1,0]] %0 : f32[4,6]\n"
                "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %3, %1 : f32[4,2]\n"
                "  %5 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %3 : f32[3,6]\n"
                "  return %4, %5\n"
                "}\n",
                true),
            "program @main(%0: f32[6,4], %1: f32[6,2], %2: f32[3,4]) {\n"
            "  %3 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %0, %1 : f32[4,2]\n"
            "  %4 = dot_general[lhs_contracting=[1], rhs_contracting=[1], lhs_batch=[], rhs_batch=[]] %2, %0 : f32[3,6]\n"
            "  return %3, %4\n"
            "}\n");
}

TEST(FoldTransposes, LeavesWhatItCannotFold) {
  // Another reader of the transpose (it stays, so folding would only keep both alive), a
  // transpose that reorders the free dimensions (the result's layout would change), a returned
  // transpose, and a layout the kernel would have to pack (batch dimension innermost).
  const std::string text =
      "program @main(%0: f32[4,3], %1: f32[4,5], %2: f32[2,3,4], %3: f32[4,5], %4: f32[3,4,2], %5: f32[2,3,5]) {\n"
      "  %6 = transpose[permutation=[1,0]] %0 : f32[3,4]\n"
      "  %7 = dot_general[lhs_contracting=[1], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %6, %1 : f32[3,5]\n"
      "  %8 = neg %6 : f32[3,4]\n"
      "  %9 = transpose[permutation=[1,0,2]] %2 : f32[3,2,4]\n"
      "  %10 = dot_general[lhs_contracting=[2], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %9, %3 : f32[3,2,5]\n"
      "  %11 = transpose[permutation=[1,0]] %1 : f32[5,4]\n"
      "  %12 = transpose[permutation=[2,0,1]] %4 : f32[2,3,4]\n"
      "  %13 = dot_general[lhs_contracting=[1], rhs_contracting=[1], lhs_batch=[0], rhs_batch=[0]] %12, %5 : f32[2,4,5]\n"
      "  return %7, %8, %10, %11, %13\n"
      "}\n";
  EXPECT_EQ(run(text, false), text);
}

TEST(FoldTransposes, FoldsInsideScanBodies) {
  const std::string out = run(
      "program @main(%0: f32[4,8], %1: f32[3,4,4]) {\n"
      "  %2 = scan[length=3, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4,8] {\n"
      "    program @body(%0: f32[4,8], %1: f32[4,4]) {\n"
      "      %2 = transpose[permutation=[1,0]] %1 : f32[4,4]\n"
      "      %3 = dot_general[lhs_contracting=[0], rhs_contracting=[0], lhs_batch=[], rhs_batch=[]] %2, %0 : f32[4,8]\n"
      "      return %3\n"
      "    }\n"
      "  }\n"
      "  return %2\n"
      "}\n",
      true);
  EXPECT_EQ(out.find("transpose"), std::string::npos) << out;
  EXPECT_NE(out.find("dot_general[lhs_contracting=[1], rhs_contracting=[0]"), std::string::npos) << out;
}

}  // namespace
}  // namespace ferry::compiler
