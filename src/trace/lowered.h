// What Lowered and Compiled hold.
#pragma once

#include <memory>

#include "ferry/jit.h"
#include "ir/program.h"
#include "runtime/executable.h"

namespace ferry::detail {

struct LoweredImpl {
  std::shared_ptr<const ir::Program> program;
};

struct CompiledImpl {
  std::shared_ptr<const ir::Program> program;  // after the compiler's passes
  runtime::Executable executable;
  CompileOptions options;
};

}  // namespace ferry::detail
