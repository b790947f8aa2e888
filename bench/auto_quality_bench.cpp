// How good the automatic planner's greedy solver is, against the exact reference (an integer
// program solved by CBC, compiler/auto_exact.h), on random problems of a training step's shape
// (tests/compiler/random_auto_problem.h: a chain of layers whose activations are saved, offloaded
// or recomputed, the limit between the everything-recomputed and everything-saved peaks).
// Prints the distribution of greedy seconds over exact seconds, the worst problems, and the solve
// times of both.
//   build/bench/auto_quality_bench [--problems 1000] [--first-seed 1] [--min-layers 4] [--max-layers 48]
//                                  [--time-limit 60]
//   build/bench/auto_quality_bench --no-exact --min-layers 1000 --max-layers 1000 --problems 3   (greedy times)
//   build/bench/auto_quality_bench --show SEED   (the problem, and each candidate's greedy and exact option)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/auto_exact.h"
#include "compiler/random_auto_problem.h"

namespace fc = ferry::compiler;

namespace {

using Clock = std::chrono::steady_clock;

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

void print_distribution(const char* what, std::vector<double> v, const char* unit, double scale) {
  std::sort(v.begin(), v.end());
  std::printf("  %-22s p50 %9.3f  p90 %9.3f  p95 %9.3f  p99 %9.3f  max %9.3f %s\n", what, quantile(v, 0.5) * scale,
              quantile(v, 0.9) * scale, quantile(v, 0.95) * scale, quantile(v, 0.99) * scale,
              (v.empty() ? 0 : v.back()) * scale, unit);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the automatic planner's greedy solver against the exact optimum (CBC) on random problems"};
  int problems = 1000;
  uint32_t first = 1;
  double time_limit = 60;
  ferry::testing::RandomAutoProblemOptions options;
  app.add_option("--problems", problems, "random problems");
  app.add_option("--first-seed", first, "the first seed");
  app.add_option("--min-layers", options.min_layers, "fewest layers of a problem's chain");
  app.add_option("--max-layers", options.max_layers, "most layers of a problem's chain");
  app.add_option("--time-limit", time_limit, "CBC's time limit per problem, seconds");
  bool no_exact = false;
  app.add_flag("--no-exact", no_exact, "time the greedy solver only (for chains too long for CBC)");
  std::vector<uint32_t> show;
  app.add_option("--show", show, "print these seeds' problems with the greedy and the exact choice, then stop");
  CLI11_PARSE(app, argc, argv);
  const char* kinds[] = {"save", "offload", "recompute"};
  for (uint32_t seed : show) {
    fc::AutoProblem p = ferry::testing::random_auto_problem(seed, options);
    fc::AutoSolution g = fc::solve_greedy(p);
    fc::ExactSolution e = fc::solve_exact(p, time_limit);
    std::printf("seed %u: %zu positions, %zu candidates, limit %lld\n  greedy %.6g s peak %lld%s\n  exact  %.6g s peak "
                "%lld (%s)\n",
                seed, p.base.size(), p.candidates.size(), static_cast<long long>(p.limit), g.seconds,
                static_cast<long long>(g.peak), g.fits ? "" : " (over)", e.seconds, static_cast<long long>(e.peak),
                fc::to_string(e.status));
    for (size_t c = 0; c < p.candidates.size(); ++c) {
      const auto& opts = p.candidates[c].options;
      std::printf("  %-9s %10lld bytes:", p.candidates[c].label.c_str(),
                  static_cast<long long>(opts[0].live.empty() ? 0 : opts[0].live[0].bytes));
      for (size_t o = 0; o < opts.size(); ++o)
        std::printf("  %s %.3g s%s%s", kinds[static_cast<int>(opts[o].kind)], opts[o].seconds,
                    g.choice[c] == static_cast<int>(o) ? " G" : "",
                    !e.choice.empty() && e.choice[c] == static_cast<int>(o) ? " E" : "");
      std::printf("\n");
    }
  }
  if (!show.empty()) return 0;

  struct Result {
    uint32_t seed;
    double ratio;
    int layers;
  };
  std::vector<Result> results;
  std::vector<double> ratios, greedy_times, exact_times, nodes;
  int not_optimal = 0, greedy_over = 0, exact_over = 0;
  for (uint32_t seed = first; seed < first + static_cast<uint32_t>(problems); ++seed) {
    fc::AutoProblem p = ferry::testing::random_auto_problem(seed, options);
    // The greedy solver takes microseconds: time enough repeats to read.
    Clock::time_point t0 = Clock::now();
    int repeats = 0;
    fc::AutoSolution g;
    do {
      g = fc::solve_greedy(p);
      ++repeats;
    } while (std::chrono::duration<double>(Clock::now() - t0).count() < 0.002);
    greedy_times.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / repeats);
    if (no_exact) {
      if (!g.fits) ++greedy_over;
      continue;
    }
    fc::ExactSolution e = fc::solve_exact(p, time_limit);
    exact_times.push_back(e.solve_seconds);
    nodes.push_back(static_cast<double>(e.nodes));
    if (!e.optimal()) {
      ++not_optimal;
      std::printf("  seed %u: exact %s\n", seed, fc::to_string(e.status));
      continue;
    }
    if (!e.fits) ++exact_over;  // the generator's limit always admits a choice
    if (!g.fits) {
      ++greedy_over;
      std::printf("  seed %u: greedy does not fit (peak %lld, limit %lld)\n", seed, static_cast<long long>(g.peak),
                  static_cast<long long>(p.limit));
      continue;
    }
    double ratio = e.seconds > 0 ? g.seconds / e.seconds : (g.seconds > 0 ? std::numeric_limits<double>::infinity() : 1.0);
    ratios.push_back(ratio);
    results.push_back({seed, ratio, static_cast<int>(p.candidates.size())});
  }
  std::sort(ratios.begin(), ratios.end());
  const auto within = [&](double bound) {
    return 100.0 * static_cast<double>(std::count_if(ratios.begin(), ratios.end(), [&](double r) { return r <= bound; })) /
           static_cast<double>(std::max<size_t>(ratios.size(), 1));
  };
  std::printf("random chains: seeds %u..%u, %d..%d layers; %zu compared (exact not proven optimal: %d, exact over the "
              "limit: %d, greedy over the limit: %d)\n",
              first, first + static_cast<uint32_t>(problems) - 1, options.min_layers, options.max_layers, ratios.size(),
              not_optimal, exact_over, greedy_over);
  print_distribution("greedy/exact seconds", ratios, "", 1);
  std::printf("  within 0.1%%: %.1f%%  within 1%%: %.1f%%  within 2%%: %.1f%%  within 10%%: %.1f%%\n", within(1.001),
              within(1.01), within(1.02), within(1.10));
  std::sort(results.begin(), results.end(), [](const Result& a, const Result& b) { return a.ratio > b.ratio; });
  std::printf("  worst:");
  for (size_t i = 0; i < std::min<size_t>(5, results.size()); ++i)
    std::printf(" seed %u (%d layers) %.4f%s", results[i].seed, results[i].layers, results[i].ratio, i + 1 < 5 ? ";" : "");
  std::printf("\nsolve times per problem:\n");
  print_distribution("greedy", greedy_times, "ms", 1e3);
  print_distribution("exact (CBC)", exact_times, "ms", 1e3);
  print_distribution("exact: B&B nodes", nodes, "", 1);
  return 0;
}
