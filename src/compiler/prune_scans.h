// Prunes what scans compute for nobody: a stacked result (ys) no equation reads and the program
// does not return, and an xs or constant operand the body does not read. A stacked result nobody
// reads would still hold its memory, a whole stack on the device: differentiation leaves them
// behind (the backward scan stacks a cotangent for every xs, also for xs nobody differentiates),
// so do programs that drop a scan's ys, and so does a rewrite that stops a backward scan from
// reading a residual (compiler/twins.h). A carry goes too when the program does not read it and
// nothing kept is computed from it (it only feeds itself). Scans in every body are pruned too.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool prune_scans(ir::Program& program);

}  // namespace ferry::compiler
