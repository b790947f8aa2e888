// A beam search for a low-peak order of one region: partial orders grow one equation at a time, and
// of each length only the `width` best distinct ones are kept (lowest peak so far, then fewest
// live bytes). Width 1 is a greedy list schedule by the same measure; wider beams recover from
// greedy choices that only pay off later (run a recomputation and its one reader before another
// branch, not after it). Time grows as width x equations^2, so the scheduler uses it on regions of
// moderate size; the memory model is schedule_model.h's.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/schedule_model.h"

namespace ferry::compiler {

// The best order the beam finds whose peak is below `below`, or an empty vector if it finds none
// (partial orders already at `below` are dropped, which ends the search early where another
// candidate is as good as the beam can be).
std::vector<size_t> beam_order(const ScheduleModel& model, int width,
                               int64_t below = std::numeric_limits<int64_t>::max());

}  // namespace ferry::compiler
