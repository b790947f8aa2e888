// Gives every program output its own buffer: an output that is a program input, or that appears
// twice among the outputs, is replaced by a copy (device_put to its own memory kind). Afterwards
// each output is defined by exactly one equation, which writes it straight where it is returned
// (the arena at top level, the caller's destination in a scan body). Bodies are rewritten too.
// Runs after CSE, which would merge the copies.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool materialize_outputs(ir::Program& program);

}  // namespace ferry::compiler
