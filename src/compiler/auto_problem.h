// The automatic planner's choice, as a problem on one fixed schedule.
//
// Every candidate is a value the backward pass reads (or a group of them that one choice moves
// together, such as a scan's stacked residual); each has options (keep it on the device, offload
// it and fetch it back, recompute it) and must take exactly one. An option costs estimated seconds
// (recomputation FLOPs and bytes at the machine's rates; the part of its transfers that compute
// cannot hide) and holds device bytes over intervals of schedule positions. The rest of the program
// holds `base[p]` bytes at position p whatever is chosen. A choice fits when at every position
// base plus the chosen options' bytes is at most the limit; the best choice fits at the lowest
// total seconds.
//
// The compiler ships the greedy solver (solve_greedy); the exact solver (auto_exact.h, an integer
// program solved by CBC) is the reference tests and benchmarks hold it to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::compiler {

struct AutoInterval {
  int first = 0, last = 0;  // schedule positions, inclusive
  int64_t bytes = 0;        // device bytes held over them
};

struct AutoOption {
  enum class Kind : uint8_t { save, offload, recompute };
  Kind kind = Kind::save;
  double seconds = 0;
  std::vector<AutoInterval> live;
};

struct AutoCandidate {
  std::string label;  // for reports: "f32[8,128] output of tanh (named 'h')"
  std::vector<AutoOption> options;
};

struct AutoProblem {
  std::vector<int64_t> base;  // per schedule position
  std::vector<AutoCandidate> candidates;
  int64_t limit = 0;
};

struct AutoSolution {
  std::vector<int> choice;  // per candidate: the index of its option
  double seconds = 0;       // the chosen options' seconds
  int64_t peak = 0;         // the most bytes live at any position
  bool fits = false;
};

// The peak and seconds of a choice (every candidate's option index must be valid).
AutoSolution evaluate(const AutoProblem& problem, const std::vector<int>& choice);

// The compiler's solver: starts from the fastest option of every candidate and, while the peak is
// over the limit, changes the candidate whose next option lowers the bytes at the peak position
// for the fewest seconds per byte (counting no more bytes than the peak is over); then gives back,
// the largest saving first, changes the limit allows to undo; then tries exchanges (one candidate takes a slower option that frees bytes at the peak and
// the room goes back to others) while they lower the total, within a bounded amount of work. Fits
// whenever the smallest option of every candidate fits.
AutoSolution solve_greedy(const AutoProblem& problem);

}  // namespace ferry::compiler
