#include <fmt/format.h>
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

ir::ReduceParams axes(ir::Dims a) { return {std::move(a)}; }

TEST(Reduce, DropsTheReducedAxes) {
  for (P p : {P::reduce_sum, P::reduce_max}) {
    EXPECT_EQ(out1(p, axes({0, 2}), {"f32[2,3,4]"}), "f32[3]") << name_of(p);
    EXPECT_EQ(out1(p, axes({2, 0}), {"f32[2,3,4]"}), "f32[3]") << name_of(p);
    EXPECT_EQ(out1(p, axes({}), {"i32[2,3]"}), "i32[2,3]") << name_of(p);
    EXPECT_EQ(out1(p, axes({0, 1}), {"f64[2,3]{pinned_host}"}), "f64[]{pinned_host}") << name_of(p);
    EXPECT_EQ(out1(p, axes({}), {"bf16[]"}), "bf16[]") << name_of(p);
  }
}

TEST(Reduce, RejectsBadAxesAndBool) {
  for (P p : {P::reduce_sum, P::reduce_max}) {
    EXPECT_EQ(rejected(p, axes({1, 1}), {"f32[2,3]"}),
              fmt::format("{}: axes [1,1] lists axis 1 twice (operands: f32[2,3])", name_of(p)));
    EXPECT_THAT(rejected(p, axes({2}), {"f32[2,3]"}), HasSubstr("axis 2 out of range for rank 2"));
    EXPECT_THAT(rejected(p, axes({-1}), {"f32[2,3]"}), HasSubstr("axis -1 out of range for rank 2"));
    EXPECT_THAT(rejected(p, axes({0}), {"f32[]"}), HasSubstr("axis 0 out of range for rank 0"));
    EXPECT_EQ(rejected(p, axes({0}), {"bool[3]"}),
              fmt::format("{}: not defined for bool operands (operands: bool[3])", name_of(p)));
    EXPECT_THAT(rejected(p, ir::NoParams{}, {"f32[3]"}), HasSubstr("parameters of the wrong kind"));
  }
}

TEST(ReduceCost, OneFlopPerInputElement) {
  Cost c = cost_of(P::reduce_sum, axes({1}), {"f32[4,5]"});
  EXPECT_EQ(c.flops, 20);
  EXPECT_EQ(c.bytes_read, 80);
  EXPECT_EQ(c.bytes_written, 16);
  Cost m = cost_of(P::reduce_max, axes({0, 1}), {"f64[3,2]"});
  EXPECT_EQ(m.flops, 6);
  EXPECT_EQ(m.bytes_read, 48);
  EXPECT_EQ(m.bytes_written, 8);
}

}  // namespace
}  // namespace ferry::prims
