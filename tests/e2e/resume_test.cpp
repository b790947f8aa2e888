// Checkpoints on disk: a GPT training run saved after some steps and resumed in a new trainer (a
// new process would do the same) gives the losses and parameters of the uninterrupted run, bit for
// bit; a checkpoint of another configuration is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/error_of.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

const fm::GptConfig kConfig{.vocab = 16, .d_model = 32, .heads = 2, .seq = 16, .batch = 2, .layers = 2};

std::vector<float> train(fm::GptTrainer& t, int from, int to) {
  std::vector<float> losses;
  for (int step = from; step < to; ++step) {
    auto [tokens, targets] = fm::copy_task_batch(kConfig, static_cast<uint32_t>(step + 1));
    losses.push_back(t.train(tokens, targets));
  }
  return losses;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ferry_resume_" + std::to_string(::getpid()) + name)).string();
}

}  // namespace

TEST(Resume, AResumedRunGivesTheLossesOfAnUninterruptedOne) {
  const std::string path = temp_path(".safetensors");
  fm::GptTrainer whole(kConfig, fm::compile_gpt_train_step(kConfig, std::nullopt), 3);
  std::vector<float> expected = train(whole, 0, 6);

  fm::GptTrainer first(kConfig, fm::compile_gpt_train_step(kConfig, std::nullopt), 3);
  std::vector<float> losses = train(first, 0, 3);
  first.save(path, 3);
  // A new trainer (other initial weights, even) continues from the file.
  fm::GptTrainer second(kConfig, fm::compile_gpt_train_step(kConfig, std::nullopt), 99);
  EXPECT_EQ(second.load(path), 3);
  std::vector<float> rest = train(second, 3, 6);
  losses.insert(losses.end(), rest.begin(), rest.end());
  EXPECT_EQ(losses, expected);
  for (size_t i = 0; i < whole.params.size(); ++i) EXPECT_TRUE(second.params[i].equals(whole.params[i])) << i;
  EXPECT_TRUE(second.count.equals(whole.count));
  // The file is plain safetensors: parameters and Adam state by name, the step in the metadata.
  fy::NamedArrays file = fy::load(path);
  const std::string name0 = fm::gpt_param_names()[0];
  EXPECT_TRUE(file.count("params." + name0) && file.count("adam.m." + name0) && file.count("adam.count"));
  EXPECT_EQ(fy::load_metadata(path).at("step"), "3");
  std::filesystem::remove(path);
}

TEST(Resume, ACheckpointOfAnotherModelIsRefused) {
  const std::string path = temp_path("_other.safetensors");
  fm::GptConfig wider = kConfig;
  wider.d_model = 64;
  fm::GptTrainer(wider, fm::compile_gpt_train_step(wider, std::nullopt), 1).save(path, 1);
  fm::GptTrainer t(kConfig, fm::compile_gpt_train_step(kConfig, std::nullopt), 1);
  fy::Error e = fy::testing::error_of([&] { t.load(path); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(e.message().find("another configuration"), std::string::npos) << e.what();
  fy::save(path, {{"x", fy::ones({1})}});
  EXPECT_NE(fy::testing::error_of([&] { t.load(path); }).message().find("not a checkpoint"), std::string::npos);
  std::filesystem::remove(path);
}
