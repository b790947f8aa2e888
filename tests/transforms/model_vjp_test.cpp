// VJP rules of the model primitives and the nn functions against central finite differences in
// f64: each case is sum(w * f(x...)) with fixed pseudo-random weights w.
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/ferry.h"
#include "support/gradient_check.h"

namespace fy = ferry;
using fy::testing::expect_gradients_match;
using fy::testing::random_f64;

namespace {

using Xs = std::vector<fy::Tensor>;

fy::Tensor weighted_sum(const fy::Tensor& y) {
  fy::Tensor w = fy::sin(fy::convert(fy::iota(fy::DType::i32, {fy::num_elements(y.shape())}), fy::DType::f64) * 1.3 + 0.7);
  return fy::sum(fy::reshape(w, y.shape()) * y);
}

void check(std::function<fy::Tensor(const Xs&)> op, std::vector<fy::Shape> shapes, double lo = -1.0, double hi = 1.0,
           uint32_t seed = 7) {
  expect_gradients_match([&](const Xs& xs) { return weighted_sum(op(xs)); }, random_f64(shapes, seed, lo, hi));
}

fy::Tensor i32s(std::vector<int32_t> v, fy::Shape s) {
  fy::Tensor out = fy::constant(static_cast<double>(v[0]), s, fy::DType::i32);
  // A constant per element: iota-free, so the values are exactly these.
  std::vector<fy::Tensor> parts;
  for (int32_t x : v) parts.push_back(fy::constant(static_cast<double>(x), {1}, fy::DType::i32));
  return fy::reshape(fy::concatenate(parts, 0), s);
}

TEST(ModelVjp, Elementwise) {
  check([](const Xs& x) { return fy::erf(x[0]); }, {{3, 4}}, -2.0, 2.0);
  check([](const Xs& x) { return fy::erf_inv(x[0]); }, {{3, 4}}, -0.9, 0.9);
  check([](const Xs& x) { return fy::log1p(x[0]); }, {{3, 4}}, -0.5, 2.0);
  check([](const Xs& x) { return fy::expm1(x[0]); }, {{3, 4}});
  check([](const Xs& x) { return fy::atan(x[0]) + fy::sinh(x[0]) + fy::cosh(x[0]) + fy::asinh(x[0]); }, {{3, 4}}, -2.0, 2.0);
  check([](const Xs& x) { return fy::asin(x[0]) + fy::acos(x[0]) + fy::atanh(x[0]); }, {{3, 4}}, -0.9, 0.9);
  check([](const Xs& x) { return fy::acosh(x[0]); }, {{3, 4}}, 1.2, 4.0);
  check([](const Xs& x) { return fy::atan2(x[0], x[1]); }, {{3, 4}, {3, 4}});
  check([](const Xs& x) { return fy::cbrt(x[0]); }, {{3, 4}}, 0.2, 3.0);
  check([](const Xs& x) { return fy::cbrt(x[0]); }, {{3, 4}}, -3.0, -0.2);
  check([](const Xs& x) { return fy::tan(x[0]); }, {{3, 4}}, -1.2, 1.2);
  check([](const Xs& x) { return fy::floor(x[0]) + x[0]; }, {{3, 4}}, 0.1, 0.9);
  check([](const Xs& x) { return fy::ceil(x[0]) * x[0] + fy::round(x[0]); }, {{3, 4}}, 0.1, 0.4);
  // rem: a / b in (2, 3), away from the jumps.
  check([](const Xs& x) { return fy::rem(x[0] + 2.5, x[1] * 0.01 + 1.0); }, {{5}, {5}}, -0.2, 0.2);
  check([](const Xs& x) { return fy::rem(-(x[0] + 2.5), x[1] * 0.01 + 1.0); }, {{5}, {5}}, -0.2, 0.2);
  // clamp: x inside, below and above the bounds; the bounds get the cotangent where they bind.
  check([](const Xs& x) { return fy::clamp(x[1] * 0.1 - 0.5, x[0], x[2] * 0.1 + 0.5); }, {{4, 3}, {4, 3}, {4, 3}});
}

TEST(ModelVjp, Reductions) {
  check([](const Xs& x) { return fy::min(x[0], {1}); }, {{3, 5}});
  check([](const Xs& x) { return fy::min(x[0], fy::Axes{0, 1}); }, {{3, 5}});
  check([](const Xs& x) { return fy::cumsum(x[0], 1); }, {{3, 5}});
  check([](const Xs& x) { return fy::cumsum(x[0], 0, true); }, {{3, 5}});
  check([](const Xs& x) { return fy::cummax(x[0], 1); }, {{3, 6}});
  check([](const Xs& x) { return fy::cummax(x[0], 0, true); }, {{4, 3}});
  check([](const Xs& x) { return fy::cummin(x[0], 1, true); }, {{3, 6}});
  check([](const Xs& x) { return fy::cummin(x[0], 0); }, {{5, 2}});
  // sort and top_k send each cotangent back to the element's place; argsort itself passes none.
  check([](const Xs& x) { return fy::sort(x[0], 1); }, {{3, 6}});
  check([](const Xs& x) { return fy::sort(x[0], 0, /*descending=*/true); }, {{5, 2}});
  check([](const Xs& x) { return fy::top_k(x[0], 2).first; }, {{3, 5}});
  // argmax picks an index: it passes no gradient, but its use as an index does.
  check([](const Xs& x) { return fy::take_along_axis(x[0], fy::reshape(fy::argmax(x[0], 1), {3, 1}), 1); }, {{3, 5}});
}

TEST(ModelVjp, GatherAndScatter) {
  // scatter: the operand's cotangent where nothing was written, each update's where it stayed
  // (index 1 is written twice: only the later update gets a gradient; index 4 is dropped).
  check([](const Xs& x) { return fy::scatter(x[0], i32s({1, 3, 1, 4}, {4, 1}), x[1], {{}, {0}, {0}}); }, {{4}, {4}});
  check([](const Xs& x) { return fy::scatter(x[0], i32s({2, 0}, {2, 1}), x[1], {{1}, {0}, {0}}); }, {{4, 3}, {2, 3}});
  check([](const Xs& x) {
    return fy::scatter(x[0], i32s({0, 1, 5}, {3, 1}), x[1], {{1}, {}, {0}}, fy::GatherScatterMode::clip);
  }, {{6}, {3, 2}});
  check([](const Xs& x) { return fy::take(x[0], i32s({4, 0, 2, 2, 1, 4}, {2, 3}), 0); }, {{5, 3}});
  check([](const Xs& x) { return fy::take(x[0], i32s({1, 1, 0}, {3}), 1); }, {{4, 2, 3}});
  // Out of bounds: clipped indices pass the cotangent to the edge rows; filled ones drop it.
  check([](const Xs& x) { return fy::take(x[0], i32s({1, 9, -2}, {3}), 0, fy::GatherScatterMode::clip); }, {{4, 2}});
  check([](const Xs& x) { return fy::take(x[0], i32s({1, 9, -2}, {3}), 0, fy::GatherScatterMode::fill_zero_or_drop); },
        {{4, 2}});
  check([](const Xs& x) { return fy::take_along_axis(x[0], i32s({2, 0, 0, 1, 1, 1}, {3, 2}), 1); }, {{3, 4}});
  check([](const Xs& x) { return fy::gather(x[0], i32s({0, 1, 2, 0}, {2, 2}), {{1, 2}, {}, {0, 1}}, {2, 2}, fy::GatherScatterMode::clip); },
        {{3, 3}});
  check([](const Xs& x) { return fy::scatter_add(x[0], i32s({1, 3, 1, 7}, {4, 1}), x[1], {{1}, {0}, {0}}); },
        {{5, 3}, {4, 3}});
  check([](const Xs& x) {
    return fy::scatter_add(x[0], i32s({1, 3, 1, 7}, {4, 1}), x[1], {{1}, {0}, {0}}, fy::GatherScatterMode::clip);
  }, {{5, 3}, {4, 3}});
}

TEST(ModelVjp, NnFunctions) {
  check([](const Xs& x) { return fy::nn::relu(x[0]); }, {{3, 4}}, 0.1, 1.0);
  check([](const Xs& x) { return fy::nn::relu(x[0]); }, {{3, 4}}, -1.0, -0.1);
  check([](const Xs& x) { return fy::nn::gelu(x[0]); }, {{3, 4}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::gelu(x[0], false); }, {{3, 4}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::silu(x[0]); }, {{3, 4}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::softmax(x[0]); }, {{3, 5}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::softmax(x[0], 0); }, {{3, 5}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::log_softmax(x[0]); }, {{3, 5}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::logsumexp(x[0], {1}); }, {{3, 5}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::logsumexp(x[0]); }, {{3, 5}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::layer_norm(x[0], x[1], x[2]); }, {{3, 6}, {6}, {6}}, -2.0, 2.0);
  check([](const Xs& x) { return fy::nn::layer_norm(x[0]); }, {{2, 3, 4}}, -2.0, 2.0);
  check([](const Xs& x) { return fy::nn::rms_norm(x[0], x[1]); }, {{3, 6}, {6}}, -2.0, 2.0);
  check([](const Xs& x) { return fy::nn::cross_entropy(x[0], i32s({3, 0, 4, 1}, {4})); }, {{4, 5}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::cross_entropy(x[0], i32s({1, 0, 2, 2, 0, 1}, {2, 3})); }, {{2, 3, 3}}, -3.0, 3.0);
  check([](const Xs& x) { return fy::nn::dropout(fy::random::key(5), 0.3, x[0]); }, {{4, 8}});
}

// Issue 32: relu's gradient at NaN was 1 (the cotangent passed through the branch NaN took). JAX's
// is 0 there, as at 0, and so is ferry's own maximum(x, 0.0); the value at NaN stays NaN.
TEST(ModelVjp, ReluGradientIsOneOnlyWherePositive) {
  const std::vector<float> xs{NAN, 0.0f, -0.0f, 2.0f, -1.0f, INFINITY, -INFINITY};
  auto f = fy::jit([](fy::Tensor x) {
    return std::pair{fy::nn::relu(x), fy::grad([](fy::Tensor y) { return fy::sum(fy::nn::relu(y)); })(x)};
  });
  auto out = f(fy::Array::from(xs, {7}));
  std::vector<float> value = out[0].to_vector<float>(), g = out[1].to_vector<float>();
  EXPECT_EQ(g, (std::vector<float>{0, 0, 0, 1, 0, 1, 0}));
  EXPECT_TRUE(std::isnan(value[0]));
  EXPECT_EQ((std::vector<float>(value.begin() + 1, value.end())), (std::vector<float>{0, 0, 2, 0, INFINITY, 0}));
  EXPECT_FALSE(std::signbit(value[2]));  // relu(-0) is +0, as max(-0, 0) in JAX
  // The same as maximum(x, 0.0) wherever that has no tie (at 0 it splits the gradient).
  auto m = fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor y) { return fy::sum(fy::max(y, 0.0)); })(x); });
  EXPECT_EQ(m(fy::Array::from(std::vector<float>{NAN, 2.0f, -1.0f}, {3}))[0].to_vector<float>(),
            (std::vector<float>{0, 1, 0}));
}

TEST(ModelVjp, StopGradientBlocksTheCotangent) {
  auto g = fy::testing::ferry_gradients([](const Xs& x) { return fy::sum(x[0] * fy::stop_gradient(x[0])) + fy::sum(x[1]); },
                                        random_f64({{3}, {2}}, 3));
  auto args = random_f64({{3}, {2}}, 3);
  std::vector<double> x = args[0].to_vector<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g[0][i], x[i]);  // d/dx (x * c) = c = x, not 2x
  EXPECT_EQ(g[1], (std::vector<double>{1.0, 1.0}));
}

}  // namespace
