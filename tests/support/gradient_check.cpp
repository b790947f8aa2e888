#include "support/gradient_check.h"

#include "support/memory_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace ferry::testing {

std::vector<Array> random_f64(const std::vector<Shape>& shapes, uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<Array> out;
  for (const Shape& s : shapes) {
    std::vector<double> v(static_cast<size_t>(num_elements(s)));
    for (double& x : v) x = dist(gen);
    out.push_back(Array::from(v, s));
  }
  return out;
}

std::vector<std::vector<double>> ferry_gradients(const ScalarFn& f, const std::vector<Array>& args) {
  auto g = jit([&](std::vector<Tensor> xs) { return grad(f)(xs); });
  std::vector<Array> out = run_checked(g.lower(args).compile(), args);
  std::vector<std::vector<double>> result;
  for (const Array& a : out) result.push_back(a.to_vector<double>());
  return result;
}

std::vector<std::vector<double>> numeric_gradients(const ScalarFn& f, const std::vector<Array>& args, double eps) {
  Compiled c = jit([&](std::vector<Tensor> xs) { return f(xs); }).lower(args).compile();
  run_checked(c, args);
  std::vector<std::vector<double>> result;
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<double> base = args[i].to_vector<double>();
    std::vector<double> grad_i(base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      auto eval = [&](double x) {
        std::vector<double> v = base;
        v[j] = x;
        std::vector<Array> a = args;
        a[i] = Array::from(v, args[i].shape());
        return c(a)[0].to_vector<double>()[0];
      };
      grad_i[j] = (eval(base[j] + eps) - eval(base[j] - eps)) / (2 * eps);
    }
    result.push_back(grad_i);
  }
  return result;
}

void expect_gradients_match(const ScalarFn& f, const std::vector<Array>& args, double eps, double tol) {
  auto analytic = ferry_gradients(f, args);
  auto numeric = numeric_gradients(f, args, eps);
  ASSERT_EQ(analytic.size(), numeric.size());
  for (size_t i = 0; i < analytic.size(); ++i) {
    ASSERT_EQ(analytic[i].size(), numeric[i].size()) << "argument " << i;
    double worst = 0;
    size_t worst_j = 0;
    for (size_t j = 0; j < analytic[i].size(); ++j) {
      double err = std::abs(analytic[i][j] - numeric[i][j]) / std::max(1.0, std::abs(numeric[i][j]));
      if (!(err <= worst)) {
        worst = err;
        worst_j = j;
      }
    }
    EXPECT_LE(worst, tol) << "argument " << i << " element " << worst_j << ": ferry " << analytic[i][worst_j]
                          << ", finite differences " << numeric[i][worst_j];
  }
}

}  // namespace ferry::testing
