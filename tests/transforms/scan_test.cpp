// scan: forward semantics, errors, and gradients equal to the same loop unrolled in C++.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/scan.h"
#include "support/error_of.h"
#include "support/gradient_check.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using Xs = std::vector<fy::Tensor>;

namespace {

std::vector<double> values(const fy::Array& a) { return a.to_vector<double>(); }

TEST(Scan, CumulativeSumForwardAndReverse) {
  auto xs = fy::Array::from(std::vector<double>{1, 2, 3, 4}, {4});
  for (bool reverse : {false, true}) {
    auto f = fy::jit([&](fy::Tensor init, fy::Tensor x) {
      auto r = fy::scan([](fy::Tensor c, fy::Tensor xi) {
        fy::Tensor next = c + xi;
        return std::pair{next, next};
      }, init, x, -1, reverse);
      return std::pair{r.carry, r.ys};
    });
    auto out = f(fy::Array::scalar(10.0), xs);
    EXPECT_EQ(values(out[0]), std::vector<double>{20});
    if (!reverse) EXPECT_EQ(values(out[1]), (std::vector<double>{11, 13, 16, 20}));
    else EXPECT_EQ(values(out[1]), (std::vector<double>{20, 19, 17, 14}));  // ys[i] pairs with xs[i]
  }
}

TEST(Scan, TupleCarriesNoXsAndCapturedConstants) {
  auto f = fy::jit([](fy::Tensor a, fy::Tensor scale) {
    auto r = fy::scan([&](std::pair<fy::Tensor, fy::Tensor> c, fy::Tensor) {
      // Fibonacci-like with a captured scale: (a, b) -> (b, scale * (a + b)).
      return std::pair{std::pair{c.second, scale * (c.first + c.second)}, c.first};
    }, std::pair{a, a}, fy::Tensor{}, 5);
    return std::tuple{r.carry.first, r.carry.second, r.ys};
  });
  auto out = f(fy::Array::scalar(1.0), fy::Array::scalar(1.0));
  EXPECT_EQ(values(out[0]), std::vector<double>{8});
  EXPECT_EQ(values(out[1]), std::vector<double>{13});
  EXPECT_EQ(values(out[2]), (std::vector<double>{1, 1, 2, 3, 5}));
}

TEST(Scan, ZeroLengthReturnsTheInitialCarry) {
  auto f = fy::jit([](fy::Tensor init, fy::Tensor xs) {
    auto r = fy::scan([](fy::Tensor c, fy::Tensor x) { return std::pair{c * x, x}; }, init, xs);
    return std::pair{r.carry, r.ys};
  });
  auto out = f(fy::full({2}, 3.0, fy::DType::f64), fy::zeros({0, 2}, fy::DType::f64));
  EXPECT_EQ(values(out[0]), (std::vector<double>{3, 3}));
  EXPECT_EQ(out[1].shape(), (fy::Shape{0, 2}));
}

TEST(Scan, ErrorsNameTheProblem) {
  auto run = [](auto body, fy::ShapeDtype init, fy::ShapeDtype xs, int64_t length = -1) {
    try {
      fy::jit([&](fy::Tensor c, fy::Tensor x) { return fy::scan(body, c, x, length).carry; }).lower(init, xs);
    } catch (const fy::Error& e) {
      EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
      return e.message();
    }
    return std::string("<no error>");
  };
  auto widen = [](fy::Tensor c, fy::Tensor x) { return std::pair{fy::convert(c, fy::DType::f64), x}; };
  EXPECT_THAT(run(widen, {{3}}, {{4, 3}}), HasSubstr("carry leaf 0 is f32[3] in init but f64[3] from the body"));
  auto same = [](fy::Tensor c, fy::Tensor x) { return std::pair{c + x, x}; };
  EXPECT_THAT(run(same, {{3}}, {{4, 3}}, 5), HasSubstr("has leading axis 4 but the scan has length 5"));
  EXPECT_THAT(run(same, {{}}, {{}}), HasSubstr("xs leaf 0 is a scalar"));
}

// Issue 32: scan(f, init, Tensor{}, -5) said "give length" although a length was given; with xs, a
// negative length was silently taken from them.
TEST(Scan, ANegativeLengthIsNamed) {
  auto keep = [](fy::Tensor c, fy::Tensor) { return std::pair{c, fy::Tensor{}}; };
  fy::Error none = fy::testing::error_of([&] {
    fy::jit([&](fy::Tensor c) { return fy::scan(keep, c, fy::Tensor{}, -5).carry; }).lower(fy::ShapeDtype{{3}});
  });
  EXPECT_EQ(none.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(none.message(), HasSubstr("scan: length -5 is negative; give the number of steps (0 or more), or -1"));
  fy::Error with_xs = fy::testing::error_of([&] {
    fy::jit([&](fy::Tensor c, fy::Tensor x) { return fy::scan(keep, c, x, -5).carry; })
        .lower(fy::ShapeDtype{{3}}, fy::ShapeDtype{{4, 3}});
  });
  EXPECT_THAT(with_xs.message(), HasSubstr("length -5 is negative"));
  fy::Error missing = fy::testing::error_of([&] {
    fy::jit([&](fy::Tensor c) { return fy::scan(keep, c, fy::Tensor{}).carry; }).lower(fy::ShapeDtype{{3}});
  });
  EXPECT_THAT(missing.message(), HasSubstr("there are no xs to take the length from, so give length"));
}

// `depth` scans of one step each, nested, around sin(c * 2).
fy::Tensor nested_scans(const fy::Tensor& c, int depth) {
  if (depth == 0) return fy::sin(c * 2.0);
  return fy::scan([depth](fy::Tensor d, fy::Tensor) { return std::pair{nested_scans(d, depth - 1), fy::Tensor{}}; },
                  c, fy::Tensor{}, 1)
      .carry;
}

// Issue 32: grad through 32 nested scans lowered, then failed to compile with "value %2 ... more than
// 32 dimensions". Each scan stacks its residuals along a new axis, so the one the innermost body
// keeps outgrows the rank limit: refused at lower(), naming the nesting and the residual.
TEST(Scan, GradThroughTooManyNestedScansIsRefusedAtLower) {
  auto grad_of = [](int depth) {
    return fy::jit([depth](fy::Tensor x) {
      return fy::grad([depth](fy::Tensor y) { return fy::sum(nested_scans(y, depth)); })(x);
    });
  };
  fy::Error e = fy::testing::error_of([&] { grad_of(32).lower(fy::ShapeDtype{{2}}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument) << e.what();
  EXPECT_THAT(e.message(), HasSubstr("grad of scan: its backward pass needs the f32[2] output of"));
  EXPECT_THAT(e.message(), HasSubstr("which each of 32 nested scan(s) stacks along a new leading axis: 33 dimensions, "
                                     "more than 32 (ferry's limit)"));
  // One fewer fits, and runs: d/dx sin(2x) = 2 cos(2x).
  fy::Compiled c = grad_of(31).lower(fy::ShapeDtype{{2}}).compile();
  EXPECT_FLOAT_EQ(c(fy::ones({2}))[0].to_vector<float>()[0], 2.0f * std::cos(2.0f));
}

// The same recurrence as a scan and unrolled in C++: h_{t+1} = tanh(W h_t + x_t) + b, y_t = sum(h^2).
fy::Tensor rnn_scan(const Xs& p, bool reverse) {
  auto r = fy::scan([&](fy::Tensor h, fy::Tensor x) {
    fy::Tensor next = fy::tanh(fy::matmul(p[1], h) + x) + p[2];
    return std::pair{next, fy::sum(next * next)};
  }, p[0], p[3], -1, reverse);
  return fy::sum(r.carry) + fy::sum(r.ys * 0.5);
}
fy::Tensor rnn_unrolled(const Xs& p, bool reverse) {
  fy::Tensor h = p[0];
  fy::Tensor total = fy::constant(0, {}, fy::DType::f64);
  int64_t n = p[3].shape()[0];
  for (int64_t s = 0; s < n; ++s) {
    int64_t t = reverse ? n - 1 - s : s;
    fy::Tensor x = fy::reshape(fy::slice(p[3], {t, 0}, {t + 1, 3}), {3});
    h = fy::tanh(fy::matmul(p[1], h) + x) + p[2];
    total = total + fy::sum(h * h) * 0.5;
  }
  return fy::sum(h) + total;
}

TEST(Scan, GradientEqualsTheUnrolledLoop) {
  auto args = fy::testing::random_f64({{3}, {3, 3}, {3}, {6, 3}}, 7);
  for (bool reverse : {false, true}) {
    auto scanned = fy::testing::ferry_gradients([&](const Xs& p) { return rnn_scan(p, reverse); }, args);
    auto unrolled = fy::testing::ferry_gradients([&](const Xs& p) { return rnn_unrolled(p, reverse); }, args);
    for (size_t i = 0; i < args.size(); ++i)
      for (size_t j = 0; j < scanned[i].size(); ++j)
        EXPECT_NEAR(scanned[i][j], unrolled[i][j], 1e-12) << "reverse " << reverse << " arg " << i << " elem " << j;
    fy::testing::expect_gradients_match([&](const Xs& p) { return rnn_scan(p, reverse); }, args);
  }
}

TEST(Scan, GradientWithTupleCarryAndTwoYs) {
  auto f = [](const Xs& p) {
    auto r = fy::scan([&](std::pair<fy::Tensor, fy::Tensor> c, std::vector<fy::Tensor> x) {
      fy::Tensor a = c.first * x[0] + fy::sin(c.second);
      fy::Tensor b = c.second * p[2] - x[1];
      return std::pair{std::pair{a, b}, std::vector<fy::Tensor>{a * b, fy::exp(b)}};
    }, std::pair{p[0], p[1]}, Xs{p[3], p[4]});
    return fy::sum(r.carry.first) + fy::sum(r.ys[0]) + fy::mean(r.ys[1]);
  };
  fy::testing::expect_gradients_match(f, fy::testing::random_f64({{2}, {2}, {2}, {5, 2}, {5, 2}}, 9));
}

TEST(Scan, NestedScansDifferentiate) {
  auto f = [](const Xs& p) {
    auto outer = fy::scan([&](fy::Tensor c, fy::Tensor row) {
      auto inner = fy::scan([&](fy::Tensor d, fy::Tensor v) { return std::pair{fy::sin(d * v + p[1]), d}; }, c, row);
      return std::pair{inner.carry, fy::sum(inner.ys)};
    }, p[0], p[2]);
    return fy::sum(outer.carry) + fy::sum(outer.ys);
  };
  fy::testing::expect_gradients_match(f, fy::testing::random_f64({{}, {}, {3, 4}}, 11));
}

TEST(Scan, GradTextHasOneForwardAndOneReverseScan) {
  auto g = fy::jit([](fy::Tensor p, fy::Tensor xs) {
    return fy::grad([&](fy::Tensor q) {
      auto r = fy::scan([](fy::Tensor y, fy::Tensor) {
        fy::Tensor z = fy::sin(fy::sin(y));
        return std::pair{z, fy::Tensor{}};
      }, q, xs);
      return fy::sum(r.carry);
    })(p);
  });
  std::string text = g.lower(fy::ShapeDtype{{3}}, fy::ShapeDtype{{64, 3}}).as_text();
  size_t forward = 0, backward = 0;
  for (size_t pos = text.find("= scan["); pos != std::string::npos; pos = text.find("= scan[", pos + 1)) {
    if (text.compare(text.find("reverse=", pos), 13, "reverse=false") == 0) ++forward;
    else ++backward;
  }
  EXPECT_EQ(forward, 1u) << text;
  EXPECT_EQ(backward, 1u) << text;
  // 64 steps, yet the program stays small: the bodies are traced once.
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 80) << text;
}

}  // namespace
