// The automatic planner against the built-in policies, in one run: on gpt and scan_mlp at three
// device budgets between nothing_saveable's peak and no checkpoint's peak (1/4, 1/2 and 3/4 of
// the way), each built-in policy's peak and whether it fits, the measured step time (median) of
// every policy that fits some budget and of automatic under each budget, and automatic's
// estimated time against its measured time. Compile options carry rates calibrated at the start
// of the run (ferry::calibrate). One command regenerates docs/AUTOMATIC.md:
//   build/bench/auto_bench --out docs
// --quick uses small configurations (a smoke test).
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ferry/calibrate.h"
#include "ferry/explain.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

constexpr double kBudgetPoints[] = {0.25, 0.5, 0.75};

struct Model {
  std::string name, config;
  fy::LowerUnderPolicy lower;
  std::vector<fy::ExplainPolicy> extra;
  std::vector<fy::Array> args;
};

std::vector<fy::ExplainPolicy> name_policies(const std::vector<std::string>& names) {
  return {{"names saved", fy::policies::save_only_these_names(names)},
          {"names offloaded", fy::policies::save_and_offload_only_these_names({}, names, fy::MemoryKind::device,
                                                                              fy::MemoryKind::pinned_host)}};
}

Model scan_mlp(const fm::ScanMlpConfig& c) {
  Model m{"scan_mlp",
          fmt::format("batch {}, width {}, hidden {}, {} layers (gradient of sum(output) w.r.t. w1, w2)", c.batch,
                      c.width, c.hidden, c.layers),
          [c](const std::optional<fy::Policy>& p) { return fm::lower_scan_mlp_grad(c, p); },
          name_policies(fm::scan_mlp_names()),
          {fm::scan_mlp_input(c, 0)}};
  for (const fy::Array& w : fm::scan_mlp_params(c, 0)) m.args.push_back(w);
  return m;
}

Model gpt(const fm::GptConfig& c) {
  Model m{"gpt",
          fmt::format("d_model {}, {} heads, sequence {}, batch {}, {} layers, vocabulary {} (loss, gradients and "
                      "Adam update)",
                      c.d_model, c.heads, c.seq, c.batch, c.layers, c.vocab),
          [c](const std::optional<fy::Policy>& p) { return fm::lower_gpt_train_step(c, p); },
          name_policies(fm::gpt_names()),
          fm::gpt_params(c, 1)};
  const size_t n = m.args.size();
  for (int state = 0; state < 2; ++state)  // Adam's m and v
    for (size_t i = 0; i < n; ++i) m.args.push_back(fy::zeros(m.args[i].shape()));
  m.args.push_back(fy::zeros({}));
  auto [tokens, targets] = fm::copy_task_batch(c, 0);
  m.args.push_back(tokens);
  m.args.push_back(targets);
  return m;
}

// Sizes with their unit (KiB below a MiB, so that the quick configurations' budgets differ).
std::string size(int64_t bytes) {
  if (bytes < (1 << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
}
std::string ms(double seconds) {
  return seconds < 0.01 ? fmt::format("{:.2f}", seconds * 1e3) : fmt::format("{:.1f}", seconds * 1e3);
}

struct Automatic {
  int64_t budget = 0;
  fy::ExplainRow row;           // compiled under the budget
  double measured_seconds = 0;  // 0 when refused
};

// Fresh copies of the arguments for each run (the gpt step consumes its donated arguments).
std::vector<fy::Array> fresh(const std::vector<fy::Array>& args) {
  std::vector<fy::Array> copies;
  for (const fy::Array& a : args)
    copies.push_back(fy::Array::from_bytes(a.data(), a.nbytes(), a.dtype(), a.shape(), a.memory_kind()));
  return copies;
}

// The median wall time of each program over `rounds` rounds, each round running every program once
// (after one untimed warm-up run each).
std::vector<double> median_step_seconds(const std::vector<const fy::Compiled*>& programs,
                                        const std::vector<fy::Array>& args, int rounds) {
  std::vector<std::vector<double>> times(programs.size());
  for (const fy::Compiled* c : programs) c->run(fresh(args));
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < programs.size(); ++k) {
      std::vector<fy::Array> copies = fresh(args);
      auto start = std::chrono::steady_clock::now();
      programs[k]->run(copies);
      times[k].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

// One model: its tables in markdown, and a line per budget for the summary.
std::string run_model(const Model& m, const fy::CompileOptions& options, int repeats, std::string& summary) {
  std::fprintf(stderr, "%s: compiling every policy\n", m.name.c_str());
  std::vector<fy::ExplainRow> fixed = fy::explain(m.lower, options, m.extra);
  fixed.pop_back();  // automatic without a limit; it is compiled under each budget below
  auto peak_of = [&](const std::string& name) {
    return std::find_if(fixed.begin(), fixed.end(), [&](const fy::ExplainRow& r) { return r.policy == name; })
        ->device_peak;
  };
  const int64_t low = peak_of("nothing_saveable"), high = peak_of("no checkpoint");
  std::vector<int64_t> budgets;
  for (double at : kBudgetPoints) budgets.push_back(low + static_cast<int64_t>(at * static_cast<double>(high - low)));

  std::vector<Automatic> autos;
  for (int64_t budget : budgets) {
    std::fprintf(stderr, "%s: automatic under %s\n", m.name.c_str(), size(budget).c_str());
    fy::CompileOptions limited = options;
    limited.device_memory_limit = budget;
    autos.push_back({budget, fy::explain_policy(m.lower, "automatic", fy::policies::automatic, limited), 0});
  }
  // A fixed policy's plan does not depend on the budget: measured once if it fits any. Every
  // program is timed in the same rounds, so that what else the machine does meanwhile weighs on
  // all of them alike.
  std::vector<double> measured(fixed.size(), 0);
  std::vector<const fy::Compiled*> programs;
  std::vector<double*> results;
  for (size_t i = 0; i < fixed.size(); ++i)
    if (fixed[i].device_peak <= budgets.back()) {
      programs.push_back(&*fixed[i].compiled);
      results.push_back(&measured[i]);
    }
  for (Automatic& a : autos)
    if (a.row.compiled) {
      programs.push_back(&*a.row.compiled);
      results.push_back(&a.measured_seconds);
    }
  std::fprintf(stderr, "%s: timing %zu programs, %d rounds\n", m.name.c_str(), programs.size(), repeats);
  std::vector<double> medians = median_step_seconds(programs, m.args, repeats);
  for (size_t k = 0; k < programs.size(); ++k) *results[k] = medians[k];

  std::string md = fmt::format("### {}\n\n{}. Budgets: nothing_saveable's peak {} + 1/4, 1/2, 3/4 of the way to "
                               "no checkpoint's {}.\n\n",
                               m.name, m.config, size(low), size(high));
  md += "| policy | device peak | host peak | recompute (MFLOP) | copied | est. step (ms) | measured step (ms) |";
  for (int64_t b : budgets) md += fmt::format(" fits {} |", size(b));
  md += "\n|---|---:|---:|---:|---:|---:|---:|";
  for (size_t i = 0; i < budgets.size(); ++i) md += ":---:|";
  md += "\n";
  auto row_md = [&](const std::string& name, const fy::ExplainRow& r, double measured_s, const std::string& fits) {
    return fmt::format("| {} | {} | {} | {:.1f} | {} | {} | {} |{}\n", name, size(r.device_peak), size(r.host_peak),
                       r.recompute_flops / 1e6, size(r.bytes_copied), ms(r.estimated_seconds),
                       measured_s > 0 ? ms(measured_s) : std::string("-"), fits);
  };
  for (size_t i = 0; i < fixed.size(); ++i) {
    std::string fits;
    for (int64_t b : budgets) fits += fixed[i].device_peak <= b ? " yes |" : " no |";
    md += row_md(fixed[i].policy, fixed[i], measured[i], fits);
  }
  for (size_t k = 0; k < autos.size(); ++k) {
    const Automatic& a = autos[k];
    std::string name = fmt::format("automatic under {}", size(a.budget));
    if (!a.row.compiled) {
      md += fmt::format("| {} | refused: {} |\n", name, a.row.error.substr(0, a.row.error.find('\n')));
      continue;
    }
    std::string fits;
    for (size_t j = 0; j < budgets.size(); ++j) fits += j == k ? (a.row.fits ? " yes |" : " no |") : " |";
    md += row_md(name, a.row, a.measured_seconds, fits);
  }

  for (const Automatic& a : autos) {
    // The fastest built-in policy (by measurement) that fits the same budget.
    size_t best = fixed.size();
    for (size_t i = 0; i < fixed.size(); ++i)
      if (fixed[i].device_peak <= a.budget && (best == fixed.size() || measured[i] < measured[best])) best = i;
    std::string best_cell = best < fixed.size() ? fmt::format("{} ({})", fixed[best].policy, ms(measured[best])) : "none";
    if (!a.row.compiled) {
      summary += fmt::format("| {} | {} | refused | - | - | - | {} | - |\n", m.name, size(a.budget), best_cell);
      continue;
    }
    summary += fmt::format("| {} | {} | {} | {} | {} | {:.2f} | {} | {} |\n", m.name, size(a.budget),
                           size(a.row.device_peak), ms(a.row.estimated_seconds), ms(a.measured_seconds),
                           a.row.estimated_seconds / a.measured_seconds, best_cell,
                           best < fixed.size() ? fmt::format("{:.2f}", a.measured_seconds / measured[best]) : "-");
  }
  return md;
}

// The machine's 1-minute load average: step times on a shared machine are only as good as this.
double load_average() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

std::string machine() {
  utsname u{};
  uname(&u);
  return fmt::format("{} {}, {} hardware threads", u.sysname, u.machine, std::thread::hardware_concurrency());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the automatic planner against the built-in checkpoint policies at three budgets"};
  std::string out_dir;
  int repeats = 5;
  bool quick = false;
  app.add_option("--out", out_dir, "write AUTOMATIC.md into this folder");
  app.add_option("--repeats", repeats, "timed runs per measured step (the median is reported)")->check(CLI::Range(1, 1000));
  app.add_flag("--quick", quick, "small configurations (a smoke test)");
  CLI11_PARSE(app, argc, argv);

  fm::ScanMlpConfig sc;
  fm::GptConfig gc;
  if (quick) {
    sc = {.batch = 16, .width = 32, .hidden = 64, .layers = 3};
    gc = {.vocab = 16, .d_model = 32, .heads = 2, .seq = 16, .batch = 2, .layers = 2};
  }
  // Rates measured now, not a cache from another hour: this machine's speed drifts (a shared VM),
  // and the estimates are compared with steps measured in the same minutes.
  const fy::Rates rates = fy::calibrate();
  const fy::CompileOptions options = fy::with_rates({}, rates);
  const double load_before = load_average();
  std::string summary =
      "| model | budget | automatic peak | automatic est. (ms) | automatic measured (ms) | est./measured | "
      "fastest fitting built-in, measured (ms) | automatic / that |\n|---|---:|---:|---:|---:|---:|---|---:|\n";
  std::string tables;
  for (const Model& m : {scan_mlp(sc), gpt(gc)}) tables += run_model(m, options, repeats, summary) + "\n";

  const double load_after = load_average();
  std::string doc = fmt::format(
      "# The automatic planner at three budgets\n\n"
      "Generated by `build/bench/auto_bench --out docs` (from [BENCHMARKS.md](BENCHMARKS.md)).\n\n"
      "Machine: {} (load average {:.1f} when the run started, {:.1f} when it ended). Rates (`ferry::calibrate()` at the start of this run): {:.3g} FLOP/s, memory {:.3g} B/s, link {:.3g} B/s, other FLOPs {:.3g}/s, transcendentals {:.3g}/s, {:.2g} s per matrix product. "
      "Step time is the median of {} runs after a warm-up, every program of a model timed in the same rounds. Built-in policies are compiled without a limit (their "
      "plan, peak and time do not depend on the budget) and measured if they fit the largest budget; automatic "
      "is compiled under each budget. Estimated times are `cost_analysis().estimated_seconds` at the calibrated "
      "rates.\n\n"
      "## Summary\n\n{}\n## Per model\n\n{}",
      machine(), load_before, load_after, rates.compute_flops_per_s, rates.memory_bytes_per_s,
      rates.link_bandwidth_bytes_per_s, rates.vector_flops_per_s, rates.transcendentals_per_s, rates.dot_product_seconds,
      repeats,
      summary, tables);
  std::printf("%s", doc.c_str());
  if (!out_dir.empty()) std::ofstream(out_dir + "/AUTOMATIC.md") << doc;
  return 0;
}
