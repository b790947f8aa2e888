// The benchmark models against JAX: gradients of scan_mlp and gpt on small configurations equal
// the reference values JAX computed for the same inputs (stored in data/jax_reference.json by
// bench/peers; JAX's version is recorded there). Also a few Adam steps of gpt lower the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/memory_check.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

nlohmann::json reference() {
  std::ifstream in(std::string(FERRY_TEST_DATA) + "/e2e/data/jax_reference.json");
  return nlohmann::json::parse(in);
}

double abs_sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += std::abs(x);
  return s;
}

// f32 arithmetic in a different order than XLA's: agree to a relative 1e-4 of the largest value.
void expect_close(const std::vector<float>& got, const nlohmann::json& first, double abs_sum_want, const std::string& what) {
  double scale = 1e-30;
  for (const auto& v : first) scale = std::max(scale, std::abs(v.get<double>()));
  for (size_t i = 0; i < first.size(); ++i) EXPECT_NEAR(got[i], first[i].get<double>(), 1e-4 * scale) << what << " [" << i << "]";
  EXPECT_NEAR(abs_sum(got), abs_sum_want, 1e-4 * abs_sum_want) << what;
}

TEST(Models, ScanMlpGradientsMatchJax) {
  auto ref = reference()["scan_mlp"];
  fm::ScanMlpConfig c{.batch = ref["config"]["batch"], .width = ref["config"]["width"], .hidden = ref["config"]["hidden"],
                      .layers = ref["config"]["layers"]};
  fy::Array x = fm::scan_mlp_input(c, ref["seed"]);
  std::vector<fy::Array> w = fm::scan_mlp_params(c, ref["seed"]);
  std::vector<fy::Array> g = fy::testing::run_checked(fm::compile_scan_mlp_grad(c, std::nullopt), {x, w[0], w[1]});
  EXPECT_NEAR(g[0].to_vector<float>()[0], ref["loss"].get<double>(), 1e-4 * std::abs(ref["loss"].get<double>()));
  expect_close(g[1].to_vector<float>(), ref["dw1"], ref["dw1_abs_sum"], "dw1");
  expect_close(g[2].to_vector<float>(), ref["dw2"], ref["dw2_abs_sum"], "dw2");
  // And under an offloading policy, the same numbers.
  std::vector<fy::Array> o = fy::testing::run_checked(
      fm::compile_scan_mlp_grad(c, fm::benchmark_policies(fm::scan_mlp_names()).back().policy), {x, w[0], w[1]});
  for (size_t i = 0; i < g.size(); ++i) EXPECT_TRUE(o[i].equals(g[i])) << i;
}

TEST(Models, GptGradientsMatchJax) {
  auto ref = reference()["gpt"];
  const auto& rc = ref["config"];
  fm::GptConfig c{.vocab = rc["vocab"], .d_model = rc["d_model"], .heads = rc["heads"], .seq = rc["seq"],
                  .batch = rc["batch"], .layers = rc["layers"]};
  std::vector<fy::Array> params = fm::gpt_params(c, ref["seed"]);
  auto [tokens, targets] = fm::copy_task_batch(c, ref["seed"]);
  auto grad = fy::jit([c](std::vector<fy::Tensor> p, fy::Tensor tk, fy::Tensor tg) {
    return fy::value_and_grad([&](std::vector<fy::Tensor> q) { return fm::gpt_loss(q, tk, tg, c, std::nullopt); })(p);
  });
  std::vector<fy::Array> out = fy::testing::jit_checked(grad, params, tokens, targets);
  EXPECT_NEAR(out[0].to_vector<float>()[0], ref["loss"].get<double>(), 1e-5 * std::abs(ref["loss"].get<double>()));
  std::vector<std::string> names = fm::gpt_param_names();
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& r = ref["grads"][names[i]];
    expect_close(out[i + 1].to_vector<float>(), r["first"], r["abs_sum"], names[i]);
  }
}

TEST(Models, GptTrainingStepsLowerTheLoss) {
  fm::GptConfig c{.vocab = 12, .d_model = 32, .heads = 2, .seq = 16, .batch = 4, .layers = 2};
  fm::GptTrainer trainer(c, fm::compile_gpt_train_step(c, fm::benchmark_policies(fm::gpt_names()).back().policy), 3);
  auto [tokens, targets] = fm::copy_task_batch(c, 5);
  float first = trainer.train(tokens, targets), last = first;
  for (int i = 0; i < 30; ++i) last = trainer.train(tokens, targets);  // one batch: it must be learnt
  EXPECT_LT(last, 0.7f * first);
  EXPECT_EQ(trainer.step.execution_stats().device_high_water_bytes, trainer.step.memory_analysis().peak_memory_in_bytes);
}

// Without donation the step's outputs are allocations of their own, free until Adam writes them:
// compiling places temporaries of the forward and backward passes there (memory_plan.h). The
// updates are the donated step's to the bit, and the runtime measures the planned peak.
TEST(Models, AnUndonatedGptStepKeepsTemporariesInItsOutputsWithTheSameUpdates) {
  fm::GptConfig c{.vocab = 12, .d_model = 32, .heads = 2, .seq = 16, .batch = 4, .layers = 2};
  auto [tokens, targets] = fm::copy_task_batch(c, 5);
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::gpt_names())) {
    fm::GptTrainer donated(c, fm::compile_gpt_train_step(c, p.policy, 0, 3e-3, true), 3);
    fm::GptTrainer own(c, fm::compile_gpt_train_step(c, p.policy, 0, 3e-3, false), 3);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(own.train(tokens, targets), donated.train(tokens, targets)) << p.name;
    for (size_t i = 0; i < own.params.size(); ++i) {
      EXPECT_EQ(own.params[i].to_vector<float>(), donated.params[i].to_vector<float>()) << p.name << " param " << i;
      EXPECT_EQ(own.v[i].to_vector<float>(), donated.v[i].to_vector<float>()) << p.name << " v " << i;
    }
    EXPECT_EQ(fy::testing::high_water_mismatch(own.step), "") << p.name;
    EXPECT_LT(own.step.memory_analysis().temp_size_in_bytes, donated.step.memory_analysis().temp_size_in_bytes)
        << p.name;
  }
}

}  // namespace
