// Lowers every device_put between memory kinds to an asynchronous copy_start / copy_done pair
// (bodies too). The pair keeps the device_put's name and rematerialized mark; place_copies then
// decides how far apart the two halves go. device_put within one kind (a plain copy) stays.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

bool lower_copies(ir::Program& program);

}  // namespace ferry::compiler
