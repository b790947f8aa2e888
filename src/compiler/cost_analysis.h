// Reads a compiled program's work from the cost model: FLOPs, the FLOPs spent recomputing, and the
// bytes copied between memory kinds (scan bodies once per step).
#pragma once

#include "compiler/target.h"
#include "ferry/options.h"
#include "ir/program.h"

namespace ferry::compiler {

// Work only (estimated_seconds 0).
CostStats cost_stats(const ir::Program& program);
// Work and the estimated step time at the options' rates.
CostStats cost_stats(const ir::Program& program, const Target& target);

}  // namespace ferry::compiler
