// The memory model every order of a region is judged by: the scheduler's candidates, its beam
// search, and the exact reference (optimal_schedule.h). It is buffer assignment's model
// (memory_plan.h) re-derived for any order of one region (a program, or one body):
// - where each value lives and which copies a scan runner does instead of the body come from a plan
//   of the region in any order (they do not depend on the order);
// - a device arena value's buffer (its bytes rounded up to kBufferAlignment) is live from its
//   producer to its last reader; a program output's to the end; a value nobody reads only at its
//   producer;
// - an output written in place (in_place_candidates) takes a dying input's buffer instead of a new
//   one;
// - an equation with a body holds, at its own position only, its body's region, its scan carry
//   scratch and its streaming double buffers, with the sizes the plan gave them; an equation whose
//   kernel needs scratch holds its workspace there too;
// - outputs, of the top level as of bodies, are external (memory_plan.h): in no order's peak.
// peak_of_order gives MemoryPlan::peak_live for the device (arguments, external values and the
// arena's packing are not in it).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/memory_plan.h"
#include "ir/program.h"

namespace ferry::compiler {

struct ScheduleModel {
  struct Value {
    int64_t bytes = 0;          // 0: not a device arena value (argument, external, host)
    bool to_end = false;        // a program output: live until the end
    std::vector<int> readers;   // distinct equations that read it
  };
  struct Eq {
    std::vector<int> preds;     // distinct equations whose outputs it reads
    std::vector<int> reads;     // distinct device arena values it reads
    std::vector<int> makes;     // device arena values it defines
    std::vector<int> in_place;  // device arena inputs whose buffer its one output may take
    int64_t held = 0;           // device bytes held at its own position only (bodies, scratch, streams)
  };
  std::vector<Value> values;
  std::vector<Eq> eqs;
};

// `plan`: a plan of `region` (plan_memory for a top-level program, plan_body for a body).
ScheduleModel build_schedule_model(const ir::Program& region, const MemoryPlan& plan);

// The bytes live while equation e runs and after it, given `live` bytes before it and `dies(u)`:
// whether e is the last reader of device arena value u.
template <class Dies>
std::pair<int64_t, int64_t> schedule_step(const ScheduleModel& m, int e, int64_t live, const Dies& dies) {
  const ScheduleModel::Eq& eq = m.eqs[static_cast<size_t>(e)];
  int64_t made = 0, kept = 0, freed = 0;
  for (int v : eq.makes) {
    const ScheduleModel::Value& mv = m.values[static_cast<size_t>(v)];
    made += mv.bytes;
    if (mv.to_end || !mv.readers.empty()) kept += mv.bytes;
  }
  for (int u : eq.in_place)
    if (dies(u)) {
      made = 0;  // the one output takes the dying input's buffer, which is live already
      break;
    }
  for (int u : eq.reads)
    if (dies(u)) freed += m.values[static_cast<size_t>(u)].bytes;
  return {live + made + eq.held, live + kept - freed};
}

// A peak no order of the region can go below: the most any one equation holds while it runs (its
// device inputs, outputs and held bytes), and the outputs held together at the end.
int64_t peak_lower_bound(const ScheduleModel& m);

// The device peak of the region run in `order` (a valid order: INVALID_ARGUMENT otherwise).
int64_t peak_of_order(const ScheduleModel& m, const std::vector<size_t>& order);

}  // namespace ferry::compiler
