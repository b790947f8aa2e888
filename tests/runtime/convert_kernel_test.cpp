// convert_element_type between every pair of dtypes, and XLA's edge cases.
#include <climits>

#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

Buffer convert(const Buffer& x, DType to) {
  return run1(Primitive::convert_element_type, ir::ConvertParams{to}, {&x}, to, x.shape());
}

// What a value becomes in dtype `to`, by XLA's rules (float -> i32 truncates and saturates).
double ref_convert(double v, DType to) {
  switch (to) {
    case DType::boolean: return v != 0;
    case DType::i32:
      if (std::isnan(v)) return 0;
      return std::clamp(std::trunc(v), double(INT_MIN), double(INT_MAX));
    case DType::f32: return static_cast<float>(v);
    case DType::f16: return static_cast<float>(float16(static_cast<float>(v)));
    case DType::bf16: return static_cast<float>(bfloat16(static_cast<float>(v)));
    default: return v;
  }
}

TEST(ConvertKernel, EveryPairOfDtypes) {
  for (DType from : all_dtypes())
    for (DType to : all_dtypes()) {
      Buffer x = random_buffer(from, {3, 29}, -40, 40);
      x.set(0, 0);
      Buffer y = convert(x, to);
      std::vector<double> want;
      for (double v : x.values()) want.push_back(ref_convert(v, to));
      expect_close(y, want, 0, fmt::format("{} -> {}", name(from), name(to)));
    }
}

TEST(ConvertKernel, FloatToInt32TruncatesSaturatesAndMapsNaNToZero) {
  const std::vector<double> in{2.9, -2.9, -0.5, 3e9, -3e9, NAN, INFINITY, -INFINITY, 2147483520.0};
  const std::vector<double> want{2, -2, 0, INT_MAX, INT_MIN, 0, INT_MAX, INT_MIN, 2147483520.0};
  for (DType d : float_dtypes()) {
    Buffer x = filled(d, {9}, in);
    std::vector<double> w = want;
    if (d == DType::f16) w[8] = INT_MAX;  // 2147483520 is +inf in f16
    if (d == DType::bf16) w[8] = INT_MAX;  // rounds to 2^31 in bf16, which saturates
    expect_close(convert(x, DType::i32), w, 0, name(d));
  }
  Buffer big = filled(DType::f64, {2}, {2147483647.0, 2147483647.9});
  expect_close(convert(big, DType::i32), {INT_MAX, INT_MAX}, 0, "f64 near INT_MAX");
}

TEST(ConvertKernel, AnythingToBoolIsNonzero) {
  for (DType d : float_dtypes()) {
    Buffer x = filled(d, {5}, {0.0, -0.0, NAN, 1e-3, -7});
    expect_close(convert(x, DType::boolean), {0, 0, 1, 1, 1}, 0, name(d));
  }
  Buffer i = filled(DType::i32, {3}, {0, -1, INT_MIN});
  expect_close(convert(i, DType::boolean), {0, 1, 1}, 0, "i32");
  // A stored byte other than 0/1 still reads as true, and the result is normalised to 1.
  Buffer b(DType::boolean, {2});
  b.as<uint8_t>()[0] = 0;
  b.as<uint8_t>()[1] = 7;
  Buffer y = convert(b, DType::boolean);
  EXPECT_EQ(y.as<uint8_t>()[0], 0);
  EXPECT_EQ(y.as<uint8_t>()[1], 1);
}

TEST(ConvertKernel, HalfRoundingAndOverflow) {
  Buffer x = filled(DType::f32, {4}, {65504, 70000, 1.0 + 1.0 / 4096, NAN});
  expect_close(convert(x, DType::f16), {65504, INFINITY, 1.0, NAN}, 0, "f32 -> f16");
  Buffer h = filled(DType::f16, {2}, {NAN, -INFINITY});
  expect_close(convert(h, DType::bf16), {NAN, -INFINITY}, 0, "f16 -> bf16");
}

TEST(ConvertKernel, SameDtypeCopiesBytes) {
  for (DType d : all_dtypes()) {
    Buffer x = random_buffer(d, {17});
    EXPECT_TRUE(convert(x, d).same_bytes(x)) << name(d);
  }
}

TEST(ConvertKernel, ZeroSizeAndRankZero) {
  Buffer e(DType::f32, {0, 2});
  EXPECT_EQ(convert(e, DType::i32).size(), 0);
  Buffer s = filled(DType::i32, {}, {-5});
  expect_close(convert(s, DType::bf16), {-5}, 0, "rank 0");
}

}  // namespace
}  // namespace ferry::kernel_test
