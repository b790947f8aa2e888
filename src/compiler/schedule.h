// The scheduler: reorders each program's equations (bodies included) to keep the device peak low.
// A list schedule over the equations whose inputs are all computed: first any that frees device
// memory (outputs made minus inputs it is the last reader of, most freed first), else the one whose
// results are read soonest in program order. Offloads (which free device memory) therefore run
// right after their producer, and values for the backward pass are not made before they are needed.
// Equations marked rematerialized (recomputations and fetches back of a backward pass) run only
// when nothing else is ready, so they happen as late as their readers allow instead of being
// hoisted into the forward pass. Only dependences constrain the order, so results do not change.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool schedule_for_memory(ir::Program& program);

}  // namespace ferry::compiler
