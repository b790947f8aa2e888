// Array: construction, reading back, printing, and its errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/ferry.h"

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

}  // namespace
