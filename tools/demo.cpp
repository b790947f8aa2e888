// `ferry demo`: a GPT learns to copy token sequences under a device memory limit that keeping every
// activation would exceed. It prints what each checkpoint policy would cost, shows the plan that
// keeps everything failing the limit, and trains with an offloading policy that fits.
#include "demo.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "training.h"

namespace ferry::tools {
namespace {

namespace fm = ferry::models;

std::string mib(int64_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

void progress(int step, int steps, float loss, bool tty) {
  if (!tty) {
    if (step % 50 == 0 || step == steps) fmt::print("step {:4d}/{}  loss {:.4f}\n", step, steps, loss);
    return;
  }
  const int width = 30;
  int filled = steps ? step * width / steps : width;
  fmt::print("\r[{}{}] step {:4d}/{}  loss {:.4f}", std::string(static_cast<size_t>(filled), '#'),
             std::string(static_cast<size_t>(width - filled), '.'), step, steps, loss);
  if (step == steps) fmt::print("\n");
  std::fflush(stdout);
}

// Prints what each policy costs and which fit a limit between keeping everything and offloading
// the tagged names; returns that limit.
int64_t compare_policies(const fm::GptConfig& c, const std::vector<fm::NamedPolicy>& policies) {
  auto [tokens, targets] = fm::copy_task_batch(c, 0);
  fm::GptTrainer probe(c, fm::compile_gpt_train_step(c, std::nullopt), 1);
  std::vector<Array> args = probe.params;
  for (auto* state : {&probe.m, &probe.v}) args.insert(args.end(), state->begin(), state->end());
  args.push_back(probe.count);
  args.push_back(tokens);
  args.push_back(targets);

  // What each policy costs, compiled without a limit.
  fmt::print("One training step (loss, gradients, Adam update) under each policy:\n\n");
  fmt::print("  {:<34} {:>12} {:>12} {:>16} {:>12} {:>9}\n", "policy", "device peak", "host bytes", "recompute MFLOP",
             "copied", "step ms");
  int64_t everything = 0, chosen_peak = 0;
  for (const fm::NamedPolicy& p : policies) {
    fm::StepReport r = fm::measure_step(p.name, fm::compile_gpt_train_step(c, p.policy), args, 3);
    if (!p.policy) everything = r.device_peak;
    if (p.name == "names offloaded") chosen_peak = r.device_peak;
    fmt::print("  {:<34} {:>12} {:>12} {:>16.1f} {:>12} {:>9.1f}\n", p.name, mib(r.device_peak), mib(r.host_bytes),
               r.recompute_flops / 1e6, mib(r.copy_bytes), r.step_seconds * 1e3);
  }

  // A device limit the plan that keeps everything exceeds, and the offloading plan meets.
  const int64_t limit = (everything + chosen_peak) / 2;
  fmt::print("\nDevice memory limit: {} (keeping every activation needs {}).\n", mib(limit), mib(everything));
  for (const fm::NamedPolicy& p : policies) {
    try {
      fm::compile_gpt_train_step(c, p.policy, limit);
      fmt::print("  fits:    {}\n", p.name);
    } catch (const Error& e) {
      std::string first_line = e.what();
      first_line = first_line.substr(0, first_line.find('\n'));
      fmt::print("  refused: {}: {}\n", p.name, first_line.substr(0, 110) + (first_line.size() > 110 ? "..." : ""));
    }
  }

  return limit;
}

}  // namespace

int run_demo(const DemoOptions& options) {
  const fm::GptConfig c{.vocab = 32, .d_model = 128, .heads = 4, .seq = 64, .batch = 8, .layers = 4};
  fmt::print("ferry demo: a GPT learns to copy\n");
  fmt::print("model: decoder-only transformer, {} blocks as one scan, d_model {}, {} heads, sequence {}, batch {}, "
             "vocabulary {}\n",
             c.layers, c.d_model, c.heads, c.seq, c.batch, c.vocab);
  fmt::print("task:  each sequence is a random half followed by the same half; predict the next token\n\n");

  std::vector<fm::NamedPolicy> policies = fm::benchmark_policies(fm::gpt_names());
  const fm::NamedPolicy& offload = policies.back();
  int64_t limit = 0;
  if (options.resume_path.empty()) {
    limit = compare_policies(c, policies);
  } else {
    // The same limit as the first run, from the two plans it lies between (no timing this time).
    int64_t everything = fm::compile_gpt_train_step(c, std::nullopt).memory_analysis().peak_memory_in_bytes;
    limit = (everything + fm::compile_gpt_train_step(c, offload.policy).memory_analysis().peak_memory_in_bytes) / 2;
  }

  fmt::print("\nTraining with '{}' (the tagged projections go to pinned host memory) under the limit:\n",
             offload.name);
  fm::GptTrainer trainer(c, fm::compile_gpt_train_step(c, offload.policy, limit), 1);
  int done = 0;  // steps before this run's first
  if (!options.resume_path.empty()) {
    done = trainer.load(options.resume_path);
    fmt::print("resumed from {} after step {}\n", options.resume_path, done);
  }
  const bool tty = isatty(STDOUT_FILENO) != 0;
  auto start = std::chrono::steady_clock::now();
  // The loss of the first step against the mean of the last ten (batches differ, so one is noisy).
  float first = 0, last = 0;
  std::vector<float> recent;
  for (int step = 0; step < options.steps; ++step) {
    // Batches by the global step, so a resumed run sees what an uninterrupted one would have.
    auto [tk, tg] = fm::copy_task_batch(c, static_cast<uint32_t>(done + step + 1));
    float loss = trainer.train(tk, tg);
    if (step == 0) first = loss;
    recent.push_back(loss);
    if (recent.size() > 10) recent.erase(recent.begin());
    progress(step + 1, options.steps, loss, tty);
    if (options.print_losses) fmt::print("loss at step {}: {:.9g}\n", done + step + 1, loss);
  }
  for (float l : recent) last += l / static_cast<float>(recent.size());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ExecutionStats stats = trainer.step.execution_stats();
  MemoryStats planned = trainer.step.memory_analysis();
  fmt::print("\nloss {:.4f} -> {:.4f} (mean of the last ten; {:.2f}x lower) in {} steps, {:.1f} s\n", first, last,
             first / last, options.steps, seconds);
  fmt::print("device high-water {} (planned {}, limit {}); host {}; per step {} to host and back\n",
             mib(stats.device_high_water_bytes), mib(planned.peak_memory_in_bytes), mib(limit),
             mib(stats.host_high_water_bytes), mib(stats.bytes_to_host));
  if (!options.save_path.empty()) {
    trainer.save(options.save_path, done + options.steps);
    fmt::print("saved the model and its Adam state after step {} to {} (safetensors; ferry demo --resume {} "
               "continues)\n",
               done + options.steps, options.save_path, options.save_path);
  }
  bool ok = stats.device_high_water_bytes == planned.peak_memory_in_bytes && first / last >= options.min_factor;
  if (!ok) fmt::print("demo failed: the loss fell {:.2f}x (wanted {:.2f}x) or the high-water mark missed the plan\n",
                      first / last, options.min_factor);
  return ok ? 0 : 1;
}

}  // namespace ferry::tools
