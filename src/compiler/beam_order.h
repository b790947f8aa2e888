// A beam search for a low-peak order of one region: partial orders grow one equation at a time, and
// of each length only the `width` best distinct ones are kept (lowest peak so far, then fewest
// live bytes). Width 1 is a greedy list schedule by the same measure; wider beams recover from
// greedy choices that only pay off later (run a recomputation and its one reader before another
// branch, not after it). Time grows as width x equations^2, so the scheduler uses it on regions of
// moderate size; the memory model is schedule_model.h's.
#pragma once

#include <vector>

#include "compiler/schedule_model.h"

namespace ferry::compiler {

std::vector<size_t> beam_order(const ScheduleModel& model, int width);

}  // namespace ferry::compiler
