// Before compiling: equations that only differentiation distinguishes become plain equations.
// custom_vjp becomes its f body's equations (its fwd and bwd only matter to differentiation, which
// has run by now); cond becomes every branch's equations followed by a select of the taken
// branch's outputs (select_n on the index), so the compiler plans both branches' temporaries as
// one region. Bodies of scan and checkpoint are lowered too. Programs without either come back
// unchanged (the same object).
#pragma once

#include <memory>

#include "ir/program.h"

namespace ferry::transforms {

std::shared_ptr<const ir::Program> lower_calls(const std::shared_ptr<const ir::Program>& program);

}  // namespace ferry::transforms
