// `ferry demo`: a GPT learns to copy token sequences under a device memory limit that keeping every
// activation would exceed. It prints what each checkpoint policy and automatic would cost (ferry
// explain's table), shows the plan that keeps everything failing the limit, and trains with
// automatic under the limit.
#include "demo.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ferry/calibrate.h"
#include "ferry/explain.h"
#include "ferry/machine.h"
#include "ferry/memory_html.h"
#include "ferry/safetensors.h"
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

// The trace of the demo's last step, beside its memory page: page.html -> page.trace.json.
std::string trace_path(const std::string& html_path) {
  const std::string ext = ".html";
  const bool html = html_path.size() > ext.size() && html_path.compare(html_path.size() - ext.size(), ext.size(), ext) == 0;
  return (html ? html_path.substr(0, html_path.size() - ext.size()) : html_path) + ".trace.json";
}

}  // namespace

int run_demo(const DemoOptions& options) {
  // Before any work: a --save that cannot be written would otherwise fail after the last step and
  // lose the training.
  if (!options.save_path.empty()) check_save_path(options.save_path);
  if (!options.html_path.empty()) check_memory_html_path(options.html_path);
  const fm::GptConfig c{.vocab = 32, .d_model = 128, .heads = 4, .seq = 64, .batch = 8, .layers = 4};
  fmt::print("ferry demo: a GPT learns to copy\n");
  fmt::print("machine: {}\n", ferry::machine_info().summary());
  fmt::print("model: decoder-only transformer, {} blocks as one scan, d_model {}, {} heads, sequence {}, batch {}, "
             "vocabulary {}\n",
             c.layers, c.d_model, c.heads, c.seq, c.batch, c.vocab);
  fmt::print("task:  each sequence is a random half followed by the same half; predict the next token\n\n");

  // Estimated step times use this machine's rates (measured once, then cached).
  CompileOptions compile = calibrated_options();
  auto lower = [&c](const std::optional<Policy>& p) { return fm::lower_gpt_train_step(c, p); };
  // A device limit that keeping every activation exceeds and offloading the tagged projections
  // (query_proj ... mlpwo) meets: halfway between their peaks.
  const std::vector<std::string> names = fm::gpt_names();
  const Policy offload_names =
      policies::save_and_offload_only_these_names({}, names, MemoryKind::device, MemoryKind::pinned_host);
  const int64_t everything = lower(std::nullopt).compile(compile).memory_analysis().peak_memory_in_bytes;
  const int64_t offloaded = lower(offload_names).compile(compile).memory_analysis().peak_memory_in_bytes;
  compile.device_memory_limit = (everything + offloaded) / 2;
  const int64_t limit = compile.device_memory_limit;

  fmt::print("What to expect from one training step (loss, gradients, Adam update) under each policy, by the\n"
             "compiler's plan and cost model before anything runs (ferry explain):\n\n");
  std::vector<ExplainRow> rows = explain(lower, compile,
                                         {{"names saved", policies::save_only_these_names(names)},
                                          {"names offloaded", offload_names}});
  fmt::print("{}\n", format_explain(rows, limit));
  try {
    lower(std::nullopt).compile(compile);
  } catch (const Error& e) {
    std::string first_line = e.what();
    first_line = first_line.substr(0, first_line.find('\n'));
    fmt::print("Keeping every activation under the limit is refused: {}\n",
               first_line.substr(0, 110) + (first_line.size() > 110 ? "..." : ""));
  }

  const ExplainRow& automatic = rows.back();
  if (!automatic.compiled) {
    fmt::print("demo failed: automatic found no plan under the limit: {}\n", automatic.error);
    return 1;
  }
  fmt::print("\nTraining with 'automatic' (ferry picks save, recompute or offload for each activation) under the "
             "limit:\n");
  fm::GptTrainer trainer(c, *automatic.compiled, 1);
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
  double step_seconds = 0;  // in the compiled step alone
  for (int step = 0; step < options.steps; ++step) {
    // Batches by the global step, so a resumed run sees what an uninterrupted one would have.
    auto [tk, tg] = fm::copy_task_batch(c, static_cast<uint32_t>(done + step + 1));
    auto step_start = std::chrono::steady_clock::now();
    // The last step is recorded, for the page to show what the run did beside what the plan said.
    const bool traced = !options.html_path.empty() && step + 1 == options.steps;
    float loss = trainer.train(tk, tg, traced ? trace_path(options.html_path) : "");
    step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    if (options.print_losses) fmt::print("loss at step {}: {:.9g}\n", done + step + 1, loss);
    if (step == 0) first = loss;
    recent.push_back(loss);
    if (recent.size() > 10) recent.erase(recent.begin());
    progress(step + 1, options.steps, loss, tty);
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
  fmt::print("step time: estimated {:.1f} ms, measured {:.1f} ms (mean of {} steps, batches made between them)\n",
             automatic.estimated_seconds * 1e3, step_seconds / options.steps * 1e3, options.steps);
  if (!options.html_path.empty()) {
    trainer.step.save_memory_html(options.html_path);
    fmt::print("the plan of the step it trained with (automatic), drawn, with its last step measured beside it: {} "
               "(open it in a browser; the step's Chrome trace: {})\n",
               options.html_path, trace_path(options.html_path));
  }
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
