// What Lowered and Compiled hold.
#pragma once

#include <memory>
#include <mutex>

#include "ferry/jit.h"
#include "ir/program.h"
#include "runtime/copy_queue.h"
#include "runtime/executable.h"

namespace ferry::detail {

struct LoweredImpl {
  std::shared_ptr<const ir::Program> program;
};

struct CompiledImpl {
  std::shared_ptr<const ir::Program> program;  // after the compiler's passes
  std::shared_ptr<const compiler::MemoryPlan> plan;
  runtime::Executable executable;
  CompileOptions options;
  mutable std::mutex stats_mutex;
  mutable ExecutionStats last_stats;
  mutable runtime::CopyQueue copies;  // its own thread: copies overlap with compute
};

}  // namespace ferry::detail
