// Liveness and buffer assignment: where every value of a scheduled program lives.
//
// Each value gets a slot: a program argument (owned by the caller), an external input or output
// (a body's: given by the equation that runs the body; the top level's outputs: one allocation
// each, which the returned Arrays own), or a buffer in the arena of its memory kind (one arena per
// kind, holding temporaries only). A buffer is live from the position of the equation that defines
// it to its last reader. An elementwise equation whose input dies there and has the output's type
// writes in place: both values share one buffer. An equation with a body (scan, checkpoint) gets a
// region per kind for the body's own plan, planned once and reused every step, and a scan gets a
// scratch buffer per carry (carries alternate between it and the output). An equation whose kernel
// needs scratch memory (the backend declares how much for its types) gets a workspace buffer live
// only while it runs. Buffers of one kind are packed into their arena by size, largest first, each
// at the best-fitting gap among the buffers live at the same time, so freed space is reused.
//
// At the top level an output written in place over a dying temporary takes that temporary's buffer
// (its whole in-place chain) into its own allocation. With PlanOptions::temporaries_in_outputs,
// temporaries that live entirely while an output's allocation holds nothing (before the output is
// first written; for a donated argument's buffer, after its last read too) are placed in that
// allocation, as XLA's buffer assignment places them in its live-out allocations: they cost the
// arena nothing. An output may be written straight into the
// buffer of a donated argument (aliasing) when the two have the same type and every read of the
// argument comes before the output's first write (or is the elementwise equation that writes it in
// place).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace ferry::compiler {

inline constexpr int kNumMemoryKinds = 3;
inline constexpr int64_t kBufferAlignment = 64;
inline size_t kind_index(MemoryKind k) { return static_cast<size_t>(k); }

struct MemoryPlan;

struct Slot {
  enum class Where : uint8_t { arena, argument, external_input, external_output };
  Where where = Where::arena;
  MemoryKind kind = MemoryKind::device;
  int buffer = -1;  // arena: index into MemoryPlan::buffers
  int index = -1;   // argument / external input / external output position
};

// One allocation in an arena.
struct Buffer {
  MemoryKind kind = MemoryKind::device;
  int64_t size = 0;  // bytes, rounded up to kBufferAlignment
  int start = 0, end = 0;  // live over schedule positions [start, end]; the end of the program is n
  int64_t offset = 0;
  std::vector<ir::ValueId> values;  // the values it holds (several when written in place)
  int body_of = -1;                 // >= 0: the body region of that equation
  int scratch_of = -1;              // >= 0: a carry scratch buffer of that scan equation
  int stream_of = -1;               // >= 0: a double buffer of a streamed slice of that scan
  int workspace_of = -1;            // >= 0: the kernel workspace of that equation
  int output_of = -1;               // >= 0: not in the arena but in that output's allocation, at offset
};

// Scan steps overlap their host copies with compute across steps (double buffering):
// - a prefetched input: an xs slice in host memory whose only use in the body is a copy to the
//   device. The scan runner copies slice i+1 into one of two device buffers while step i runs on
//   the other; the body sees the fetched value as an extra external input and skips its copy.
// - a postponed output: a ys slice in host memory that the body fills by copying a device value.
//   The body writes that value into one of two device buffers instead, and the runner copies it to
//   the host stack while the next step runs; the body skips its copy.
struct StreamedSlice {
  int io = -1;                 // the body input (prefetch) or output (postpone) it replaces
  int external = -1;           // the extra external input/output index the body uses instead
  std::array<int, 2> buffers{-1, -1};  // the two device buffers (in the enclosing plan)
};

struct BodyPlan {
  std::shared_ptr<const MemoryPlan> plan;
  std::array<int, kNumMemoryKinds> region{-1, -1, -1};  // buffer per kind (-1: the body needs none)
  std::vector<int> carry_scratch;                        // scan: buffer per carry
  std::vector<StreamedSlice> prefetched, postponed;      // scan: double-buffered host slices
};

struct MemoryPlan {
  std::vector<Slot> slots;                       // per value
  std::vector<Buffer> buffers;
  std::vector<std::optional<BodyPlan>> bodies;   // per equation
  std::array<int64_t, kNumMemoryKinds> arena_size{};
  // For the runtime: buffers to take before an equation runs, and to give back after it.
  std::vector<std::vector<int>> acquire_before, release_after;  // per equation
  std::vector<char> skip;  // per equation: a copy the enclosing scan runner does instead
  std::vector<int> workspace;  // per equation: its workspace buffer (-1: none)
  // Top level: per output, the argument whose buffer it is written into (-1: its own allocation).
  std::vector<int> output_alias;
  // The schedule position where the live bytes of each kind peak, and those bytes.
  std::array<int, kNumMemoryKinds> peak_position{};
  std::array<int64_t, kNumMemoryKinds> peak_live{};
};

// The scratch bytes the backend's kernel for equation `eq` of `program` needs (0: none).
using WorkspaceFn = std::function<int64_t(const ir::Program& program, const ir::Equation& eq)>;

struct PlanOptions {
  WorkspaceFn workspace;      // empty: no kernel needs scratch
  std::vector<char> donated;  // top level, per input: its buffer may be reused for an output
  // Top level: temporaries may live in an output's allocation while it holds nothing (before the
  // output is first written, and after its donated argument's last read). Compiling plans so; the
  // schedule's memory model (schedule_model.h), which reads plans of any order, plans without.
  bool temporaries_in_outputs = false;
};

// Plans a scheduled program. Top level (outputs_external = false): inputs are the caller's
// arguments. Bodies (true): inputs are the enclosing equation's operands. Outputs are external in
// both: the enclosing equation's values, or at the top level one allocation per output.
std::shared_ptr<const MemoryPlan> plan_memory(const ir::Program& program, bool outputs_external,
                                              const PlanOptions& options = {});

// Inputs whose buffer the equation's (single) output may take over when they die there: its kernel
// reads each element before it writes the element of the result at the same place. A fused
// equation's depend on its body (any of its outputs may take one).
std::vector<size_t> in_place_candidates(const ir::Equation& eq);

// The plan of the body of `eq` (a scan or checkpoint equation), as the enclosing plan makes it:
// inputs and outputs external, streamed slices done by the scan runner.
std::shared_ptr<const MemoryPlan> plan_body(const ir::Equation& eq, const PlanOptions& options = {});

// The plan of a region: `region` itself when `parent` is nullptr (a top-level program), else the
// body of `parent` with `region` in its place (a pass holding a changed copy of the body).
std::shared_ptr<const MemoryPlan> plan_region(const ir::Program& region, const ir::Equation* parent,
                                              const PlanOptions& options = {});

// What a scan runner streams for a body (see StreamedSlice), as (body value, input/output index).
struct Streams {
  std::vector<std::pair<ir::ValueId, int>> prefetched;  // fetched value, xs input index
  std::vector<std::pair<ir::ValueId, int>> postponed;   // device value, ys output index
};
Streams find_streams(const ir::Program& body, int num_carry, int num_xs);

}  // namespace ferry::compiler
