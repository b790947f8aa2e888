// custom_vjp, cond, fori_loop and while_loop: values, gradients (against finite differences or a
// hand-written expectation), and their composition with checkpoint (every built-in policy) and scan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/control_flow.h"
#include "ferry/custom_vjp.h"
#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/gradient_check.h"
#include "support/memory_check.h"

namespace fy = ferry;
using fy::testing::error_of;
using fy::testing::expect_gradients_match;
using fy::testing::random_f64;
using ::testing::HasSubstr;

namespace {

using Xs = std::vector<fy::Tensor>;

std::vector<fy::Policy> builtin_policies() {
  using namespace fy::policies;
  return {everything_saveable,
          nothing_saveable,
          dots_saveable,
          dots_with_no_batch_dims_saveable,
          offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host),
          save_only_these_names({"res"}),
          save_any_names_but_these({"res"}),
          save_and_offload_only_these_names({}, {"res"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host)};
}

// sin with a deliberately different backward: the cotangent g * cos(x), clipped to [-0.1, 0.1].
// The residual cos(x) is named "res" and computed by a dot, so policies have something to decide.
auto clipped_sin = fy::custom_vjp(
    [](fy::Tensor x) { return fy::sin(x); },
    [](fy::Tensor x) {
      fy::Tensor c = fy::checkpoint_name(fy::cos(x), "res");
      return std::pair{fy::sin(x), c};
    },
    [](fy::Tensor c, fy::Tensor g) { return fy::clamp(-0.1, g * c, 0.1); });

std::vector<double> expected_clipped(const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(std::clamp(w[i] * std::cos(x[i]), -0.1, 0.1));
  return out;
}

fy::Array weights(int64_t n) {
  std::vector<double> w;
  for (int64_t i = 0; i < n; ++i) w.push_back(std::sin(1.3 * static_cast<double>(i) + 0.7));
  return fy::Array::from(w, {n});
}

TEST(CustomVjp, ComputesFUndifferentiated) {
  fy::Array x = random_f64({{6}}, 1)[0];
  auto out = fy::jit([](fy::Tensor x) { return clipped_sin(x); })(x);
  std::vector<double> xv = x.to_vector<double>(), y = out[0].to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(y[i], std::sin(xv[i]));
}

TEST(CustomVjp, GradUsesTheCustomBackward) {
  fy::Array x = random_f64({{6}}, 1, -3.0, 3.0)[0], w = weights(6);
  auto g = fy::jit([](fy::Tensor x, fy::Tensor w) { return fy::grad([&](fy::Tensor v) { return fy::sum(w * clipped_sin(v)); })(x); })(x, w);
  EXPECT_EQ(g[0].to_vector<double>(), expected_clipped(x.to_vector<double>(), w.to_vector<double>()));
}

TEST(CustomVjp, UnderCheckpointWithEveryPolicyAndInsideScan) {
  fy::Array x = random_f64({{6}}, 2, -3.0, 3.0)[0], w = weights(6);
  const std::vector<double> want = expected_clipped(x.to_vector<double>(), w.to_vector<double>());
  for (const fy::Policy& policy : builtin_policies()) {
    SCOPED_TRACE(policy.name());
    auto g = fy::jit([&](fy::Tensor x, fy::Tensor w) {
      return fy::grad([&](fy::Tensor v) {
        auto f = fy::checkpoint([&](fy::Tensor u) { return w * clipped_sin(u); }, policy);
        return fy::sum(f(v));
      })(x);
    })(x, w);
    EXPECT_EQ(g[0].to_vector<double>(), want);
    // Inside a scan (two steps over the same x, each adding its term): the gradient doubles.
    auto gs = fy::jit([&](fy::Tensor x, fy::Tensor w) {
      return fy::grad([&](fy::Tensor v) {
        auto step = fy::checkpoint([&](fy::Tensor acc, fy::Tensor) { return std::pair{acc + w * clipped_sin(v), fy::Tensor()}; },
                                   policy);
        return fy::sum(fy::scan(step, fy::zeros_like(v), fy::constant(0.0, {2, 1}, fy::DType::f64)).carry);
      })(x);
    })(x, w);
    std::vector<double> got = gs[0].to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], 2 * want[i]);
  }
}

TEST(CustomVjp, ResidualsFollowThePolicy) {
  // Saving the named residual keeps it; recomputing keeps only the argument.
  auto f = [](const fy::Policy& p) {
    return [p](fy::Tensor x) { return fy::sum(fy::checkpoint([](fy::Tensor u) { return clipped_sin(u); }, p)(x)); };
  };
  auto saved = fy::saved_residuals(f(fy::policies::save_only_these_names({"res"})), fy::ShapeDtype{{5}, fy::DType::f64});
  auto recomputed = fy::saved_residuals(f(fy::policies::nothing_saveable), fy::ShapeDtype{{5}, fy::DType::f64});
  auto offloaded = fy::saved_residuals(
      f(fy::policies::save_and_offload_only_these_names({}, {"res"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host)),
      fy::ShapeDtype{{5}, fy::DType::f64});
  auto text = [](const std::vector<fy::Residual>& r) { return fy::format_residuals(r); };
  EXPECT_THAT(text(saved), HasSubstr("named 'res'"));
  EXPECT_THAT(text(recomputed), ::testing::Not(HasSubstr("named 'res'")));
  EXPECT_THAT(text(offloaded), HasSubstr("offloaded"));
}

TEST(CustomVjp, SecondOrderDifferentiatesBwd) {
  // bwd = g * cos(x) (the true derivative): the second derivative is -sin(x).
  auto f = fy::custom_vjp([](fy::Tensor x) { return fy::sin(x); },
                          [](fy::Tensor x) { return std::pair{fy::sin(x), x}; },
                          [](fy::Tensor x, fy::Tensor g) { return g * fy::cos(x); });
  fy::Array x = random_f64({{4}}, 3)[0];
  auto g2 = fy::jit([&](fy::Tensor x) {
    return fy::grad([&](fy::Tensor v) { return fy::sum(fy::grad([&](fy::Tensor u) { return fy::sum(f(u)); })(v)); })(x);
  })(x);
  std::vector<double> xv = x.to_vector<double>(), got = g2[0].to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(got[i], -std::sin(xv[i]), 1e-15);
}

TEST(CustomVjp, BadBackwardsAreInvalidArgument) {
  auto wrong_count = fy::custom_vjp([](fy::Tensor x) { return x; }, [](fy::Tensor x) { return std::pair{x, x}; },
                                    [](fy::Tensor, fy::Tensor g) { return std::vector<fy::Tensor>{g, g}; });
  auto e = error_of([&] { fy::jit([&](fy::Tensor x) { return wrong_count(x); }).lower(fy::ShapeDtype{{3}}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("cotangents"));
  auto wrong_type = fy::custom_vjp([](fy::Tensor x) { return x; }, [](fy::Tensor x) { return std::pair{x, x}; },
                                   [](fy::Tensor, fy::Tensor g) { return fy::sum(g); });
  auto t = error_of([&] { fy::jit([&](fy::Tensor x) { return wrong_type(x); }).lower(fy::ShapeDtype{{3}}); });
  EXPECT_EQ(t.code(), fy::ErrorCode::invalid_argument);
}

fy::Tensor branchy(const fy::Tensor& p, const fy::Tensor& x) {
  return fy::cond(
      fy::sum(p) > 0.0, [](fy::Tensor v, fy::Tensor q) { return fy::sin(v) * q; },
      [](fy::Tensor v, fy::Tensor q) { return fy::exp(v) + q * q; }, x, p);
}

TEST(Cond, ValuesOfBothBranches) {
  fy::Array x = random_f64({{4}}, 5)[0];
  auto run = [&](double pv) {
    fy::Array p = fy::Array::from(std::vector<double>(4, pv), {4});
    return fy::jit([](fy::Tensor p, fy::Tensor x) { return branchy(p, x); })(p, x)[0].to_vector<double>();
  };
  std::vector<double> xv = x.to_vector<double>(), t = run(0.5), f = run(-0.5);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(t[i], std::sin(xv[i]) * 0.5);
    EXPECT_DOUBLE_EQ(f[i], std::exp(xv[i]) + 0.25);
  }
}

TEST(Cond, GradientsMatchFiniteDifferencesOnBothBranches) {
  for (double lo : {0.2, -1.0}) {  // p's sum positive, then negative
    expect_gradients_match([](const Xs& a) { return fy::sum(branchy(a[0], a[1]) * a[1]); },
                           random_f64({{4}, {4}}, 9, lo, lo + 0.8));
  }
  // Under a checkpoint and in a scan body.
  for (const fy::Policy& policy : builtin_policies())
    expect_gradients_match([&](const Xs& a) {
      auto step = fy::checkpoint([&](fy::Tensor c, fy::Tensor x) { return std::pair{branchy(c, x) + c, fy::Tensor()}; }, policy);
      return fy::sum(fy::scan(step, a[0], a[1]).carry);
    }, random_f64({{4}, {3, 4}}, 10, -0.5, 0.5));
}

TEST(Cond, TheUntakenBranchLeaksNoNan) {
  // log(x) for x > 0, else 0: the untaken log branch at x <= 0 must not poison the gradient.
  auto g = fy::jit([](fy::Tensor x) {
    return fy::grad([](fy::Tensor v) {
      fy::Tensor s = fy::sum(v);
      return fy::cond(s > 0.0, [](fy::Tensor u) { return fy::sum(fy::log(u)); }, [](fy::Tensor u) { return fy::sum(u * 0.0); }, v);
    })(x);
  })(fy::Array::from(std::vector<double>{-1.0, 0.0}, {2}));
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{0.0, 0.0}));
}

TEST(Cond, SwitchPicksTheClampedIndex) {
  std::vector<std::function<fy::Tensor(fy::Tensor)>> fns{[](fy::Tensor v) { return v + 1.0; },
                                                          [](fy::Tensor v) { return v * 10.0; },
                                                          [](fy::Tensor v) { return -v; }};
  for (int32_t i : {-3, 0, 1, 2, 7}) {
    auto out = fy::jit([&](fy::Tensor idx, fy::Tensor x) { return fy::switch_(idx, fns, x); })(
        fy::Array::scalar<int32_t>(i), fy::Array::from(std::vector<float>{2.0f}, {1}));
    float want = i <= 0 ? 3.0f : i == 1 ? 20.0f : -2.0f;
    EXPECT_EQ(out[0].to_vector<float>()[0], want) << i;
  }
}

TEST(Cond, BadPredicatesAndBranchesAreInvalidArgument) {
  auto e = error_of([] {
    fy::jit([](fy::Tensor x) { return fy::cond(x, [](fy::Tensor v) { return v; }, [](fy::Tensor v) { return v; }, x); })
        .lower(fy::ShapeDtype{{3}});
  });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  auto m = error_of([] {
    fy::jit([](fy::Tensor x) {
      return fy::cond(fy::sum(x) > 0.0, [](fy::Tensor v) { return v; }, [](fy::Tensor v) { return fy::sum(v); }, x);
    }).lower(fy::ShapeDtype{{3}});
  });
  EXPECT_EQ(m.code(), fy::ErrorCode::invalid_argument);
}

TEST(ForiLoop, IsADifferentiableScan) {
  auto f = [](const Xs& a) {
    return fy::sum(fy::fori_loop(0, 5, [&](fy::Tensor i, fy::Tensor c) { return fy::sin(c) * a[1] + fy::convert(i, fy::DType::f64); }, a[0]));
  };
  expect_gradients_match(f, random_f64({{3}, {3}}, 11));
  auto v = fy::jit([](fy::Tensor x) { return fy::fori_loop(2, 5, [](fy::Tensor i, fy::Tensor c) { return c + fy::convert(i, fy::DType::f32); }, x); })(
      fy::Array::from(std::vector<float>{1.0f}, {1}));
  EXPECT_EQ(v[0].to_vector<float>()[0], 1.0f + 2 + 3 + 4);
}

TEST(WhileLoop, RunsUntilThePredicateFails) {
  auto out = fy::jit([](fy::Tensor x) {
    auto r = fy::while_loop([](const std::pair<fy::Tensor, fy::Tensor>& c) { return fy::sum(c.second) < 100.0; },
                            [](const std::pair<fy::Tensor, fy::Tensor>& c) { return std::pair{c.first + 1.0, c.second * 2.0}; },
                            std::pair{fy::zeros_like(fy::sum(x)), x});
    return std::vector<fy::Tensor>{r.first, r.second};
  })(fy::Array::from(std::vector<float>{1.0f, 2.0f}, {2}));
  EXPECT_EQ(out[0].to_vector<float>()[0], 6.0f);  // 3 -> 6 -> ... -> 192 after 6 doublings
  // The loop's memory is planned: the measured high-water equals the plan.
  auto planned = fy::jit([](fy::Tensor x) {
    return fy::while_loop([](fy::Tensor c) { return fy::sum(c) < 1000.0; }, [](fy::Tensor c) { return fy::sin(c) + c * 2.0; }, x);
  });
  fy::Array x8 = fy::ones({64});
  fy::testing::run_checked(planned.lower(x8).compile({.checked = true}), {x8});
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{64.0f, 128.0f}));
  // Zero trips: the initial carry.
  auto none = fy::jit([](fy::Tensor x) {
    return fy::while_loop([](fy::Tensor c) { return fy::sum(c) < 0.0; }, [](fy::Tensor c) { return c * 3.0; }, x);
  })(fy::Array::from(std::vector<float>{1.0f, 2.0f}, {2}));
  EXPECT_EQ(none[0].to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  // Odd and even trip counts end in the outputs.
  for (float start : {1.0f, 3.0f, 5.0f, 7.0f}) {
    auto r = fy::jit([](fy::Tensor x) {
      return fy::while_loop([](fy::Tensor c) { return fy::sum(c) < 10.0; }, [](fy::Tensor c) { return c + 1.0; }, x);
    })(fy::Array::from(std::vector<float>{start}, {1}));
    EXPECT_EQ(r[0].to_vector<float>()[0], 10.0f) << start;
  }
}

TEST(WhileLoop, DifferentiatingIsUnimplemented) {
  auto e = error_of([] {
    fy::jit([](fy::Tensor x) {
      return fy::grad([](fy::Tensor v) {
        return fy::sum(fy::while_loop([](fy::Tensor c) { return fy::sum(c) < 10.0; }, [](fy::Tensor c) { return c * 2.0; }, v));
      })(x);
    }).lower(fy::ShapeDtype{{2}});
  });
  EXPECT_EQ(e.code(), fy::ErrorCode::unimplemented);
  EXPECT_THAT(e.message(), HasSubstr("while_loop"));
}

}  // namespace

namespace {

// The IR text of programs with custom_vjp, cond and while_loop round-trips, and the parsed program
// compiles and computes what the traced one does.
TEST(ControlFlowText, RoundTripsAndRunsFromText) {
  auto f = fy::jit([](fy::Tensor x) {
    fy::Tensor a = clipped_sin(x);
    fy::Tensor b = fy::cond(fy::sum(x) > 0.0, [](fy::Tensor v) { return v * 2.0; }, [](fy::Tensor v) { return -v; }, a);
    return fy::while_loop([](fy::Tensor c) { return fy::sum(c) < 50.0; }, [](fy::Tensor c) { return c + 1.0; }, b);
  });
  fy::Lowered lowered = f.lower(fy::ShapeDtype{{3}, fy::DType::f64});
  std::string text = lowered.as_text();
  EXPECT_THAT(text, HasSubstr("custom_vjp"));
  EXPECT_THAT(text, HasSubstr("cond"));
  EXPECT_THAT(text, HasSubstr("while_loop"));
  fy::Lowered parsed = fy::parse_program(text);
  EXPECT_EQ(parsed.as_text(), text);
  fy::Array x = fy::Array::from(std::vector<double>{0.5, 1.0, -0.25}, {3});
  EXPECT_EQ(parsed.compile().run({x})[0].to_vector<double>(), lowered.compile().run({x})[0].to_vector<double>());
}

}  // namespace
