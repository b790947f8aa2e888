// The exact reference for the automatic planner's choice (auto_problem.h): the same problem as an
// integer program, solved by CBC. Tests and benchmarks hold solve_greedy to it; the compiler never
// calls it (it is not part of libferry: the target ferry_exact links it, and only where CBC is
// installed).
//
// The program: a binary x[c][o] per option of every candidate, exactly one per candidate; at every
// schedule position where the choice matters, base[p] plus the chosen options' bytes at p is at most
// the limit; minimize the chosen options' seconds. Rows are written in bytes above each candidate's
// smallest option at that position, positions every choice fits are left out, and each row is
// scaled to coefficients of at most 1 with half a byte of slack on its bound (bytes are integers);
// seconds are scaled to at most 1 per option. CBC's feasibility tolerance is a fraction of a row,
// which on rows of gigabytes is more than a byte: so every choice CBC returns is checked in integer
// bytes, and one over the limit is cut off by a cover inequality (those of its options that
// together exceed the room at a position cannot all be chosen) and the program solved again. A
// cover removes only choices over the limit, so the answer is exact, and never over the limit.
#pragma once

#include <cstdint>

#include "compiler/auto_problem.h"

namespace ferry::compiler {

struct ExactSolution : AutoSolution {
  enum class Status : uint8_t {
    optimal,     // the choice fits and no fitting choice has fewer seconds (up to the gap below)
    infeasible,  // proven: no choice fits; `choice` is empty
    feasible,    // the time limit ran out with a fitting choice, not proven optimal
    unknown,     // the time limit ran out before any fitting choice was found; `choice` is empty
  };
  Status status = Status::unknown;
  bool optimal() const { return status == Status::optimal; }
  int64_t rows = 0;           // constraint rows given to CBC (positions the choice matters at)
  int64_t nodes = 0;          // branch-and-bound nodes CBC searched, over all its runs
  int64_t covers = 0;         // cover inequalities added for choices CBC's tolerance let over
  double solve_seconds = 0;   // wall time of the whole call
};

// Solves `problem` to optimality, or until `time_limit_seconds` of CBC's search. "Optimal" means
// within 1e-9 of the largest option's seconds (CBC's gap, on the scaled objective) of the optimum.
// Throws INTERNAL for a candidate without options.
ExactSolution solve_exact(const AutoProblem& problem, double time_limit_seconds);

const char* to_string(ExactSolution::Status status);

}  // namespace ferry::compiler
