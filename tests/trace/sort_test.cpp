// argsort, sort and top_k: jax.lax.sort's order on every dtype, stability ascending and
// descending, any axis (contiguous and strided lines), against orders written out by hand or made
// by std::stable_sort with plain comparisons.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using fy::testing::error_of;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

namespace {

std::vector<int32_t> argsort_of(const fy::Array& x, int64_t axis, bool descending) {
  auto f = fy::jit([&](fy::Tensor t) { return fy::argsort(t, axis, descending); });
  return f.lower(x).compile()(x)[0].to_vector<int32_t>();
}

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// -inf < -1 < -0 = +0 < 1 = 1 < inf < NaN = -NaN (jax.lax.sort's order): ties keep their order.
TEST(Sort, FloatsFollowTheOrderOfJaxSort) {
  const std::vector<float> v = {kNaN, -0.0f, 1.0f, -kInf, 0.0f, -kNaN, kInf, -1.0f, 1.0f};
  fy::Array x = fy::Array::from(v, {9});
  EXPECT_THAT(argsort_of(x, 0, false), ElementsAreArray({3, 7, 1, 4, 2, 8, 6, 0, 5}));
  // Descending: ties still keep their order (the 1 at 2 before the 1 at 8, -0 before +0).
  EXPECT_THAT(argsort_of(x, 0, true), ElementsAreArray({0, 5, 6, 2, 8, 1, 4, 7, 3}));
  std::vector<double> d(v.begin(), v.end());
  EXPECT_THAT(argsort_of(fy::Array::from(d, {9}), 0, false), ElementsAreArray({3, 7, 1, 4, 2, 8, 6, 0, 5}));
  // IEEE's total order (top_k's): -NaN < -inf < -1 < -0 < +0 < 1 = 1 < inf < NaN.
  for (const fy::Array& a : {x, fy::Array::from(d, {9})}) {
    auto total = fy::jit([](fy::Tensor t) { return fy::argsort(t, 0, false, /*total_order=*/true); });
    EXPECT_THAT(total.lower(a).compile()(a)[0].to_vector<int32_t>(), ElementsAreArray({5, 3, 7, 1, 4, 2, 8, 6, 0}));
  }
}

TEST(Sort, HalfTypesIntegersAndBools) {
  const std::vector<float> v = {kNaN, -0.0f, 1.0f, -kInf, 0.0f, 0.5f, kInf, -1.0f, 1.0f};
  for (fy::DType t : {fy::DType::f16, fy::DType::bf16}) {
    SCOPED_TRACE(fy::dtype_name(t));
    auto f = fy::jit([&](fy::Tensor a) { return fy::argsort(fy::convert(a, t), 0, false); });
    fy::Array x = fy::Array::from(v, {9});
    EXPECT_THAT(f.lower(x).compile()(x)[0].to_vector<int32_t>(), ElementsAreArray({3, 7, 1, 4, 5, 2, 8, 6, 0}));
  }
  fy::Array i = fy::Array::from(std::vector<int32_t>{7, -3, 7, std::numeric_limits<int32_t>::min(), 0}, {5});
  EXPECT_THAT(argsort_of(i, 0, false), ElementsAreArray({3, 1, 4, 0, 2}));
  EXPECT_THAT(argsort_of(i, 0, true), ElementsAreArray({0, 2, 4, 1, 3}));
  auto b = fy::jit([](fy::Tensor a) { return fy::argsort(fy::gt(a, fy::constant(0.0, {}, fy::DType::f32)), 0, false); });
  fy::Array bx = fy::Array::from(std::vector<float>{1, -1, 2, -2, 0}, {5});
  EXPECT_THAT(b.lower(bx).compile()(bx)[0].to_vector<int32_t>(), ElementsAreArray({1, 3, 4, 0, 2}));
}

// Every axis of a [4, 37, 3] array with many ties (values in 0..9), against std::stable_sort.
TEST(Sort, EveryAxisIsStableAgainstStdStableSort) {
  const fy::Shape shape = {4, 37, 3};
  std::mt19937 rng(11);
  std::vector<float> v(4 * 37 * 3);
  for (float& e : v) e = static_cast<float>(rng() % 10);
  fy::Array x = fy::Array::from(v, shape);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (bool descending : {false, true}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (descending ? " descending" : " ascending"));
      std::vector<int32_t> want(v.size());
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
      for (int64_t d = axis + 1; d < 3; ++d) inner *= shape[static_cast<size_t>(d)];
      const int64_t n = shape[static_cast<size_t>(axis)];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          std::vector<int32_t> line(static_cast<size_t>(n));
          std::iota(line.begin(), line.end(), 0);
          auto value = [&](int32_t k) { return v[static_cast<size_t>((o * n + k) * inner + i)]; };
          std::stable_sort(line.begin(), line.end(), [&](int32_t a, int32_t b) {
            return descending ? value(a) > value(b) : value(a) < value(b);
          });
          for (int64_t k = 0; k < n; ++k) want[static_cast<size_t>((o * n + k) * inner + i)] = line[static_cast<size_t>(k)];
        }
      EXPECT_EQ(argsort_of(x, axis, descending), want);
    }
}

TEST(Sort, SortAndTopK) {
  fy::Array x = fy::Array::from(std::vector<float>{3, 1, 3, 2, 3, 0, 5, 4, 5, 1}, {2, 5});
  auto s = fy::jit([](fy::Tensor a) { return fy::sort(a, 1); });
  EXPECT_THAT(s.lower(x).compile()(x)[0].to_vector<float>(), ElementsAreArray({1, 2, 3, 3, 3, 0, 1, 4, 5, 5}));
  auto s0 = fy::jit([](fy::Tensor a) { return fy::sort(a, 0, /*descending=*/true); });
  EXPECT_THAT(s0.lower(x).compile()(x)[0].to_vector<float>(), ElementsAreArray({3, 5, 4, 5, 3, 0, 1, 3, 2, 1}));
  auto t = fy::jit([](fy::Tensor a) {
    auto [values, positions] = fy::top_k(a, 3);
    return std::vector<fy::Tensor>{values, positions};
  });
  std::vector<fy::Array> out = t.lower(x).compile()(x);
  EXPECT_THAT(out[0].to_vector<float>(), ElementsAreArray({3, 3, 3, 5, 5, 4}));
  EXPECT_THAT(out[1].to_vector<int32_t>(), ElementsAreArray({0, 2, 4, 1, 3, 2}));
  EXPECT_EQ(out[1].shape(), (fy::Shape{2, 3}));
}

template <class F> void expect_invalid(F f, const char* needle) {
  fy::Error e = error_of(f);
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument) << e.message();
  EXPECT_THAT(e.message(), HasSubstr(needle));
}

TEST(Sort, BadArgumentsAreInvalidArgument) {
  fy::Array x = fy::Array::from(std::vector<float>{1, 2, 3}, {3});
  expect_invalid([&] { fy::jit([](fy::Tensor a) { return fy::argsort(a, 1); }).lower(x); }, "argsort");
  expect_invalid([&] { fy::jit([](fy::Tensor a) { return fy::top_k(a, 4).first; }).lower(x); }, "k = 4 must be in [0, 3]");
  fy::Array s = fy::Array::from(std::vector<float>{1}, {});
  expect_invalid([&] { fy::jit([](fy::Tensor a) { return fy::top_k(a, 1).first; }).lower(s); }, "must have an axis");
}

// The IR's text form carries the parameters and parses back.
TEST(Sort, PrintsAndParses) {
  fy::Array x = fy::Array::from(std::vector<float>{1, 2, 3, 4}, {2, 2});
  fy::Lowered l = fy::jit([](fy::Tensor a) { return fy::argsort(a, 0, true); }).lower(x);
  const std::string text = l.as_text();
  EXPECT_THAT(text, HasSubstr("argsort[axis=0, descending=true, total_order=false]"));
  EXPECT_EQ(fy::parse_program(text).as_text(), text);
}

}  // namespace
