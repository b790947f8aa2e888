// scatter (x.at[i].set(v)): each update written over its window; of overlapping windows the last
// index vector's update stays; out-of-bounds windows dropped or clipped; bools too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/ferry.h"

namespace fy = ferry;
using ::testing::ElementsAreArray;

namespace {

fy::Array i32s(std::vector<int32_t> v, fy::Shape s) { return fy::Array::from(v, s); }
fy::Array f32s(std::vector<float> v, fy::Shape s) { return fy::Array::from(v, s); }

std::vector<float> scatter_of(const fy::Array& x, const fy::Array& idx, const fy::Array& upd,
                              const fy::ScatterDimensionNumbers& dims,
                              fy::GatherScatterMode mode = fy::GatherScatterMode::fill_or_drop) {
  auto f = fy::jit([&](fy::Tensor a, fy::Tensor i, fy::Tensor u) { return fy::scatter(a, i, u, dims, mode); });
  return f.lower(x, idx, upd).compile()(x, idx, upd)[0].to_vector<float>();
}

// Elements, one index each: positions named twice keep the later update.
TEST(Scatter, TheLastIndexVectorStays) {
  EXPECT_THAT(scatter_of(f32s({-1, -1, -1, -1, -1}, {5}), i32s({1, 3, 1, 4, 4}, {5, 1}), f32s({10, 20, 30, 40, 50}, {5}),
                         {{}, {0}, {0}}),
              ElementsAreArray({-1, 30, -1, 20, 50}));
}

// Row windows of a [4, 3] operand, and overlapping windows of two elements.
TEST(Scatter, WindowsAndOverlappingWindows) {
  EXPECT_THAT(scatter_of(f32s(std::vector<float>(12, 0), {4, 3}), i32s({2, 0}, {2, 1}), f32s({1, 2, 3, 4, 5, 6}, {2, 3}),
                         {{1}, {0}, {0}}),
              ElementsAreArray({4, 5, 6, 0, 0, 0, 1, 2, 3, 0, 0, 0}));
  EXPECT_THAT(scatter_of(f32s(std::vector<float>(6, 0), {6}), i32s({0, 1, 3}, {3, 1}), f32s({1, 2, 3, 4, 5, 6}, {3, 2}),
                         {{1}, {}, {0}}),
              ElementsAreArray({1, 3, 4, 5, 6, 0}));
}

TEST(Scatter, OutOfBoundsWindowsAreDroppedOrClipped) {
  fy::Array x = f32s({0, 0, 0, 0}, {4}), idx = i32s({-1, 7, 2}, {3, 1}), upd = f32s({1, 2, 3}, {3});
  EXPECT_THAT(scatter_of(x, idx, upd, {{}, {0}, {0}}), ElementsAreArray({0, 0, 3, 0}));
  EXPECT_THAT(scatter_of(x, idx, upd, {{}, {0}, {0}}, fy::GatherScatterMode::clip), ElementsAreArray({1, 0, 3, 2}));
}

TEST(Scatter, WritesBoolsAndIntegers) {
  auto f = fy::jit([](fy::Tensor a, fy::Tensor i) {
    fy::Tensor flags = fy::gt(a, fy::constant(0.0, {}, fy::DType::f32));
    fy::Tensor set = fy::scatter(flags, i, fy::constant(1.0, {2}, fy::DType::boolean), {{}, {0}, {0}});
    fy::Tensor ints = fy::scatter(fy::convert(a, fy::DType::i32), i, fy::constant(-7.0, {2}, fy::DType::i32), {{}, {0}, {0}});
    return std::vector<fy::Tensor>{fy::convert(set, fy::DType::f32), fy::convert(ints, fy::DType::f32)};
  });
  fy::Array a = f32s({1, -1, -1, 2}, {4}), i = i32s({1, 2}, {2, 1});
  std::vector<fy::Array> out = f.lower(a, i).compile()(a, i);
  EXPECT_THAT(out[0].to_vector<float>(), ElementsAreArray({1, 1, 1, 1}));
  EXPECT_THAT(out[1].to_vector<float>(), ElementsAreArray({1, -7, -7, 2}));
}

}  // namespace
