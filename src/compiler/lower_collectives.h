// Lowers each collective that exchanges data (psum; all_gather and psum_scatter where each
// process's part is one contiguous block: the exchanged dimension is outermost) to an asynchronous
// <collective>_start / collective_done pair (bodies too), like lower_copies does for copies, so that
// the exchange can run while kernels do: place_collectives then moves the start early and the done
// late. The done reads the operand too, keeping it alive and unchanged while the exchange is in
// flight (the transport reads it until then). The pair keeps the collective's name and rematerialized mark. Collectives that rearrange
// their data through a workspace stay synchronous.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool lower_collectives(ir::Program& program);

}  // namespace ferry::compiler
