// An exact reference for the scheduler: the lowest device peak that any valid order of one region
// (a program, or one body) can have, and an order that has it. An analysis, not a pass: it changes
// nothing, and exists to hold schedule_for_memory to account (tests, bench/plan_quality).
//
// Glossary
// - region: the equations of one program or body, reordered as a whole; bodies keep their order.
// - valid order: a permutation of the equations in which every equation comes after the producers
//   of its inputs (the only constraint the scheduler and the verifier place on an order).
// - device peak: the largest sum of live device buffer bytes at one position of the order, i.e.
//   MemoryPlan::peak_live for the device kind. Arguments and external values are the same for
//   every order and are not in it; nor is the arena's fragmentation (the packing of buffers into
//   offsets, which only adds to it: MemoryPlan::arena_size >= peak_live).
//
// The memory model is the plan's (memory_plan.h), re-derived for any order:
// - Where each value lives (argument, external, arena of some kind) and which copies a scan runner
//   does instead of the body are read from `plan`, a plan of the same region in any order: they do
//   not depend on the order.
// - An arena value's buffer (its bytes rounded up to kBufferAlignment) is live from its producer's
//   position to its last reader's; a program output's to the end; a value nobody reads only at its
//   producer.
// - An output written in place (in_place_candidates: the first input that dies at the equation with
//   the same kind and size) takes that input's buffer instead of a new one.
// - An equation with a body holds, at its own position only, its body's region, its scan carry
//   scratch and its streaming double buffers, with the sizes `plan` gave them: a body's plan is
//   fixed by the body's own order, so each region is optimised on its own. An equation whose
//   kernel needs scratch holds its workspace buffer at its own position too.
// - Outputs, of the top level as of bodies, are external (memory_plan.h), not arena values: they
//   count in no order's peak.
// device_peak_of_order(region, plan, order) equals plan_memory's peak_live for the device of the
// region put in that order (the tests hold the model to that on random programs).
//
// The optimum is exact: a dynamic program over the sets of equations that can run first (the
// downward-closed sets of the dependence graph). The bytes live after such a set depend only on the
// set, and the bytes live while an equation runs only on the set before it and the equation, so
// the best peak that reaches a set is the minimum over its last equation of the best peak reaching
// the set without it, raised to the bytes live while that equation runs. Sets are visited one size
// at a time, and a set is kept only if some order reaches it without exceeding the peak of the
// region's own order (which bounds the optimum). Their number grows up to 2^n, so the analysis
// refuses (nullopt) a region of more than `max_equations` equations, or once it keeps more than
// `max_states` sets.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/memory_plan.h"
#include "ir/program.h"

namespace ferry::compiler {

struct OptimalScheduleOptions {
  int max_equations = 20;          // regions with more are refused (at most 64: sets are bitmasks)
  int64_t max_states = 1 << 20;    // refuse once more sets than this are kept (memory, time)
};

struct OptimalSchedule {
  int64_t peak = 0;                // the minimum device peak over every valid order
  std::vector<size_t> order;       // a valid order with that peak (indices into region.equations)
  int64_t states = 0;              // how many sets the dynamic program kept
};

// The minimum device peak of `region` over every valid order and an order achieving it, or nullopt
// when the region is over the limits. `plan` is a plan of `region` (plan_memory for a top-level
// program, MemoryPlan::bodies[e]->plan for the body of equation e).
std::optional<OptimalSchedule> optimal_schedule(const ir::Program& region, const MemoryPlan& plan,
                                                const OptimalScheduleOptions& options = {});

// The device peak of `region` run in `order` (a valid order, indices into region.equations), by the
// same model. INVALID_ARGUMENT when `order` is not a valid order of the region.
int64_t device_peak_of_order(const ir::Program& region, const MemoryPlan& plan, const std::vector<size_t>& order);

}  // namespace ferry::compiler
