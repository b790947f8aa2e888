// Prunes what scans compute for nobody: a stacked result (ys) no equation reads and the program
// does not return, and an xs or constant operand the body does not read. A rewrite that stops a
// backward scan from reading a residual (compiler/twins.h) leaves both behind, and a stacked
// residual nobody reads would still hold its memory. Carries are kept. Top level only.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool prune_scans(ir::Program& program);

}  // namespace ferry::compiler
