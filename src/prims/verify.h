// The verifier with the primitives' shape rules: ir::verify (ir/verifier.h: structure, single
// assignment, annotations) checking each equation's output types against prims::infer_types.
#pragma once

#include "ir/program.h"

namespace ferry::prims {

void verify(const ir::Program& p);

}  // namespace ferry::prims
