// policies::automatic beside control flow and custom_vjp: without a limit it makes the plan
// everything_saveable makes (the same work, nothing counted as recomputation, no higher peak),
// whether the checkpoint's body holds a cond, a while_loop, a custom_vjp or none of them; and under
// a limit it fits it with the gradients of the program without checkpoints. (A cond used to turn
// automatic into full recomputation: lowering it dropped the `automatic` marks.)
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ferry/ferry.h"

namespace fy = ferry;

namespace {

enum class Body { plain, cond, while_loop, custom_vjp };

std::string name_of(Body b) {
  switch (b) {
    case Body::plain: return "plain";
    case Body::cond: return "cond";
    case Body::while_loop: return "while_loop";
    case Body::custom_vjp: return "custom_vjp";
  }
  return "?";
}

constexpr int kLayers = 4;

// kLayers tanh layers, each followed by the control flow.
std::vector<fy::Tensor> layers(Body body, const std::vector<fy::Tensor>& in) {
  fy::Tensor h = in[0];
  for (int l = 1; l <= kLayers; ++l) {
  h = fy::tanh(fy::matmul(h, in[static_cast<size_t>(l)]));
  switch (body) {
    case Body::plain:
      h = h * 2.0;
      break;
    case Body::cond:
      h = fy::cond(fy::sum(h) > 0.0, [](fy::Tensor v) { return v * 2.0; }, [](fy::Tensor v) { return v * 3.0; }, h);
      break;
    case Body::while_loop: {
      // A scale found by a loop on a value the gradient does not flow through.
      auto [i, s] = fy::while_loop([](const auto& c) { return std::get<0>(c) < 3.0; },
                                   [](const auto& c) { return std::pair{std::get<0>(c) + 1.0, std::get<1>(c) * 1.5}; },
                                   std::pair{fy::sum(fy::stop_gradient(h)) * 0.0, fy::sum(fy::stop_gradient(h)) * 0.0 + 1.0});
      h = h * s;
      break;
    }
    case Body::custom_vjp: {
      auto scaled = fy::custom_vjp([](fy::Tensor x) { return fy::sin(x); },
                                   [](fy::Tensor x) { return std::pair{fy::sin(x), fy::cos(x)}; },
                                   [](fy::Tensor cos_x, fy::Tensor g) { return g * cos_x; });
      h = scaled(h);
      break;
    }
  }
  }
  return {h};
}

fy::Lowered step(Body body, const fy::Policy& policy) {
  auto f = fy::jit([body, policy](fy::Tensor x, std::vector<fy::Tensor> w) {
    auto [loss, g] = fy::value_and_grad([&](std::vector<fy::Tensor> ws) {
      auto model = [body](std::vector<fy::Tensor> in) { return layers(body, in); };
      std::vector<fy::Tensor> in{x};
      in.insert(in.end(), ws.begin(), ws.end());
      return fy::sum(fy::checkpoint(model, policy)(in)[0]);
    })(w);
    g.insert(g.begin(), loss);
    return g;
  });
  return f.lower(fy::ShapeDtype{{256, 64}}, std::vector<fy::ShapeDtype>(kLayers, fy::ShapeDtype{{64, 64}}));
}

std::vector<fy::Array> args() {
  auto filled = [](fy::Shape s, float seed) {
    std::vector<float> v(static_cast<size_t>(fy::num_elements(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>((i * 7 + static_cast<size_t>(seed)) % 13) - 0.3f;
    return fy::Array::from(v, s);
  };
  std::vector<fy::Array> a{filled({256, 64}, 1)};
  for (int l = 0; l < kLayers; ++l) a.push_back(filled({64, 64}, static_cast<float>(l + 2)));
  return a;
}

class AutomaticBeside : public testing::TestWithParam<Body> {};

TEST_P(AutomaticBeside, WithoutALimitIsEverythingSaveable) {
  const fy::Compiled automatic = step(GetParam(), fy::policies::automatic).compile();
  const fy::Compiled everything = step(GetParam(), fy::policies::everything_saveable).compile();
  const auto a = automatic.cost_analysis(), e = everything.cost_analysis();
  EXPECT_LE(a.flops, e.flops) << automatic.as_text() << "\n" << everything.as_text();
  EXPECT_EQ(a.recompute_flops, 0) << automatic.as_text();
  EXPECT_LE(automatic.memory_analysis().peak_memory_in_bytes, everything.memory_analysis().peak_memory_in_bytes);
  // The same numbers.
  const std::vector<fy::Array> ga = automatic.run(args()), ge = everything.run(args());
  ASSERT_EQ(ga.size(), ge.size());
  for (size_t i = 0; i < ga.size(); ++i) EXPECT_TRUE(ga[i].equals(ge[i])) << "output " << i;
}

// The control flow changes nothing the planner decides: the recomputation automatic chooses under
// a limit between the two peaks is as small, with or without it, as the plain body's allows (the
// same model with the control flow replaced by plain arithmetic), and the plan fits.
TEST_P(AutomaticBeside, UnderALimitItFitsWithTheGradientsOfThePlainProgram) {
  const fy::Lowered lowered = step(GetParam(), fy::policies::automatic);
  const int64_t saved = lowered.compile().memory_analysis().peak_memory_in_bytes;
  const int64_t recomputed = step(GetParam(), fy::policies::nothing_saveable).compile().memory_analysis().peak_memory_in_bytes;
  // Half-way between the two peaks (where recomputing everything peaks no lower, at the all-saved
  // peak: then nothing is recomputed).
  const int64_t limit = recomputed < saved ? (saved + recomputed) / 2 : saved;
  const fy::Compiled c = lowered.compile({.device_memory_limit = limit});
  EXPECT_LE(c.memory_analysis().peak_memory_in_bytes, limit);
  // Recomputing everything is never needed to fit half-way: the planner chose (before the fix, a
  // cond made every value recomputed, as nothing_saveable does).
  const double all = step(GetParam(), fy::policies::nothing_saveable).compile().cost_analysis().recompute_flops;
  if (recomputed < saved) EXPECT_LT(c.cost_analysis().recompute_flops, all) << c.as_text();
  else EXPECT_EQ(c.cost_analysis().recompute_flops, 0) << c.as_text();
  const std::vector<fy::Array> got = c.run(args());
  const std::vector<fy::Array> want = step(GetParam(), fy::policies::everything_saveable).compile().run(args());
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<float> g = got[i].to_vector<float>(), w = want[i].to_vector<float>();
    for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-5f * (1 + std::abs(w[j]))) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Bodies, AutomaticBeside,
                         testing::Values(Body::plain, Body::cond, Body::while_loop, Body::custom_vjp),
                         [](const testing::TestParamInfo<Body>& info) { return name_of(info.param); });

}  // namespace
