// Executable: a scheduled, planned program ready to run on a backend. Every value lives where the
// memory plan put it: in one arena per memory kind (allocated once per run, exactly the planned
// size), in the caller's arguments, or (in bodies) in buffers the enclosing equation provides.
// Running never allocates device memory outside the arena, and the arena tracker checks the plan
// as it goes (no overlap, no byte outside) and measures the high-water mark.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "compiler/memory_plan.h"
#include "ferry/array.h"
#include "ferry/jit.h"
#include "ir/program.h"
#include "runtime/arena.h"
#include "runtime/copy_queue.h"
#include "runtime/timeline.h"
#include "runtime/kernel.h"

namespace ferry::runtime {

class Executable {
 public:
  // Binds every equation to a kernel of `backend` (UNIMPLEMENTED for an unknown backend or a missing
  // kernel) and runs bodies as nested executables with their own plans.
  Executable(std::shared_ptr<const ir::Program> program, std::shared_ptr<const compiler::MemoryPlan> plan,
             const std::string& backend);

  // Checks the arguments against the program's inputs (count, dtype, shape, memory kind:
  // INVALID_ARGUMENT naming the argument), runs, and returns the outputs (views of the arena, which
  // lives as long as any of them). Copies between memory kinds run on `copies`. Fills `stats` with
  // what it measured, and `timeline` (may be null) with what happened when.
  std::vector<Array> run(const std::vector<Array>& args, ExecutionStats& stats, CopyQueue& copies,
                         Timeline* timeline = nullptr) const;

  const ir::Program& program() const { return *program_; }
  const compiler::MemoryPlan& plan() const { return *plan_; }

 private:
  // Where a run of this program finds its memory.
  struct Frame {
    Arenas* arenas = nullptr;
    std::array<int64_t, kNumKinds> origin{};  // offset of this program's arena region per kind
    std::vector<const void*> inputs;          // arguments or external inputs
    std::vector<void*> outputs;               // external outputs (bodies)
    ExecutionStats* stats = nullptr;
    CopyQueue* copies = nullptr;
    Timeline* timeline = nullptr;
  };

  void execute(const Frame& frame) const;
  void* address(const Frame& frame, ir::ValueId v) const;
  void run_scan(size_t e, const Frame& frame) const;
  void run_call(size_t e, const Frame& frame) const;
  void start_copy(size_t e, const Frame& frame, std::vector<uint64_t>& tickets) const;
  Frame body_frame(size_t e, const Frame& frame) const;

  std::shared_ptr<const ir::Program> program_;
  std::shared_ptr<const compiler::MemoryPlan> plan_;
  std::vector<KernelFn> kernels_;                        // per equation (null for bodies)
  std::vector<std::shared_ptr<const Executable>> bodies_;  // per equation (null for kernels)
};

}  // namespace ferry::runtime
