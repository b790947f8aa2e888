// What dropout costs in gpt's training step: the demo's configuration with dropout 0 and 0.1, under
// no checkpoint and under nothing_saveable (where every mask is drawn twice), steps interleaved so
// both see the same machine load. Prints the median step time of each.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "training.h"

namespace fm = ferry::models;

int main() {
  fm::GptConfig base{.vocab = 32, .d_model = 128, .heads = 4, .seq = 64, .batch = 8, .layers = 4};
  auto [tokens, targets] = fm::copy_task_batch(base, 1);
  for (bool remat : {false, true}) {
    std::optional<ferry::Policy> policy;
    if (remat) policy = ferry::policies::nothing_saveable;
    std::vector<fm::GptTrainer> trainers;
    for (double rate : {0.0, 0.1}) {
      fm::GptConfig c = base;
      c.dropout = rate;
      trainers.emplace_back(c, fm::compile_gpt_train_step(c, policy), 3);
    }
    std::vector<std::vector<double>> ms(2);
    for (int step = 0; step < 12; ++step)
      for (size_t t = 0; t < 2; ++t) {
        auto begin = std::chrono::steady_clock::now();
        trainers[t].train(tokens, targets);
        ms[t].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
      }
    for (size_t t = 0; t < 2; ++t) {
      std::sort(ms[t].begin(), ms[t].end());
      std::printf("%-16s dropout %.1f: median step %.1f ms\n", remat ? "nothing_saveable" : "no checkpoint",
                  t == 0 ? 0.0 : 0.1, ms[t][ms[t].size() / 2]);
    }
  }
}
