// How good ferry's memory plans are, against two references:
// 1. The exact optimum (compiler/optimal_schedule.h) on random programs: for every region the
//    reference can solve, the device peak of ferry's schedule over the minimum over every valid
//    order; the distribution over programs (each counted at its worst region) and the worst cases.
// 2. JAX's memory_analysis() on the shared models (scan_mlp, gpt at the benchmark configurations,
//    every benchmark policy). JAX's temp bytes are read from the table bench/peers/run.sh wrote into
//    docs/BENCHMARKS.md (this bench does not run JAX); JAX's peak is estimated as the same
//    argument and output bytes as ferry's plus JAX's temp bytes.
//   build/bench/plan_quality [--programs 1000] [--first-seed 1] [--max-states N] [--last-pass schedule]
//                            [--no-models] [--jax-table FILE]
//   build/bench/plan_quality --show SEED   (a program's regions in ferry's order and an optimal one)
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "compiler/memory_plan.h"
#include "compiler/optimal_schedule.h"
#include "ir/parser.h"
#include "property/schedule_quality.h"
#include "driver/lowered.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;
namespace pr = ferry::property;

namespace {

// Cells of a markdown table row: "| a | b |" -> {"a", "b"}.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  std::getline(in, cell, '|');
  while (std::getline(in, cell, '|')) {
    size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// JAX's temp bytes by (model, policy), from the table whose header has a "JAX temp (MiB)" column.
std::map<std::pair<std::string, std::string>, int64_t> jax_temps(const std::string& path) {
  std::map<std::pair<std::string, std::string>, int64_t> out;
  std::ifstream in(path);
  std::string line;
  int column = -1;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      column = -1;
      continue;
    }
    std::vector<std::string> row = cells(line);
    if (column < 0) {
      for (size_t i = 0; i < row.size(); ++i)
        if (row[i] == "JAX temp (MiB)") column = static_cast<int>(i);
      continue;
    }
    if (row.size() <= static_cast<size_t>(column) || row[0].rfind("---", 0) == 0) continue;
    try {
      out[{row[0], row[1]}] = static_cast<int64_t>(std::stod(row[static_cast<size_t>(column)]) * 1048576.0 + 0.5);
    } catch (const std::exception&) {  // "n/a" and the like: no figure
    }
  }
  return out;
}

// Regions of a compiled model the reference can solve, as "solved/total, worst ratio (where)".
std::string model_regions(const fy::Compiled& c) {
  auto program = fy::parse_program(c.as_text()).impl().program;
  auto plan = fy::compiler::plan_memory(*program, false);
  int total = 0, solved = 0;
  double worst = 1;
  std::string worst_where;
  std::function<void(const fy::ir::Program&, const fy::compiler::MemoryPlan&, const std::string&)> visit =
      [&](const fy::ir::Program& p, const fy::compiler::MemoryPlan& pl, const std::string& where) {
        ++total;
        if (auto best = fy::compiler::optimal_schedule(p, pl, pr::QualityOptions{}.limits); best && best->peak > 0) {
          ++solved;
          double ratio = static_cast<double>(pl.peak_live[0]) / static_cast<double>(best->peak);
          if (ratio > worst) {
            worst = ratio;
            worst_where = fmt::format(" in {} ({} equations: {} bytes, optimum {})", where, p.equations.size(),
                                      pl.peak_live[0], best->peak);
          }
        }
        for (size_t e = 0; e < p.equations.size(); ++e)
          if (pl.bodies[e])
            visit(*p.equations[e].subprograms.at(0), *pl.bodies[e]->plan,
                  fmt::format("{}/{}:{}", where, e, fy::primitive_name(p.equations[e].prim)));
      };
  visit(*program, *plan, "main");
  return solved ? fmt::format("{}/{} regions solved, worst {:.3f}x{}", solved, total, worst, worst_where)
                : fmt::format("0/{} regions in reach", total);
}

void compare_models(const std::string& jax_table) {
  fm::ScanMlpConfig sc;  // the configurations suite_bench (and so docs/BENCHMARKS.md) measures
  fm::GptConfig gc;
  auto jax = jax_temps(jax_table);
  // The figures hold only for the configurations they were measured with, which the table's page
  // states in suite_bench's words.
  std::ifstream in(jax_table);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string& config :
       {fmt::format("scan_mlp: batch {}, width {}, hidden {}, {} layers", sc.batch, sc.width, sc.hidden, sc.layers),
        fmt::format("gpt: d_model {}, {} heads, sequence {}, batch {}, {} layers, vocabulary {}", gc.d_model, gc.heads,
                    gc.seq, gc.batch, gc.layers, gc.vocab)})
    if (page.find(config) == std::string::npos) {
      std::printf("\n%s does not state the configuration \"%s\": JAX's figures are not compared\n", jax_table.c_str(),
                  config.c_str());
      jax.clear();
    }
  std::printf("\nferry against JAX's memory_analysis() (JAX temp bytes from %s, written by bench/peers/run.sh;\n"
              "JAX peak estimated as ferry's argument + output bytes + JAX temp):\n\n",
              jax_table.c_str());
  std::printf("| model | policy | ferry peak (MiB) | ferry temp (MiB) | JAX temp (MiB) | ferry/JAX temp "
              "| JAX peak est. (MiB) | ferry/JAX peak | exact reference |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  auto row = [&](const std::string& model, const std::string& policy, const fy::Compiled& c) {
    fy::MemoryStats m = c.memory_analysis();
    auto it = jax.find({model, policy});
    std::string jt = "n/a", tr = "n/a", jp = "n/a", pk = "n/a";
    if (it != jax.end()) {
      int64_t jax_peak = m.argument_size_in_bytes + m.output_size_in_bytes + it->second;
      jt = fmt::format("{:.2f}", it->second / 1048576.0);
      tr = fmt::format("{:.2f}", static_cast<double>(m.temp_size_in_bytes) / static_cast<double>(it->second));
      jp = fmt::format("{:.2f}", jax_peak / 1048576.0);
      pk = fmt::format("{:.2f}", static_cast<double>(m.peak_memory_in_bytes) / static_cast<double>(jax_peak));
    }
    std::printf("| %s | %s | %.2f | %.2f | %s | %s | %s | %s | %s |\n", model.c_str(), policy.c_str(),
                m.peak_memory_in_bytes / 1048576.0, m.temp_size_in_bytes / 1048576.0, jt.c_str(), tr.c_str(), jp.c_str(),
                pk.c_str(), model_regions(c).c_str());
    std::fflush(stdout);
  };
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::scan_mlp_names()))
    row("scan_mlp", p.name, fm::compile_scan_mlp_grad(sc, p.policy));
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::gpt_names()))
    row("gpt", p.name, fm::compile_gpt_train_step(gc, p.policy));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry's plans against the exact optimum (random programs) and JAX (shared models)"};
  int programs = 1000;
  uint32_t first = 1;
  bool no_models = false;
  std::string jax_table = std::string(FERRY_SOURCE_DIR) + "/docs/BENCHMARKS.md";
  app.add_option("--programs", programs, "random programs to compare with the optimum (seeds on until so many are)");
  app.add_option("--first-seed", first, "the first seed");
  pr::QualityOptions options;
  app.add_option("--max-states", options.limits.max_states,
                 "the reference's limit on kept sets per region (more: larger regions, slower)");
  app.add_option("--last-pass", options.last_pass,
                 "hold the order after this pass to the optimum (e.g. schedule); default: the whole pipeline");
  app.add_flag("--no-models", no_models, "skip the models (and JAX)");
  std::vector<uint32_t> show;
  app.add_option("--show", show, "print these seeds' regions in ferry's order and in an optimal order, then stop");
  app.add_option("--jax-table", jax_table, "docs/BENCHMARKS.md with the peers' table (JAX temp bytes)");
  CLI11_PARSE(app, argc, argv);
  for (uint32_t seed : show) {
    std::string text;
    pr::RandomProgram p = pr::generate_program(seed, pr::quality_size_for(seed));
    pr::ProgramQuality q = pr::measure_schedule(p, options, &text);
    std::printf("seed %u size %d: %.3fx%s\n%s%s", seed, p.size, q.ratio(), q.error.empty() ? "" : (" " + q.error).c_str(),
                pr::describe(p).c_str(), text.c_str());
  }
  if (!show.empty()) return 0;

  std::vector<pr::ProgramQuality> results = pr::measure_programs(first, programs, options);
  pr::QualitySummary s = pr::summarize(results);
  std::printf("random programs: seeds %u..%u, gradients through the compiler's pipeline%s\n%s", first,
              first + static_cast<uint32_t>(results.size()) - 1,
              options.last_pass.empty() ? "" : (" up to " + options.last_pass).c_str(), pr::describe(s).c_str());
  int model_errors = 0;
  for (const pr::ProgramQuality& q : results)
    for (const std::string& e : q.model_errors)
      if (model_errors++ < 5) std::printf("  seed %u: %s\n", q.seed, e.c_str());
  // Packing: the arena holds the live buffers at their offsets, so it can exceed the live peak.
  std::vector<double> packing;
  for (const pr::ProgramQuality& q : results)
    for (const pr::RegionQuality& r : q.regions)
      if (r.ferry > 0) packing.push_back(static_cast<double>(r.arena) / static_cast<double>(r.ferry));
  std::sort(packing.begin(), packing.end());
  if (!packing.empty())
    std::printf("  packing (arena over live peak, per region): p50 %.3f  p95 %.3f  max %.3f\n",
                packing[packing.size() / 2], packing[packing.size() * 95 / 100], packing.back());
  if (model_errors) std::printf("  REFERENCE DISAGREES WITH THE PLAN in %d places (a bug)\n", model_errors);
  if (!no_models) compare_models(jax_table);
  return model_errors ? 1 : 0;
}
