// vjp, grad and value_and_grad: structures, composition and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/scan.h"
#include "support/gradient_check.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using Xs = std::vector<fy::Tensor>;

namespace {

TEST(Autodiff, GradOfAFourLayerTanhMlpMatchesTheHandDerivedOne) {
  // loss = sum(h4), h_{l+1} = tanh(W_l h_l); by hand: delta_4 = 1, then
  // dW_l = (delta_{l+1} * (1 - h_{l+1}^2)) outer h_l and delta_l = W_l^T (delta_{l+1} * (1 - h_{l+1}^2)).
  const int d = 4, L = 4;
  auto ws = fy::testing::random_f64({{d, d}, {d, d}, {d, d}, {d, d}}, 5);
  auto x = fy::testing::random_f64({{d}}, 6)[0];
  auto g = fy::jit([](fy::Tensor x, Xs ws) {
    return fy::grad([&](Xs w) {
      fy::Tensor h = x;
      for (auto& wl : w) h = fy::tanh(fy::matmul(wl, h));
      return fy::sum(h);
    })(ws);
  });
  auto out = g(x, ws);
  std::vector<std::vector<double>> W;
  for (auto& w : ws) W.push_back(w.to_vector<double>());
  std::vector<std::vector<double>> h{x.to_vector<double>()};
  for (int l = 0; l < L; ++l) {
    std::vector<double> next(d);
    for (int i = 0; i < d; ++i) {
      double s = 0;
      for (int j = 0; j < d; ++j) s += W[l][i * d + j] * h[l][j];
      next[i] = std::tanh(s);
    }
    h.push_back(next);
  }
  std::vector<double> delta(d, 1.0);
  for (int l = L - 1; l >= 0; --l) {
    std::vector<double> pre(d), prev(d, 0.0);
    for (int i = 0; i < d; ++i) pre[i] = delta[i] * (1 - h[l + 1][i] * h[l + 1][i]);
    auto dw = out[static_cast<size_t>(l)].to_vector<double>();
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        EXPECT_NEAR(dw[i * d + j], pre[i] * h[l][j], 1e-14) << "layer " << l;
        prev[j] += W[l][i * d + j] * pre[i];
      }
    delta = prev;
  }
}

TEST(Autodiff, VjpReturnsThePrimalAndAStructuredPullback) {
  auto f = fy::jit([](fy::Tensor x, Xs ps) {
    auto [out, pullback] = fy::vjp([](fy::Tensor a, Xs b) { return std::pair{a * b[0], fy::sum(b[1])}; }, x, ps);
    auto [ct_x, ct_ps] = pullback(std::pair{fy::ones_like(out.first) * 2.0, fy::ones_like(out.second)});
    return std::tuple{out.first, ct_x, ct_ps};
  });
  auto out = f(fy::full({2}, 3.0, fy::DType::f64), std::vector{fy::full({2}, 5.0, fy::DType::f64), fy::ones({4}, fy::DType::f64)});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{15, 15}));
  EXPECT_EQ(out[1].to_vector<double>(), (std::vector<double>{10, 10}));  // 2 * b0
  EXPECT_EQ(out[2].to_vector<double>(), (std::vector<double>{6, 6}));    // 2 * a
  EXPECT_EQ(out[3].to_vector<double>(), (std::vector<double>{1, 1, 1, 1}));
}

TEST(Autodiff, ArgnumsAndValueAndGrad) {
  auto f = [](fy::Tensor a, fy::Tensor b, fy::Tensor c) { return fy::sum(a * b * c); };
  auto g = fy::jit([&](fy::Tensor a, fy::Tensor b, fy::Tensor c) {
    auto [value, grads] = fy::value_and_grad(f, fy::argnums<0, 2>)(a, b, c);
    return std::tuple{value, std::get<0>(grads), std::get<1>(grads), fy::grad(f, fy::argnums<1>)(a, b, c)};
  });
  auto arr = [](double v) { return fy::full({2}, v, fy::DType::f64); };
  auto out = g(arr(2), arr(3), arr(5));
  EXPECT_EQ(out[0].to_vector<double>(), std::vector<double>{60});
  EXPECT_EQ(out[1].to_vector<double>(), (std::vector<double>{15, 15}));
  EXPECT_EQ(out[2].to_vector<double>(), (std::vector<double>{6, 6}));
  EXPECT_EQ(out[3].to_vector<double>(), (std::vector<double>{10, 10}));
}

TEST(Autodiff, GradOnArraysJitsItself) {
  auto out = fy::grad([](fy::Tensor x) { return fy::sum(x * x); })(fy::full({3}, 1.5, fy::DType::f64));
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{3, 3, 3}));
}

TEST(Autodiff, SecondDerivatives) {
  // d^2/dx^2 sin(x) = -sin(x); d^2/dx^2 x^3 = 6x.
  auto g = fy::jit([](fy::Tensor x) {
    auto d = fy::grad([](fy::Tensor y) { return fy::sin(y); });
    auto cube = fy::grad([](fy::Tensor y) { return fy::grad([](fy::Tensor z) { return z * z * z; })(y); });
    return std::pair{fy::grad(d)(x), cube(x)};
  });
  auto out = g(fy::Array::scalar(0.7));
  EXPECT_NEAR(out[0].to_vector<double>()[0], -std::sin(0.7), 1e-15);
  EXPECT_NEAR(out[1].to_vector<double>()[0], 6 * 0.7, 1e-14);
}

TEST(Autodiff, GradientsThroughClosuresOverOuterTensors) {
  // w is an argument of the outer function, captured by the differentiated one: held fixed.
  auto g = fy::jit([](fy::Tensor x, fy::Tensor w) {
    return fy::grad([&](fy::Tensor y) { return fy::sum(fy::sin(y) * w); })(x);
  });
  auto out = g(fy::Array::scalar(0.3), fy::Array::scalar(2.0));
  EXPECT_NEAR(out[0].to_vector<double>()[0], 2 * std::cos(0.3), 1e-15);
}

TEST(Autodiff, NonScalarOutputsAreInvalidArgument) {
  try {
    fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor y) { return y * 2.0; })(x); }).lower(fy::ShapeDtype{{3}});
    FAIL() << "expected an error";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_THAT(e.message(), HasSubstr("grad: the function must return a floating-point scalar, got f32[3]"));
  }
  try {
    fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor y) { return fy::sum(fy::convert(y, fy::DType::i32)); })(x); })
        .lower(fy::ShapeDtype{{3}});
    FAIL() << "expected an error";
  } catch (const fy::Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("got i32[]"));
  }
}

// The second report's program, without checkpointing (that is the remat layer's): grad of a scan
// of sin(sin(y)) over two steps.
TEST(Autodiff, SecondReportsProgramWithoutCheckpoint) {
  auto apply = fy::jit([](fy::Tensor params, fy::Tensor xs) {
    return fy::grad([&](fy::Tensor p) {
      auto step = [](fy::Tensor y, fy::Tensor) { return std::pair{fy::sin(fy::sin(y)), fy::Tensor{}}; };
      return fy::sum(fy::scan(step, p, xs).carry);
    })(params);
  });
  auto g = apply(fy::ones({3}), fy::ones({2, 3}))[0].to_vector<float>();
  // y1 = sin(sin(1)), y2 = sin(sin(y1)); dy2/dp = cos(sin(y1)) cos(y1) cos(sin(1)) cos(1).
  double y1 = std::sin(std::sin(1.0));
  double want = std::cos(std::sin(y1)) * std::cos(y1) * std::cos(std::sin(1.0)) * std::cos(1.0);
  for (float v : g) EXPECT_NEAR(v, want, 1e-6);
}

}  // namespace
