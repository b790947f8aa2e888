// Liveness and buffer assignment: where every value of a scheduled program lives.
//
// Each value gets a slot: a program argument (owned by the caller), an external input or output
// (a body's: given by the equation that runs the body; the top level's outputs: one allocation
// each, which the returned Arrays own), or a buffer in the arena of its memory kind (one arena per
// kind, holding temporaries only). A buffer is live from the position of the equation that defines
// it to its last reader. An elementwise equation whose input dies there and has the output's type
// writes in place: both values share one buffer. An equation with a body (scan, checkpoint) gets a
// region per kind for the body's own plan, planned once and reused every step, and a scan gets a
// scratch buffer per carry (carries alternate between it and the output). An equation whose kernel
// needs scratch memory (the backend declares how much for its types) gets a workspace buffer live
// only while it runs. Buffers of one kind are packed into their arena by size, largest first, each
// at the best-fitting gap among the buffers live at the same time, so freed space is reused.
//
// At the top level an output written in place over a dying temporary takes that temporary's buffer
// (its whole in-place chain) into its own allocation. With PlanOptions::temporaries_in_outputs,
// temporaries that live entirely while an output's allocation holds nothing (before the output is
// first written; for a donated argument's buffer, after its last read too) are placed in that
// allocation, as XLA's buffer assignment places them in its live-out allocations: they cost the
// arena nothing. An output may be written straight into the
// buffer of a donated argument (aliasing) when the two have the same type and every read of the
// argument comes before the output's first write (or is the elementwise equation that writes it in
// place).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "plan/memory_plan.h"

namespace ferry::compiler {

using plan::Buffer;
using plan::BodyPlan;
using plan::kBufferAlignment;
using plan::kind_index;
using plan::kNumMemoryKinds;
using plan::MemoryPlan;
using plan::Slot;
using plan::StreamedSlice;
using plan::WorkspaceFn;

struct PlanOptions {
  WorkspaceFn workspace;      // empty: no kernel needs scratch
  std::vector<char> donated;  // top level, per input: its buffer may be reused for an output
  // Top level: temporaries may live in an output's allocation while it holds nothing (before the
  // output is first written, and after its donated argument's last read). Compiling plans so; the
  // schedule's memory model (schedule_model.h), which reads plans of any order, plans without.
  bool temporaries_in_outputs = false;
};

// Plans a scheduled program. Top level (outputs_external = false): inputs are the caller's
// arguments. Bodies (true): inputs are the enclosing equation's operands. Outputs are external in
// both: the enclosing equation's values, or at the top level one allocation per output.
std::shared_ptr<const MemoryPlan> plan_memory(const ir::Program& program, bool outputs_external,
                                              const PlanOptions& options = {});

// Inputs whose buffer the equation's (single) output may take over when they die there: its kernel
// reads each element before it writes the element of the result at the same place. A fused
// equation's depend on its body (any of its outputs may take one).
std::vector<size_t> in_place_candidates(const ir::Equation& eq);

// The plan of the body of `eq` (a scan or checkpoint equation), as the enclosing plan makes it:
// inputs and outputs external, streamed slices done by the scan runner.
std::shared_ptr<const MemoryPlan> plan_body(const ir::Equation& eq, const PlanOptions& options = {});

// The plan of a region: `region` itself when `parent` is nullptr (a top-level program), else the
// body of `parent` with `region` in its place (a pass holding a changed copy of the body).
std::shared_ptr<const MemoryPlan> plan_region(const ir::Program& region, const ir::Equation* parent,
                                              const PlanOptions& options = {});

// What a scan runner streams for a body (see StreamedSlice), as (body value, input/output index).
struct Streams {
  std::vector<std::pair<ir::ValueId, int>> prefetched;  // fetched value, xs input index
  std::vector<std::pair<ir::ValueId, int>> postponed;   // device value, ys output index
};
Streams find_streams(const ir::Program& body, int num_carry, int num_xs);

}  // namespace ferry::compiler
