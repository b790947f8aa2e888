// checkpoint_name is an identity that only the checkpoint policies read, and by placement they
// have been applied (transforms/partition.cpp): its readers read the named value itself instead,
// so that no kernel copies it. A named scan carry that is offloaded per step is then copied to
// the host straight from the carry, not copied on the device first and then to the host. The name
// moves to the equation that made the value (where it has none and makes nothing else), so memory
// reports still name the buffer as the user did.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

// Returns whether any name was dropped (in the program or its bodies).
bool drop_names(ir::Program& program);

}  // namespace ferry::compiler
