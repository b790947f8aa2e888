#include "compiler/auto_exact.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include <CbcModel.hpp>
#include <CglClique.hpp>
#include <CglGomory.hpp>
#include <CglKnapsackCover.hpp>
#include <CglProbing.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

#include "ferry/error.h"

namespace ferry::compiler {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One constraint row: bytes above each candidate's smallest option at a position, at most `room`.
struct Row {
  std::vector<std::pair<int, int64_t>> entries;  // (column, bytes), bytes > 0, columns ascending
  int64_t room = 0;                              // limit - base - the smallest options' bytes
};

// The integer program in bytes and seconds, before scaling.
struct Program {
  std::vector<int> first_column;  // per candidate; its options are columns first..first+options-1
  int columns = 0;
  std::vector<double> cost;       // per column: seconds above the candidate's fastest option
  std::vector<Row> rows;
  bool infeasible = false;        // a position where even the smallest options exceed the limit
};

Program build(const AutoProblem& problem) {
  const int n = static_cast<int>(problem.base.size());
  const size_t nc = problem.candidates.size();
  Program ip;
  ip.first_column.resize(nc);
  for (size_t c = 0; c < nc; ++c) {
    const auto& opts = problem.candidates[c].options;
    if (opts.empty()) throw Error(ErrorCode::internal, "auto plan: a candidate without options");
    ip.first_column[c] = ip.columns;
    double fastest = opts[0].seconds;
    for (const AutoOption& o : opts) fastest = std::min(fastest, o.seconds);
    for (const AutoOption& o : opts) ip.cost.push_back(o.seconds - fastest);
    ip.columns += static_cast<int>(opts.size());
  }
  // Per position: the room left by base and every candidate's smallest option there, the most the
  // candidates can add above that, and the entries.
  std::vector<int64_t> room(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) room[static_cast<size_t>(p)] = problem.limit - problem.base[static_cast<size_t>(p)];
  std::vector<int64_t> most(static_cast<size_t>(n), 0);
  std::vector<Row> at(static_cast<size_t>(n));
  std::vector<std::vector<int64_t>> bytes;  // per option of one candidate: bytes per position
  for (size_t c = 0; c < nc; ++c) {
    const auto& opts = problem.candidates[c].options;
    bytes.assign(opts.size(), std::vector<int64_t>(static_cast<size_t>(n) + 1, 0));
    bool any = false;
    for (size_t o = 0; o < opts.size(); ++o) {
      std::vector<int64_t>& b = bytes[o];
      for (const AutoInterval& iv : opts[o].live) {  // clamped to the schedule as evaluate() does
        int first = std::max(iv.first, 0), last = std::min(iv.last, n - 1);
        if (first > last || iv.bytes == 0) continue;
        b[static_cast<size_t>(first)] += iv.bytes;
        b[static_cast<size_t>(last) + 1] -= iv.bytes;
        any = true;
      }
      for (int p = 1; p < n; ++p) b[static_cast<size_t>(p)] += b[static_cast<size_t>(p) - 1];
    }
    if (!any) continue;
    for (int p = 0; p < n; ++p) {
      int64_t lo = bytes[0][static_cast<size_t>(p)], hi = lo;
      for (size_t o = 1; o < opts.size(); ++o) {
        lo = std::min(lo, bytes[o][static_cast<size_t>(p)]);
        hi = std::max(hi, bytes[o][static_cast<size_t>(p)]);
      }
      room[static_cast<size_t>(p)] -= lo;
      if (hi == lo) continue;
      most[static_cast<size_t>(p)] += hi - lo;
      for (size_t o = 0; o < opts.size(); ++o)
        if (int64_t above = bytes[o][static_cast<size_t>(p)] - lo; above > 0)
          at[static_cast<size_t>(p)].entries.emplace_back(ip.first_column[c] + static_cast<int>(o), above);
    }
  }
  // Rows that can bind; positions with the same entries need only the one with the least room.
  std::map<std::vector<std::pair<int, int64_t>>, int64_t> unique;
  for (int p = 0; p < n; ++p) {
    const size_t i = static_cast<size_t>(p);
    if (room[i] < 0) {
      ip.infeasible = true;
      return ip;
    }
    if (most[i] <= room[i]) continue;  // every choice fits here
    auto [it, inserted] = unique.emplace(std::move(at[i].entries), room[i]);
    if (!inserted) it->second = std::min(it->second, room[i]);
  }
  for (auto& [entries, r] : unique) ip.rows.push_back(Row{entries, r});
  return ip;
}

// Each candidate's fastest option (the first of equals).
std::vector<int> fastest_choice(const AutoProblem& problem) {
  std::vector<int> choice(problem.candidates.size(), 0);
  for (size_t c = 0; c < choice.size(); ++c) {
    const auto& opts = problem.candidates[c].options;
    for (size_t o = 1; o < opts.size(); ++o)
      if (opts[o].seconds < opts[static_cast<size_t>(choice[c])].seconds) choice[c] = static_cast<int>(o);
  }
  return choice;
}

struct CbcResult {
  ExactSolution::Status status = ExactSolution::Status::unknown;
  std::vector<int> choice;
  int64_t nodes = 0;
};

// One CBC run. Rows are scaled to coefficients of at most 1 and get half a byte of slack (choices
// are integral in bytes). `covers` are sets of columns that together exceed a row: at most all but
// one of each can be chosen.
CbcResult run_cbc(const AutoProblem& problem, const Program& ip, const std::vector<std::vector<int>>& covers,
                  double seconds) {
  const int nrows = static_cast<int>(ip.rows.size() + problem.candidates.size() + covers.size());
  CoinPackedMatrix matrix(false, 0, 0);  // row-ordered
  matrix.setDimensions(0, ip.columns);
  std::vector<double> row_lo, row_hi;
  row_lo.reserve(static_cast<size_t>(nrows));
  row_hi.reserve(static_cast<size_t>(nrows));
  std::vector<int> index;
  std::vector<double> value;
  for (size_t c = 0; c < problem.candidates.size(); ++c) {  // exactly one option per candidate
    index.clear();
    value.clear();
    for (size_t o = 0; o < problem.candidates[c].options.size(); ++o) {
      index.push_back(ip.first_column[c] + static_cast<int>(o));
      value.push_back(1.0);
    }
    matrix.appendRow(static_cast<int>(index.size()), index.data(), value.data());
    row_lo.push_back(1.0);
    row_hi.push_back(1.0);
  }
  for (const Row& r : ip.rows) {
    double bound = static_cast<double>(r.room) + 0.5;
    double scale = bound;
    for (const auto& [col, b] : r.entries) scale = std::max(scale, static_cast<double>(b));
    index.clear();
    value.clear();
    for (const auto& [col, b] : r.entries) {
      index.push_back(col);
      value.push_back(static_cast<double>(b) / scale);
    }
    matrix.appendRow(static_cast<int>(index.size()), index.data(), value.data());
    row_lo.push_back(-COIN_DBL_MAX);
    row_hi.push_back(bound / scale);
  }
  for (const std::vector<int>& cover : covers) {
    value.assign(cover.size(), 1.0);
    matrix.appendRow(static_cast<int>(cover.size()), cover.data(), value.data());
    row_lo.push_back(-COIN_DBL_MAX);
    row_hi.push_back(static_cast<double>(cover.size()) - 1.0);
  }
  double cost_scale = 0;
  for (double s : ip.cost) cost_scale = std::max(cost_scale, s);
  std::vector<double> objective(ip.cost.size(), 0.0);
  if (cost_scale > 0)
    for (size_t j = 0; j < ip.cost.size(); ++j) objective[j] = ip.cost[j] / cost_scale;
  std::vector<double> col_lo(static_cast<size_t>(ip.columns), 0.0), col_hi(static_cast<size_t>(ip.columns), 1.0);

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.setHintParam(OsiDoReducePrint, true, OsiHintTry);
  solver.loadProblem(matrix, col_lo.data(), col_hi.data(), objective.data(), row_lo.data(), row_hi.data());
  for (int j = 0; j < ip.columns; ++j) solver.setInteger(j);
  // Tight, though a byte of a row of 1e10 bytes is below any tolerance: solve_exact checks every
  // choice in integers and cuts off those over the limit.
  solver.setDblParam(OsiPrimalTolerance, 1e-9);

  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.solver()->messageHandler()->setLogLevel(0);
  model.setMaximumSeconds(std::max(seconds, 0.01));
  model.setIntegerTolerance(1e-8);
  model.setAllowableGap(1e-9);
  model.setAllowableFractionGap(0.0);
  model.setCutoffIncrement(1e-10);
  CglProbing probing;
  probing.setUsingObjective(true);
  probing.setMaxPass(3);
  probing.setMaxProbe(100);
  probing.setMaxLook(50);
  CglGomory gomory;
  CglKnapsackCover knapsack;
  CglClique clique;
  clique.setStarCliqueReport(false);
  clique.setRowCliqueReport(false);
  model.addCutGenerator(&probing, -1, "Probing");
  model.addCutGenerator(&gomory, -1, "Gomory");
  model.addCutGenerator(&knapsack, -1, "KnapsackCover");
  model.addCutGenerator(&clique, -1, "Clique");
  model.initialSolve();
  model.branchAndBound();

  CbcResult out;
  out.nodes = model.getNodeCount();
  const double* x = model.bestSolution();
  if (x) {
    out.choice.assign(problem.candidates.size(), -1);
    for (size_t c = 0; c < problem.candidates.size(); ++c) {
      double best = -1;
      for (size_t o = 0; o < problem.candidates[c].options.size(); ++o) {
        double v = x[ip.first_column[c] + static_cast<int>(o)];
        if (v > best) {
          best = v;
          out.choice[c] = static_cast<int>(o);
        }
      }
    }
  }
  if (model.isProvenOptimal() && x)
    out.status = ExactSolution::Status::optimal;
  else if (model.isProvenInfeasible())
    out.status = ExactSolution::Status::infeasible;
  else
    out.status = x ? ExactSolution::Status::feasible : ExactSolution::Status::unknown;
  return out;
}

}  // namespace

ExactSolution solve_exact(const AutoProblem& problem, double time_limit_seconds) {
  const Clock::time_point t0 = Clock::now();
  ExactSolution s;
  auto finish = [&](ExactSolution::Status status, const std::vector<int>& choice) {
    if (!choice.empty() || problem.candidates.empty()) static_cast<AutoSolution&>(s) = evaluate(problem, choice);
    s.status = status;
    s.solve_seconds = since(t0);
    return s;
  };
  Program ip = build(problem);
  if (ip.infeasible) return finish(ExactSolution::Status::infeasible, {});
  s.rows = static_cast<int64_t>(ip.rows.size());
  // No row can bind (or the fastest options fit anyway): the fastest options are the optimum.
  std::vector<int> fastest = fastest_choice(problem);
  if (ip.rows.empty() || evaluate(problem, fastest).fits) return finish(ExactSolution::Status::optimal, fastest);
  // CBC accepts a row violated within its tolerance, which on rows of gigabytes is more than a
  // byte. Every choice is checked in integers; one over the limit at some row is cut off by a
  // cover: the options it chose there that exceed the room together, of which at most all but one
  // may be chosen. A cover excludes only choices over the limit, so an optimum of the program with
  // covers that fits is an optimum of the problem.
  std::vector<std::vector<int>> covers;
  std::vector<char> chosen(static_cast<size_t>(ip.columns));
  for (;;) {
    CbcResult r = run_cbc(problem, ip, covers, time_limit_seconds - since(t0));
    s.nodes += r.nodes;
    if (r.choice.empty()) return finish(r.status, {});
    std::fill(chosen.begin(), chosen.end(), 0);
    for (size_t c = 0; c < r.choice.size(); ++c) chosen[static_cast<size_t>(ip.first_column[c] + r.choice[c])] = 1;
    size_t before = covers.size();
    for (const Row& row : ip.rows) {
      std::vector<std::pair<int64_t, int>> in;  // (bytes, column) chosen at this row
      int64_t total = 0;
      for (const auto& [col, b] : row.entries)
        if (chosen[static_cast<size_t>(col)]) {
          in.emplace_back(b, col);
          total += b;
        }
      if (total <= row.room) continue;
      // A minimal cover: leave out the smallest while the rest still exceeds the room.
      std::sort(in.begin(), in.end());
      size_t k = 0;
      while (k < in.size() && total - in[k].first > row.room) total -= in[k++].first;
      std::vector<int> cover;
      for (size_t j = k; j < in.size(); ++j) cover.push_back(in[j].second);
      std::sort(cover.begin(), cover.end());
      covers.push_back(std::move(cover));
    }
    s.covers = static_cast<int64_t>(covers.size());
    if (covers.size() == before) {
      if (!evaluate(problem, r.choice).fits)
        throw Error(ErrorCode::internal, "auto plan: the exact solver's rows disagree with evaluate()");
      return finish(r.status, r.choice);
    }
    if (since(t0) >= time_limit_seconds) return finish(ExactSolution::Status::unknown, {});
  }
}

const char* to_string(ExactSolution::Status status) {
  switch (status) {
    case ExactSolution::Status::optimal: return "optimal";
    case ExactSolution::Status::infeasible: return "infeasible";
    case ExactSolution::Status::feasible: return "feasible";
    case ExactSolution::Status::unknown: return "unknown";
  }
  return "?";
}

}  // namespace ferry::compiler
