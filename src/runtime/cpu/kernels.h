// The CPU backend's kernel table.
#pragma once

#include "ferry/primitive.h"
#include "runtime/kernel.h"

namespace ferry::runtime::cpu {

// The kernel for p; nullptr when the CPU backend has none (the runtime reports UNIMPLEMENTED).
KernelFn kernel(Primitive p);

}  // namespace ferry::runtime::cpu
