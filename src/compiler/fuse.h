// Fusion: chains of elementwise work, broadcasts, scalar constants, f32/bool converts and
// trailing-axis reductions (of rows up to prims::kFusedBlock elements) become one `fused` equation
// (prims/fused_body.h) whose intermediates are never materialized; the backend runs it as one loop
// over blocks of rows (a softmax, logsumexp or layer norm reads its input once).
//
// Guarantees:
// - The program computes the same values (up to the order of a fused reduction's additions: the
//   fused kernel sums a row in its own fixed order).
// - A fused equation's results are the values of its group that something outside the group
//   reads (another equation, or the program's outputs); nothing else of the group is materialized.
// - Each equation joins at most one group. Constants, and broadcasts of values from outside every
//   group, are copied into each group that reads them instead (a broadcast becomes a strided read
//   of its smaller operand); the original stays where something else reads it, else it is removed.
// - Groups do not reorder the program's other equations: a fused equation takes its last member's
//   place, and a group grows only while nothing outside it has read its values yet.
// - It runs after differentiation and the automatic planner (decisions are made on the unfused
//   program) and before scheduling and buffer assignment (which plan the fused program). Bodies of
//   scans, loops and checkpoints are fused too; a fused body is never entered.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

struct FuseStats {
  int recomputed = 0;  // equations a group computes that are another group's (or a lone equation's)
};

// Returns whether any group was formed.
bool fuse_elementwise(ir::Program& program);
// The same, adding up in `stats` what it did (bodies included).
bool fuse_elementwise_counting(ir::Program& program, FuseStats& stats);

}  // namespace ferry::compiler
