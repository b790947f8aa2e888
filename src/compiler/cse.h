// Common sub-expression elimination: an equation that applies the same primitive with the same
// parameters (and the same bodies) to the same inputs as an earlier one is dropped, and its outputs
// are replaced by the earlier one's. Every primitive is pure, so this never changes results. Bodies
// of scans are cleaned too. Equations marked `rematerialized` (recomputations in a backward pass)
// are never merged with forward work, so CSE cannot undo a checkpoint. Equations with different
// names or checkpoint decisions are not merged either.
//
// The second form also merges an `automatic` recomputation into an earlier recomputation of the
// same value in the same pass (one a nested checkpoint's policy recomputed already), so the
// value is recomputed once. The automatic planner asks for it once it has saved every value it
// could (without a limit, the plan everything_saveable makes); under a limit the merge could hold
// the value longer than two recomputations would, so the pipeline's own CSE leaves it.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

// Returns whether anything was merged.
bool eliminate_common_subexpressions(ir::Program& program);
bool eliminate_common_subexpressions_merging_automatic(ir::Program& program);

}  // namespace ferry::compiler
