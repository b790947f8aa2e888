#include "compiler/auto_problem.h"

#include <algorithm>
#include <limits>

#include "ferry/error.h"

namespace ferry::compiler {
namespace {

using Live = std::vector<int64_t>;

void add(Live& live, const AutoOption& o, int64_t sign) {
  const int n = static_cast<int>(live.size());
  for (const AutoInterval& iv : o.live)
    for (int p = std::max(iv.first, 0); p <= std::min(iv.last, n - 1); ++p) live[static_cast<size_t>(p)] += sign * iv.bytes;
}

int64_t bytes_at(const AutoOption& o, int p) {
  int64_t b = 0;
  for (const AutoInterval& iv : o.live)
    if (iv.first <= p && p <= iv.last) b += iv.bytes;
  return b;
}

int peak_position(const Live& live) {
  return live.empty() ? -1 : static_cast<int>(std::max_element(live.begin(), live.end()) - live.begin());
}

Live live_of(const AutoProblem& problem, const std::vector<int>& choice) {
  Live live = problem.base;
  for (size_t c = 0; c < problem.candidates.size(); ++c)
    add(live, problem.candidates[c].options.at(static_cast<size_t>(choice[c])), 1);
  return live;
}

}  // namespace

AutoSolution evaluate(const AutoProblem& problem, const std::vector<int>& choice) {
  if (choice.size() != problem.candidates.size())
    throw Error(ErrorCode::internal, "auto plan: a choice per candidate is needed");
  AutoSolution s;
  s.choice = choice;
  for (size_t c = 0; c < choice.size(); ++c) s.seconds += problem.candidates[c].options.at(static_cast<size_t>(choice[c])).seconds;
  Live live = live_of(problem, choice);
  int p = peak_position(live);
  s.peak = p < 0 ? 0 : live[static_cast<size_t>(p)];
  s.fits = s.peak <= problem.limit;
  return s;
}

AutoSolution solve_greedy(const AutoProblem& problem) {
  const size_t nc = problem.candidates.size();
  std::vector<int> choice(nc, 0);
  for (size_t c = 0; c < nc; ++c) {
    const auto& opts = problem.candidates[c].options;
    if (opts.empty()) throw Error(ErrorCode::internal, "auto plan: a candidate without options");
    for (size_t o = 1; o < opts.size(); ++o)
      if (opts[o].seconds < opts[static_cast<size_t>(choice[c])].seconds) choice[c] = static_cast<int>(o);
  }
  Live live = live_of(problem, choice);
  // Lower the peak: at the peak position, the change with the fewest seconds per byte it removes
  // there, counting no more bytes than the peak is over the limit (ties: the most bytes). Counting
  // them all would prefer a large change with few seconds per byte to a small one that is enough
  // for fewer seconds.
  for (;;) {
    int p = peak_position(live);
    if (p < 0 || live[static_cast<size_t>(p)] <= problem.limit) break;
    const int64_t excess = live[static_cast<size_t>(p)] - problem.limit;
    double best_ratio = std::numeric_limits<double>::infinity();
    int64_t best_bytes = 0;
    size_t best_c = nc;
    int best_o = -1;
    for (size_t c = 0; c < nc; ++c) {
      const auto& opts = problem.candidates[c].options;
      const AutoOption& cur = opts[static_cast<size_t>(choice[c])];
      int64_t here = bytes_at(cur, p);
      if (here <= 0) continue;
      for (size_t o = 0; o < opts.size(); ++o) {
        int64_t removed = here - bytes_at(opts[o], p);
        if (removed <= 0) continue;
        double ratio = std::max(0.0, opts[o].seconds - cur.seconds) / static_cast<double>(std::min(removed, excess));
        if (ratio < best_ratio || (ratio == best_ratio && removed > best_bytes)) {
          best_ratio = ratio;
          best_bytes = removed;
          best_c = c;
          best_o = static_cast<int>(o);
        }
      }
    }
    if (best_c == nc) break;  // nothing lowers this position: no choice fits
    add(live, problem.candidates[best_c].options[static_cast<size_t>(choice[best_c])], -1);
    choice[best_c] = best_o;
    add(live, problem.candidates[best_c].options[static_cast<size_t>(best_o)], 1);
  }
  // Give back: a change made early may be more than the limit needs once later ones are made. Try
  // each candidate's faster options, the largest saving first, keeping those that still fit.
  if (*std::max_element(live.begin(), live.end()) <= problem.limit) {
    struct Undo {
      double saving;
      size_t c;
      int o;
    };
    std::vector<Undo> undo;
    for (size_t c = 0; c < nc; ++c) {
      const auto& opts = problem.candidates[c].options;
      for (size_t o = 0; o < opts.size(); ++o) {
        double saving = opts[static_cast<size_t>(choice[c])].seconds - opts[o].seconds;
        if (saving > 0) undo.push_back({saving, c, static_cast<int>(o)});
      }
    }
    std::sort(undo.begin(), undo.end(), [](const Undo& a, const Undo& b) { return a.saving > b.saving; });
    for (const Undo& u : undo) {
      const auto& opts = problem.candidates[u.c].options;
      const AutoOption& cur = opts[static_cast<size_t>(choice[u.c])];
      if (opts[static_cast<size_t>(u.o)].seconds >= cur.seconds) continue;  // an earlier undo went further
      Live trial = live;
      add(trial, cur, -1);
      add(trial, opts[static_cast<size_t>(u.o)], 1);
      if (*std::max_element(trial.begin(), trial.end()) > problem.limit) continue;
      live = std::move(trial);
      choice[u.c] = u.o;
    }
  }
  return evaluate(problem, choice);
}

}  // namespace ferry::compiler
