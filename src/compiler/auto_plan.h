// The automatic planner: decides, for every value the backward pass of a policies::automatic
// checkpoint recomputes (compiler/twins.h), whether to save it, offload it to host memory and fetch
// it back, or recompute it, so that the plan fits the device memory limit at the lowest estimated
// step time.
//
// Without a limit it saves everything (the fastest plan). With one it plans the all-saved program
// (the later passes and buffer assignment, exactly as compile runs them), and when that is over
// the limit it poses the choice on that plan's schedule (auto_problem.h): each candidate holds its
// bytes over the positions it is live in each option; recomputation costs its chain's work at the
// machine's rates, an offload the part of its two transfers that compute cannot hide (estimated
// from the share of the step's compute time all candidates' transfers would take). The greedy
// solver's choice is applied and planned again; if the real plan is still over the limit, the
// problem's limit is lowered by the difference and solved again. If no choice fits,
// RESOURCE_EXHAUSTED says what the smallest plan found needs and what in it is largest.
//
// Decisions of explicit policies are kept: only equations an automatic policy left open change.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "compiler/auto_problem.h"
#include "compiler/memory_plan.h"
#include "compiler/target.h"
#include "ferry/options.h"
#include "ir/program.h"

namespace ferry::compiler {

// What runs after the planner, as compile runs it: the remaining passes (on a copy) and buffer
// assignment. Returns the final program and its plan.
using PlanTail = std::function<std::pair<std::shared_ptr<ir::Program>, std::shared_ptr<const MemoryPlan>>(
    const ir::Program& program)>;

struct AutoPlanReport {
  int candidates = 0;
  int saved = 0, offloaded = 0, recomputed = 0;
  int attempts = 0;       // plans made
  int64_t peak = 0;       // the chosen plan's device peak
  int64_t all_saved_peak = 0;  // the peak with every candidate saved, where the choice starts
  int state_offloaded = 0;  // arrays of carried state the plan keeps in host memory between calls
  AutoProblem problem;    // as posed on the all-saved plan (empty when that plan fit)
  std::vector<int> choice;
};

// Rewrites `program` (after the clean-up passes) with the planner's choices. Returns whether it
// changed anything. The choice is posed on the all-saved program as `pose_tail` plans it (null:
// `tail`): without fusion, whose groups give the values the planner chooses for new names; every
// choice is then checked with `tail`, exactly as compile will plan it.
//
// Under fit_to_limit, where no choice of the values fits, the planner also keeps state the step
// carries from call to call (donated arguments whose new value the step returns: optimizer
// moments) in host memory between calls, as few arrays as fit (`donated`: per top-level input;
// compiler/offload_state.h).
bool plan_automatic(ir::Program& program, const Target& target, const PlanTail& tail,
                    AutoPlanReport* report = nullptr, const PlanTail* pose_tail = nullptr,
                    std::span<const char> donated = {});

}  // namespace ferry::compiler
