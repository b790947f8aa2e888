// slice, dynamic_slice, dynamic_update_slice and concatenate: exact for every dtype.
#include <climits>

#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

using P = Primitive;

std::vector<double> ref_slice(const Buffer& x, const ir::Dims& start, const ir::Dims& strides, const Shape& out) {
  std::vector<double> want;
  for (int64_t i = 0; i < num_elements(out); ++i) {
    auto idx = unravel(i, out);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] = start[d] + idx[d] * (strides.empty() ? 1 : strides[d]);
    want.push_back(x.get(ravel(idx, x.shape())));
  }
  return want;
}

Shape slice_shape(const ir::Dims& start, const ir::Dims& limit, const ir::Dims& strides) {
  Shape s;
  for (size_t d = 0; d < start.size(); ++d) {
    const int64_t st = strides.empty() ? 1 : strides[d];
    s.push_back(std::max<int64_t>(0, (limit[d] - start[d] + st - 1) / st));
  }
  return s;
}

TEST(SliceKernel, StartsLimitsAndStrides) {
  struct Case {
    Shape in;
    ir::Dims start, limit, strides;
  };
  const std::vector<Case> cases{
      {{10}, {2}, {7}, {}},
      {{10}, {1}, {10}, {3}},
      {{6, 8}, {1, 2}, {5, 8}, {}},
      {{6, 8}, {0, 1}, {6, 8}, {2, 3}},
      {{4, 5, 6}, {1, 0, 2}, {4, 5, 6}, {2, 1, 2}},
      {{4, 5, 6}, {0, 0, 0}, {4, 5, 6}, {1, 1, 1}},  // whole operand
      {{4, 5, 6}, {3, 4, 5}, {4, 5, 6}, {}},         // one element
      {{4, 5}, {2, 0}, {2, 5}, {}},                  // empty
      {{0, 5}, {0, 1}, {0, 3}, {}},                  // empty operand
      {{}, {}, {}, {}},                              // rank 0
  };
  for (DType d : all_dtypes())
    for (const Case& c : cases) {
      Buffer x = random_buffer(d, c.in);
      const Shape out = slice_shape(c.start, c.limit, c.strides);
      Buffer y = run1(P::slice, ir::SliceParams{c.start, c.limit, c.strides}, {&x}, d, out);
      expect_close(y, ref_slice(x, c.start, c.strides, out), 0,
                   fmt::format("{} {} start {} strides {}", name(d), shape_string(c.in), fmt::join(c.start, ","),
                               fmt::join(c.strides, ",")));
    }
}

TEST(DynamicSliceKernel, StartsAreClamped) {
  const Shape in{6, 7};
  const Shape size{3, 4};
  // (given start, start after clamping into [0, dim - size])
  const std::vector<std::pair<std::vector<int32_t>, ir::Dims>> starts{
      {{0, 0}, {0, 0}},   {{2, 1}, {2, 1}},          {{3, 3}, {3, 3}},
      {{-5, 2}, {0, 2}},  {{1, -1}, {1, 0}},         {{4, 9}, {3, 3}},
      {{100, 100}, {3, 3}}, {{INT_MIN, INT_MAX}, {0, 3}},
  };
  for (DType d : all_dtypes()) {
    Buffer x = random_buffer(d, in);
    for (const auto& [given, clamped] : starts) {
      Buffer s0 = scalar_i32(given[0]), s1 = scalar_i32(given[1]);
      Buffer y = run1(P::dynamic_slice, ir::DynamicSliceParams{size}, {&x, &s0, &s1}, d, size);
      expect_close(y, ref_slice(x, clamped, {}, size), 0,
                   fmt::format("{} starts {}", name(d), fmt::join(given, ",")));
    }
  }
}

TEST(DynamicSliceKernel, FullSizeZeroSizeAndRankZero) {
  Buffer x = random_buffer(DType::f32, {4, 5});
  Buffer a = scalar_i32(3), b = scalar_i32(-2);
  EXPECT_TRUE(run1(P::dynamic_slice, ir::DynamicSliceParams{{4, 5}}, {&x, &a, &b}, DType::f32, {4, 5}).same_bytes(x));
  EXPECT_EQ(run1(P::dynamic_slice, ir::DynamicSliceParams{{0, 2}}, {&x, &a, &b}, DType::f32, {0, 2}).size(), 0);
  Buffer s = random_buffer(DType::f64, {});
  EXPECT_TRUE(run1(P::dynamic_slice, ir::DynamicSliceParams{{}}, {&s}, DType::f64, {}).same_bytes(s));
}

std::vector<double> ref_update(const Buffer& x, const Buffer& u, const ir::Dims& start) {
  std::vector<double> want = x.values();
  for (int64_t i = 0; i < u.size(); ++i) {
    auto idx = unravel(i, u.shape());
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += start[d];
    want[static_cast<size_t>(ravel(idx, x.shape()))] = u.get(i);
  }
  return want;
}

TEST(DynamicUpdateSliceKernel, StartsAreClamped) {
  const Shape in{5, 6, 4};
  const Shape upd{2, 3, 4};
  const std::vector<std::pair<std::vector<int32_t>, ir::Dims>> starts{
      {{0, 0, 0}, {0, 0, 0}},     {{1, 2, 0}, {1, 2, 0}},    {{3, 3, 0}, {3, 3, 0}},
      {{-1, -7, -2}, {0, 0, 0}},  {{4, 5, 1}, {3, 3, 0}},    {{INT_MAX, 1, INT_MIN}, {3, 1, 0}},
  };
  for (DType d : all_dtypes()) {
    Buffer x = random_buffer(d, in), u = random_buffer(d, upd);
    for (const auto& [given, clamped] : starts) {
      Buffer s0 = scalar_i32(given[0]), s1 = scalar_i32(given[1]), s2 = scalar_i32(given[2]);
      Buffer y = run1(P::dynamic_update_slice, ir::NoParams{}, {&x, &u, &s0, &s1, &s2}, d, in);
      expect_close(y, ref_update(x, u, clamped), 0, fmt::format("{} starts {}", name(d), fmt::join(given, ",")));
    }
  }
}

TEST(DynamicUpdateSliceKernel, EmptyUpdateFullUpdateAndRankZero) {
  Buffer x = random_buffer(DType::i32, {3, 4});
  Buffer s0 = scalar_i32(9), s1 = scalar_i32(-9);
  Buffer empty(DType::i32, {0, 4});
  EXPECT_TRUE(run1(P::dynamic_update_slice, ir::NoParams{}, {&x, &empty, &s0, &s1}, DType::i32, {3, 4}).same_bytes(x));
  Buffer full = random_buffer(DType::i32, {3, 4});
  EXPECT_TRUE(run1(P::dynamic_update_slice, ir::NoParams{}, {&x, &full, &s0, &s1}, DType::i32, {3, 4}).same_bytes(full));
  Buffer r = random_buffer(DType::bf16, {}), ru = random_buffer(DType::bf16, {});
  EXPECT_TRUE(run1(P::dynamic_update_slice, ir::NoParams{}, {&r, &ru}, DType::bf16, {}).same_bytes(ru));
  Buffer z(DType::f32, {0, 3}), zu(DType::f32, {0, 2});
  EXPECT_EQ(run1(P::dynamic_update_slice, ir::NoParams{}, {&z, &zu, &s0, &s1}, DType::f32, {0, 3}).size(), 0);
}

TEST(ConcatenateKernel, AlongEachAxis) {
  const Shape base{2, 3, 4};
  for (DType d : all_dtypes())
    for (int64_t axis = 0; axis < 3; ++axis) {
      std::vector<Buffer> parts;
      Shape out = base;
      out[static_cast<size_t>(axis)] = 0;
      for (int64_t size : {2, 0, 1, 3}) {  // a zero-size operand in the middle
        Shape s = base;
        s[static_cast<size_t>(axis)] = size;
        out[static_cast<size_t>(axis)] += size;
        parts.push_back(random_buffer(d, s));
      }
      std::vector<const Buffer*> ins;
      for (const Buffer& p : parts) ins.push_back(&p);
      Buffer y = run1(P::concatenate, ir::ConcatenateParams{axis}, ins, d, out);
      std::vector<double> want;
      for (int64_t i = 0; i < y.size(); ++i) {
        auto idx = unravel(i, out);
        for (const Buffer& p : parts) {
          const int64_t n = p.shape()[static_cast<size_t>(axis)];
          if (idx[static_cast<size_t>(axis)] < n) {
            want.push_back(p.get(ravel(idx, p.shape())));
            break;
          }
          idx[static_cast<size_t>(axis)] -= n;
        }
      }
      expect_close(y, want, 0, fmt::format("{} axis {}", name(d), axis));
    }
}

TEST(ConcatenateKernel, SingleOperandAndEmptyResult) {
  Buffer x = random_buffer(DType::f64, {3, 2});
  EXPECT_TRUE(run1(P::concatenate, ir::ConcatenateParams{1}, {&x}, DType::f64, {3, 2}).same_bytes(x));
  Buffer a(DType::f32, {0, 2}), b(DType::f32, {0, 3});
  EXPECT_EQ(run1(P::concatenate, ir::ConcatenateParams{1}, {&a, &b}, DType::f32, {0, 5}).size(), 0);
}

}  // namespace
}  // namespace ferry::kernel_test
