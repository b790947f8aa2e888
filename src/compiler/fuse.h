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
// - Each equation is a member of at most one group. Constants, and broadcasts of values from
//   outside every group, are copied into each group that reads them instead (a broadcast becomes a
//   strided read of its smaller operand); the original stays where something else reads it, else
//   it is removed.
// - Producers are duplicated as XLA's fusion does: a value of a group that only other groups read
//   (or lone fusible equations, which then become groups) is recomputed in each of them from what
//   it was computed from, so that nothing materializes it, when that is cheap: no expensive
//   operation (a SLEEF transcendental: exp, log, tanh, ...) and no reduction is ever computed
//   twice (their results are read instead; a reduction's is a row), a reader gains at most 16
//   cheap operations per element in all, each reader stays a valid body (a reader without
//   reductions reads rows through broadcasts), and the values the copies read instead do not keep
//   more bytes alive than the value did. Recomputing repeats the same f32 operations in the same
//   order, so results are the same bits. A member whose values every reader recomputes is dropped
//   from its group (and the group, when nothing of it is read).
// - Groups do not reorder the program's other equations: a fused equation takes its last (needed)
//   member's place, and a group grows only while nothing outside it has read its values yet.
// - It runs after differentiation and the automatic planner (decisions are made on the unfused
//   program: duplication changes only what fused groups materialize, never what is saved,
//   offloaded or recomputed across a scan or checkpoint boundary) and before scheduling and buffer
//   assignment (which plan the fused program). Bodies of scans, loops and checkpoints are fused
//   too; a fused body is never entered.
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
