// AdamW, clipping by global norm and the warmup + cosine schedule against optax on the same inputs
// for several steps (data/optax_reference.json, made by bench/peers/optax_reference.py), run as one
// compiled step whose learning rate comes from the traced step count: the schedule changes the rate
// every step and nothing recompiles.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
namespace fo = ferry::optim;

namespace {

nlohmann::json reference() {
  std::ifstream in(std::string(FERRY_TEST_DATA) + "/transforms/data/optax_reference.json");
  return nlohmann::json::parse(in);
}

using Tree = std::map<std::string, fy::Array>;

Tree tree_of(const nlohmann::json& values, const nlohmann::json& shapes) {
  Tree out;
  for (const auto& [name, v] : values.items()) out[name] = fy::Array::from(v.get<std::vector<float>>(), shapes[name]);
  return out;
}

// f32 arithmetic in another order than XLA's: within a few ulps of the values' scale.
void expect_close(const Tree& got, const nlohmann::json& want, const std::string& what) {
  for (const auto& [name, w] : want.items()) {
    std::vector<float> g = got.at(name).to_vector<float>();
    std::vector<double> expected = w.get<std::vector<double>>();
    ASSERT_EQ(g.size(), expected.size());
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_NEAR(g[i], expected[i], 2e-6 + 2e-5 * std::abs(expected[i])) << what << " " << name << "[" << i << "]";
  }
}

}  // namespace

TEST(Optim, AdamWWithClippingAndAScheduleMatchesOptax) {
  const auto ref = reference();
  const auto& c = ref["config"];
  fo::Schedule schedule = fo::warmup_cosine_decay_schedule(c["init_value"], c["peak_value"], c["warmup_steps"],
                                                           c["decay_steps"], c["end_value"]);
  fo::AdamWOptions options{.b1 = c["b1"], .b2 = c["b2"], .eps = c["eps"], .weight_decay = c["weight_decay"],
                           .decay = [&](const std::string& path) { return ref["decay"][path].get<bool>(); }};
  const double max_norm = c["max_norm"];
  using P = std::map<std::string, fy::Tensor>;
  auto step = fy::jit([&](P params, fo::AdamWState<P> state, P grads) {
    auto [clipped, norm] = fo::clip_by_global_norm(grads, max_norm);
    fy::Tensor lr = schedule(state.count);
    auto [p, s] = fo::adamw(params, clipped, state, lr, options);
    return std::tuple{p, s, lr, norm};
  });
  Tree params = tree_of(ref["params"], ref["shapes"]);
  fo::AdamWState<Tree> state = fo::adamw_init(params);
  EXPECT_EQ(state.count.to_vector<int32_t>(), (std::vector<int32_t>{0}));
  for (const auto& want : ref["steps"]) {
    SCOPED_TRACE("count " + std::to_string(want["count"].get<int>()));
    auto [p, s, lr, norm] = step(params, state, tree_of(want["grads"], ref["shapes"]));
    EXPECT_NEAR(lr.to_vector<float>()[0], want["lr"].get<double>(), 1e-8);
    EXPECT_NEAR(norm.to_vector<float>()[0], want["norm"].get<double>(), 1e-5 * want["norm"].get<double>());
    expect_close(p, want["params"], "params");
    expect_close(s.mu, want["mu"], "mu");
    expect_close(s.nu, want["nu"], "nu");
    EXPECT_EQ(s.count.to_vector<int32_t>()[0], want["count"].get<int>());
    params = p;
    state = s;
  }
  // Every step ran the one program compiled on the first.
  fy::JitCacheInfo info = step.cache_info();
  EXPECT_EQ(info.misses, 1);
  EXPECT_EQ(info.hits, static_cast<int64_t>(ref["steps"].size()) - 1);
}

TEST(Optim, SchedulesMatchOptaxTracedAndOnTheHost) {
  const auto ref = reference();
  const auto& c = ref["config"];
  fo::Schedule schedule = fo::warmup_cosine_decay_schedule(c["init_value"], c["peak_value"], c["warmup_steps"],
                                                           c["decay_steps"], c["end_value"]);
  auto traced = fy::jit([&](fy::Tensor count) { return schedule(count); });
  for (size_t i = 0; i < ref["schedule"].size(); ++i) {
    const double want = ref["schedule"][i];
    EXPECT_NEAR(schedule(static_cast<int64_t>(i)), want, 1e-8) << i;
    fy::Array got = traced(fy::Array::scalar<int32_t>(static_cast<int32_t>(i)))[0];
    EXPECT_NEAR(got.to_vector<float>()[0], want, 1e-8) << i;
  }
  EXPECT_EQ(traced.cache_info().misses, 1);
  // The pieces, on the host, by their formulas.
  EXPECT_DOUBLE_EQ(fo::linear_schedule(1.0, 0.0, 4)(1), 0.75);
  EXPECT_DOUBLE_EQ(fo::linear_schedule(1.0, 0.0, 4)(9), 0.0);
  EXPECT_DOUBLE_EQ(fo::linear_schedule(1.0, 0.0, 0)(3), 1.0);
  EXPECT_NEAR(fo::cosine_decay_schedule(2.0, 10, 0.1)(5), 2.0 * (0.9 * 0.5 + 0.1), 1e-12);
  EXPECT_DOUBLE_EQ(fo::constant_schedule(0.3)(100), 0.3);
  EXPECT_EQ(fy::testing::error_of([] { fo::warmup_cosine_decay_schedule(0, 1, 5, 5); }).code(),
            fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([] { fo::cosine_decay_schedule(1, 0); }).code(), fy::ErrorCode::invalid_argument);
}

// AdamW by hand for one f64 parameter over three steps with a learning rate passed in as an input:
// the decoupled decay is p * lr * wd, not added to the gradient's moments.
TEST(Optim, AdamWIsDecoupledAndTakesTheLearningRateAsAnInput) {
  auto step = fy::jit([](std::vector<fy::Tensor> p, fo::AdamWState<std::vector<fy::Tensor>> s, fy::Tensor lr) {
    std::vector<fy::Tensor> g{p[0] * 2.0};  // d/dp p^2
    auto [p2, s2] = fo::adamw(p, g, s, lr, {.b1 = 0.9, .b2 = 0.999, .eps = 1e-8, .weight_decay = 0.5});
    return std::pair{p2, s2};
  });
  std::vector<fy::Array> p{fy::Array::from(std::vector<double>{3.0}, {1})};
  auto s = fo::adamw_init(p);
  double want = 3.0, m = 0, v = 0;
  const double lrs[] = {0.1, 0.01, 0.2};
  for (int t = 1; t <= 3; ++t) {
    auto [p2, s2] = step(p, s, fy::Array::scalar(static_cast<float>(lrs[t - 1])));
    const double g = 2 * want, lr = static_cast<float>(lrs[t - 1]);
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double update = (m / (1 - std::pow(0.9, t))) / (std::sqrt(v / (1 - std::pow(0.999, t))) + 1e-8);
    want = want - lr * (update + 0.5 * want);
    EXPECT_NEAR(p2[0].to_vector<double>()[0], want, 1e-12) << t;
    p = p2;
    s = s2;
  }
  EXPECT_EQ(step.cache_info().misses, 1);
}

TEST(Optim, ClippingLeavesSmallGradientsAloneAndScalesLargeOnes) {
  auto clip = fy::jit([](std::vector<fy::Tensor> g) { return fo::clip_by_global_norm(g, 5.0); });
  auto small = clip(std::vector{fy::Array::from(std::vector<float>{3, 0}, {2}), fy::Array::from(std::vector<float>{0}, {1})});
  EXPECT_EQ(small[0].to_vector<float>(), (std::vector<float>{3, 0}));
  EXPECT_FLOAT_EQ(small[2].to_vector<float>()[0], 3.0f);
  auto large = clip(std::vector{fy::Array::from(std::vector<float>{6, 0}, {2}), fy::Array::from(std::vector<float>{8}, {1})});
  EXPECT_FLOAT_EQ(large[0].to_vector<float>()[0], 3.0f);
  EXPECT_FLOAT_EQ(large[1].to_vector<float>()[0], 4.0f);
  EXPECT_FLOAT_EQ(large[2].to_vector<float>()[0], 10.0f);
}

TEST(Optim, InitBuildsZeroStateShapedLikeTheParameters) {
  std::map<std::string, fy::Array> params{{"w", fy::ones({2, 3})}, {"h", fy::ones({4}, fy::DType::bf16)}};
  auto s = fo::adamw_init(params);
  EXPECT_EQ(s.mu.at("w").shape(), (fy::Shape{2, 3}));
  EXPECT_EQ(s.nu.at("h").dtype(), fy::DType::bf16);
  EXPECT_EQ(s.mu.at("w").to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(s.count.dtype(), fy::DType::i32);
  // Inside a trace: the state of traced parameters.
  auto f = fy::jit([](std::map<std::string, fy::Tensor> p) { return fo::adamw_init(p); });
  auto traced = f(params);
  EXPECT_EQ(traced.nu.at("w").to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(traced.count.to_vector<int32_t>(), std::vector<int32_t>{0});
}

TEST(Optim, BadInputsAreErrors) {
  auto mismatched = fy::jit([](std::vector<fy::Tensor> p) {
    auto s = fo::adamw_init(p);
    std::vector<fy::Tensor> g{fy::ones_like(p[0]), fy::ones_like(p[0])};
    return fo::adamw(p, g, s, 0.1).first;
  });
  EXPECT_EQ(fy::testing::error_of([&] { mismatched(std::vector{fy::ones({2})}); }).code(), fy::ErrorCode::invalid_argument);
  auto matrix_lr = fy::jit([](std::vector<fy::Tensor> p, fy::Tensor lr) {
    return fo::adamw(p, p, fo::adamw_init(p), lr).first;
  });
  EXPECT_EQ(fy::testing::error_of([&] { matrix_lr(std::vector{fy::ones({2})}, fy::ones({2})); }).code(),
            fy::ErrorCode::invalid_argument);
  auto bad_clip = fy::jit([](fy::Tensor g) { return fo::clip_by_global_norm(g, 0.0).first; });
  EXPECT_EQ(fy::testing::error_of([&] { bad_clip(fy::ones({2})); }).code(), fy::ErrorCode::invalid_argument);
}
