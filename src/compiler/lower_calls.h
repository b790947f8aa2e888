// lower_calls: before the passes, equations that only differentiation distinguishes become plain
// equations. custom_vjp becomes its f body's equations (its fwd and bwd matter only to
// differentiation, which has run by now); cond becomes every branch's equations followed by a
// select of the taken branch's outputs (select on a bool predicate, a chain of them on an i32
// index, as select_n), so the compiler plans both branches' temporaries as one region. Bodies of
// scan, while_loop and checkpoint are lowered too.
//
// An inlined equation keeps every annotation it had, and takes the call's: a call recomputed in
// the backward pass (!remat), or left to the automatic planner (!auto), makes every equation that
// replaces it so, the selects included, so that the planner sees the same choice with or without
// the call. Checkpoint decisions (!save, ...) are spent once differentiation has run: on the
// top-level program, where nothing reads them, the inlined equations drop theirs.
//
// Programs without a custom_vjp or cond come back unchanged (the same object).
#pragma once

#include <memory>

#include "ir/program.h"

namespace ferry::compiler {

std::shared_ptr<const ir::Program> lower_calls(const std::shared_ptr<const ir::Program>& program);

}  // namespace ferry::compiler
