// Temporaries of the benchmark models' compiled steps, per policy, without running them:
// memory_analysis().temp_size_in_bytes (exact, planned) of gpt's Adam step with its state donated
// (as compile_gpt_train_step does by default, and bench/peers' JAX step) and not donated (then the
// outputs' allocations hold temporaries until the update writes them), and of scan_mlp's gradient.
// Nothing is timed: the figures need no quiet machine.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "training.h"

namespace fm = ferry::models;

int main(int argc, char** argv) {
  CLI::App app{"temporaries of the benchmark models' steps"};
  bool quick = false;
  app.add_flag("--quick", quick, "small configurations (a smoke test)");
  CLI11_PARSE(app, argc, argv);
  fm::GptConfig g;
  fm::ScanMlpConfig s;
  if (quick) {
    g = fm::GptConfig{.vocab = 12, .d_model = 32, .heads = 2, .seq = 16, .batch = 4, .layers = 2};
    s = fm::ScanMlpConfig{.batch = 4, .width = 16, .hidden = 32, .layers = 3};
  }
  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  std::printf("| model | policy | temp (MiB) | temp undonated (MiB) |\n|---|---|---|---|\n");
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::gpt_names())) {
    int64_t donated = fm::compile_gpt_train_step(g, p.policy, 0, 3e-3, true).memory_analysis().temp_size_in_bytes;
    int64_t own = fm::compile_gpt_train_step(g, p.policy, 0, 3e-3, false).memory_analysis().temp_size_in_bytes;
    std::printf("| gpt | %s | %.2f | %.2f |\n", p.name.c_str(), mib(donated), mib(own));
  }
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::scan_mlp_names()))
    std::printf("| scan_mlp | %s | %.2f | |\n", p.name.c_str(),
                mib(fm::compile_scan_mlp_grad(s, p.policy).memory_analysis().temp_size_in_bytes));
}
