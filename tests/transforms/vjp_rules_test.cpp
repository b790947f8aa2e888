// Every primitive's VJP rule against central finite differences in f64. Each case is a scalar
// function sum(w * op(x...)) with fixed random weights w, so every output element gets its own
// cotangent.
#include <gtest/gtest.h>

#include "support/gradient_check.h"

namespace fy = ferry;
using fy::testing::expect_gradients_match;
using fy::testing::random_f64;

namespace {

using Xs = std::vector<fy::Tensor>;

// sum(w * y) for a weight w of y's shape (deterministic pseudo-random values).
fy::Tensor weighted_sum(const fy::Tensor& y) {
  fy::Tensor w = fy::sin(fy::convert(fy::iota(fy::DType::i32, {fy::num_elements(y.shape())}), fy::DType::f64) * 1.7 + 0.3);
  return fy::sum(fy::reshape(w, y.shape()) * y);
}

void check(std::function<fy::Tensor(const Xs&)> op, std::vector<fy::Shape> shapes, double lo = -1.0, double hi = 1.0) {
  expect_gradients_match([&](const Xs& xs) { return weighted_sum(op(xs)); }, random_f64(shapes, 42, lo, hi));
}

TEST(VjpRules, Unary) {
  check([](const Xs& x) { return -x[0]; }, {{3, 4}});
  check([](const Xs& x) { return fy::exp(x[0]); }, {{3, 4}});
  check([](const Xs& x) { return fy::log(x[0]); }, {{3, 4}}, 0.5, 2.0);
  check([](const Xs& x) { return fy::sin(x[0]); }, {{3, 4}});
  check([](const Xs& x) { return fy::cos(x[0]); }, {{3, 4}});
  check([](const Xs& x) { return fy::tanh(x[0]); }, {{3, 4}});
  check([](const Xs& x) { return fy::logistic(x[0]); }, {{3, 4}});
  check([](const Xs& x) { return fy::sqrt(x[0]); }, {{3, 4}}, 0.5, 2.0);
  check([](const Xs& x) { return fy::rsqrt(x[0]); }, {{3, 4}}, 0.5, 2.0);
  check([](const Xs& x) { return fy::abs(x[0]); }, {{3, 4}}, 0.1, 1.0);
  check([](const Xs& x) { return fy::abs(x[0]); }, {{3, 4}}, -1.0, -0.1);
  check([](const Xs& x) { return fy::sign(x[0]) * x[0]; }, {{5}}, 0.1, 1.0);
}

TEST(VjpRules, Binary) {
  check([](const Xs& x) { return x[0] + x[1]; }, {{2, 3}, {2, 3}});
  check([](const Xs& x) { return x[0] - x[1]; }, {{2, 3}, {2, 3}});
  check([](const Xs& x) { return x[0] * x[1]; }, {{2, 3}, {2, 3}});
  check([](const Xs& x) { return x[0] / (x[1] + 3.0); }, {{2, 3}, {2, 3}});
  check([](const Xs& x) { return fy::max(x[0], x[1]); }, {{2, 3}, {2, 3}});
  check([](const Xs& x) { return fy::min(x[0], x[1]); }, {{2, 3}, {2, 3}});
  check([](const Xs& x) { return fy::pow(x[0], x[1]); }, {{2, 3}, {2, 3}}, 0.5, 2.0);
  // Broadcasting in the front end is broadcast_in_dim, whose VJP sums.
  check([](const Xs& x) { return x[0] * x[1]; }, {{2, 3}, {3}});
  check([](const Xs& x) { return x[0] + x[1]; }, {{4, 1}, {1, 5}});
}

TEST(VjpRules, MaxAndMinSplitTiesEvenly) {
  // d/dx max(x, x) = 1: each side gets half.
  auto g = fy::testing::ferry_gradients([](const Xs& x) { return fy::sum(fy::max(x[0], x[0])); }, random_f64({{3}}, 1));
  for (double v : g[0]) EXPECT_DOUBLE_EQ(v, 1.0);
  auto m = fy::testing::ferry_gradients([](const Xs& x) { return fy::max(x[0]); },
                                        {fy::Array::from(std::vector<double>{1, 3, 3, 2}, {4})});
  EXPECT_EQ(m[0], (std::vector<double>{0, 0.5, 0.5, 0}));
}

TEST(VjpRules, ComparisonsSelectAndConvert) {
  check([](const Xs& x) { return fy::where(x[0] > x[1], x[0] * 2.0, x[1] * x[1]); }, {{3, 3}, {3, 3}});
  // Through f32 and back: differences need a step well above f32's resolution.
  expect_gradients_match(
      [](const Xs& x) { return weighted_sum(fy::convert(fy::convert(x[0], fy::DType::f32), fy::DType::f64)); },
      random_f64({{4}}, 42), 1e-3, 1e-4);
  // Through an integer: no gradient flows, and the result is zeros of the input's shape.
  auto g = fy::testing::ferry_gradients(
      [](const Xs& x) { return fy::sum(fy::convert(fy::convert(x[0], fy::DType::i32), fy::DType::f64)) + fy::sum(x[1]); },
      random_f64({{2}, {2}}, 3));
  EXPECT_EQ(g[0], (std::vector<double>{0, 0}));
  EXPECT_EQ(g[1], (std::vector<double>{1, 1}));
}

TEST(VjpRules, ShapeOps) {
  check([](const Xs& x) { return fy::broadcast_in_dim(x[0], {2, 3, 4}, {1}); }, {{3}});
  check([](const Xs& x) { return fy::broadcast_in_dim(x[0], {2, 3, 4}, {0, 2}); }, {{1, 4}});
  check([](const Xs& x) { return fy::broadcast_in_dim(x[0], {5}, {}); }, {{}});
  check([](const Xs& x) { return fy::reshape(x[0], {6, 2}); }, {{3, 4}});
  check([](const Xs& x) { return fy::transpose(x[0], {2, 0, 1}); }, {{2, 3, 4}});
  check([](const Xs& x) { return fy::sum(x[0], {0, 2}); }, {{2, 3, 4}});
  check([](const Xs& x) { return fy::sum(x[0]); }, {{2, 3}});
  check([](const Xs& x) { return fy::reduce_max(x[0], {1}); }, {{3, 5}});
  check([](const Xs& x) { return fy::mean(x[0], {0}); }, {{4, 2}});
}

TEST(VjpRules, DotGeneral) {
  check([](const Xs& x) { return fy::matmul(x[0], x[1]); }, {{3, 4}, {4, 5}});
  check([](const Xs& x) { return fy::matmul(x[0], x[1]); }, {{4}, {4}});
  check([](const Xs& x) { return fy::matmul(x[0], x[1]); }, {{2, 3, 4}, {2, 4, 5}});
  // Batch dims not leading, several contracting dims in unusual positions.
  check([](const Xs& x) { return fy::dot_general(x[0], x[1], {{0, 3}, {2, 0}, {2}, {1}}); }, {{2, 3, 4, 5}, {5, 4, 2, 6}});
  check([](const Xs& x) { return fy::dot_general(x[0], x[1], {{1}, {1}, {}, {}}); }, {{3, 4}, {5, 4}});
}

TEST(VjpRules, Indexing) {
  check([](const Xs& x) { return fy::slice(x[0], {1, 0}, {3, 4}); }, {{4, 5}});
  check([](const Xs& x) { return fy::slice(x[0], {0, 1}, {5, 5}, {2, 3}); }, {{5, 6}});
  auto i32 = [](int v) { return fy::constant(v, {}, fy::DType::i32); };
  check([&](const Xs& x) { return fy::dynamic_slice(x[0], {i32(1), i32(2)}, {2, 2}); }, {{4, 5}});
  check([&](const Xs& x) { return fy::dynamic_slice(x[0], {i32(9), i32(-3)}, {2, 2}); }, {{4, 5}});  // clamped
  check([&](const Xs& x) { return fy::dynamic_update_slice(x[0], x[1] * 3.0, {i32(1), i32(0)}); }, {{4, 3}, {2, 3}});
  check([](const Xs& x) { return fy::concatenate({x[0], x[1], x[0]}, 1); }, {{2, 3}, {2, 1}});
}

TEST(VjpRules, DevicePutSendsTheCotangentBack) {
  check([](const Xs& x) { return fy::device_put(fy::device_put(x[0], fy::MemoryKind::pinned_host), fy::MemoryKind::device); },
        {{3}});
  auto text = fy::jit([](fy::Tensor x) {
                return fy::grad([](fy::Tensor y) {
                  return fy::sum(fy::device_put(fy::device_put(y, fy::MemoryKind::pinned_host), fy::MemoryKind::device));
                })(x);
              }).lower(fy::ShapeDtype{{3}}).as_text();
  // The backward pass moves the cotangent host-ward, then device-ward again.
  EXPECT_NE(text.find("device_put[dst=pinned_host] %"), text.rfind("device_put[dst=pinned_host] %"));
}

}  // namespace
