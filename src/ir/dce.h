// Dead-code elimination: removes equations none of whose outputs reach the program's outputs.
// Every primitive is pure, so nothing else keeps an equation alive. Unused values stay in the value
// table (the printer renumbers); bodies of scans are cleaned too, and a scan output nobody reads
// is kept (its body still computes it), which is always correct.
#pragma once

#include "ir/program.h"

namespace ferry::ir {

// Returns whether anything was removed.
bool eliminate_dead_code(Program& program);

}  // namespace ferry::ir
