#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "prims/registry.h"
#include "prims_test_util.h"

namespace ferry::prims {
namespace {

using ::testing::HasSubstr;
using test_util::cost_of;
using test_util::out1;
using test_util::rejected;
using P = Primitive;

ir::DotGeneralParams dims(ir::Dims lc, ir::Dims rc, ir::Dims lb = {}, ir::Dims rb = {}) {
  return ir::DotGeneralParams{ir::DotDimensionNumbers{std::move(lc), std::move(rc), std::move(lb), std::move(rb)}};
}

TEST(DotGeneral, Matmul) {
  EXPECT_EQ(out1(P::dot_general, dims({1}, {0}), {"f32[2,3]", "f32[3,4]"}), "f32[2,4]");
  EXPECT_EQ(out1(P::dot_general, dims({0}, {0}), {"f64[3]", "f64[3]"}), "f64[]");
  EXPECT_EQ(out1(P::dot_general, dims({1}, {0}), {"i32[2,3]{pinned_host}", "i32[3]{pinned_host}"}),
            "i32[2]{pinned_host}");
}

TEST(DotGeneral, OutputIsBatchThenLhsFreeThenRhsFree) {
  EXPECT_EQ(out1(P::dot_general, dims({2}, {1}, {0}, {0}), {"f32[5,2,3]", "f32[5,3,4]"}), "f32[5,2,4]");
  // Free dimensions keep their operand order, whichever dimension is contracted.
  EXPECT_EQ(out1(P::dot_general, dims({0}, {1}), {"f32[3,2]", "f32[4,3]"}), "f32[2,4]");
  // Batch dimensions come first in the order listed, even when they are not leading.
  EXPECT_EQ(out1(P::dot_general, dims({0}, {2}, {2, 1}, {0, 1}), {"f32[3,6,7,8]", "f32[7,6,3,9]"}),
            "f32[7,6,8,9]");
  // No contraction: an outer product.
  EXPECT_EQ(out1(P::dot_general, dims({}, {}), {"f32[2]", "f32[3]"}), "f32[2,3]");
}

TEST(DotGeneral, RejectsSizeMismatches) {
  EXPECT_EQ(rejected(P::dot_general, dims({1}, {0}), {"f32[2,3]", "f32[4,5]"}),
            "dot_general: contracting dimension sizes differ: lhs dim 1 is 3, rhs dim 0 is 4 "
            "(operands: f32[2,3], f32[4,5])");
  EXPECT_THAT(rejected(P::dot_general, dims({2}, {1}, {0}, {0}), {"f32[5,2,3]", "f32[6,3,4]"}),
              HasSubstr("batch dimension sizes differ: lhs dim 0 is 5, rhs dim 0 is 6"));
  EXPECT_THAT(rejected(P::dot_general, dims({1}, {0, 1}), {"f32[2,3]", "f32[3,3]"}),
              HasSubstr("lhs_contracting [1] and rhs_contracting [0,1] have different lengths"));
  EXPECT_THAT(rejected(P::dot_general, dims({1}, {1}, {0}, {}), {"f32[2,3]", "f32[2,3]"}),
              HasSubstr("lhs_batch [0] and rhs_batch [] have different lengths"));
}

TEST(DotGeneral, RejectsBadDimensionNumbers) {
  EXPECT_THAT(rejected(P::dot_general, dims({2}, {0}), {"f32[2,3]", "f32[3,4]"}),
              HasSubstr("lhs_contracting dimension 2 out of range for rank 2"));
  EXPECT_THAT(rejected(P::dot_general, dims({1}, {-1}), {"f32[2,3]", "f32[3,4]"}),
              HasSubstr("rhs_contracting dimension -1 out of range for rank 2"));
  EXPECT_THAT(rejected(P::dot_general, dims({0}, {0}, {0}, {1}), {"f32[3,3]", "f32[3,3]"}),
              HasSubstr("lhs dimension 0 is listed twice"));
  EXPECT_THAT(rejected(P::dot_general, dims({0, 0}, {0, 1}), {"f32[3,3]", "f32[3,3]"}),
              HasSubstr("lhs dimension 0 is listed twice"));
  EXPECT_THAT(rejected(P::dot_general, dims({1}, {0}, {0}, {5}), {"f32[3,3]", "f32[3,3]"}),
              HasSubstr("rhs_batch dimension 5 out of range for rank 2"));
}

TEST(DotGeneral, RejectsDtypesAndKinds) {
  EXPECT_EQ(rejected(P::dot_general, dims({1}, {0}), {"f32[2,3]", "f16[3,4]"}),
            "dot_general: operand dtypes differ: f32 and f16 (operands: f32[2,3], f16[3,4])");
  EXPECT_THAT(rejected(P::dot_general, dims({1}, {0}), {"bool[2,3]", "bool[3,4]"}),
              HasSubstr("not defined for bool operands"));
  EXPECT_THAT(rejected(P::dot_general, dims({1}, {0}), {"f32[2,3]{pinned_host}", "f32[3,4]"}),
              HasSubstr("operands live in different memory kinds (pinned_host, device)"));
}

TEST(DotGeneralCost, TwoBMNK) {
  Cost mm = cost_of(P::dot_general, dims({1}, {0}), {"f32[2,3]", "f32[3,4]"});
  EXPECT_EQ(mm.flops, 2.0 * 2 * 4 * 3);
  EXPECT_EQ(mm.bytes_read, (6 + 12) * 4);
  EXPECT_EQ(mm.bytes_written, 8 * 4);

  Cost batched = cost_of(P::dot_general, dims({2}, {1}, {0}, {0}), {"f32[5,2,3]", "f32[5,3,4]"});
  EXPECT_EQ(batched.flops, 2.0 * 5 * 2 * 4 * 3);

  Cost two_k = cost_of(P::dot_general, dims({1, 2}, {0, 1}), {"f64[2,3,7]", "f64[3,7,4]"});
  EXPECT_EQ(two_k.flops, 2.0 * 2 * 4 * 21);
  EXPECT_EQ(two_k.bytes_written, 8 * 8);

  Cost outer = cost_of(P::dot_general, dims({}, {}), {"f32[2]", "f32[3]"});
  EXPECT_EQ(outer.flops, 2.0 * 6);
}

}  // namespace
}  // namespace ferry::prims
