// Common sub-expression elimination: an equation that applies the same primitive with the same
// parameters (and the same bodies) to the same inputs as an earlier one is dropped, and its outputs
// are replaced by the earlier one's. Every primitive is pure, so this never changes results. Bodies
// of scans are cleaned too. Equations marked `rematerialized` (recomputations in a backward pass)
// are never merged, so CSE cannot undo a checkpoint; equations with different names or checkpoint
// decisions are not merged either.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

// Returns whether anything was merged.
bool eliminate_common_subexpressions(ir::Program& program);

}  // namespace ferry::compiler
