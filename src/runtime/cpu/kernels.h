// The CPU backend's kernel table.
#pragma once

#include "ferry/primitive.h"
#include "runtime/kernel.h"

namespace ferry::runtime::cpu {

// The kernel for p; nullptr when the CPU backend has none (the runtime reports UNIMPLEMENTED).
KernelFn kernel(Primitive p);
// How much workspace p's kernel needs for given types; nullptr when it never needs any.
WorkspaceSizeFn workspace_size(Primitive p);

}  // namespace ferry::runtime::cpu
