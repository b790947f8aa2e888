// The estimated time of one run of a scheduled program, with copies overlapping compute.
//
// Two queues, as the runtime has them: the compute queue runs the equations in program order, each
// taking the longer of its compute (equation_seconds) and its bytes read and written at
// the target's `memory_bytes_per_s`; the copy queue runs the transfers between memory kinds one after another
// (they share the link), each starting when its copy_start is reached and the link is free and
// taking its bytes at `link_bytes_per_s`. A copy_done waits for its transfer, so only the part of
// a transfer that the compute in its window does not hide costs time; where the copies run on the
// compute's own cores (the CPU backend), each transfer also slows the compute queue by
// `copy_compute_share` of its time. A synchronous device_put
// between kinds is a transfer the compute queue waits for whole. A scan's body is timed once and
// counted once per step; so is a checkpoint's body.
//
// Collectives take a third queue, the interconnect between processes: an exchange sends its ring
// bytes (exchanged_bytes) at `interconnect_bytes_per_s`, from its start (or, unlowered, in place,
// with the compute queue waiting for it whole) to its done, which waits for it.
#pragma once

#include "compiler/target.h"
#include "ir/program.h"
#include "prims/registry.h"

namespace ferry::compiler {

// The time of work `c` on the compute queue: its compute (matrix FLOPs and the per-product cost,
// other FLOPs, transcendentals, each at its rate) or its memory traffic, whichever is longer.
double equation_seconds(const prims::Cost& c, const Target& target);

struct StepTime {
  double compute_seconds = 0;       // the compute queue's own work (recomputation included)
  double exposed_copy_seconds = 0;  // time the compute queue waits for transfers
  double exposed_collective_seconds = 0;  // time it waits for collectives
  int64_t bytes_exchanged = 0;            // this process's ring bytes in collectives
  double seconds() const { return compute_seconds + exposed_copy_seconds + exposed_collective_seconds; }
};

// The bytes this process sends in `eq`'s exchange if eq is a collective (or its start) in a ring
// of its axis's processes; 0 otherwise.
int64_t exchanged_bytes(const ir::Program& program, const ir::Equation& eq);

StepTime estimate_step_time(const ir::Program& program, const Target& target);

}  // namespace ferry::compiler
