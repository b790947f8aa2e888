// Executable: a scheduled, planned program ready to run on a backend (runtime/backend.h). Every
// value lives where the memory plan put it: in one arena per memory kind (allocated from the
// backend's resource for the kind when a run starts, exactly the planned size, and given back when
// it ends), in the caller's arguments,
// in the outputs (one allocation each, owned by the returned Arrays, or a donated argument's
// buffer), or (in bodies) in buffers the enclosing equation provides. Kernels get their scratch
// memory from planned workspace buffers. The arena tracker checks the plan as it goes (no overlap,
// no byte outside), and buffers outside their live range are poisoned (AddressSanitizer builds) or
// filled with a NaN pattern (checked mode). Apart from the Arrays it returns, a run allocates
// nothing but what the memory resources count: its bookkeeping is sized when the first run starts
// and reused by every later one. Kernels run on the backend's compute stream; copies between kinds
// run on its copy engine, ordered against the stream as the plan's copy_start/copy_done pairs say;
// a run returns when the stream has finished.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plan/memory_plan.h"
#include "ferry/array.h"
#include "ferry/options.h"
#include "ir/program.h"
#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/kernel.h"
#include "runtime/timeline.h"

namespace ferry::runtime {

struct ExecutableOptions {
  std::vector<char> donated;  // per input of the top-level program: a call consumes that argument
  bool checked = false;       // CompileOptions::checked
  // Per input: the memory kind the caller traced it in. Where the plan keeps an argument in another
  // kind (carried state in host memory between calls: compiler/offload_state.h), a call also takes
  // it in the traced kind and moves it first; the step returns the new state where the plan keeps it,
  // so passing that back moves nothing. Empty: every input as planned.
  std::vector<MemoryKind> traced_kinds;
  // Per output, the same: an output the plan returns in another kind is marked with its traced
  // kind (Storage::traced_kind).
  std::vector<MemoryKind> traced_output_kinds;
};

class Executable {
 public:
  using Options = ExecutableOptions;

  // Binds every equation to a kernel of `backend` (UNIMPLEMENTED for a backend this build or machine
  // lacks, or a primitive its kernel table leaves out, naming both) and runs bodies as nested
  // executables with their own plans.
  Executable(std::shared_ptr<const ir::Program> program, std::shared_ptr<const plan::MemoryPlan> plan,
             const std::string& backend, Options options = {});

  // Checks the arguments against the program's inputs (count, dtype, shape, memory kind, not
  // donated before: INVALID_ARGUMENT naming the argument), runs, and returns the outputs, each
  // owning its buffer. Arguments must be the backend's (INVALID_ARGUMENT otherwise: Array::to_backend
  // copies one). Donated arguments are consumed. Copies between memory kinds run on `copies` (one
  // of the backend's engines). Fills `stats` with what it measured, and `timeline` (may be null)
  // with what happened when.
  std::vector<Array> run(const std::vector<Array>& args, ExecutionStats& stats, CopyEngine& copies,
                         Timeline* timeline = nullptr) const;

  const ir::Program& program() const { return *program_; }
  Backend& backend() const { return *backend_; }
  const plan::MemoryPlan& plan() const { return *plan_; }

 private:
  // Where a run of this program finds its memory.
  struct Frame {
    Arenas* arenas = nullptr;
    std::array<int64_t, kNumKinds> origin{};  // offset of this program's arena region per kind
    std::vector<const void*> inputs;          // arguments or external inputs
    std::vector<void*> outputs;               // external outputs
    ExecutionStats* stats = nullptr;
    CopyEngine* copies = nullptr;
    Stream stream;  // the backend's compute stream
    Timeline* timeline = nullptr;
  };
  struct State;
  struct StateCache;

  std::unique_ptr<State> make_state() const;
  // The steps of run(). check_arguments: their types, backend and donations; returns the bytes the
  // call holds per kind.
  std::array<int64_t, kNumKinds> check_arguments(const std::vector<Array>& args) const;
  // The arguments where the plan keeps them: each one in its traced kind moved (copied) there.
  std::vector<Array> move_to_planned_kinds(const std::vector<Array>& args) const;
  std::unique_ptr<State> take_state() const;         // the last finished run's, or a new one
  void give_back(std::unique_ptr<State>& st) const;  // to the cache, its arenas closed, its outputs let go
  void allocate_outputs(const std::vector<Array>& args, State& st, Tally& tally) const;
  // Executes the top level and waits for its stream and copies (also when it fails).
  void run_top(State& st, ExecutionStats& stats, CopyEngine& copies, Timeline* timeline) const;
  std::vector<Array> hand_over_outputs(const std::vector<Array>& args, State& st) const;
  void execute(const Frame& frame, State& state) const;
  void* address(const Frame& frame, ir::ValueId v) const;
  char* buffer_address(const Frame& frame, int buffer) const;
  void run_scan(size_t e, const Frame& frame, State& state) const;
  void run_while(size_t e, const Frame& frame, State& state) const;
  void run_call(size_t e, const Frame& frame, State& state) const;
  void start_copy(size_t e, const Frame& frame, State& state) const;
  // The halves of an asynchronous collective (compiler/lower_collectives.h).
  static bool async_collective(const ir::Equation& eq) {
    return ir::has(eq.prim, ir::kCollective) && (ir::has(eq.prim, ir::kAsyncStart) || ir::has(eq.prim, ir::kAsyncDone));
  }
  void start_collective(size_t e, const Frame& frame, State& state) const;
  void finish_collective(size_t e, const Frame& frame, State& state) const;
  void enter_body(size_t e, const Frame& frame, Frame& body) const;
  void enter_loop(size_t e, const Frame& frame, State& state, size_t num_carry, size_t invariant_from) const;
  uint64_t enqueue_transfer(const Frame& frame, void* dst, MemoryKind to, const void* src, MemoryKind from,
                            int64_t bytes, const char* label) const;
  static void count_transfer(const Frame& frame, MemoryKind from, MemoryKind to, int64_t bytes);

  std::shared_ptr<const ir::Program> program_;
  std::shared_ptr<const plan::MemoryPlan> plan_;
  Backend* backend_ = nullptr;
  Exchanges* exchanges_ = nullptr;  // the backend's, where the program has asynchronous collectives
  std::vector<KernelFn> kernels_;                        // per equation (null for bodies)
  std::vector<std::shared_ptr<const void>> prepared_;    // per equation: Backend::prepare's
  std::vector<std::shared_ptr<const Executable>> bodies_;  // per equation (null for kernels)
  Options options_;
  size_t max_live_ = 0;  // buffers of this plan and its bodies': the most live at once
  std::shared_ptr<StateCache> cache_;  // the bookkeeping of a finished run, for the next one
};

}  // namespace ferry::runtime
