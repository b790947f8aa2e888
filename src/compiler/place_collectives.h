// Places the halves of each asynchronous collective (lower_collectives.h), after the scheduler and
// place_copies: each done as late as its result's first reader allows, and each start early enough
// that the kernels between them hide the exchange by the cost model (its ring bytes at the
// interconnect's rate), but no earlier (so that its buffers are not held longer than that) and not
// before its operand exists: the all-reduce of one layer's gradients runs beside the backward pass
// of the next. Every process places them the same way
// (the same program, the same pass), so their collectives still meet in the same order.
//
// Overlap holds the operand and the result of each exchange in flight from its start to its done.
// Without a device memory limit the exchanges overlap as far as their dependences allow. Under a
// limit overlap must not cost memory: where those places raise the region's device peak over the
// order as scheduled, only the dones move late (the starts stay); where that raises it too, the
// halves stay where they are (an exchange as long as its start-to-done stretch).
#pragma once

#include "compiler/target.h"
#include "ir/program.h"

namespace ferry::compiler {

bool place_collectives(ir::Program& program, const Target& target);

}  // namespace ferry::compiler
