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

TEST(DevicePut, ChangesOnlyTheMemoryKind) {
  EXPECT_EQ(out1(P::device_put, ir::DevicePutParams{MemoryKind::pinned_host}, {"f32[2,3]"}), "f32[2,3]{pinned_host}");
  EXPECT_EQ(out1(P::device_put, ir::DevicePutParams{MemoryKind::device}, {"bf16[4]{pinned_host}"}), "bf16[4]");
  EXPECT_EQ(out1(P::device_put, ir::DevicePutParams{MemoryKind::unpinned_host}, {"bool[]"}), "bool[]{unpinned_host}");
  EXPECT_EQ(out1(P::device_put, ir::DevicePutParams{MemoryKind::device}, {"i32[1]"}), "i32[1]");
}

TEST(DevicePut, RejectsWrongOperandsAndParams) {
  EXPECT_EQ(rejected(P::device_put, ir::DevicePutParams{}, {"f32[2]", "f32[2]"}),
            "device_put: takes 1 operand(s), got 2 (operands: f32[2], f32[2])");
  EXPECT_THAT(rejected(P::device_put, ir::NoParams{}, {"f32[2]"}),
              HasSubstr("device_put: parameters of the wrong kind"));
  EXPECT_THAT(rejected(P::device_put, ir::DevicePutParams{}, {"f32[-2]"}), HasSubstr("negative dimension size"));
}

TEST(DevicePutCost, CopiesEveryByte) {
  Cost c = cost_of(P::device_put, ir::DevicePutParams{MemoryKind::pinned_host}, {"f32[3,5]"});
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes_read, 60);
  EXPECT_EQ(c.bytes_written, 60);
}

}  // namespace
}  // namespace ferry::prims
