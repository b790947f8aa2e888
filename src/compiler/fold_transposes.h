// fold_transposes: a transpose whose every reader is a dot_general disappears into those
// dot_generals' dimension numbers, when the CPU kernel can then read the transpose's operand in
// place (a BLAS transpose flag or a plain stride: prims::matrix_layout). The product is computed
// from the same elements in the same order, so its bits do not change; the transposed copy (a
// pass over memory and a buffer as large as the operand) is never made.
//
// A dot_general's result lists its free dimensions in operand order, so a fold is only possible
// when the permutation keeps the free dimensions of that operand in order; batch and contracting
// dimensions are matched by position in the dimension numbers and may move freely.
//
// Runs after the automatic planner (remat and offload decisions are made on the unfolded program)
// and before scheduling and buffer assignment (which then see no transpose). Folds never raise the
// device peak: the operand lives until the dot_general instead of the transpose's result.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

// Returns whether anything changed (scan and checkpoint bodies included).
bool fold_transposes(ir::Program& program);

}  // namespace ferry::compiler
