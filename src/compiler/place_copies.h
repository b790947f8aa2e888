// Places the halves of each asynchronous copy (after the scheduler has ordered everything else),
// by the cost model: a copy takes bytes / link bandwidth; an equation takes flops / compute rate.
// - An offload (to a host kind) starts right after its source is produced, and is done once enough
//   compute has run to hide it (or before its first reader): its device source is freed then.
// - A fetch (to the device) is done right before its first reader, and starts just early enough for
//   the compute in between to hide it (but not before its source exists), so the device buffer it
//   fills is not held longer than the copy needs.
// The memory plan then accounts for every in-flight buffer on both kinds.
#pragma once

#include "compiler/target.h"
#include "ir/program.h"

namespace ferry::compiler {

bool place_copies(ir::Program& program, const Target& target);

}  // namespace ferry::compiler
