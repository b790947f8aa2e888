// Reads a compiled program's work from the cost model: FLOPs, the FLOPs spent recomputing, and the
// bytes copied between memory kinds (scan bodies once per step).
#pragma once

#include "ferry/jit.h"
#include "ir/program.h"

namespace ferry::compiler {

CostStats cost_stats(const ir::Program& program);

}  // namespace ferry::compiler
