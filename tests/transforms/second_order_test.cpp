// Second-order gradients through scan, with and without checkpoints in the body (issue 11): the
// gradient of a function of first-order gradients, against central differences of that function
// and against the same program without checkpoints.
#include <gtest/gtest.h>

#include <optional>

#include "ferry/ferry.h"
#include "support/gradient_check.h"

namespace fy = ferry;
using Xs = std::vector<fy::Tensor>;

namespace {

std::pair<fy::Tensor, fy::Tensor> step(fy::Tensor c, fy::Tensor x) { return {fy::sin(c * x) + 0.5 * c, fy::Tensor{}}; }

// f(c, xs) = sum(scan(step, c, xs).carry), the step checkpointed under `policy` when given.
fy::Tensor f(fy::Tensor c, fy::Tensor xs, const std::optional<fy::Policy>& policy) {
  if (!policy) return fy::sum(fy::scan(step, c, xs).carry);
  auto body = fy::checkpoint([](fy::Tensor a, fy::Tensor b) { return step(a, b).first; }, *policy);
  return fy::sum(fy::scan([&](fy::Tensor a, fy::Tensor b) { return std::pair{body(a, b), fy::Tensor{}}; }, c, xs).carry);
}

// h(d, xs) = sum(grad(f)(d, xs)): its gradient is second order in f.
fy::testing::ScalarFn h(const std::optional<fy::Policy>& policy) {
  return [policy](const Xs& p) {
    return fy::sum(fy::grad([&](fy::Tensor c) { return f(c, p[1], policy); })(p[0]));
  };
}

std::vector<std::optional<fy::Policy>> policies() {
  using namespace fy::policies;
  return {std::nullopt, nothing_saveable, everything_saveable,
          save_and_offload_only_these_names({}, {"none"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host),
          fy::Policy([](const fy::Equation& e) -> fy::Decision {
            if (e.primitive() == fy::prim::sin) return fy::Offloadable{fy::MemoryKind::device, fy::MemoryKind::pinned_host};
            return fy::Recompute{};
          }, "offload sin")};
}

TEST(SecondOrder, ThroughScanMatchesFiniteDifferences) {
  std::vector<fy::Array> args = fy::testing::random_f64({{3}, {4, 3}}, 11);
  for (const auto& policy : policies()) {
    SCOPED_TRACE(policy ? policy->name() : "no checkpoint");
    fy::testing::expect_gradients_match(h(policy), args);
  }
}

TEST(SecondOrder, ThroughScanIsTheSameUnderEveryPolicy) {
  std::vector<fy::Array> args = fy::testing::random_f64({{3}, {4, 3}}, 12);
  std::vector<std::vector<double>> want = fy::testing::ferry_gradients(h(std::nullopt), args);
  for (const auto& policy : policies()) {
    SCOPED_TRACE(policy ? policy->name() : "no checkpoint");
    // Recomputation may sum cotangents in another order: equal within rounding, not to the bit.
    std::vector<std::vector<double>> got = fy::testing::ferry_gradients(h(policy), args);
    for (size_t i = 0; i < want.size(); ++i)
      for (size_t j = 0; j < want[i].size(); ++j) EXPECT_NEAR(got[i][j], want[i][j], 1e-12) << i << ", " << j;
  }
}

// The issue's program: grad(d -> sum(grad(f)(d, xs))) once failed with "INTERNAL: partition: value
// %11 is not available in forward" (a backward scan's recomputed constants are part of its primal
// computation when it is differentiated again).
TEST(SecondOrder, GradOfGradOfAScanCompiles) {
  auto g2 = fy::jit([](fy::Tensor d, fy::Tensor xs) {
    return fy::grad([&](fy::Tensor dd) { return fy::sum(fy::grad([&](fy::Tensor c) { return f(c, xs, std::nullopt); })(dd)); })(d);
  });
  std::vector<fy::Array> args = fy::testing::random_f64({{2}, {3, 2}}, 3);
  EXPECT_EQ(g2(args[0], args[1])[0].shape(), (fy::Shape{2}));
}

}  // namespace
