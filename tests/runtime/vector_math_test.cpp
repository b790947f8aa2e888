// SLEEF's vectorized f32 functions (runtime/cpu/vector_math.h) against libm in double precision
// rounded to f32 (the correctly rounded result in all but rare ties): the distance in units in the
// last place stays within the stated bound over each function's useful range, special values come
// out as IEEE and libm say, and an element's result never depends on its neighbours or on n.
#include "runtime/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace ferry::runtime::cpu::vmath {
namespace {

// Distance in representable floats between a and b (0 when both are NaN or equal).
int64_t ulps(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
  if (a == b) return 0;
  auto key = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};  // monotone in f
  };
  return std::abs(key(a) - key(b));
}

struct Case {
  Fn fn;
  const char* name;
  double (*reference)(double);
  float lo, hi;
  int64_t bound;  // ulp
};

double logistic_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The bounds: SLEEF's u10 functions are within 1.0 ulp of the exact result; logistic is computed
// as 1 / (1 + exp(-x)) in f32 (two more roundings after exp), within 3 ulp.
const Case kCases[] = {
    {Fn::exp, "exp", [](double x) { return std::exp(x); }, -87.0f, 88.0f, 1},
    {Fn::log, "log", [](double x) { return std::log(x); }, 1e-30f, 1e30f, 1},
    {Fn::sin, "sin", [](double x) { return std::sin(x); }, -100.0f, 100.0f, 1},
    {Fn::cos, "cos", [](double x) { return std::cos(x); }, -100.0f, 100.0f, 1},
    {Fn::tanh, "tanh", [](double x) { return std::tanh(x); }, -20.0f, 20.0f, 4},  // SLEEF's u35: 3.5 ulp
    {Fn::logistic, "logistic", logistic_ref, -80.0f, 80.0f, 3},
    {Fn::erf, "erf", [](double x) { return std::erf(x); }, -6.0f, 6.0f, 1},
    {Fn::log1p, "log1p", [](double x) { return std::log1p(x); }, -0.999f, 1e6f, 1},
    {Fn::expm1, "expm1", [](double x) { return std::expm1(x); }, -80.0f, 88.0f, 1},
    {Fn::tan, "tan", [](double x) { return std::tan(x); }, -100.0f, 100.0f, 1},
    {Fn::atan, "atan", [](double x) { return std::atan(x); }, -1e6f, 1e6f, 1},
    {Fn::asin, "asin", [](double x) { return std::asin(x); }, -1.0f, 1.0f, 1},
    {Fn::acos, "acos", [](double x) { return std::acos(x); }, -1.0f, 1.0f, 1},
    {Fn::sinh, "sinh", [](double x) { return std::sinh(x); }, -88.0f, 88.0f, 1},
    {Fn::cosh, "cosh", [](double x) { return std::cosh(x); }, -88.0f, 88.0f, 1},
    {Fn::asinh, "asinh", [](double x) { return std::asinh(x); }, -1e6f, 1e6f, 1},
    {Fn::acosh, "acosh", [](double x) { return std::acosh(x); }, 1.0f, 1e6f, 1},
    {Fn::atanh, "atanh", [](double x) { return std::atanh(x); }, -0.999f, 0.999f, 1},
    {Fn::cbrt, "cbrt", [](double x) { return std::cbrt(x); }, -1e30f, 1e30f, 1},
};
static_assert(std::size(kCases) == kNumFns, "every vector function has its bound checked here");

std::vector<float> samples(float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x;
  // Uniform over the range, and log-uniform magnitudes (small arguments matter for log1p, expm1,
  // sin, tanh, erf).
  std::uniform_real_distribution<float> u(lo, hi);
  std::uniform_real_distribution<float> e(-30.0f, std::log10(std::max(std::fabs(lo), std::fabs(hi))));
  for (int i = 0; i < 20000; ++i) x.push_back(u(rng));
  for (int i = 0; i < 20000; ++i) {
    float v = std::pow(10.0f, e(rng)) * (rng() % 2 ? 1.0f : -1.0f);
    if (v >= lo && v <= hi) x.push_back(v);
  }
  x.push_back(0.0f);
  x.push_back(-0.0f);
  return x;
}

TEST(VectorMath, WithinTheStatedUlpOfLibm) {
  for (const Case& c : kCases) {
    std::vector<float> x = samples(c.lo, c.hi, 7), y(x.size());
    apply(c.fn, x.data(), y.data(), static_cast<int64_t>(x.size()));
    int64_t worst = 0;
    float at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = static_cast<float>(c.reference(static_cast<double>(x[i])));
      const int64_t d = ulps(y[i], want);
      if (d > worst) worst = d, at = x[i];
    }
    EXPECT_LE(worst, c.bound) << c.name << " is " << worst << " ulp off at x = " << fmt::format("{:a}", at);
  }
}

TEST(VectorMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto one = [](Fn fn, float v) {
    float y;
    apply(fn, &v, &y, 1);
    return y;
  };
  EXPECT_EQ(one(Fn::exp, -inf), 0.0f);
  EXPECT_EQ(one(Fn::exp, inf), inf);
  EXPECT_EQ(one(Fn::exp, 100.0f), inf);
  EXPECT_EQ(one(Fn::log, 0.0f), -inf);
  EXPECT_TRUE(std::isnan(one(Fn::log, -1.0f)));
  EXPECT_EQ(one(Fn::tanh, inf), 1.0f);
  EXPECT_EQ(one(Fn::tanh, -inf), -1.0f);
  EXPECT_EQ(one(Fn::logistic, -inf), 0.0f);
  EXPECT_EQ(one(Fn::logistic, inf), 1.0f);
  EXPECT_EQ(one(Fn::log1p, -1.0f), -inf);
  EXPECT_EQ(one(Fn::expm1, -inf), -1.0f);
  for (const Case& c : kCases) EXPECT_TRUE(std::isnan(one(c.fn, nan))) << c.name;
  EXPECT_TRUE(std::signbit(one(Fn::tanh, -0.0f)));
  EXPECT_TRUE(std::signbit(one(Fn::expm1, -0.0f)));
}

// Where the processor has AVX-512, apply() takes its 16-lane path; SLEEF's AVX-512 functions run the
// AVX2 ones' algorithm, so a machine's results do not depend on which of the two it picked (a NaN's
// sign and payload aside).
TEST(VectorMath, SixteenAndEightLanesGiveTheSameBits) {
  std::vector<float> x = samples(-90.0f, 90.0f, 11);
  for (float v : {0.0f, -0.0f, 1e-30f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  std::vector<float> wide(x.size()), narrow(x.size());
  for (const Case& c : kCases) {
    const Fn fn = c.fn;
    if (!apply_avx512(fn, x.data(), wide.data(), static_cast<int64_t>(x.size())) ||
        !apply_avx2(fn, x.data(), narrow.data(), static_cast<int64_t>(x.size())))
      GTEST_SKIP() << "this processor lacks AVX-512 or AVX2";
    for (size_t i = 0; i < x.size(); ++i)
      if (!(std::isnan(wide[i]) && std::isnan(narrow[i])))  // a NaN's sign and payload may differ
        ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(narrow[i]))
          << "function " << static_cast<int>(fn) << " at x = " << fmt::format("{:a}", x[i]);
  }
}

TEST(VectorMath, AnElementsResultDependsOnItAlone) {
  std::vector<float> x = samples(-5.0f, 5.0f, 3);
  for (Fn fn : {Fn::exp, Fn::tanh, Fn::logistic, Fn::erf}) {
    std::vector<float> all(x.size());
    apply(fn, x.data(), all.data(), static_cast<int64_t>(x.size()));
    for (size_t n : {1u, 3u, 7u, 8u, 9u, 13u, 15u, 16u, 17u, 31u}) {  // tails of 4, 8 and 16 lanes
      std::vector<float> part(n);
      apply(fn, x.data() + 5, part.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(part[i]), std::bit_cast<uint32_t>(all[5 + i]));
    }
  }
}

TEST(VectorMath, PowWithinOneUlpAndScalarOperands) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> base(0.0f, 10.0f), expo(-8.0f, 8.0f);
  std::vector<float> a(5000), b(5000), y(5000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = base(rng), b[i] = expo(rng);
  pow(a.data(), false, b.data(), false, y.data(), static_cast<int64_t>(a.size()));
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(ulps(y[i], static_cast<float>(std::pow(static_cast<double>(a[i]), static_cast<double>(b[i])))), 1)
        << a[i] << " ^ " << b[i];
  const float two = 2.0f;
  pow(a.data(), false, &two, true, y.data(), static_cast<int64_t>(a.size()));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(ulps(y[i], a[i] * a[i]), 1);
  pow(&two, true, b.data(), false, y.data(), 9);
  for (size_t i = 0; i < 9; ++i) EXPECT_LE(ulps(y[i], static_cast<float>(std::exp2(static_cast<double>(b[i])))), 1);
}

}  // namespace
}  // namespace ferry::runtime::cpu::vmath
