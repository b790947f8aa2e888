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

const ir::Params kNone = ir::NoParams{};

TEST(UnaryFloating, KeepsTypeForEveryFloatingDtype) {
  for (P p : {P::exp, P::log, P::sin, P::cos, P::tanh, P::logistic, P::sqrt, P::rsqrt}) {
    EXPECT_EQ(out1(p, kNone, {"f32[2,3]"}), "f32[2,3]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"f64[]"}), "f64[]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"f16[4]"}), "f16[4]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"bf16[0,5]{pinned_host}"}), "bf16[0,5]{pinned_host}") << name_of(p);
  }
}

TEST(UnaryFloating, RejectsIntegerAndBool) {
  for (P p : {P::exp, P::log, P::sin, P::cos, P::tanh, P::logistic, P::sqrt, P::rsqrt}) {
    std::string want = fmt::format("{}: requires a floating dtype (f32, f64, f16, bf16), got i32 (operands: i32[2])",
                                   name_of(p));
    EXPECT_EQ(rejected(p, kNone, {"i32[2]"}), want);
    EXPECT_THAT(rejected(p, kNone, {"bool[2]"}), HasSubstr("got bool"));
  }
}

TEST(UnarySigned, AcceptsFloatingAndI32) {
  for (P p : {P::neg, P::abs, P::sign}) {
    EXPECT_EQ(out1(p, kNone, {"i32[3]"}), "i32[3]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"bf16[2,2]"}), "bf16[2,2]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"f32[]{unpinned_host}"}), "f32[]{unpinned_host}") << name_of(p);
  }
}

TEST(UnarySigned, RejectsBool) {
  for (P p : {P::neg, P::abs, P::sign})
    EXPECT_EQ(rejected(p, kNone, {"bool[3]"}),
              fmt::format("{}: requires a floating or i32 dtype, got bool (operands: bool[3])", name_of(p)));
}

TEST(Unary, RejectsWrongOperandCount) {
  EXPECT_EQ(rejected(P::exp, kNone, {"f32[2]", "f32[2]"}), "exp: takes 1 operand(s), got 2 (operands: f32[2], f32[2])");
  EXPECT_EQ(rejected(P::neg, kNone, {}), "neg: takes 1 operand(s), got 0 (operands: )");
}

TEST(Unary, RejectsWrongParamsKind) {
  EXPECT_THAT(rejected(P::sin, ir::ReduceParams{}, {"f32[2]"}), HasSubstr("sin: parameters of the wrong kind"));
}

TEST(Binary, KeepsOperandType) {
  for (P p : {P::add, P::sub, P::mul, P::div, P::max, P::min, P::pow}) {
    EXPECT_EQ(out1(p, kNone, {"f32[2,3]", "f32[2,3]"}), "f32[2,3]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"i32[]", "i32[]"}), "i32[]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"f16[4]{pinned_host}", "f16[4]{pinned_host}"}), "f16[4]{pinned_host}") << name_of(p);
  }
}

TEST(Binary, RejectsShapeMismatchWithoutImplicitBroadcast) {
  for (P p : {P::add, P::sub, P::mul, P::div, P::max, P::min, P::pow}) {
    std::string m = rejected(p, kNone, {"f32[2,3]", "f32[3]"});
    EXPECT_THAT(m, HasSubstr(fmt::format("{}: operand shapes differ: [2,3] and [3]", name_of(p))));
    EXPECT_THAT(m, HasSubstr("(operands: f32[2,3], f32[3])"));
    // A size-1 dimension is not stretched either.
    EXPECT_THAT(rejected(p, kNone, {"f32[1,3]", "f32[2,3]"}), HasSubstr("operand shapes differ"));
  }
}

// A rank-0 operand beside a larger one is read as a splat (the simplify pass makes these); any other
// difference in shape still needs an explicit broadcast.
TEST(Binary, RankZeroOperandTakesTheOtherShape) {
  for (P p : {P::add, P::sub, P::mul, P::div, P::max, P::min, P::pow}) {
    EXPECT_EQ(out1(p, kNone, {"f32[]", "f32[2,3]"}), "f32[2,3]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"i32[4]", "i32[]"}), "i32[4]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"f16[]{pinned_host}", "f16[4]{pinned_host}"}), "f16[4]{pinned_host}") << name_of(p);
    EXPECT_THAT(rejected(p, kNone, {"f32[]", "f64[2]"}), HasSubstr("operand dtypes differ: f32 and f64"));
    EXPECT_THAT(rejected(p, kNone, {"f32[1]", "f32[2]"}), HasSubstr("operand shapes differ: [1] and [2]"));
    EXPECT_THAT(rejected(p, kNone, {"f32[]", "f32[2]{pinned_host}"}), HasSubstr("different memory kinds"));
  }
  EXPECT_THAT(rejected(P::add, kNone, {"bool[]", "bool[2]"}), HasSubstr("not defined for bool operands"));
}

TEST(Binary, RejectsDtypeMismatchAndBool) {
  for (P p : {P::add, P::sub, P::mul, P::div, P::max, P::min, P::pow}) {
    EXPECT_EQ(rejected(p, kNone, {"f32[2]", "i32[2]"}),
              fmt::format("{}: operand dtypes differ: f32 and i32 (operands: f32[2], i32[2])", name_of(p)));
    EXPECT_EQ(rejected(p, kNone, {"bool[2]", "bool[2]"}),
              fmt::format("{}: not defined for bool operands (operands: bool[2], bool[2])", name_of(p)));
  }
}

TEST(Binary, RejectsMixedMemoryKinds) {
  EXPECT_EQ(rejected(P::add, kNone, {"f32[2]", "f32[2]{pinned_host}"}),
            "add: operands live in different memory kinds (device, pinned_host) (operands: f32[2], "
            "f32[2]{pinned_host})");
}

TEST(Binary, RejectsWrongOperandCount) {
  EXPECT_THAT(rejected(P::mul, kNone, {"f32[2]"}), HasSubstr("mul: takes 2 operand(s), got 1"));
}

TEST(Compare, GivesBoolOfTheSameShape) {
  for (P p : {P::eq, P::ne, P::lt, P::le, P::gt, P::ge}) {
    EXPECT_EQ(out1(p, kNone, {"f32[2,3]", "f32[2,3]"}), "bool[2,3]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"i32[]{pinned_host}", "i32[]{pinned_host}"}), "bool[]{pinned_host}") << name_of(p);
  }
}

TEST(Compare, EqualityAcceptsBoolOrderingDoesNot) {
  EXPECT_EQ(out1(P::eq, kNone, {"bool[4]", "bool[4]"}), "bool[4]");
  EXPECT_EQ(out1(P::ne, kNone, {"bool[4]", "bool[4]"}), "bool[4]");
  for (P p : {P::lt, P::le, P::gt, P::ge})
    EXPECT_THAT(rejected(p, kNone, {"bool[4]", "bool[4]"}),
                HasSubstr(fmt::format("{}: ordering comparisons are not defined for bool operands", name_of(p))));
}

TEST(Compare, RejectsMismatchedOperands) {
  for (P p : {P::eq, P::ne, P::lt, P::le, P::gt, P::ge}) {
    EXPECT_THAT(rejected(p, kNone, {"f32[2]", "f64[2]"}), HasSubstr("operand dtypes differ: f32 and f64"));
    EXPECT_THAT(rejected(p, kNone, {"i32[2]", "i32[3]"}), HasSubstr("operand shapes differ: [2] and [3]"));
  }
}

TEST(Compare, RankZeroOperandTakesTheOtherShape) {
  for (P p : {P::eq, P::ne, P::lt, P::le, P::gt, P::ge}) {
    EXPECT_EQ(out1(p, kNone, {"f32[2,3]", "f32[]"}), "bool[2,3]") << name_of(p);
    EXPECT_EQ(out1(p, kNone, {"i32[]", "i32[5]"}), "bool[5]") << name_of(p);
  }
  EXPECT_THAT(rejected(P::lt, kNone, {"bool[]", "bool[2]"}), HasSubstr("ordering comparisons are not defined"));
}

TEST(Select, TakesTheBranchType) {
  EXPECT_EQ(out1(P::select, kNone, {"bool[2,3]", "f32[2,3]", "f32[2,3]"}), "f32[2,3]");
  EXPECT_EQ(out1(P::select, kNone, {"bool[]", "i32[]", "i32[]"}), "i32[]");
  EXPECT_EQ(out1(P::select, kNone, {"bool[2]", "bool[2]", "bool[2]"}), "bool[2]");
}

TEST(Select, RankZeroOperandsTakeTheOtherShape) {
  EXPECT_EQ(out1(P::select, kNone, {"bool[]", "f32[2,3]", "f32[2,3]"}), "f32[2,3]");
  EXPECT_EQ(out1(P::select, kNone, {"bool[2,3]", "f32[]", "f32[2,3]"}), "f32[2,3]");
  EXPECT_EQ(out1(P::select, kNone, {"bool[2,3]", "f32[2,3]", "f32[]"}), "f32[2,3]");
  EXPECT_EQ(out1(P::select, kNone, {"bool[2,3]", "f32[]", "f32[]"}), "f32[2,3]");
  EXPECT_EQ(out1(P::select, kNone, {"bool[]", "f32[]", "f32[4]"}), "f32[4]");
  EXPECT_THAT(rejected(P::select, kNone, {"bool[3]", "f32[]", "f32[2]"}),
              HasSubstr("predicate shape [3] differs from the operands' shape [2]"));
  EXPECT_THAT(rejected(P::select, kNone, {"bool[]", "f32[3]", "f32[2]"}),
              HasSubstr("on_true and on_false shapes differ: [3] and [2]"));
}

TEST(Select, RejectsBadOperands) {
  EXPECT_EQ(rejected(P::select, kNone, {"f32[2]", "f32[2]", "f32[2]"}),
            "select: predicate must be bool, got f32 (operands: f32[2], f32[2], f32[2])");
  EXPECT_THAT(rejected(P::select, kNone, {"bool[3]", "f32[2]", "f32[2]"}),
              HasSubstr("predicate shape [3] differs from the operands' shape [2]"));
  EXPECT_THAT(rejected(P::select, kNone, {"bool[2]", "f32[2]", "i32[2]"}),
              HasSubstr("on_true and on_false dtypes differ: f32 and i32"));
  EXPECT_THAT(rejected(P::select, kNone, {"bool[2]", "f32[2]", "f32[1]"}),
              HasSubstr("on_true and on_false shapes differ: [2] and [1]"));
  EXPECT_THAT(rejected(P::select, kNone, {"bool[2]", "f32[2]", "f32[2]{pinned_host}"}),
              HasSubstr("operands live in different memory kinds (device, pinned_host)"));
  EXPECT_THAT(rejected(P::select, kNone, {"bool[2]", "f32[2]"}), HasSubstr("takes 3 operand(s), got 2"));
}

TEST(Convert, ChangesOnlyTheDtype) {
  EXPECT_EQ(out1(P::convert_element_type, ir::ConvertParams{DType::i32}, {"f32[2,3]"}), "i32[2,3]");
  EXPECT_EQ(out1(P::convert_element_type, ir::ConvertParams{DType::f32}, {"bool[4]{pinned_host}"}),
            "f32[4]{pinned_host}");
  EXPECT_EQ(out1(P::convert_element_type, ir::ConvertParams{DType::boolean}, {"bf16[]"}), "bool[]");
  EXPECT_EQ(out1(P::convert_element_type, ir::ConvertParams{DType::f32}, {"f32[1]"}), "f32[1]");
}

TEST(Convert, RejectsMissingParamsAndOperands) {
  EXPECT_THAT(rejected(P::convert_element_type, kNone, {"f32[2]"}),
              HasSubstr("convert_element_type: parameters of the wrong kind"));
  EXPECT_THAT(rejected(P::convert_element_type, ir::ConvertParams{DType::i32}, {}),
              HasSubstr("convert_element_type: takes 1 operand(s), got 0"));
}

TEST(ElementwiseCost, OneFlopPerOutputElement) {
  Cost add = cost_of(P::add, kNone, {"f32[2,3]", "f32[2,3]"});
  EXPECT_EQ(add.flops, 6);
  EXPECT_EQ(add.bytes_read, 48);
  EXPECT_EQ(add.bytes_written, 24);

  Cost exp = cost_of(P::exp, kNone, {"f64[10]"});  // transcendentals are not weighted more
  EXPECT_EQ(exp.flops, 10);
  EXPECT_EQ(exp.bytes_read, 80);
  EXPECT_EQ(exp.bytes_written, 80);

  Cost lt = cost_of(P::lt, kNone, {"f32[5]", "f32[5]"});
  EXPECT_EQ(lt.flops, 5);
  EXPECT_EQ(lt.bytes_written, 5);  // bool output, one byte each

  Cost sel = cost_of(P::select, kNone, {"bool[4]", "f16[4]", "f16[4]"});
  EXPECT_EQ(sel.flops, 4);
  EXPECT_EQ(sel.bytes_read, 4 + 8 + 8);
  EXPECT_EQ(sel.bytes_written, 8);

  Cost cvt = cost_of(P::convert_element_type, ir::ConvertParams{DType::f64}, {"i32[3]"});
  EXPECT_EQ(cvt.flops, 3);
  EXPECT_EQ(cvt.bytes_read, 12);
  EXPECT_EQ(cvt.bytes_written, 24);
}

}  // namespace
}  // namespace ferry::prims
