#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "prims/registry.h"
#include "prims_test_util.h"

namespace ferry::prims {
namespace {

using ::testing::HasSubstr;
using test_util::cost_of;
using test_util::out1;
using test_util::rejected;
using P = Primitive;

ir::IotaParams iota(DType dtype, Shape shape, int64_t dimension) { return {dtype, std::move(shape), dimension}; }
ir::ConstantParams constant(double value, DType dtype, Shape shape) { return {value, dtype, std::move(shape)}; }
ir::BroadcastInDimParams bcast(Shape shape, ir::Dims dims) { return {std::move(shape), std::move(dims)}; }

TEST(Iota, MakesADeviceValue) {
  EXPECT_EQ(out1(P::iota, iota(DType::i32, {4, 3}, 1), {}), "i32[4,3]");
  EXPECT_EQ(out1(P::iota, iota(DType::f32, {5}, 0), {}), "f32[5]");
  EXPECT_EQ(out1(P::iota, iota(DType::bf16, {0, 2}, 0), {}), "bf16[0,2]");
}

TEST(Iota, RejectsBadParams) {
  EXPECT_EQ(rejected(P::iota, iota(DType::boolean, {3}, 0), {}),
            "iota: dtype bool is not supported; use a numeric dtype (operands: )");
  EXPECT_THAT(rejected(P::iota, iota(DType::i32, {}, 0), {}), HasSubstr("iota: shape must have rank >= 1"));
  EXPECT_THAT(rejected(P::iota, iota(DType::i32, {2, 3}, 2), {}), HasSubstr("dimension 2 out of range for rank 2"));
  EXPECT_THAT(rejected(P::iota, iota(DType::i32, {2, 3}, -1), {}), HasSubstr("dimension -1 out of range"));
  EXPECT_THAT(rejected(P::iota, iota(DType::i32, {2, -3}, 0), {}),
              HasSubstr("shape [2,-3] has a negative dimension size"));
  EXPECT_THAT(rejected(P::iota, iota(DType::f64, {1LL << 40, 1LL << 40}, 0), {}), HasSubstr("more than 2^62 bytes"));
  EXPECT_THAT(rejected(P::iota, iota(DType::i32, {3}, 0), {"i32[]"}), HasSubstr("iota: takes 0 operand(s), got 1"));
}

TEST(Constant, SplatsAnyDtype) {
  EXPECT_EQ(out1(P::constant, constant(1.5, DType::f32, {}), {}), "f32[]");
  EXPECT_EQ(out1(P::constant, constant(-7, DType::i32, {2, 2}), {}), "i32[2,2]");
  EXPECT_EQ(out1(P::constant, constant(1, DType::boolean, {3}), {}), "bool[3]");
  EXPECT_EQ(out1(P::constant, constant(0, DType::boolean, {}), {}), "bool[]");
  EXPECT_EQ(out1(P::constant, constant(std::numeric_limits<double>::infinity(), DType::f16, {2}), {}), "f16[2]");
  EXPECT_EQ(out1(P::constant, constant(std::nan(""), DType::f64, {}), {}), "f64[]");
  EXPECT_EQ(out1(P::constant, constant(2147483647.0, DType::i32, {}), {}), "i32[]");
  EXPECT_EQ(out1(P::constant, constant(-2147483648.0, DType::i32, {}), {}), "i32[]");
}

TEST(Constant, RejectsValuesTheDtypeCannotHold) {
  EXPECT_EQ(rejected(P::constant, constant(2, DType::boolean, {}), {}),
            "constant: a bool value must be 0 or 1, got 2 (operands: )");
  EXPECT_THAT(rejected(P::constant, constant(std::nan(""), DType::boolean, {}), {}), HasSubstr("must be 0 or 1"));
  EXPECT_THAT(rejected(P::constant, constant(1.5, DType::i32, {}), {}),
              HasSubstr("an i32 value must be an integer in [-2147483648, 2147483647], got 1.5"));
  EXPECT_THAT(rejected(P::constant, constant(2147483648.0, DType::i32, {}), {}), HasSubstr("an i32 value"));
  EXPECT_THAT(rejected(P::constant, constant(std::numeric_limits<double>::infinity(), DType::i32, {}), {}),
              HasSubstr("an i32 value"));
  EXPECT_THAT(rejected(P::constant, constant(std::nan(""), DType::i32, {}), {}), HasSubstr("an i32 value"));
  EXPECT_THAT(rejected(P::constant, constant(0, DType::f32, {-1}), {}), HasSubstr("negative dimension size"));
}

TEST(BroadcastInDim, MapsOperandDimsIntoTheTarget) {
  EXPECT_EQ(out1(P::broadcast_in_dim, bcast({2, 3}, {1}), {"f32[3]"}), "f32[2,3]");
  EXPECT_EQ(out1(P::broadcast_in_dim, bcast({4, 3}, {0, 1}), {"i32[1,3]"}), "i32[4,3]");
  EXPECT_EQ(out1(P::broadcast_in_dim, bcast({2, 2}, {}), {"f32[]{pinned_host}"}), "f32[2,2]{pinned_host}");
  EXPECT_EQ(out1(P::broadcast_in_dim, bcast({2, 5, 3}, {0, 2}), {"bool[2,1]"}), "bool[2,5,3]");
}

TEST(BroadcastInDim, RejectsBadDimensions) {
  EXPECT_EQ(rejected(P::broadcast_in_dim, bcast({2, 4}, {1}), {"f32[3]"}),
            "broadcast_in_dim: operand dimension 0 has size 3, which is neither 1 nor the target size 4 of "
            "dimension 1 of [2,4] (operands: f32[3])");
  EXPECT_THAT(rejected(P::broadcast_in_dim, bcast({2, 3}, {}), {"f32[3]"}),
              HasSubstr("broadcast_dimensions [] must have one entry per operand dimension (1)"));
  EXPECT_THAT(rejected(P::broadcast_in_dim, bcast({3, 3}, {1, 0}), {"f32[3,3]"}),
              HasSubstr("broadcast_dimensions [1,0] must be strictly increasing"));
  EXPECT_THAT(rejected(P::broadcast_in_dim, bcast({3, 3}, {0, 0}), {"f32[3,3]"}), HasSubstr("strictly increasing"));
  EXPECT_THAT(rejected(P::broadcast_in_dim, bcast({3}, {1}), {"f32[3]"}),
              HasSubstr("broadcast dimension 1 out of range for rank 1"));
  EXPECT_THAT(rejected(P::broadcast_in_dim, bcast({-3}, {0}), {"f32[3]"}), HasSubstr("negative dimension size"));
}

TEST(Reshape, KeepsTheElementCount) {
  EXPECT_EQ(out1(P::reshape, ir::ReshapeParams{{3, 2}}, {"f32[2,3]"}), "f32[3,2]");
  EXPECT_EQ(out1(P::reshape, ir::ReshapeParams{{1, 6, 1}}, {"i32[6]{pinned_host}"}), "i32[1,6,1]{pinned_host}");
  EXPECT_EQ(out1(P::reshape, ir::ReshapeParams{{}}, {"f32[1,1]"}), "f32[]");
  EXPECT_EQ(out1(P::reshape, ir::ReshapeParams{{0, 5}}, {"f32[5,0]"}), "f32[0,5]");
}

TEST(Reshape, RejectsOtherCounts) {
  EXPECT_EQ(rejected(P::reshape, ir::ReshapeParams{{4}}, {"f32[2,3]"}),
            "reshape: new_sizes [4] has 4 elements but the operand has 6 (operands: f32[2,3])");
  EXPECT_THAT(rejected(P::reshape, ir::ReshapeParams{{-2, -3}}, {"f32[2,3]"}),
              HasSubstr("new_sizes [-2,-3] has a negative dimension size"));
  EXPECT_THAT(rejected(P::reshape, ir::ReshapeParams{{1LL << 62, 1LL << 62}}, {"f32[2,3]"}),
              HasSubstr("is too large: more than 2^62 bytes"));
  // A zero-size dimension does not excuse the others (ir/limits.h): the parser refuses this type,
  // so tracing must too.
  EXPECT_THAT(rejected(P::reshape, ir::ReshapeParams{{0, 1LL << 62, 1LL << 62}}, {"f32[0]"}),
              HasSubstr("counting each zero-size dimension as 1"));
}

TEST(Transpose, PermutesDims) {
  EXPECT_EQ(out1(P::transpose, ir::TransposeParams{{2, 0, 1}}, {"f32[2,3,4]"}), "f32[4,2,3]");
  EXPECT_EQ(out1(P::transpose, ir::TransposeParams{{}}, {"f32[]"}), "f32[]");
  EXPECT_EQ(out1(P::transpose, ir::TransposeParams{{1, 0}}, {"i32[5,7]{pinned_host}"}), "i32[7,5]{pinned_host}");
}

TEST(Transpose, RejectsNonPermutations) {
  EXPECT_EQ(rejected(P::transpose, ir::TransposeParams{{0}}, {"f32[2,3]"}),
            "transpose: permutation [0] must have one entry per operand dimension (2) (operands: f32[2,3])");
  EXPECT_THAT(rejected(P::transpose, ir::TransposeParams{{1, 1}}, {"f32[2,3]"}),
              HasSubstr("permutation [1,1] lists dimension 1 twice"));
  EXPECT_THAT(rejected(P::transpose, ir::TransposeParams{{0, 2}}, {"f32[2,3]"}),
              HasSubstr("permutation entry 2 out of range for rank 2"));
  EXPECT_THAT(rejected(P::transpose, ir::TransposeParams{{-1, 0}}, {"f32[2,3]"}),
              HasSubstr("permutation entry -1 out of range"));
}

TEST(ShapeOpsCost, MovesBytesWithoutFlops) {
  Cost b = cost_of(P::broadcast_in_dim, bcast({2, 3}, {1}), {"f32[3]"});
  EXPECT_EQ(b.flops, 0);
  EXPECT_EQ(b.bytes_read, 12);
  EXPECT_EQ(b.bytes_written, 24);

  Cost i = cost_of(P::iota, iota(DType::i32, {4, 3}, 0), {});
  EXPECT_EQ(i.flops, 0);
  EXPECT_EQ(i.bytes_read, 0);
  EXPECT_EQ(i.bytes_written, 48);

  Cost c = cost_of(P::constant, constant(1, DType::f64, {2}), {});
  EXPECT_EQ(c.bytes_read, 0);
  EXPECT_EQ(c.bytes_written, 16);

  Cost t = cost_of(P::transpose, ir::TransposeParams{{1, 0}}, {"f16[2,3]"});
  EXPECT_EQ(t.flops, 0);
  EXPECT_EQ(t.bytes_read, 12);
  EXPECT_EQ(t.bytes_written, 12);
}

}  // namespace
}  // namespace ferry::prims
