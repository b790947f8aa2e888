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


// Changes candidate c to option o if the limit allows: only positions where o holds bytes can go
// over (the others lose bytes or keep them), and live fits the limit before.
// `work` counts the positions it touches.
bool try_change(const AutoProblem& problem, std::vector<int>& choice, Live& live, size_t c, int o, int64_t& work) {
  const auto& opts = problem.candidates[c].options;
  const AutoOption& cur = opts[static_cast<size_t>(choice[c])];
  const AutoOption& next = opts[static_cast<size_t>(o)];
  for (const AutoOption* x : {&cur, &next})
    for (const AutoInterval& iv : x->live) work += 2 * (std::max(iv.last - iv.first, 0) + 1);
  add(live, cur, -1);
  add(live, next, 1);
  const int n = static_cast<int>(live.size());
  for (const AutoInterval& iv : next.live)
    for (int p = std::max(iv.first, 0); p <= std::min(iv.last, n - 1); ++p)
      if (live[static_cast<size_t>(p)] > problem.limit) {
        add(live, next, -1);
        add(live, cur, 1);
        return false;
      }
  choice[c] = o;
  return true;
}

// Tries every candidate's faster options (but `keep`'s), the largest saving first, keeping those
// that still fit. `live` must fit.
void give_back(const AutoProblem& problem, std::vector<int>& choice, Live& live, size_t keep, int64_t& work) {
  struct Undo {
    double saving;
    size_t c;
    int o;
  };
  std::vector<Undo> undo;
  for (size_t c = 0; c < choice.size(); ++c) {
    if (c == keep) continue;
    const auto& opts = problem.candidates[c].options;
    for (size_t o = 0; o < opts.size(); ++o) {
      double saving = opts[static_cast<size_t>(choice[c])].seconds - opts[o].seconds;
      if (saving > 0) undo.push_back({saving, c, static_cast<int>(o)});
    }
  }
  std::sort(undo.begin(), undo.end(), [](const Undo& a, const Undo& b) { return a.saving > b.saving; });
  for (const Undo& u : undo) {
    const auto& opts = problem.candidates[u.c].options;
    if (opts[static_cast<size_t>(u.o)].seconds >= opts[static_cast<size_t>(choice[u.c])].seconds) continue;  // an earlier undo went further
    try_change(problem, choice, live, u.c, u.o, work);
  }
}

double seconds_of(const AutoProblem& problem, const std::vector<int>& choice) {
  double s = 0;
  for (size_t c = 0; c < choice.size(); ++c) s += problem.candidates[c].options[static_cast<size_t>(choice[c])].seconds;
  return s;
}

// Exchanges: one candidate takes a slower option that holds fewer bytes at the peak, and the
// room it makes is given back to the others; kept when the total is lower. Ratios of seconds per
// byte pick many small changes where one larger one would do for fewer seconds; this finds it.
// Each exchange costs a give-back, so the exchanges tried are bounded by the positions they touch
// (kImproveWork: tens of milliseconds): problems of a few hundred candidates are searched fully,
// larger ones in part.
constexpr int64_t kImproveWork = 50'000'000;

void improve(const AutoProblem& problem, std::vector<int>& choice, Live& live) {
  double seconds = seconds_of(problem, choice);
  int64_t work = 0;
  for (int round = 0; round < 4 && work < kImproveWork; ++round) {
    const int p = peak_position(live);
    if (p < 0) return;
    bool better = false;
    for (size_t c = 0; c < choice.size(); ++c) {
      const auto& opts = problem.candidates[c].options;
      for (size_t o = 0; o < opts.size(); ++o) {
        const AutoOption& cur = opts[static_cast<size_t>(choice[c])];
        if (opts[o].seconds <= cur.seconds || bytes_at(opts[o], p) >= bytes_at(cur, p)) continue;
        if (work >= kImproveWork) return;
        std::vector<int> trial = choice;
        Live trial_live = live;
        work += static_cast<int64_t>(live.size() + choice.size());
        if (!try_change(problem, trial, trial_live, c, static_cast<int>(o), work)) continue;
        give_back(problem, trial, trial_live, c, work);
        double s = seconds_of(problem, trial);
        if (s < seconds * (1 - 1e-12)) {
          choice = std::move(trial);
          live = std::move(trial_live);
          seconds = s;
          better = true;
        }
      }
    }
    if (!better) return;
  }
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
  // A candidate never goes back to an option it left: options that hold their bytes at different
  // positions could otherwise trade the peak back and forth forever when no choice fits.
  std::vector<std::vector<char>> left(nc);
  for (size_t c = 0; c < nc; ++c) left[c].assign(problem.candidates[c].options.size(), 0);
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
        if (removed <= 0 || left[c][o]) continue;
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
    left[best_c][static_cast<size_t>(choice[best_c])] = 1;
    choice[best_c] = best_o;
    add(live, problem.candidates[best_c].options[static_cast<size_t>(best_o)], 1);
  }
  // Give back: a change made early may be more than the limit needs once later ones are made.
  if (*std::max_element(live.begin(), live.end()) <= problem.limit) {
    int64_t work = 0;
    give_back(problem, choice, live, nc, work);
    improve(problem, choice, live);
  }
  return evaluate(problem, choice);
}

}  // namespace ferry::compiler
