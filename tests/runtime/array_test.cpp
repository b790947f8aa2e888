// Array: construction, reading back, printing, and its errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using ::testing::HasSubstr;

namespace {

TEST(Array, FromAndToVectorForEveryDtype) {
  auto f = fy::Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(f.shape(), (fy::Shape{2, 3}));
  EXPECT_EQ(f.dtype(), fy::DType::f32);
  EXPECT_EQ(f.nbytes(), 24u);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(fy::Array::from(std::vector<double>{0.5}, {1}).to_vector<double>(), std::vector<double>{0.5});
  EXPECT_EQ(fy::Array::from(std::vector<int32_t>{-7, 9}, {2}).to_vector<int32_t>(), (std::vector<int32_t>{-7, 9}));
  EXPECT_EQ(fy::Array::from(std::vector<bool>{true, false, true}, {3}).to_vector<bool>(),
            (std::vector<bool>{true, false, true}));
  auto h = fy::Array::from(std::vector<fy::float16>{fy::float16(1.5f), fy::float16(-2.0f)}, {2});
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  auto b = fy::Array::from(std::vector<fy::bfloat16>{fy::bfloat16(3.0f)}, {1});
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>{3.0f});
  EXPECT_EQ(fy::ones({2}, fy::DType::bf16).to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(Array, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(static_cast<float>(fy::float16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(fy::float16(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(fy::float16(NAN))));
  EXPECT_EQ(static_cast<float>(fy::float16(5.960464477539063e-08f)), 5.960464477539063e-08f);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(fy::float16(1.0f + 1.0f / 2048)), 1.0f);  // tie rounds to even
  EXPECT_EQ(static_cast<float>(fy::bfloat16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(fy::bfloat16(NAN))));
}

TEST(Array, ErrorsAreInvalidArgument) {
  try {
    fy::Array::from(std::vector<float>{1, 2, 3}, {2, 2});
    FAIL();
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_THAT(e.message(), HasSubstr("3 elements given for shape [2,2] (4 elements)"));
  }
  try {
    fy::ones({2}).to_vector<double>();
    FAIL();
  } catch (const fy::Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("the array is f32[2] but f64 was requested"));
  }
  EXPECT_THROW(fy::zeros({-1}), fy::Error);
  EXPECT_THROW(fy::zeros({int64_t{1} << 40, int64_t{1} << 40}), fy::Error);
  EXPECT_THROW(fy::Array().to_vector<float>(), fy::Error);
}

TEST(Array, PrintsNestedAndElided) {
  auto a = fy::Array::from(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.to_string(), "i32[2,3]{device} [[1, 2, 3], [4, 5, 6]]");
  EXPECT_EQ(fy::Array::scalar(2.5f).to_string(), "f32[]{device} 2.5");
  EXPECT_EQ(fy::zeros({0, 2}).to_string(), "f32[0,2]{device} [[]]");
  std::vector<int32_t> big(100);
  for (int i = 0; i < 100; ++i) big[static_cast<size_t>(i)] = i;
  EXPECT_EQ(fy::Array::from(big, {25, 4}).to_string(8), "i32[25,4]{device} [[0, 1, 2, 3], ..., [96, 97, 98, 99]]");
  EXPECT_EQ(fy::Array::from(big, {100}).to_string(4), "i32[100]{device} [0, 1, ..., 98, 99]");
}

// Issue 32: with room for one element or none, the elision once jumped to the end and printed (read)
// the element one past it. tools/sanitize.sh runs this under valgrind too.
TEST(Array, ToStringWithRoomForFewElementsReadsOnlyTheArray) {
  auto v = fy::Array::from(std::vector<float>{11, 22, 33, 44, 55}, {5});
  EXPECT_EQ(v.to_string(0), "f32[5]{device} [...]");
  EXPECT_EQ(v.to_string(1), "f32[5]{device} [11, ...]");
  EXPECT_EQ(v.to_string(-3), "f32[5]{device} [...]");
  EXPECT_EQ(v.to_string(2), "f32[5]{device} [11, ..., 55]");
  EXPECT_EQ(v.to_string(3), "f32[5]{device} [11, 22, ..., 55]");
  EXPECT_EQ(v.to_string(5), "f32[5]{device} [11, 22, 33, 44, 55]");
  auto m = fy::Array::from(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(m.to_string(0), "i32[2,3]{device} [[...]]");
  EXPECT_EQ(m.to_string(1), "i32[2,3]{device} [[1, ...]]");
  EXPECT_EQ(m.to_string(2), "i32[2,3]{device} [[1, ..., 6]]");
  auto one = fy::Array::from(std::vector<float>{7}, {1});
  EXPECT_EQ(one.to_string(0), "f32[1]{device} [...]");
  EXPECT_EQ(one.to_string(1), "f32[1]{device} [7]");
}

// Issue 32: full() cast NaN or 1e300 to INT_MIN and 2.5 to true; it refuses what the traced
// constant refuses, with the same words.
TEST(Array, FullRefusesValuesTheDtypeCannotHold) {
  for (double bad : {std::nan(""), 1e300, -1e300, 2.5, 2147483648.0, -2147483649.0, double(INFINITY)}) {
    fy::Error e = fy::testing::error_of([&] { fy::full({2}, bad, fy::DType::i32); });
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument) << bad;
    EXPECT_THAT(e.message(), HasSubstr("full: an i32 value must be an integer in [-2147483648, 2147483647]")) << bad;
  }
  for (double bad : {2.5, -1.0, 0.5, std::nan("")}) {
    fy::Error e = fy::testing::error_of([&] { fy::full({2}, bad, fy::DType::boolean); });
    EXPECT_THAT(e.message(), HasSubstr("full: a bool value must be 0 or 1")) << bad;
  }
  EXPECT_EQ(fy::full({2}, -7, fy::DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{-7, -7}));
  EXPECT_EQ(fy::full({1}, 2147483647.0, fy::DType::i32).to_vector<int32_t>(), std::vector<int32_t>{2147483647});
  EXPECT_EQ(fy::full({1}, -2147483648.0, fy::DType::i32).to_vector<int32_t>(), std::vector<int32_t>{-2147483647 - 1});
  EXPECT_EQ(fy::full({2}, 1, fy::DType::boolean).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(fy::ones({2}, fy::DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{1, 1}));
  EXPECT_TRUE(std::isnan(fy::full({1}, std::nan(""), fy::DType::f32).to_vector<float>()[0]));  // floats hold NaN
  // The traced constant says the same.
  fy::Error traced = fy::testing::error_of([] {
    fy::jit([](fy::Tensor x) { return x + fy::constant(2.5, {}, fy::DType::i32); }).lower(fy::ones({1}, fy::DType::i32));
  });
  EXPECT_THAT(traced.message(), HasSubstr("an i32 value must be an integer"));
}

// Issue 32: bool bytes other than 0 or 1 made the logical ops (any non-zero is true) and eq/ne (the
// bytes compared) disagree. Refused, as the safetensors reader refuses them: such a byte is data of
// another type or garbage, and normalizing it would hide that.
TEST(Array, FromBytesRefusesBoolBytesOtherThanZeroOrOne) {
  const unsigned char bytes[] = {7, 1, 0, 2};
  fy::Error e = fy::testing::error_of([&] { fy::Array::from_bytes(bytes, 4, fy::DType::boolean, {4}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("bool element 0 is the byte 7; bools are 0 or 1"));
  const unsigned char good[] = {0, 1, 1, 0};
  EXPECT_EQ(fy::Array::from_bytes(good, 4, fy::DType::boolean, {4}).to_vector<bool>(),
            (std::vector<bool>{false, true, true, false}));
  // Other dtypes take any bytes.
  EXPECT_EQ(fy::Array::from_bytes(bytes, 4, fy::DType::i32, {1}).size(), 1);
}

// Issue 32: one size rule for every path (ir/limits.h). {0, 2^62, 2^62} was accepted and
// {2^62, 2^62, 0} refused; both are refused now (a zero-size dimension does not excuse the others),
// and a type at the limit is allowed whatever the order.
TEST(Array, OneSizeRuleWhateverTheOrderOfDimensions) {
  const int64_t big = int64_t{1} << 62;
  for (const fy::Shape& s : {fy::Shape{0, big, big}, fy::Shape{big, big, 0}, fy::Shape{big, 0, big}}) {
    fy::Error e = fy::testing::error_of([&] { fy::Array::allocate(fy::DType::f32, s); });
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_THAT(e.message(), HasSubstr("is too large: more than 2^62 bytes, counting each zero-size dimension as 1"));
  }
  const int64_t half = int64_t{1} << 30;  // f32[0, 2^30, 2^30]: 2^62 bytes counted, none held
  EXPECT_EQ(fy::Array::allocate(fy::DType::f32, {0, half, half}).nbytes(), 0u);
  EXPECT_EQ(fy::Array::allocate(fy::DType::f32, {half, half, 0}).nbytes(), 0u);
  fy::Error rank = fy::testing::error_of([] { fy::Array::allocate(fy::DType::f32, fy::Shape(33, 1)); });
  EXPECT_THAT(rank.message(), HasSubstr("has 33 dimensions, more than 32"));
}

}  // namespace
