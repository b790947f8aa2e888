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

ir::SliceParams sl(ir::Dims start, ir::Dims limit, ir::Dims strides = {}) {
  return {std::move(start), std::move(limit), std::move(strides)};
}
ir::DynamicSliceParams sizes(Shape s) { return {std::move(s)}; }
const ir::Params kNone = ir::NoParams{};

TEST(Slice, OutputIsCeilOfExtentOverStride) {
  EXPECT_EQ(out1(P::slice, sl({1}, {8}, {3}), {"f32[10]"}), "f32[3]");  // 1, 4, 7
  EXPECT_EQ(out1(P::slice, sl({1}, {7}, {3}), {"f32[10]"}), "f32[2]");  // 1, 4
  EXPECT_EQ(out1(P::slice, sl({0, 1}, {2, 3}), {"i32[4,5]"}), "i32[2,2]");
  EXPECT_EQ(out1(P::slice, sl({3}, {3}), {"f32[5]{pinned_host}"}), "f32[0]{pinned_host}");
  EXPECT_EQ(out1(P::slice, sl({0}, {5}, {1}), {"bool[5]"}), "bool[5]");
  EXPECT_EQ(out1(P::slice, sl({}, {}), {"f32[]"}), "f32[]");
}

TEST(Slice, RejectsOutOfRangeBounds) {
  EXPECT_EQ(rejected(P::slice, sl({0}, {6}), {"f32[5]"}),
            "slice: dimension 0: need 0 <= start <= limit <= 5, got start 0 and limit 6 (operands: f32[5])");
  EXPECT_THAT(rejected(P::slice, sl({3}, {2}), {"f32[5]"}), HasSubstr("got start 3 and limit 2"));
  EXPECT_THAT(rejected(P::slice, sl({-1}, {2}), {"f32[5]"}), HasSubstr("got start -1 and limit 2"));
  EXPECT_THAT(rejected(P::slice, sl({0}, {2}, {0}), {"f32[5]"}), HasSubstr("stride 0 of dimension 0 must be >= 1"));
  EXPECT_THAT(rejected(P::slice, sl({0}, {2}, {-2}), {"f32[5]"}), HasSubstr("stride -2 of dimension 0"));
  EXPECT_THAT(rejected(P::slice, sl({0}, {2, 2}), {"f32[5,5]"}),
              HasSubstr("start_indices [0] must have one entry per operand dimension (2)"));
  EXPECT_THAT(rejected(P::slice, sl({0, 0}, {2}), {"f32[5,5]"}), HasSubstr("limit_indices [2] must have one entry"));
  EXPECT_THAT(rejected(P::slice, sl({0, 0}, {2, 2}, {1}), {"f32[5,5]"}),
              HasSubstr("strides [1] must be empty or have one entry per operand dimension (2)"));
}

TEST(DynamicSlice, TakesOneScalarI32IndexPerDim) {
  EXPECT_EQ(out1(P::dynamic_slice, sizes({2, 4}), {"f32[5,4]", "i32[]", "i32[]"}), "f32[2,4]");
  EXPECT_EQ(out1(P::dynamic_slice, sizes({0}), {"bf16[3]", "i32[]"}), "bf16[0]");
  EXPECT_EQ(out1(P::dynamic_slice, sizes({}), {"f32[]"}), "f32[]");
  EXPECT_EQ(out1(P::dynamic_slice, sizes({1}), {"f32[3]{pinned_host}", "i32[]{pinned_host}"}), "f32[1]{pinned_host}");
}

TEST(DynamicSlice, RejectsBadIndicesAndSizes) {
  EXPECT_EQ(rejected(P::dynamic_slice, sizes({2, 4}), {"f32[5,4]", "i32[]"}),
            "dynamic_slice: needs one start index per operand dimension (2), got 1 (operands: f32[5,4], i32[])");
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({2}), {"f32[5]", "i32[1]"}),
              HasSubstr("start index 0 must be a scalar i32, got i32[1]"));
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({2}), {"f32[5]", "f32[]"}),
              HasSubstr("start index 0 must be a scalar i32, got f32[]"));
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({6}), {"f32[5]", "i32[]"}),
              HasSubstr("slice size 6 of dimension 0 must be in [0, 5]"));
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({-1}), {"f32[5]", "i32[]"}), HasSubstr("slice size -1"));
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({1, 1}), {"f32[5]", "i32[]"}),
              HasSubstr("slice_sizes [1,1] must have one entry per operand dimension (1)"));
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({1}), {"f32[5]", "i32[]{pinned_host}"}),
              HasSubstr("operands live in different memory kinds (device, pinned_host)"));
  EXPECT_THAT(rejected(P::dynamic_slice, sizes({}), {}), HasSubstr("takes at least one operand, got none"));
}

TEST(DynamicUpdateSlice, KeepsTheOperandType) {
  EXPECT_EQ(out1(P::dynamic_update_slice, kNone, {"f32[5,4]", "f32[2,4]", "i32[]", "i32[]"}), "f32[5,4]");
  EXPECT_EQ(out1(P::dynamic_update_slice, kNone, {"i32[3]", "i32[0]", "i32[]"}), "i32[3]");
  EXPECT_EQ(out1(P::dynamic_update_slice, kNone, {"f32[]{pinned_host}", "f32[]{pinned_host}"}), "f32[]{pinned_host}");
}

TEST(DynamicUpdateSlice, RejectsBadUpdates) {
  EXPECT_EQ(rejected(P::dynamic_update_slice, kNone, {"f32[5,4]", "f32[6,4]", "i32[]", "i32[]"}),
            "dynamic_update_slice: update dimension 0 has size 6, larger than the operand's 5 (operands: f32[5,4], "
            "f32[6,4], i32[], i32[])");
  EXPECT_THAT(rejected(P::dynamic_update_slice, kNone, {"f32[5]", "i32[2]", "i32[]"}),
              HasSubstr("update dtype i32 differs from operand dtype f32"));
  EXPECT_THAT(rejected(P::dynamic_update_slice, kNone, {"f32[5,4]", "f32[4]", "i32[]", "i32[]"}),
              HasSubstr("update rank 1 differs from operand rank 2"));
  EXPECT_THAT(rejected(P::dynamic_update_slice, kNone, {"f32[5,4]", "f32[1,4]", "i32[]"}),
              HasSubstr("needs one start index per operand dimension (2), got 1"));
  EXPECT_THAT(rejected(P::dynamic_update_slice, kNone, {"f32[5]", "f32[1]", "i32[]", "i32[]"}),
              HasSubstr("got 2"));
  EXPECT_THAT(rejected(P::dynamic_update_slice, kNone, {"f32[5]"}),
              HasSubstr("takes an operand, an update and start indices, got 1 operand(s)"));
  EXPECT_THAT(rejected(P::dynamic_update_slice, kNone, {"f32[5]{pinned_host}", "f32[1]", "i32[]"}),
              HasSubstr("different memory kinds"));
}

TEST(Concatenate, SumsTheChosenDimension) {
  EXPECT_EQ(out1(P::concatenate, ir::ConcatenateParams{0}, {"f32[2,3]", "f32[4,3]"}), "f32[6,3]");
  EXPECT_EQ(out1(P::concatenate, ir::ConcatenateParams{1}, {"i32[2,1]", "i32[2,0]", "i32[2,5]"}), "i32[2,6]");
  EXPECT_EQ(out1(P::concatenate, ir::ConcatenateParams{0}, {"f32[7]{pinned_host}"}), "f32[7]{pinned_host}");
}

TEST(Concatenate, RejectsMismatches) {
  EXPECT_EQ(rejected(P::concatenate, ir::ConcatenateParams{0}, {"f32[2,3]", "f32[2,4]"}),
            "concatenate: operand 1 has size 4 in dimension 1, operand 0 has 3 (only dimension 0 may differ) "
            "(operands: f32[2,3], f32[2,4])");
  EXPECT_THAT(rejected(P::concatenate, ir::ConcatenateParams{0}, {"f32[2]", "i32[2]"}),
              HasSubstr("operand 1 has dtype i32, operand 0 has f32"));
  EXPECT_THAT(rejected(P::concatenate, ir::ConcatenateParams{0}, {"f32[2]", "f32[2,1]"}),
              HasSubstr("operand 1 has rank 2, operand 0 has rank 1"));
  EXPECT_THAT(rejected(P::concatenate, ir::ConcatenateParams{0}, {"f32[]", "f32[]"}),
              HasSubstr("operands must have rank >= 1"));
  EXPECT_THAT(rejected(P::concatenate, ir::ConcatenateParams{2}, {"f32[2,3]"}),
              HasSubstr("dimension 2 out of range for rank 2"));
  EXPECT_THAT(rejected(P::concatenate, ir::ConcatenateParams{0}, {"f32[2]", "f32[2]{pinned_host}"}),
              HasSubstr("operands live in different memory kinds (device, pinned_host)"));
  EXPECT_THAT(rejected(P::concatenate, ir::ConcatenateParams{0}, {}), HasSubstr("takes at least one operand"));
}

TEST(IndexingCost, CountsOnlyTheBytesTouched) {
  Cost s = cost_of(P::slice, sl({0, 0}, {2, 2}), {"f32[100,100]"});
  EXPECT_EQ(s.flops, 0);
  EXPECT_EQ(s.bytes_read, 16);
  EXPECT_EQ(s.bytes_written, 16);

  Cost ds = cost_of(P::dynamic_slice, sizes({2, 4}), {"f32[50,4]", "i32[]", "i32[]"});
  EXPECT_EQ(ds.flops, 0);
  EXPECT_EQ(ds.bytes_read, 32 + 8);
  EXPECT_EQ(ds.bytes_written, 32);

  Cost dus = cost_of(P::dynamic_update_slice, kNone, {"f32[50,4]", "f32[1,4]", "i32[]", "i32[]"});
  EXPECT_EQ(dus.flops, 0);
  EXPECT_EQ(dus.bytes_read, 16 + 8);
  EXPECT_EQ(dus.bytes_written, 16);

  Cost c = cost_of(P::concatenate, ir::ConcatenateParams{0}, {"f32[2]", "f32[3]"});
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes_read, 20);
  EXPECT_EQ(c.bytes_written, 20);
}

}  // namespace
}  // namespace ferry::prims
